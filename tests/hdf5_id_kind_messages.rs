//! Messages naming the kind of a libhdf5 id passed where a dataset id belongs
//! (`vh5_dataset_from_hdf5_id`): a transient datatype (`H5Tcopy`) was called "a named
//! datatype"; it is now told apart from a committed (named) one, and a path naming a
//! committed datatype still says "named datatype".

mod common;
use std::ffi::CString;

use common::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5p::H5P_DEFAULT;
use hdf5_sys::h5t::*;
use vh5::ffi::hdf5::*;
use vh5::ffi::vh5_status;

fn adopt_message(id: i64) -> String {
    let mut v = 0i64;
    // SAFETY: `v` is a valid out-pointer; the id is checked by vh5.
    let st = unsafe { vh5_dataset_from_hdf5_id(id, &mut v) };
    assert_eq!((st, v), (vh5_status::VH5_ERR_INVALID_HANDLE, -1));
    last_error()
}

#[test]
fn id_kind_transient_and_committed_datatypes_are_told_apart() {
    let dir = std::env::temp_dir().join(format!("vh5-idkind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = CString::new(dir.join("t.h5").to_str().unwrap()).unwrap();
    let (transient, committed, file) = {
        let _s = vh5::hdf5::session();
        // SAFETY: plain libhdf5 calls under the lock; every id is closed below.
        unsafe {
            let f = H5Fcreate(path.as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
            assert!(f >= 0);
            let t = H5Tcopy(*H5T_NATIVE_INT);
            let c = H5Tcopy(*H5T_NATIVE_INT);
            assert!(H5Tcommit2(f, c"named".as_ptr(), c, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT) >= 0);
            (t, c, f)
        }
    };
    let m = adopt_message(transient);
    assert!(m.contains(&format!("dataset_id {transient} is a libhdf5 id of a transient datatype (not stored in a file), not of a dataset")), "{m}");
    assert!(!m.contains("named"), "{m}");
    let m = adopt_message(committed);
    assert!(m.contains("is a libhdf5 id of a named (committed) datatype, not of a dataset"), "{m}");
    {
        let _s = vh5::hdf5::session();
        // SAFETY: ids opened above, closed once, under the lock.
        unsafe {
            H5Tclose(transient);
            H5Tclose(committed);
            H5Fclose(file);
        }
    }
    // opened by path: the object is committed, a named datatype
    let mut fh = 0i64;
    // SAFETY: valid NUL-terminated path and out-pointer.
    assert_eq!(unsafe { vh5_file_open(path.as_ptr(), 0, &mut fh) }, vh5_status::VH5_OK);
    let mut d = 0i64;
    // SAFETY: open file handle, NUL-terminated name, valid out-pointer.
    let st = unsafe { vh5_dataset_open(fh, c"named".as_ptr(), &mut d) };
    assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
    let m = last_error();
    assert!(m.contains("`named` is a named datatype, not a dataset"), "{m}");
    assert_eq!(vh5_close(fh), vh5_status::VH5_OK);
    let _ = std::fs::remove_dir_all(dir);
}
