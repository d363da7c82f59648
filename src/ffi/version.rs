//! C ABI: which libhdf5 vh5 uses (version, origin, thread-safety).

use std::ffi::c_char;

use super::{guard, vh5_status};
use crate::hdf5::version::{header_version, library_info, origin, Origin};

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

/// The version of the HDF5 headers this library was compiled against (`H5_VERS_*` at build
/// time; e.g. 2, 2, 0). A shared build calls whatever libhdf5 the dynamic loader gives it at
/// run time (`vh5_hdf5_version`); a loader binding libvh5 to another program's libhdf5 (the
/// Python package and h5py's) checks that the major versions agree before any other call.
///
/// `major`, `minor`, `release`: out, may each be NULL (not written). Always succeeds (no
/// libhdf5 call); thread-safe.
///
/// # Safety
/// Each non-NULL pointer must be valid for one write of a `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn vh5_hdf5_build_version(major: *mut u32, minor: *mut u32, release: *mut u32) {
    let v = header_version();
    for (p, x) in [(major, v.0), (minor, v.1), (release, v.2)] {
        if !p.is_null() {
            // SAFETY: the caller passes a valid pointer or NULL.
            unsafe { *p = x };
        }
    }
}

/// Where the libhdf5 of `vh5_hdf5_version` comes from, as a static NUL-terminated string:
/// `"system"` (a shared libhdf5 of the system, found when vh5 was built; the dynamic loader
/// picks the file at run time), `"vendored"` (HDF5 built from source by the `static-hdf5`
/// cargo feature and linked statically into libvh5) or `"h5py"` (the h5py-bound build, whose
/// libhdf5 symbols resolved against the libhdf5 of an h5py wheel already loaded in the
/// process: the shared object providing them lies in h5py's package directory). Never NULL;
/// never free it. Thread-safe.
#[no_mangle]
pub extern "C" fn vh5_hdf5_origin() -> *const c_char {
    // Counted in flight: the first call fills a `OnceLock`, which a fork must not copy
    // half-filled.
    let _in_flight = super::fork::enter();
    match origin() {
        Origin::System => c"system".as_ptr(),
        Origin::Vendored => c"vendored".as_ptr(),
        Origin::H5py => c"h5py".as_ptr(),
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
        // The headers' version is the linked library's in a test binary (hdf5-sys checks it).
        let (mut x, mut y, mut z) = (0u32, 0u32, 0u32);
        // SAFETY: valid out-pointers.
        unsafe { vh5_hdf5_build_version(&mut x, &mut y, &mut z) };
        assert_eq!((x, y), (a, b));
        // SAFETY: NULL pointers are allowed.
        unsafe { vh5_hdf5_build_version(std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut()) };
    }
}
