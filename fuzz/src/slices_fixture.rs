//! The HDF5 files `slices_read` (and tests/slices_guard_prop.rs) read from, created once per
//! process with plain libhdf5 (tests/common/mod.rs, which the including crate declares as
//! `mod common`), and the reference: every dataset read whole with one plain `H5Dread` into
//! the native memory type of every numeric dtype (libhdf5's conversions; `None` where
//! libhdf5 has none). The files are unlinked once open (the ids keep them alive).
#![allow(dead_code)]

use std::sync::OnceLock;

use hdf5_sys::h5d::{H5Dclose, H5Dopen2, H5Dread};
use hdf5_sys::h5f::{H5Fclose, H5Fopen, H5F_ACC_RDONLY};
use hdf5_sys::h5p::H5P_DEFAULT;
use hdf5_sys::h5s::H5S_ALL;
use hdf5_sys::h5t::{H5Tclose, H5Tcompiler_conv, H5Tconvert};
use vh5::dtype::Dtype;

use crate::common::{create_file, data_for, ffi_open, h5type, size_of, write_block, DsSpec, TempDir};
use crate::slices_oracle::{FixtureDs, WriteHooks};

/// Whole dataset `name` of `path` read into the native type of `d` (`None`: H5Dread failed,
/// i.e. libhdf5 has no conversion).
fn read_as(path: &std::path::Path, name: &str, nelem: usize, d: Dtype) -> Option<Vec<u8>> {
    let s = vh5::hdf5::session();
    let _l = s.lock();
    let p = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let n = std::ffi::CString::new(name).unwrap();
    let mt = h5type(d, false, true);
    let mut buf = vec![0u8; nelem * size_of(d)];
    // SAFETY: plain libhdf5 calls on ids created here; buf holds the whole dataset in `mt`.
    let ok = unsafe {
        let f = H5Fopen(p.as_ptr(), H5F_ACC_RDONLY, H5P_DEFAULT);
        assert!(f >= 0);
        let ds = H5Dopen2(f, n.as_ptr(), H5P_DEFAULT);
        assert!(ds >= 0);
        let st = H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.as_mut_ptr().cast());
        H5Dclose(ds);
        H5Fclose(f);
        H5Tclose(mt);
        st >= 0
    };
    ok.then_some(buf)
}

/// Whether libhdf5 converts between dataset `s` and an array of `d` with a compiler cast
/// (`H5Tcompiler_conv`): reading into a native array, into a byte-swapped one (a big-endian
/// type, on the little-endian hosts the fuzz runs on), and writing from a native array.
fn hard_paths(s: &Spec, d: Dtype) -> [bool; 3] {
    let session = vh5::hdf5::session();
    let _l = session.lock();
    let (file, native, swapped) = (h5type(s.dtype, s.big, false), h5type(d, false, true), h5type(d, true, false));
    // SAFETY: type ids created above and closed here; H5Tcompiler_conv only compares them.
    unsafe {
        let hard = |a, b| H5Tcompiler_conv(a, b) > 0;
        let r = [hard(file, native), hard(file, swapped), hard(native, file)];
        hdf5_sys::h5e::H5Eclear2(hdf5_sys::h5e::H5E_DEFAULT);
        for t in [file, native, swapped] {
            H5Tclose(t);
        }
        r
    }
}

struct Spec {
    name: &'static str,
    shape: &'static [u64],
    dtype: Dtype,
    big: bool,
    chunk: Option<&'static [u64]>,
    gzip: bool,
    shuffle: bool,
    /// Only this leading block is written (the rest: unallocated chunks, fill value).
    partial: Option<&'static [u64]>,
}

