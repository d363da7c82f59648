//! Test helpers: create HDF5 files through hdf5-sys, read whole datasets with plain H5Dread,
//! and an index-loop reference of the many-slice semantics.
#![allow(dead_code)]

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use hdf5_sys::h5::hsize_t;
use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::*;
use vh5::dtype::Dtype;

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);
impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!("vh5-test-{tag}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Shared data directory (`VH5_SHARED_DATA` or `<repo>/../shared/data`), or None (tests skip).
pub fn shared_data() -> Option<PathBuf> {
    let p = std::env::var_os("VH5_SHARED_DATA").map(PathBuf::from).unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"));
    if p.join("real").is_dir() {
        Some(p)
    } else {
        None
    }
}

fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// Element size of a dtype in our tests (opaque: 8-byte compound, see `h5type`).
pub fn size_of(d: Dtype) -> usize {
    d.itemsize().unwrap_or(8)
}

/// An HDF5 type for `d` (a new id the caller closes): file type in the given byte order
/// (`big`) or the native memory type (`native`). Bool = h5py's enum over int8; complex =
/// h5py's compound {r, i}; float16 = IEEE half; opaque = compound {a: int32 @0, b: uint32 @4}
/// (naturally aligned, so its native memory type has the same 8-byte layout).
/// Close a datatype id made by [`h5type`], holding the libhdf5 lock (a libhdf5 built without
/// thread safety, as HDF5 2.x from source is, must never see two threads at once).
pub fn close_type(t: hid_t) {
    let _s = vh5::hdf5::session();
    // SAFETY: `t` is a datatype id the caller owns; the lock is held.
    unsafe { hdf5_sys::h5t::H5Tclose(t) };
}

pub fn h5type(d: Dtype, big: bool, native: bool) -> hid_t {
    // The session makes sure H5open ran (it initialises the H5T_* globals) and serialises.
    let _s = vh5::hdf5::session();
    unsafe {
        let le_be = |le: hid_t, be: hid_t, nat: hid_t| {
            H5Tcopy(if native {
                nat
            } else if big {
                be
            } else {
                le
            })
        };
        match d {
            Dtype::Int8 => le_be(*H5T_STD_I8LE, *H5T_STD_I8BE, *H5T_NATIVE_SCHAR),
            Dtype::Int16 => le_be(*H5T_STD_I16LE, *H5T_STD_I16BE, *H5T_NATIVE_SHORT),
            Dtype::Int32 => le_be(*H5T_STD_I32LE, *H5T_STD_I32BE, *H5T_NATIVE_INT),
            Dtype::Int64 => le_be(*H5T_STD_I64LE, *H5T_STD_I64BE, *H5T_NATIVE_LLONG),
            Dtype::UInt8 => le_be(*H5T_STD_U8LE, *H5T_STD_U8BE, *H5T_NATIVE_UCHAR),
            Dtype::UInt16 => le_be(*H5T_STD_U16LE, *H5T_STD_U16BE, *H5T_NATIVE_USHORT),
            Dtype::UInt32 => le_be(*H5T_STD_U32LE, *H5T_STD_U32BE, *H5T_NATIVE_UINT),
            Dtype::UInt64 => le_be(*H5T_STD_U64LE, *H5T_STD_U64BE, *H5T_NATIVE_ULLONG),
            Dtype::Float32 => le_be(*H5T_IEEE_F32LE, *H5T_IEEE_F32BE, *H5T_NATIVE_FLOAT),
            Dtype::Float64 => le_be(*H5T_IEEE_F64LE, *H5T_IEEE_F64BE, *H5T_NATIVE_DOUBLE),
            Dtype::Float16 => {
                let t = le_be(*H5T_IEEE_F32LE, *H5T_IEEE_F32BE, *H5T_NATIVE_FLOAT);
                assert!(H5Tset_fields(t, 15, 10, 5, 0, 10) >= 0);
                assert!(H5Tset_size(t, 2) >= 0);
                assert!(H5Tset_ebias(t, 15) >= 0);
                t
            }
            Dtype::Bool => {
                let t = H5Tenum_create(*H5T_NATIVE_SCHAR);
                for (n, v) in [("FALSE", 0i8), ("TRUE", 1i8)] {
                    H5Tenum_insert(t, c(n).as_ptr(), &v as *const i8 as *const _);
                }
                t
            }
            Dtype::Complex64 | Dtype::Complex128 => {
                let half = if d == Dtype::Complex64 { 4 } else { 8 };
                let base = h5type(if half == 4 { Dtype::Float32 } else { Dtype::Float64 }, big, native);
                let t = H5Tcreate(H5T_class_t::H5T_COMPOUND, 2 * half);
                H5Tinsert(t, c("r").as_ptr(), 0, base);
                H5Tinsert(t, c("i").as_ptr(), half, base);
                H5Tclose(base);
                t
            }
            Dtype::Opaque => {
                let a = h5type(Dtype::Int32, big, native);
                let b = h5type(Dtype::UInt32, big, native);
                let t = H5Tcreate(H5T_class_t::H5T_COMPOUND, 8);
                H5Tinsert(t, c("a").as_ptr(), 0, a);
                H5Tinsert(t, c("b").as_ptr(), 4, b);
                H5Tclose(a);
                H5Tclose(b);
                t
            }
        }
    }
}

/// How to create one dataset.
pub struct DsSpec<'a> {
    pub name: &'a str,
    pub shape: Vec<u64>,
    pub chunk: Option<Vec<u64>>,
    pub gzip: Option<u32>,
    pub shuffle: bool,
    pub dtype: Dtype,
    pub big_endian: bool,
    /// Native-order element bytes for the whole dataset (C order); None = never written.
    pub data: Option<&'a [u8]>,
    /// Fill value, one native element.
    pub fill: Option<&'a [u8]>,
}

