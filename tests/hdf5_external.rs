//! Security: datasets that point at other files (external raw storage, external links;
//! virtual datasets are covered by tests/python/test_py_external.py) are refused with
//! `VH5_ERR_UNSUPPORTED` by default — at `vh5_dataset_open` and at every read and write of a
//! dataset id vh5 did not open with the allowance — and read normally with
//! `VH5_FILE_ALLOW_EXTERNAL`.

mod common;
#[path = "common/write.rs"]
mod write_common;

use std::ffi::CString;

use common::*;
use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5l::H5Lcreate_external;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::*;
use vh5::dtype::Dtype;
use vh5::ffi::hdf5::*;
use vh5::ffi::vh5_status::*;
use write_common::*;

fn cs(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// `path` holding dataset `x` (16 uint8) whose raw data is the first 16 bytes of `target`
/// (`H5Pset_external`), and a link `lnk` to dataset `/y` of `other` (`H5Lcreate_external`).
fn make(path: &std::path::Path, target: &std::path::Path, other: &std::path::Path) {
    let _s = vh5::hdf5::session();
    unsafe {
        let f = H5Fcreate(cs(other.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        let sp = H5Screate_simple(1, [4u64].as_ptr(), std::ptr::null());
        let d = H5Dcreate2(f, cs("y").as_ptr(), *H5T_STD_U8LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        assert!(H5Dwrite(d, *H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, [9u8, 8, 7, 6].as_ptr() as *const _) >= 0);
        H5Dclose(d);
        H5Sclose(sp);
        H5Fclose(f);

        let f = H5Fcreate(cs(path.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        let sp = H5Screate_simple(1, [16u64].as_ptr(), std::ptr::null());
        let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
        assert!(H5Pset_external(dcpl, cs(target.to_str().unwrap()).as_ptr(), 0, 16) >= 0);
        let d = H5Dcreate2(f, cs("x").as_ptr(), *H5T_STD_U8LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        assert!(d >= 0);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(sp);
        assert!(H5Lcreate_external(cs(other.to_str().unwrap()).as_ptr(), cs("/y").as_ptr(), f, cs("lnk").as_ptr(), H5P_DEFAULT, H5P_DEFAULT) >= 0);
        H5Fclose(f);
    }
}

fn open(path: &std::path::Path, flags: u32) -> i64 {
    let mut f = -1;
    let st = unsafe { vh5_file_open(cs(path.to_str().unwrap()).as_ptr(), flags, &mut f) };
    assert_eq!(st, VH5_OK, "{}", last_error());
    f
}

fn dopen(f: i64, name: &str) -> (vh5::ffi::vh5_status, i64, String) {
    let mut d = -1;
    let st = unsafe { vh5_dataset_open(f, cs(name).as_ptr(), &mut d) };
    (st, d, last_error())
}

fn read(d: i64, n: u64) -> (vh5::ffi::vh5_status, Vec<u8>, String) {
    let mut buf = vec![0u8; n as usize];
    let rows = [TRow { s: vec![0], d: vec![0], c: vec![n], ss: vec![1], ds: vec![1] }];
    let (st, m) = ffi_read(d, &mut buf, 0, Dtype::UInt8, 1, &[n], None, &rows, 0, false);
    (st, buf, m)
}

#[test]
fn external_storage_and_external_links_refused_unless_allowed() {
    let tmp = TempDir::new("external");
    let (p, secret, other) = (tmp.path("e.h5"), tmp.path("secret.bin"), tmp.path("other.h5"));
    std::fs::write(&secret, b"TOP SECRET BYTES and more").unwrap();
    make(&p, &secret, &other);

    // Default: refused at open, naming the dataset, the file and the target.
    let f = open(&p, 0);
    let (st, d, m) = dopen(f, "x");
    assert_eq!((st, d), (VH5_ERR_UNSUPPORTED, -1), "{m}");
    assert!(m.contains("`/x`") && m.contains("e.h5") && m.contains("secret.bin") && m.contains("VH5_FILE_ALLOW_EXTERNAL"), "{m}");
    let (st, d, m) = dopen(f, "lnk");
    assert_eq!((st, d), (VH5_ERR_UNSUPPORTED, -1), "{m}");
    assert!(m.contains("lnk") && m.contains("other.h5") && m.contains("/y") && m.contains("external link"), "{m}");
    ffi_close(&[f]);

    // A dataset id vh5 did not open (the caller's own libhdf5 call): refused at read and write.
    let (hf, hd) = {
        let _s = vh5::hdf5::session();
        unsafe {
            let hf = H5Fopen(cs(p.to_str().unwrap()).as_ptr(), H5F_ACC_RDWR, H5P_DEFAULT);
            (hf, H5Dopen2(hf, cs("x").as_ptr(), H5P_DEFAULT))
        }
    };
    assert!(hd >= 0);
    let (st, buf, m) = read(hd, 16);
    assert_eq!(st, VH5_ERR_UNSUPPORTED, "{m}");
    assert!(m.contains("external file") && m.contains("secret.bin"), "{m}");
    assert!(buf.iter().all(|&b| b == 0));
    let src = vec![1u8; 16];
    let (st, m) = ffi_write(hd, &src, &SrcLay::c(&[16], 1), Dtype::UInt8, 1, &[TRow { s: vec![0], d: vec![0], c: vec![16], ss: vec![1], ds: vec![1] }], 0);
    assert_eq!(st, VH5_ERR_UNSUPPORTED, "{m}");
    assert_eq!(std::fs::read(&secret).unwrap(), b"TOP SECRET BYTES and more", "the external file was written");
    {
        let _s = vh5::hdf5::session();
        unsafe {
            H5Dclose(hd);
            H5Fclose(hf);
        }
    }

    // Allowed: both read what libhdf5 reads.
    let f = open(&p, VH5_FILE_ALLOW_EXTERNAL);
    let (st, d, m) = dopen(f, "x");
    assert_eq!(st, VH5_OK, "{m}");
    let (st, buf, m) = read(d, 16);
    assert_eq!(st, VH5_OK, "{m}");
    assert_eq!(&buf, b"TOP SECRET BYTES");
    let (st, l, m) = dopen(f, "lnk");
    assert_eq!(st, VH5_OK, "{m}");
    let (st, buf, m) = read(l, 4);
    assert_eq!(st, VH5_OK, "{m}");
    assert_eq!(buf, vec![9, 8, 7, 6]);
    ffi_close(&[l, d, f]);
    // The allowance belongs to that file id only.
    let f = open(&p, 0);
    assert_eq!(dopen(f, "x").0, VH5_ERR_UNSUPPORTED);
    ffi_close(&[f]);
}