const SPECS: &[Spec] = &[
    Spec { name: "contig_1d_i32", shape: &[37], dtype: Dtype::Int32, big: false, chunk: None, gzip: false, shuffle: false, partial: None },
    Spec { name: "contig_3d_f64be", shape: &[4, 5, 6], dtype: Dtype::Float64, big: true, chunk: None, gzip: false, shuffle: false, partial: None },
    Spec { name: "chunk_2d_u16_edges", shape: &[13, 11], dtype: Dtype::UInt16, big: false, chunk: Some(&[4, 3]), gzip: false, shuffle: false, partial: None },
    Spec { name: "gzip_shuffle_3d_i64", shape: &[6, 7, 5], dtype: Dtype::Int64, big: false, chunk: Some(&[3, 4, 2]), gzip: true, shuffle: true, partial: None },
    Spec { name: "partial_2d_f32_fill", shape: &[10, 9], dtype: Dtype::Float32, big: false, chunk: Some(&[3, 4]), gzip: false, shuffle: false, partial: Some(&[4, 5]) },
    Spec { name: "gzip_4d_i16be", shape: &[3, 4, 2, 5], dtype: Dtype::Int16, big: true, chunk: Some(&[2, 3, 2, 2]), gzip: true, shuffle: false, partial: None },
    Spec { name: "gzip_1d_u8_partial", shape: &[100], dtype: Dtype::UInt8, big: false, chunk: Some(&[7]), gzip: true, shuffle: true, partial: Some(&[30]) },
    Spec { name: "scalar_f64", shape: &[], dtype: Dtype::Float64, big: false, chunk: None, gzip: false, shuffle: false, partial: None },
    Spec { name: "empty_2d_i8", shape: &[0, 5], dtype: Dtype::Int8, big: false, chunk: None, gzip: false, shuffle: false, partial: None },
    Spec { name: "chunk_2d_c64be", shape: &[5, 6], dtype: Dtype::Complex64, big: true, chunk: Some(&[2, 4]), gzip: false, shuffle: true, partial: None },
];

/// Create the files once per process and open every dataset (read-only) through the C ABI.
pub fn fixture() -> &'static [FixtureDs] {
    static F: OnceLock<Vec<FixtureDs>> = OnceLock::new();
    F.get_or_init(|| build(false))
}

/// The same datasets in a second file opened with `VH5_FILE_READ_WRITE`, for
/// `vh5_write_many_slices` (contents change as cases write; `whole` holds the own dtype only).
pub fn write_fixture() -> &'static [FixtureDs] {
    static F: OnceLock<Vec<FixtureDs>> = OnceLock::new();
    F.get_or_init(|| build(true))
}

fn build(rw: bool) -> Vec<FixtureDs> {
    {
        let tmp = TempDir::new(if rw { "slices-wfixture" } else { "slices-fixture" });
        let path = tmp.path("fixture.h5");
        let datas: Vec<Vec<u8>> = SPECS.iter().enumerate().map(|(k, s)| data_for(s.dtype, s.shape.iter().product::<u64>() as usize, 77 + k as u64)).collect();
        let fills: Vec<Vec<u8>> = SPECS.iter().enumerate().map(|(k, s)| data_for(s.dtype, 1, 1000 + k as u64)).collect();
        let specs: Vec<DsSpec> = SPECS
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let mut d = DsSpec::new(s.name, s.shape, s.dtype, if s.partial.is_some() { None } else { Some(&datas[k]) });
                d.chunk = s.chunk.map(|c| c.to_vec());
                d.gzip = s.gzip.then_some(4);
                d.shuffle = s.shuffle;
                d.big_endian = s.big;
                d.fill = Some(&fills[k]);
                d
            })
            .collect();
        create_file(&path, &specs);
        for (k, s) in SPECS.iter().enumerate() {
            if let Some(block) = s.partial {
                let nb: u64 = block.iter().product();
                write_block(&path, s.name, s.dtype, &vec![0; block.len()], block, &datas[k][..nb as usize * size_of(s.dtype)]);
            }
        }
        let file = if rw { open_rw(&path) } else { ffi_open(&path, SPECS[0].name).0 };
        let out = SPECS
            .iter()
            .map(|s| {
                let nelem = s.shape.iter().product::<u64>() as usize;
                let mut whole = vec![(s.dtype.code(), Some(read_as(&path, s.name, nelem, s.dtype).expect("read in the own dtype")))];
                for d in vh5::dtype::ALL_NUMERIC {
                    if d != s.dtype && !rw {
                        whole.push((d.code(), read_as(&path, s.name, nelem, d)));
                    }
                }
                let id = if rw { open_ds(file, s.name) } else { ffi_open(&path, s.name).1 };
                let hard = vh5::dtype::ALL_NUMERIC.iter().map(|&d| (d.code(), hard_paths(s, d))).collect();
                FixtureDs { name: s.name.to_string(), shape: s.shape.to_vec(), dtype: s.dtype.code(), id, whole, hard, big: s.big }
            })
            .collect();
        drop(tmp); // unlinks the file; the open ids keep it readable
        out
    }
}