impl<'a> DsSpec<'a> {
    pub fn new(name: &'a str, shape: &[u64], dtype: Dtype, data: Option<&'a [u8]>) -> Self {
        DsSpec { name, shape: shape.to_vec(), chunk: None, gzip: None, shuffle: false, dtype, big_endian: false, data, fill: None }
    }
}

/// A new file access property list (close it with `H5Pclose`) whose files get the format
/// libhdf5 1.10 writes by default — superblock 0, v1 object headers without checksums, v1
/// B-tree chunk indexes, symbol-table groups with a local heap — on every libhdf5 (2.x
/// writes newer structures by default). For tests that find and patch those structures.
pub fn fapl_v110_format() -> hid_t {
    // SAFETY: plain property-list calls; the caller holds a vh5 session (the libhdf5 lock).
    unsafe {
        let fapl = H5Pcreate(*H5P_CLS_FILE_ACCESS);
        assert!(fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_libver_t::H5F_LIBVER_EARLIEST, H5F_libver_t::H5F_LIBVER_V110) >= 0);
        fapl
    }
}

/// Create (truncate) `path` holding the given datasets. Names may contain groups ("g/x").
pub fn create_file(path: &Path, specs: &[DsSpec]) {
    let s = vh5::hdf5::session();
    let _ = &s;
    unsafe {
        let f = H5Fcreate(c(path.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        assert!(f >= 0, "H5Fcreate {path:?}");
        let lcpl = H5Pcreate(*H5P_CLS_LINK_CREATE);
        H5Pset_create_intermediate_group(lcpl, 1);
        for sp in specs {
            let space = if sp.shape.is_empty() {
                H5Screate(H5S_class_t::H5S_SCALAR)
            } else {
                let maxs: Vec<hsize_t> = sp.shape.clone();
                H5Screate_simple(sp.shape.len() as i32, sp.shape.as_ptr(), maxs.as_ptr())
            };
            let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
            if let Some(ch) = &sp.chunk {
                assert!(H5Pset_chunk(dcpl, ch.len() as i32, ch.as_ptr()) >= 0);
                if sp.shuffle {
                    assert!(H5Pset_shuffle(dcpl) >= 0);
                }
                if let Some(l) = sp.gzip {
                    assert!(H5Pset_deflate(dcpl, l) >= 0);
                }
            }
            let ftype = h5type(sp.dtype, sp.big_endian, false);
            let mtype = h5type(sp.dtype, false, true);
            if let Some(fv) = sp.fill {
                assert!(H5Pset_fill_value(dcpl, mtype, fv.as_ptr() as *const _) >= 0);
            }
            let d = H5Dcreate2(f, c(sp.name).as_ptr(), ftype, space, lcpl, dcpl, H5P_DEFAULT);
            assert!(d >= 0, "H5Dcreate2 {}", sp.name);
            if let Some(data) = sp.data {
                let n: u64 = sp.shape.iter().product();
                assert_eq!(data.len() as u64, n * size_of(sp.dtype) as u64);
                assert!(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.as_ptr() as *const _) >= 0);
            }
            H5Dclose(d);
            H5Tclose(ftype);
            H5Tclose(mtype);
            H5Pclose(dcpl);
            H5Sclose(space);
        }
        H5Pclose(lcpl);
        assert!(H5Fclose(f) >= 0);
    }
}

/// Write `data` (native) into the block `start`/`count` of an existing dataset.
pub fn write_block(path: &Path, name: &str, dtype: Dtype, start: &[u64], count: &[u64], data: &[u8]) {
    let _s = vh5::hdf5::session();
    unsafe {
        let f = H5Fopen(c(path.to_str().unwrap()).as_ptr(), H5F_ACC_RDWR, H5P_DEFAULT);
        assert!(f >= 0);
        let d = H5Dopen2(f, c(name).as_ptr(), H5P_DEFAULT);
        let fs = H5Dget_space(d);
        H5Sselect_hyperslab(fs, H5S_seloper_t::H5S_SELECT_SET, start.as_ptr(), std::ptr::null(), count.as_ptr(), std::ptr::null());
        let ms = H5Screate_simple(count.len() as i32, count.as_ptr(), std::ptr::null());
        let mt = h5type(dtype, false, true);
        assert!(H5Dwrite(d, mt, ms, fs, H5P_DEFAULT, data.as_ptr() as *const _) >= 0);
        H5Tclose(mt);
        H5Sclose(ms);
        H5Sclose(fs);
        H5Dclose(d);
        H5Fclose(f);
    }
}

/// Read a whole dataset with one plain H5Dread into `mem_type` (native-order bytes).
pub fn read_whole(path: &Path, name: &str, mem_type: hid_t, itemsize: usize) -> (Vec<u64>, Vec<u8>) {
    let _s = vh5::hdf5::session();
    unsafe {
        let f = H5Fopen(c(path.to_str().unwrap()).as_ptr(), H5F_ACC_RDONLY, H5P_DEFAULT);
        assert!(f >= 0, "open {path:?}");
        let d = H5Dopen2(f, c(name).as_ptr(), H5P_DEFAULT);
        assert!(d >= 0, "open {name}");
        let sp = H5Dget_space(d);
        let n = H5Sget_simple_extent_ndims(sp) as usize;
        let mut dims = vec![0u64; n];
        H5Sget_simple_extent_dims(sp, dims.as_mut_ptr(), std::ptr::null_mut());
        let total: u64 = dims.iter().product();
        let mut buf = vec![0u8; total as usize * itemsize];
        let st = H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.as_mut_ptr() as *mut _);
        assert!(st >= 0, "H5Dread of {path:?}:{name}: {}", vh5::hdf5::error::take_stack(_s.lock()));
        H5Sclose(sp);
        H5Dclose(d);
        H5Fclose(f);
        (dims, buf)
    }
}

