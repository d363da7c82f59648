//! Which libhdf5 this process uses: its version (`H5get_libversion`), where it came from
//! (the system's shared library found at build time, or HDF5 built from source and linked
//! statically with the `static-hdf5` cargo feature) and whether it was built thread-safe
//! (`H5is_library_threadsafe`). Used by `vh5_hdf5_version`, `vh5 info --version` and the
//! message for files written with object formats newer than this libhdf5 reads.

use hdf5_sys::h5::{H5get_libversion, H5is_library_threadsafe};

use super::lock::H5Lock;
use crate::error::Result;

/// Where the linked libhdf5 comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A shared libhdf5 of the system (found by pkg-config / the default paths at build time;
    /// the dynamic loader picks the file at run time).
    System,
    /// HDF5 built from source by the `static-hdf5` cargo feature and linked statically.
    Vendored,
    /// h5py's libhdf5 (the copy an h5py wheel bundles, in `h5py.libs/` or `h5py/.dylibs/`):
    /// the h5py-bound build of libvh5 has no link-time libhdf5, and its HDF5 symbols resolved
    /// against the one h5py loaded (see docs/ARCHITECTURE.md).
    H5py,
}

impl Origin {
    /// `"system"`, `"vendored"` or `"h5py"` (the C API's `vh5_hdf5_origin` strings).
    pub fn name(self) -> &'static str {
        match self {
            Origin::System => "system",
            Origin::Vendored => "vendored",
            Origin::H5py => "h5py",
        }
    }
}

/// The libhdf5 in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LibInfo {
    pub major: u32,
    pub minor: u32,
    pub release: u32,
    /// libhdf5 was built with `--enable-threadsafe` (vh5 serialises every call anyway).
    pub threadsafe: bool,
    pub origin: Origin,
}

impl std::fmt::Display for LibInfo {
    /// `libhdf5 1.10.8 (system, not thread-safe)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ts = if self.threadsafe { "thread-safe" } else { "not thread-safe" };
        write!(f, "libhdf5 {}.{}.{} ({}, {ts})", self.major, self.minor, self.release, self.origin.name())
    }
}

/// The origin this library was built with (a shared-library build may still find itself
/// running on h5py's libhdf5: [`origin`]).
pub const ORIGIN: Origin = if cfg!(feature = "static-hdf5") { Origin::Vendored } else { Origin::System };

/// The version of the HDF5 headers this library was compiled against (major, minor, release).
pub fn header_version() -> (u32, u32, u32) {
    let v = hdf5_sys::HDF5_VERSION;
    (v.major as u32, v.minor as u32, v.micro as u32)
}

/// The path of the shared object that provides `H5get_libversion` in this process (`dladdr`),
/// `None` when it cannot be told (a static build: libvh5 itself).
pub fn library_file() -> Option<std::path::PathBuf> {
    // SAFETY: dladdr only reads the address; `info` is a local it fills; `dli_fname` is a
    // NUL-terminated string owned by the dynamic loader, copied out at once.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(H5get_libversion as *const libc::c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(info.dli_fname);
        Some(std::path::PathBuf::from(std::ffi::OsStr::from_encoded_bytes_unchecked(name.to_bytes())))
    }
}

/// Where the libhdf5 in use comes from: [`Origin::Vendored`] for a `static-hdf5` build;
/// [`Origin::H5py`] when the shared object providing libhdf5's symbols lies in h5py's package
/// (the directory `h5py.libs` of a Linux wheel or `h5py/.dylibs` of a macOS wheel: the h5py-bound build running
/// inside a Python process that imported h5py); [`Origin::System`] otherwise. Computed once.
pub fn origin() -> Origin {
    static O: std::sync::OnceLock<Origin> = std::sync::OnceLock::new();
    *O.get_or_init(|| {
        if ORIGIN == Origin::Vendored {
            return ORIGIN;
        }
        let dir = |p: Option<&std::path::Path>| p.and_then(|d| d.file_name()).and_then(|n| n.to_str()).map(str::to_owned);
        let in_h5py = library_file().is_some_and(|p| {
            let parent = p.parent();
            match dir(parent).as_deref() {
                Some("h5py.libs") => true,
                Some(".dylibs") => dir(parent.and_then(|d| d.parent())).as_deref() == Some("h5py"),
                _ => false,
            }
        });
        if in_h5py {
            Origin::H5py
        } else {
            Origin::System
        }
    })
}

/// Version, origin and thread-safety of the linked libhdf5. Errors: `Hdf5` when libhdf5
/// fails to report them (it does not in practice). Needs the lock.
pub fn library_info(lock: &H5Lock) -> Result<LibInfo> {
    let (mut major, mut minor, mut release) = (0, 0, 0);
    let mut ts: hdf5_sys::h5::hbool_t = 0;
    let _ = lock;
    // SAFETY: valid out-pointers; lock held. Plain status checks (no error-stack capture):
    // `hdf5::error` names this version in its messages, so this module does not import it.
    let (v, t) = unsafe { (H5get_libversion(&mut major, &mut minor, &mut release), H5is_library_threadsafe(&mut ts)) };
    if v < 0 || t < 0 {
        bail!(Hdf5, "libhdf5 did not report its version (H5get_libversion {v}, H5is_library_threadsafe {t})");
    }
    Ok(LibInfo { major, minor, release, threadsafe: ts != 0, origin: origin() })
}

/// `"1.10.8"`: the version of the linked libhdf5, `"?"` if it cannot be read. Needs the lock.
pub fn version_text(lock: &H5Lock) -> String {
    library_info(lock).map_or_else(|_| "?".into(), |i| format!("{}.{}.{}", i.major, i.minor, i.release))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_info_matches_the_linked_headers() {
        let s = super::super::session();
        let i = library_info(s.lock()).unwrap();
        assert!(i.major >= 1 && (i.major > 1 || i.minor >= 10), "{i}");
        assert_eq!(i.origin, ORIGIN, "the test binary links its libhdf5 (not h5py's)");
        assert_eq!(version_text(s.lock()), format!("{}.{}.{}", i.major, i.minor, i.release));
        assert!(i.to_string().starts_with(&format!("libhdf5 {}.{}.{} (", i.major, i.minor, i.release)), "{i}");
    }
}
