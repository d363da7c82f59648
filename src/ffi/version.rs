//! C ABI: which libhdf5 vh5 uses (version, origin, thread-safety).

use std::ffi::c_char;

use super::{guard, vh5_status};
use crate::hdf5::version::{library_info, Origin, ORIGIN};

/// The version of the libhdf5 this library calls (`H5get_libversion`, e.g. 1, 10, 8) and
/// whether that libhdf5 was built thread-safe (`H5is_library_threadsafe`; 1 or 0 — vh5
/// serialises its own libhdf5 calls either way, see `vh5_set_num_threads`). Where it comes
/// from: `vh5_hdf5_origin`.
///
/// `major`, `minor`, `release`: out, may each be NULL (not written); `threadsafe`: out, may be
/// NULL. Nothing is kept past the call.
///
/// Returns `VH5_OK`; `VH5_ERR_HDF5` if libhdf5 fails to report them (the outputs are then
/// set to 0). Thread-safe (takes vh5's libhdf5 lock).
///
/// # Safety
/// Each non-NULL pointer must be valid for one write of its type.
#[no_mangle]
pub unsafe extern "C" fn vh5_hdf5_version(major: *mut u32, minor: *mut u32, release: *mut u32, threadsafe: *mut u8) -> vh5_status {
    let mut got = (0, 0, 0, 0u8);
    let st = guard(|| {
        let s = crate::hdf5::session();
        let i = library_info(s.lock())?;
        got = (i.major, i.minor, i.release, u8::from(i.threadsafe));
        Ok(())
    });
    for (p, v) in [(major, got.0), (minor, got.1), (release, got.2)] {
        if !p.is_null() {
            // SAFETY: the caller passes a valid pointer or NULL.
            unsafe { *p = v };
        }
    }
    if !threadsafe.is_null() {
        // SAFETY: as above.
        unsafe { *threadsafe = got.3 };
    }
    st
}

/// Where the libhdf5 of `vh5_hdf5_version` comes from, as a static NUL-terminated string:
/// `"system"` (a shared libhdf5 of the system, found when vh5 was built; the dynamic loader
/// picks the file at run time) or `"vendored"` (HDF5 built from source by the `static-hdf5`
/// cargo feature and linked statically into libvh5). Never NULL; never free it. Thread-safe.
#[no_mangle]
pub extern "C" fn vh5_hdf5_origin() -> *const c_char {
    match ORIGIN {
        Origin::System => c"system".as_ptr(),
        Origin::Vendored => c"vendored".as_ptr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn hdf5_version_and_origin() {
        let (mut a, mut b, mut c, mut ts) = (0u32, 0u32, 0u32, 9u8);
        // SAFETY: valid out-pointers.
        assert_eq!(unsafe { vh5_hdf5_version(&mut a, &mut b, &mut c, &mut ts) }, vh5_status::VH5_OK);
        let s = crate::hdf5::session();
        let i = library_info(s.lock()).unwrap();
        drop(s);
        assert_eq!((a, b, c, ts), (i.major, i.minor, i.release, u8::from(i.threadsafe)));
        assert!(a == 1 && b >= 10 || a >= 2, "{a}.{b}.{c}");
        // every pointer may be NULL
        // SAFETY: NULL pointers are allowed.
        assert_eq!(unsafe { vh5_hdf5_version(std::ptr::null_mut(), &mut b, std::ptr::null_mut(), std::ptr::null_mut()) }, vh5_status::VH5_OK);
        // SAFETY: vh5_hdf5_origin returns a static NUL-terminated string.
        let o = unsafe { CStr::from_ptr(vh5_hdf5_origin()) }.to_str().unwrap();
        assert_eq!(o, if cfg!(feature = "static-hdf5") { "vendored" } else { "system" });
    }
}