/// One slice row for the reference and for the API.
#[derive(Debug, Clone)]
pub struct TRow {
    pub s: Vec<u64>,
    pub d: Vec<u64>,
    pub c: Vec<u64>,
    pub ss: Vec<u64>,
    pub ds: Vec<u64>,
}

/// Flattened tables (src_start, dst_start, count, src_step, dst_step).
pub fn tables(rows: &[TRow]) -> [Vec<u64>; 5] {
    let mut t: [Vec<u64>; 5] = Default::default();
    for r in rows {
        t[0].extend(&r.s);
        t[1].extend(&r.d);
        t[2].extend(&r.c);
        t[3].extend(&r.ss);
        t[4].extend(&r.ds);
    }
    t
}

/// Reference semantics with plain index loops. `dst` is described by byte strides and offset.
/// Returns Err(row, axis) for the first out-of-bounds row when `clip` is false (and then
/// writes nothing), Ok(()) otherwise.
#[allow(clippy::too_many_arguments)]
pub fn reference(
    src: &[u8],
    src_shape: &[u64],
    dst: &mut [u8],
    dst_shape: &[u64],
    dst_strides: &[i64],
    dst_offset: usize,
    itemsize: usize,
    rows: &[TRow],
    clip: bool,
) -> Result<(), (usize, usize)> {
    let n = src_shape.len();
    // Effective counts per row.
    let mut eff: Vec<Option<Vec<u64>>> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        if r.c.contains(&0) {
            eff.push(None);
            continue;
        }
        let mut cnt = vec![0u64; n];
        for j in 0..n {
            let mut k = 0u64;
            while k < r.c[j] {
                let a = r.s[j] as u128 + k as u128 * r.ss[j] as u128;
                let b = r.d[j] as u128 + k as u128 * r.ds[j] as u128;
                if a >= src_shape[j] as u128 || b >= dst_shape[j] as u128 {
                    break;
                }
                k += 1;
            }
            if k < r.c[j] && !clip {
                return Err((i, j));
            }
            cnt[j] = k;
        }
        eff.push(if cnt.contains(&0) { None } else { Some(cnt) });
    }
    let mut src_str = vec![itemsize as u64; n];
    for j in (0..n.saturating_sub(1)).rev() {
        src_str[j] = src_str[j + 1] * src_shape[j + 1];
    }
    for (r, cnt) in rows.iter().zip(eff) {
        let Some(cnt) = cnt else { continue };
        let total: u64 = cnt.iter().product();
        for flat in 0..total {
            let mut rem = flat;
            let mut so = 0u64;
            let mut doff = dst_offset as i64;
            for j in (0..n).rev() {
                let k = rem % cnt[j];
                rem /= cnt[j];
                so += (r.s[j] + k * r.ss[j]) * src_str[j];
                doff += (r.d[j] + k * r.ds[j]) as i64 * dst_strides[j];
            }
            let (so, doff) = (so as usize, doff as usize);
            dst[doff..doff + itemsize].copy_from_slice(&src[so..so + itemsize]);
        }
    }
    Ok(())
}