fn open_rw(path: &std::path::Path) -> i64 {
    let p = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let mut f = -1;
    // SAFETY: NUL-terminated path, valid out pointer.
    let st = unsafe { vh5::ffi::hdf5::vh5_file_open(p.as_ptr(), vh5::ffi::hdf5::VH5_FILE_READ_WRITE, &mut f) };
    assert_eq!(st, vh5::ffi::vh5_status::VH5_OK);
    f
}

fn open_ds(file: i64, name: &str) -> i64 {
    let n = std::ffi::CString::new(name).unwrap();
    let mut d = -1;
    // SAFETY: NUL-terminated name, valid out pointer.
    let st = unsafe { vh5::ffi::hdf5::vh5_dataset_open(file, n.as_ptr(), &mut d) };
    assert_eq!(st, vh5::ffi::vh5_status::VH5_OK);
    d
}

fn spec_of(f: &FixtureDs) -> &'static Spec {
    SPECS.iter().find(|s| s.name == f.name).unwrap()
}

/// [`WriteHooks`] with plain libhdf5 calls (under vh5's lock).
pub struct H5Hooks;

impl WriteHooks for H5Hooks {
    fn whole(&self, f: &FixtureDs) -> Vec<u8> {
        let s = vh5::hdf5::session();
        let _l = s.lock();
        let d = spec_of(f).dtype;
        let mt = h5type(d, false, true);
        let n: u64 = f.shape.iter().product();
        let mut buf = vec![0u8; n as usize * size_of(d)];
        // SAFETY: buf holds the whole dataset in the memory type.
        let st = unsafe { H5Dread(f.id, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.as_mut_ptr().cast()) };
        // SAFETY: closing the type created above.
        unsafe { H5Tclose(mt) };
        assert!(st >= 0, "H5Dread of {}", f.name);
        buf
    }

    fn convert(&self, f: &FixtureDs, from: u32, buf: &mut Vec<u8>, n: usize) -> bool {
        let s = vh5::hdf5::session();
        let _l = s.lock();
        let sp = spec_of(f);
        let Some(from) = Dtype::from_code(from) else { return false };
        let (src, file, out) = (h5type(from, false, true), h5type(sp.dtype, sp.big, false), h5type(sp.dtype, false, true));
        let room = n.max(1) * 16;
        buf.resize(room, 0);
        // Compound (complex) conversions need a background buffer of the destination size.
        let mut bkg = vec![0u8; room];
        // SAFETY: buf and bkg hold n elements of the largest type involved (<= 16 bytes
        // each); type ids created above and closed below.
        let ok = unsafe {
            let ok = H5Tconvert(src, file, n, buf.as_mut_ptr().cast(), bkg.as_mut_ptr().cast(), H5P_DEFAULT) >= 0
                && H5Tconvert(file, out, n, buf.as_mut_ptr().cast(), bkg.as_mut_ptr().cast(), H5P_DEFAULT) >= 0;
            H5Tclose(src);
            H5Tclose(file);
            H5Tclose(out);
            ok
        };
        buf.truncate(n * size_of(sp.dtype));
        ok
    }
}
