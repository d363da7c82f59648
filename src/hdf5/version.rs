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
}

impl Origin {
    /// `"system"` or `"vendored"` (the C API's `vh5_hdf5_origin` strings).
    pub fn name(self) -> &'static str {
        match self {
            Origin::System => "system",
            Origin::Vendored => "vendored",
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

/// The origin this library was built with.
pub const ORIGIN: Origin = if cfg!(feature = "static-hdf5") { Origin::Vendored } else { Origin::System };

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
    Ok(LibInfo { major, minor, release, threadsafe: ts != 0, origin: ORIGIN })
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
        assert_eq!(i.origin, ORIGIN);
        assert_eq!(version_text(s.lock()), format!("{}.{}.{}", i.major, i.minor, i.release));
        assert!(i.to_string().starts_with(&format!("libhdf5 {}.{}.{} (", i.major, i.minor, i.release)), "{i}");
    }
}
