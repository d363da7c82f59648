//! Numeric file types whose fields match a standard layout but whose encoding differs
//! (floats with `H5Tset_norm(H5T_NORM_NONE)`, integers with `H5Tset_precision` /
//! `H5Tset_offset`) are valid types libhdf5 converts: vh5 must read and write them through
//! libhdf5's conversion (never raw byte copies or swaps), in every layout, planner mode and
//! thread count. The oracle is libhdf5's own `H5Dread` / `H5Dwrite` of the same elements.

mod common;
#[path = "common/write.rs"]
mod write_common;

use std::ffi::CString;

use common::*;
use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::*;
use vh5::dtype::Dtype;
use vh5::ffi::vh5_status::*;
use vh5::transfer::options::{with_overrides, PlannerMode};
use write_common::*;

const MODES: [PlannerMode; 3] = [PlannerMode::Auto, PlannerMode::Rows, PlannerMode::Chunks];
const SHAPE: [u64; 2] = [12, 10];

fn cs(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// The odd file types under test: (name, file type builder, native memory type, vh5 dtype,
/// memory item size).
/// (name, file type builder, native memory type, vh5 dtype, memory item size).
type OddType = (&'static str, Box<dyn Fn() -> hid_t>, hid_t, Dtype, usize);

fn odd_types() -> Vec<OddType> {
    let _s = vh5::hdf5::session(); // H5open ran: the predefined type globals are set
    unsafe {
        let float = |base: hid_t, norm: H5T_norm_t| -> Box<dyn Fn() -> hid_t> {
            Box::new(move || {
                let t = H5Tcopy(base);
                assert!(H5Tset_norm(t, norm) >= 0);
                t
            })
        };
        let int = |base: hid_t, prec: usize, off: usize| -> Box<dyn Fn() -> hid_t> {
            Box::new(move || {
                let t = H5Tcopy(base);
                assert!(H5Tset_precision(t, prec) >= 0);
                assert!(H5Tset_offset(t, off) >= 0);
                t
            })
        };
        vec![
            ("f32be_norm_none", float(*H5T_IEEE_F32BE, H5T_norm_t::H5T_NORM_NONE), *H5T_NATIVE_FLOAT, Dtype::Float32, 4),
            ("f32le_norm_none", float(*H5T_IEEE_F32LE, H5T_norm_t::H5T_NORM_NONE), *H5T_NATIVE_FLOAT, Dtype::Float32, 4),
            ("f64be_norm_none", float(*H5T_IEEE_F64BE, H5T_norm_t::H5T_NORM_NONE), *H5T_NATIVE_DOUBLE, Dtype::Float64, 8),
            ("i16le_precision12_offset2", int(*H5T_STD_I16LE, 12, 2), *H5T_NATIVE_SHORT, Dtype::Opaque, 2),
            ("i32be_precision20", int(*H5T_STD_I32BE, 20, 0), *H5T_NATIVE_INT, Dtype::Opaque, 4),
        ]
    }
}

/// Native element bytes of `SHAPE` elements representable in every type above.
fn values(dt: Dtype) -> Vec<u8> {
    let n = (SHAPE[0] * SHAPE[1]) as i64;
    match dt {
        Dtype::Float32 => (0..n).flat_map(|k| ((k - 60) as f32 * 0.375).to_ne_bytes()).collect(),
        Dtype::Float64 => (0..n).flat_map(|k| ((k - 60) as f64 * 0.375 + 1e-3).to_ne_bytes()).collect(),
        _ => (0..n).flat_map(|k| ((k - 60) as i16).to_ne_bytes()).collect(),
    }
}

/// Create `x` with file type `ftype` in layout `layout` (0 contiguous, 1 chunked, 2 chunked
/// shuffle+gzip), written by libhdf5 from `mtype` elements `data` (when given).
fn create(path: &std::path::Path, ftype: hid_t, layout: u8, mtype: hid_t, data: Option<&[u8]>) {
    unsafe {
        let f = H5Fcreate(cs(path.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        let sp = H5Screate_simple(2, SHAPE.as_ptr(), std::ptr::null());
        let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
        if layout > 0 {
            assert!(H5Pset_chunk(dcpl, 2, [5u64, 4].as_ptr()) >= 0);
        }
        if layout > 1 {
            assert!(H5Pset_shuffle(dcpl) >= 0);
            assert!(H5Pset_deflate(dcpl, 4) >= 0);
        }
        let d = H5Dcreate2(f, cs("x").as_ptr(), ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        assert!(d >= 0);
        if let Some(data) = data {
            assert!(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.as_ptr() as *const _) >= 0);
        }
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(sp);
        assert!(H5Fclose(f) >= 0);
    }
}

fn rows() -> Vec<TRow> {
    vec![
        TRow { s: vec![0, 0], d: vec![0, 0], c: vec![12, 10], ss: vec![1, 1], ds: vec![1, 1] },
        TRow { s: vec![3, 1], d: vec![12, 0], c: vec![2, 5], ss: vec![4, 2], ds: vec![1, 1] },
    ]
}

#[test]
fn non_ieee_float_and_odd_integer_reads_match_libhdf5() {
    let tmp = TempDir::new("oddtypes");
    let dst_shape = [14u64, 10];
    for (name, mk, mtype, dt, size) in odd_types() {
        let data = values(if size == 8 {
            Dtype::Float64
        } else if dt == Dtype::Float32 {
            Dtype::Float32
        } else {
            Dtype::Int16
        });
        let data: Vec<u8> = if dt == Dtype::Opaque && size == 4 { data.chunks(2).flat_map(|c| (i16::from_ne_bytes([c[0], c[1]]) as i32).to_ne_bytes()).collect() } else { data };
        for layout in 0..3u8 {
            let p = tmp.path(&format!("{name}_{layout}.h5"));
            {
                let _s = vh5::hdf5::session();
                let ft = mk();
                create(&p, ft, layout, mtype, Some(&data));
                close_type(ft);
            }
            // libhdf5's conversion of the whole dataset is the oracle.
            let (_, whole) = read_whole(&p, "x", mtype, size);
            let mut want = vec![0u8; (dst_shape[0] * dst_shape[1]) as usize * size];
            let strides = vh5::transfer::ArrayLayout::c_strides(&dst_shape, size).unwrap();
            reference(&whole, &SHAPE, &mut want, &dst_shape, &strides, 0, size, &rows(), false).unwrap();
            let (f, d) = ffi_open(&p, "x");
            for mode in MODES {
                for threads in [1, 2] {
                    let mut got = vec![0u8; want.len()];
                    let (st, m) = with_overrides(Some(mode), Some(threads), || ffi_read(d, &mut got, 0, dt, size, &dst_shape, None, &rows(), 0, true));
                    assert_eq!(st, VH5_OK, "{name} layout {layout} {mode:?}: {m}");
                    assert!(got == want, "{name} layout {layout} {mode:?}/{threads}: values differ from libhdf5's conversion");
                }
            }
            ffi_close(&[d, f]);
        }
    }
}

#[test]
fn non_ieee_float_and_odd_integer_writes_match_libhdf5() {
    // vh5 writes rows into one copy, libhdf5 writes the same elements into another; every
    // stored byte of both datasets must be equal.
    let tmp = TempDir::new("oddwrite");
    for (name, mk, mtype, dt, size) in odd_types() {
        let src = values(if size == 8 {
            Dtype::Float64
        } else if dt == Dtype::Float32 {
            Dtype::Float32
        } else {
            Dtype::Int16
        });
        let src: Vec<u8> = if dt == Dtype::Opaque && size == 4 { src.chunks(2).flat_map(|c| (i16::from_ne_bytes([c[0], c[1]]) as i32).to_ne_bytes()).collect() } else { src };
        for layout in 0..3u8 {
            let (pa, pb) = (tmp.path(&format!("{name}_{layout}_a.h5")), tmp.path(&format!("{name}_{layout}_b.h5")));
            {
                let _s = vh5::hdf5::session();
                let ft = mk();
                create(&pa, ft, layout, mtype, None);
                create(&pb, ft, layout, mtype, Some(&src));
                close_type(ft);
            }
            let (f, d) = open_rw(&pa, "x", true);
            let lay = SrcLay::c(&SHAPE, size);
            let row = TRow { s: vec![0, 0], d: vec![0, 0], c: SHAPE.to_vec(), ss: vec![1, 1], ds: vec![1, 1] };
            for mode in MODES {
                let (st, m) = with_overrides(Some(mode), Some(2), || ffi_write(d, &src, &lay, dt, size, std::slice::from_ref(&row), 0));
                assert_eq!(st, VH5_OK, "{name} layout {layout} {mode:?}: {m}");
            }
            ffi_close(&[d, f]);
            // Compare the stored (file type) bytes: read both with the file type itself.
            let ft = {
                let _s = vh5::hdf5::session();
                mk()
            };
            let fsize = unsafe { H5Tget_size(ft) };
            let (_, a) = read_whole(&pa, "x", ft, fsize);
            let (_, b) = read_whole(&pb, "x", ft, fsize);
            let _s = vh5::hdf5::session();
            close_type(ft);
            assert!(a == b, "{name} layout {layout}: vh5's stored bytes differ from libhdf5's");
        }
    }
}

#[test]
fn non_ieee_float_is_reported_as_converted() {
    let tmp = TempDir::new("oddinfo");
    let p = tmp.path("i.h5");
    let v = values(Dtype::Float32);
    {
        let _s = vh5::hdf5::session();
        let t = unsafe { H5Tcopy(*H5T_IEEE_F32BE) };
        unsafe { H5Tset_norm(t, H5T_norm_t::H5T_NORM_NONE) };
        create(&p, t, 2, *H5T_NATIVE_FLOAT, Some(&v));
        let info = vh5::hdf5::types::classify(_s.lock(), t).unwrap();
        close_type(t);
        assert_eq!(info.dtype, Some(Dtype::Float32));
        assert!(!info.plain && info.byte_order.is_none(), "{info:?}");
        assert!(info.description.contains("non-IEEE"), "{}", info.description);
    }
}

/// `vh5_dataset_mem_type` of a compound stored with its member offsets out of order
/// (a at 4, b at 0, big-endian b) and padded: the description is libhdf5's native memory
/// type (a at 0, b at 4, native order), the layout vh5 moves the records in; two-call
/// protocol and handle errors as documented.
#[test]
fn mem_type_describes_the_native_record_layout_not_the_files() {
    use vh5::ffi::objects::vh5_dataset_mem_type;
    let tmp = TempDir::new("memtype");
    let p = tmp.path("cmp.h5");
    {
        let _s = vh5::hdf5::session();
        unsafe {
            let t = H5Tcreate(H5T_class_t::H5T_COMPOUND, 12);
            assert!(H5Tinsert(t, cs("a").as_ptr(), 4, *H5T_STD_I32LE) >= 0);
            assert!(H5Tinsert(t, cs("b").as_ptr(), 0, *H5T_STD_I32BE) >= 0);
            let m = H5Tcreate(H5T_class_t::H5T_COMPOUND, 8);
            assert!(H5Tinsert(m, cs("a").as_ptr(), 0, *H5T_NATIVE_INT) >= 0);
            assert!(H5Tinsert(m, cs("b").as_ptr(), 4, *H5T_NATIVE_INT) >= 0);
            let data: Vec<u8> = (0..240i32).flat_map(|k| k.to_ne_bytes()).collect();
            create(&p, t, 1, m, Some(&data));
            close_type(t);
            close_type(m);
        }
    }
    let (f, d) = ffi_open(&p, "x");
    let mut n = 0usize;
    assert_eq!(unsafe { vh5_dataset_mem_type(d, std::ptr::null_mut(), 0, &mut n) }, VH5_OK);
    let mut buf = vec![0u8; n];
    let mut small = 0usize;
    assert_eq!(unsafe { vh5_dataset_mem_type(d, buf.as_mut_ptr(), n - 1, &mut small) }, VH5_ERR_BUFFER_TOO_SMALL);
    assert_eq!(small, n);
    assert_eq!(unsafe { vh5_dataset_mem_type(d, buf.as_mut_ptr(), n, &mut n) }, VH5_OK);
    let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
    let order = if cfg!(target_endian = "little") { "<" } else { ">" };
    let want = serde_json::json!({
        "itemsize": 8,
        "numpy": {"names": ["a", "b"], "formats": [format!("{order}i4"), format!("{order}i4")], "offsets": [0, 4], "itemsize": 8},
        "fill_value": "0000000000000000",
        "file_type": "a compound type of 12 bytes in the file, 8 bytes in memory, moved as raw bytes",
    });
    assert_eq!(v, want);
    assert_eq!(unsafe { vh5_dataset_mem_type(d, std::ptr::null_mut(), 0, std::ptr::null_mut()) }, VH5_ERR_NULL_ARGUMENT);
    assert_eq!(unsafe { vh5_dataset_mem_type(f, std::ptr::null_mut(), 0, &mut n) }, VH5_ERR_INVALID_HANDLE);
    assert_eq!(n, 0);
    ffi_close(&[d, f]);
}

/// `vh5_dataset_mem_type` of integers stored with padding bits (12 of 16 bits at offset 2,
/// 20 of 32): described by the native type libhdf5 converts them to (`"<i2"`, `"<i4"` on a
/// little-endian host), as its docs now say (they said such numbers were `null`), and the
/// bytes read under that description are the values written (libhdf5's own conversion).
#[test]
fn mem_type_of_integers_with_padding_bits_is_their_native_type() {
    use vh5::ffi::objects::vh5_dataset_mem_type;
    let tmp = TempDir::new("memtype-padding");
    let order = if cfg!(target_endian = "little") { "<" } else { ">" };
    for ((name, ftype, mtype, dt, itemsize), want) in odd_types().into_iter().skip(3).zip(["i2", "i4"]) {
        let p = tmp.path(&format!("{name}.h5"));
        let data: Vec<u8> = if itemsize == 2 { values(dt) } else { values(dt).chunks(2).flat_map(|b| i32::from(i16::from_ne_bytes([b[0], b[1]])).to_ne_bytes()).collect() };
        {
            let _s = vh5::hdf5::session();
            let t = ftype();
            create(&p, t, 1, mtype, Some(&data));
            close_type(t);
        }
        let (f, d) = ffi_open(&p, "x");
        let mut buf = vec![0u8; 256];
        let mut n = 0usize;
        assert_eq!(unsafe { vh5_dataset_mem_type(d, buf.as_mut_ptr(), buf.len(), &mut n) }, VH5_OK, "{name}: {}", last_error());
        let v: serde_json::Value = serde_json::from_slice(&buf[..n]).unwrap();
        assert_eq!((v["itemsize"].as_u64(), v["numpy"].as_str()), (Some(itemsize as u64), Some(format!("{order}{want}").as_str())), "{name}: {v}");
        let mut out = vec![0u8; data.len()];
        let shape = SHAPE;
        let a = vh5::ffi::hdf5::vh5_array {
            base: out.as_mut_ptr().cast(),
            base_len: out.len(),
            offset: 0,
            dtype: Dtype::Opaque.code(),
            itemsize,
            ndim: 2,
            shape: shape.as_ptr(),
            strides: std::ptr::null(),
        };
        let (z, c) = ([0u64; 2], SHAPE);
        let st = unsafe { vh5::ffi::hdf5::vh5_read_many_slices(d, &a, 1, z.as_ptr(), z.as_ptr(), c.as_ptr(), std::ptr::null(), std::ptr::null(), 0) };
        assert_eq!(st, VH5_OK, "{name}: {}", last_error());
        let (_, oracle) = read_whole(&p, "x", mtype, itemsize);
        assert_eq!((&out, &oracle), (&data, &data), "{name}: vh5 and libhdf5 read the values written");
        ffi_close(&[d, f]);
    }
}