/// Call the C ABI `vh5_read_many_slices` on a Rust buffer.
#[allow(clippy::too_many_arguments)]
pub fn ffi_read(
    dset: i64,
    buf: &mut [u8],
    offset: usize,
    dtype: Dtype,
    itemsize: usize,
    shape: &[u64],
    strides: Option<&[i64]>,
    rows: &[TRow],
    flags: u32,
    with_steps: bool,
) -> (vh5::ffi::vh5_status, String) {
    use vh5::ffi::hdf5::*;
    let t = tables(rows);
    let a = vh5_array {
        base: buf.as_mut_ptr() as *mut _,
        base_len: buf.len(),
        offset,
        dtype: dtype.code(),
        itemsize,
        ndim: shape.len() as u32,
        shape: shape.as_ptr(),
        strides: strides.map_or(std::ptr::null(), |s| s.as_ptr()),
    };
    let (ss, ds) = if with_steps { (t[3].as_ptr(), t[4].as_ptr()) } else { (std::ptr::null(), std::ptr::null()) };
    let st = unsafe { vh5_read_many_slices(dset, &a, rows.len(), t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), ss, ds, flags) };
    (st, last_error())
}

pub fn last_error() -> String {
    let mut buf = vec![0 as std::ffi::c_char; 8192];
    let n = unsafe { vh5::ffi::vh5_last_error_message(buf.as_mut_ptr(), buf.len()) };
    let bytes: Vec<u8> = buf[..n.min(8191)].iter().map(|&b| b as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Open file + dataset through the C ABI.
pub fn ffi_open(path: &Path, name: &str) -> (i64, i64) {
    use vh5::ffi::hdf5::*;
    let mut f = -1;
    let mut d = -1;
    let st = unsafe { vh5_file_open(c(path.to_str().unwrap()).as_ptr(), 0, &mut f) };
    assert_eq!(st, vh5::ffi::vh5_status::VH5_OK, "{}", last_error());
    let st = unsafe { vh5_dataset_open(f, c(name).as_ptr(), &mut d) };
    assert_eq!(st, vh5::ffi::vh5_status::VH5_OK, "{}", last_error());
    (f, d)
}

pub fn ffi_close(ids: &[i64]) {
    for &id in ids {
        assert_eq!(vh5::ffi::hdf5::vh5_close(id), vh5::ffi::vh5_status::VH5_OK, "{}", last_error());
    }
}

/// Deterministic pseudo-random bytes.
pub fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Element data for a dtype that is valid for it (bool 0/1; floats finite, so conversions are exact).
pub fn data_for(d: Dtype, n: usize, seed: u64) -> Vec<u8> {
    let mut b = bytes(n * size_of(d), seed);
    match d {
        Dtype::Bool => b.iter_mut().for_each(|x| *x &= 1),
        Dtype::Float16 => b.chunks_mut(2).for_each(|e| e[1] &= 0x3b), // exponent < max
        Dtype::Float32 | Dtype::Complex64 => b.chunks_mut(4).for_each(|e| e[3] &= 0x3f),
        Dtype::Float64 | Dtype::Complex128 => b.chunks_mut(8).for_each(|e| e[7] &= 0x3f),
        _ => {}
    }
    b
}
