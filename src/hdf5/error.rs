//! libhdf5 error handling: silence libhdf5's automatic error printing for our calls and turn
//! its error stack into the text of an [`Error`].
//!
//! libhdf5 prints its error stack to stderr by default whenever a call fails. vh5 reports
//! failures through status codes and messages instead, so an [`H5Session`] (the lock plus
//! the silencer) saves the current automatic error handler of the thread's default error
//! stack (`H5Eget_auto2`), disables it (`H5Eset_auto2(H5E_DEFAULT, NULL, NULL)`) and
//! restores it when dropped, all while holding the process-wide lock. Another library in the
//! process using the same libhdf5 keeps its own error printing for its own calls.
//!
//! When a call fails, [`hdf5_error`] walks the thread's default error stack (`H5Ewalk2`,
//! innermost frame last) into one line per frame and clears the stack.

use std::cell::Cell;
use std::ffi::{c_char, c_uint, c_void, CStr};
use std::fmt::Write as _;

use hdf5_sys::h5e::{H5E_auto2_t, H5E_direction_t, H5E_error2_t, H5Eclear2, H5Eget_auto2, H5Eget_msg, H5Eset_auto2, H5Ewalk2, H5E_DEFAULT};
use hdf5_sys::h5i::hid_t;

use super::lock::{lock, H5Lock};
use crate::error::{Error, ErrorKind};
use crate::names::escape_text;

/// The libhdf5 lock plus silenced automatic error printing, restored on drop. Create one at
/// the start of every operation that calls libhdf5 and keep it for the whole operation.
/// Reentrant: nested sessions on the same thread only take the (reentrant) lock; the
/// outermost one saves and restores the error handler.
pub struct H5Session {
    saved_func: H5E_auto2_t,
    saved_data: *mut c_void,
    /// This session silenced printing (the thread's outermost, printing was on): it restores it.
    restore: bool,
    lock: H5Lock,
}

impl H5Session {
    /// The lock this session holds.
    pub fn lock(&self) -> &H5Lock {
        &self.lock
    }
}

thread_local! {
    /// How many sessions the current thread has open (nesting depth).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Take the process-wide libhdf5 lock and silence libhdf5's automatic error printing until
/// the returned session is dropped.
pub fn session() -> H5Session {
    let lock = lock();
    let mut saved_func: H5E_auto2_t = None;
    let mut saved_data: *mut c_void = std::ptr::null_mut();
    let depth = DEPTH.with(|d| {
        let v = d.get();
        d.set(v + 1);
        v
    });
    let mut restore = depth == 0;
    if restore {
        // SAFETY: we hold the lock; the out-pointers are valid locals.
        unsafe {
            let known = H5Eget_auto2(H5E_DEFAULT, &mut saved_func, &mut saved_data) >= 0;
            if known && saved_func.is_none() {
                // Printing is off already (h5py turns it off on import): nothing to set or
                // restore (two libhdf5 calls of a ~5 us single-row read).
                restore = false;
            } else {
                if !known {
                    saved_func = None;
                    saved_data = std::ptr::null_mut();
                }
                H5Eset_auto2(H5E_DEFAULT, None, std::ptr::null_mut());
            }
        }
    }
    H5Session { saved_func, saved_data, restore, lock }
}

impl Drop for H5Session {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get() - 1));
        if self.restore {
            // SAFETY: we still hold the lock (the `lock` field drops after this body runs);
            // restores exactly what `session()` saved.
            unsafe {
                H5Eset_auto2(H5E_DEFAULT, self.saved_func, self.saved_data);
            }
        }
    }
}

unsafe extern "C" fn walk_frame(n: c_uint, err: *const H5E_error2_t, data: *mut c_void) -> hdf5_sys::h5::herr_t {
    // SAFETY: libhdf5 passes a valid frame; `data` is the `&mut String` given to H5Ewalk2.
    let (out, e) = unsafe { (&mut *(data as *mut String), &*err) };
    // SAFETY: the frame's strings are NULL or NUL-terminated, alive during the callback.
    let s = |p: *const c_char| if p.is_null() { String::new() } else { escape_text(unsafe { CStr::from_ptr(p) }.to_bytes()) };
    let msg = |id: hid_t| {
        let mut buf = [0 as c_char; 160];
        // SAFETY: `buf` holds the length passed; libhdf5 NUL-terminates what it writes; the
        // lock is held by the caller of H5Ewalk2.
        let n = unsafe { H5Eget_msg(id, std::ptr::null_mut(), buf.as_mut_ptr(), buf.len()) };
        if n > 0 {
            // SAFETY: NUL-terminated by libhdf5 (above).
            escape_text(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_bytes())
        } else {
            String::new()
        }
    };
    let _ = write!(out, "\n  #{n:03}: {}:{} in {}(): {} [{}: {}]", s(e.file_name), e.line, s(e.func_name), s(e.desc), msg(e.maj_num), msg(e.min_num));
    0
}

/// The text of the calling thread's libhdf5 error stack (outermost frame first, one line per
/// frame), then clears it. Empty when the stack is empty. Needs the lock.
pub fn take_stack(_lock: &H5Lock) -> String {
    let mut out = String::new();
    // SAFETY: we hold the lock; the callback only writes into `out`.
    unsafe {
        H5Ewalk2(H5E_DEFAULT, H5E_direction_t::H5E_WALK_DOWNWARD, Some(walk_frame), &mut out as *mut String as *mut c_void);
        H5Eclear2(H5E_DEFAULT);
    }
    out
}

/// Clear the calling thread's libhdf5 error stack (after a failure we handled ourselves).
pub fn clear_stack(_lock: &H5Lock) {
    // SAFETY: we hold the lock.
    unsafe {
        H5Eclear2(H5E_DEFAULT);
    }
}

/// An error of `kind` whose message is `context` followed by the libhdf5 error stack.
///
/// When the stack says libhdf5 met an object format version it does not know ("bad version
/// number for layout message", "... for datatype message": what HDF5 1.10 says about objects
/// written by HDF5 1.12 / 2.x with `libver='latest'`), the error is `Unsupported` instead and
/// the message says so, naming the feature, the linked libhdf5 and which build reads it, in
/// place of the stack (see [`newer_format`]).
pub fn hdf5_error(lock: &H5Lock, kind: ErrorKind, context: impl std::fmt::Display) -> Error {
    let stack = take_stack(lock);
    if let Some(feature) = newer_format(&stack) {
        return newer_format_error(lock, context, &feature);
    }
    if let Some(filter) = missing_filter(&stack) {
        let v = super::version::version_text(lock);
        return Error::new(
            ErrorKind::Unsupported,
            format!(
                "{context}: the linked libhdf5 {v} has no '{filter}' filter{MISSING_FILTER} (a vh5 linked to a libhdf5 \
                 that has it decodes them; the `static-hdf5` build has deflate but no szip){hint}; libhdf5 error stack:{stack}",
                hint = if szip_or_builtin(&filter) { "" } else { PLUGIN_HINT }
            ),
        );
    }
    if stack.is_empty() {
        Error::new(kind, format!("{context} (libhdf5 reported no error stack)"))
    } else {
        Error::new(kind, format!("{context}; libhdf5 error stack:{stack}"))
    }
}

/// The innermost frame of `stack` (text of [`take_stack`]) in which libhdf5 says an object
/// message carries a version it does not know (`bad version number for <message>`), as that
/// frame's description; `None` otherwise. libhdf5 1.10 says this of objects written in the
/// formats of HDF5 1.12 and later (e.g. layout message version 5, datatype version 5 for
/// complex numbers); a flipped version byte in a damaged file looks the same.
pub fn newer_format(stack: &str) -> Option<String> {
    stack.lines().rev().find_map(|l| {
        let desc = l.split_once("(): ")?.1;
        let desc = desc.rsplit_once(" [").map_or(desc, |(d, _)| d);
        desc.contains("bad version number for ").then(|| desc.trim().to_string())
    })
}

/// The filter named by the innermost frame of `stack` (text of [`take_stack`]) in which
/// libhdf5 says a required filter of a dataset's pipeline is not registered (`required filter
/// '<name>' is not registered`: the linked libhdf5 was built without it, e.g. szip, or it is a
/// plugin not found on `HDF5_PLUGIN_PATH`); `None` otherwise.
/// When the file stores no name for the filter (`required filter (name unavailable) is not
/// registered`) the name is `?` (the caller puts the pipeline's
/// missing filters in its place: `filter_support::name_dataset_of_missing_filter`).
pub fn missing_filter(stack: &str) -> Option<String> {
    stack.lines().rev().find_map(|l| {
        let rest = l.split_once("required filter ")?.1;
        if rest.starts_with("(name unavailable) is not registered") {
            return Some("?".to_string());
        }
        let (name, tail) = rest.strip_prefix('\'')?.split_once('\'')?;
        tail.trim_start().starts_with("is not registered").then(|| name.to_string())
    })
}

/// The words after the filter's name in every missing-filter error of [`hdf5_error`].
pub const MISSING_FILTER: &str = ", which this dataset's stored chunks need";

/// What a missing plugin filter's message adds: where libhdf5 looks for plugins.
pub const PLUGIN_HINT: &str = "; libhdf5 loads plugin filters from the directories in the environment variable HDF5_PLUGIN_PATH, \
     set before the process starts (for hdf5plugin's filters: python3 -c 'import hdf5plugin; print(hdf5plugin.PLUGIN_PATH)')";

/// Whether the filter named `name` (as libhdf5's error stack names it) is one of libhdf5's own.
fn szip_or_builtin(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["szip", "deflate", "shuffle", "fletcher32", "nbit", "scaleoffset"].iter().any(|b| n.contains(b))
}

/// The words of every [`newer_format_error`] message (to recognise it).
pub const NEWER_FORMAT: &str = "written with a newer HDF5 format than the linked libhdf5";

/// The libhdf5 release that reads the object format named by `feature` (the description
/// [`newer_format`] returns) when the linked libhdf5 `linked` (major, minor) does not, with
/// what that format is; `None` when the message is not one whose versions are known here.
///
/// From libhdf5's sources (the `*_ver_bounds` tables and version macros of 1.14.6 and 2.2.0):
/// layout message version 4 came with 1.10, version 5 (chunk sizes as "size of lengths")
/// with 2.0 (libver 'v200' = 'latest' of HDF5 2.x); datatype message version 4 (new reference
/// types) with 1.12, version 5 (complex numbers) with 2.0; hyperslab selection version 3 and
/// point selection version 2 (region references, virtual datasets) with 1.12. The stack does
/// not give the version found, so a datatype message on a libhdf5 older than 1.12 names both.
pub fn reader_of_newer_format(feature: &str, linked: (u32, u32)) -> Option<String> {
    let v2 = linked < (2, 0);
    let v112 = linked < (1, 12);
    if feature.contains("layout message") && v2 {
        Some("layout message version 5 (what HDF5 2.x writes with libver 'latest' or 'v200') needs libhdf5 2.0 or newer".into())
    } else if feature.contains("datatype message") && v112 {
        Some(
            "datatype message version 4 (HDF5 1.12 / 1.14 with libver 'v112' or later) needs libhdf5 1.12 or newer, version 5 (HDF5 2.x with libver \
             'latest' or 'v200', e.g. complex numbers) libhdf5 2.0 or newer"
                .into(),
        )
    } else if feature.contains("datatype message") && v2 {
        Some("datatype message version 5 (HDF5 2.x with libver 'latest' or 'v200', e.g. complex numbers) needs libhdf5 2.0 or newer".into())
    } else if (feature.contains("hyperslab selection") || feature.contains("point selection")) && v112 {
        Some("the selection encoding of HDF5 1.12 (libver 'v112' or later: region references, virtual datasets) needs libhdf5 1.12 or newer".into())
    } else {
        None
    }
}

/// The `Unsupported` error for an object written in a format newer than the linked libhdf5
/// reads: `{context}: written with a newer HDF5 format than the linked libhdf5 1.10.8 reads
/// (libhdf5: {feature}); {which release reads it and how to get there}`.
pub fn newer_format_error(lock: &H5Lock, context: impl std::fmt::Display, feature: &str) -> Error {
    let v = super::version::version_text(lock);
    let linked = super::version::library_info(lock).map_or((0, 0), |i| (i.major, i.minor));
    // The `static-hdf5` build is HDF5 2.2 (hdf5-metno-src 0.10): it reads every format up to
    // 2.x's; older formats are written by h5py with libver=('earliest', 'v110').
    let which = match (reader_of_newer_format(feature, linked), linked < (2, 0)) {
        (Some(need), _) => format!(
            "{need}: a vh5 built against such a libhdf5 reads it (e.g. with the `static-hdf5` cargo feature, which builds HDF5 2.2 from source), or write \
             the file with h5py's libver=('earliest', 'v110')"
        ),
        (None, true) => "a vh5 built against the HDF5 release that wrote it reads it (e.g. with the `static-hdf5` cargo feature, which builds HDF5 2.2 from \
                         source), or write the file with h5py's libver=('earliest', 'v110')"
            .into(),
        (None, false) => "a vh5 built against the HDF5 release that wrote it reads it, or write the file with an older format (h5py's libver)".into(),
    };
    Error::new(
        ErrorKind::Unsupported,
        format!("{context}: written with a newer HDF5 format than the linked libhdf5 {v} reads (libhdf5: {feature}); {which}. If no newer HDF5 wrote the file, it is damaged"),
    )
}

/// Check the return value of a libhdf5 call that signals failure with a negative value
/// (`herr_t`, `hid_t`, `htri_t`, `ssize_t`, `int`): returns it unchanged when `>= 0`, else a
/// [`ErrorKind::Hdf5`] error naming `what` with the error stack.
pub fn check<T: Copy + PartialOrd + Default>(lock: &H5Lock, ret: T, what: impl std::fmt::Display) -> crate::error::Result<T> {
    if ret < T::default() {
        Err(hdf5_error(lock, ErrorKind::Hdf5, what))
    } else {
        Ok(ret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_is_captured_with_stack_and_not_printed() {
        let s = session();
        // SAFETY: closing an invalid id is a defined libhdf5 failure.
        let r = unsafe { hdf5_sys::h5d::H5Dclose(-42) };
        let e = check(s.lock(), r, "closing dataset -42").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Hdf5);
        assert!(e.message.starts_with("closing dataset -42; libhdf5 error stack:"), "{}", e.message);
        assert!(e.message.contains("H5Dclose"), "{}", e.message);
        // The stack was cleared.
        assert!(take_stack(s.lock()).is_empty());
        assert_eq!(check(s.lock(), 5i64, "fine").unwrap(), 5);
    }

    #[test]
    fn newer_format_is_the_innermost_bad_version_frame() {
        let stack = "\n  #000: H5O.c:113 in H5Oopen(): unable to open object [Object header: Can't open object]\n  #009: ../../../src/H5Olayout.c:114 in H5O__layout_decode(): bad version number for layout message [Object header: Unable to load metadata into cache]";
        assert_eq!(newer_format(stack).as_deref(), Some("bad version number for layout message"));
        // a flipped object-header version byte is damage, not a newer message format
        assert_eq!(newer_format("\n  #003: H5Ocache.c:1 in H5O__cache_deserialize(): bad object header version number [Object header: Bad value]"), None);
        assert_eq!(newer_format(""), None);
        let s = session();
        let e = newer_format_error(s.lock(), "file `a.h5`, dataset `/x`", "bad version number for layout message");
        assert_eq!(e.kind, ErrorKind::Unsupported);
        let v = super::super::version::library_info(s.lock()).unwrap();
        let want = format!("file `a.h5`, dataset `/x`: written with a newer HDF5 format than the linked libhdf5 {}.{}.{} reads", v.major, v.minor, v.release);
        assert!(e.message.starts_with(&want), "{}", e.message);
        assert!(e.message.contains("(libhdf5: bad version number for layout message)"), "{}", e.message);
        // the release that reads it: layout message version 5 is HDF5 2.x's (1.14 cannot read
        // it either); static-hdf5 (HDF5 2.2) reads it where the linked libhdf5 is older
        assert_eq!(e.message.contains("layout message version 5") && e.message.contains("needs libhdf5 2.0 or newer"), (v.major, v.minor) < (2, 0), "{}", e.message);
        assert_eq!(e.message.contains("static-hdf5"), (v.major, v.minor) < (2, 0), "{}", e.message);
    }

    #[test]
    fn newer_format_names_the_libhdf5_release_that_reads_it() {
        let layout = "bad version number for layout message";
        for linked in [(1, 10), (1, 12), (1, 14)] {
            assert!(reader_of_newer_format(layout, linked).unwrap().contains("needs libhdf5 2.0 or newer"), "{linked:?}");
        }
        assert_eq!(reader_of_newer_format(layout, (2, 0)), None);
        let dtype = "bad version number for datatype message";
        let on110 = reader_of_newer_format(dtype, (1, 10)).unwrap();
        assert!(on110.contains("needs libhdf5 1.12 or newer") && on110.contains("libhdf5 2.0 or newer"), "{on110}");
        let on114 = reader_of_newer_format(dtype, (1, 14)).unwrap();
        assert!(on114.contains("version 5") && on114.contains("needs libhdf5 2.0 or newer") && !on114.contains("1.12 or newer"), "{on114}");
        assert!(reader_of_newer_format("bad version number for hyperslab selection", (1, 10)).unwrap().contains("1.12 or newer"));
        assert_eq!(reader_of_newer_format("bad version number for hyperslab selection", (1, 14)), None);
        assert_eq!(reader_of_newer_format("bad version number for fill value message", (1, 10)), None);
    }

    #[test]
    fn missing_filter_is_the_innermost_not_registered_frame() {
        let stack = "\n  #000: H5D.c:1051 in H5Dread(): can't synchronously read data [Dataset: Read failed]\n  #008: H5Z.c:1441 in H5Z_pipeline(): required filter 'szip' is not registered [Data filters: Read failed]\n  #009: H5PLint.c:280 in H5PL_load(): can't find plugin. [Plugin: Object not found]";
        assert_eq!(missing_filter(stack).as_deref(), Some("szip"));
        assert_eq!(missing_filter("\n  #008: H5Z.c:1 in H5Z_pipeline(): filter returned failure during read [Data filters: Read failed]"), None);
        assert_eq!(missing_filter(""), None);
        let unnamed = "\n  #008: H5Z.c:1444 in H5Z_pipeline(): required filter (name unavailable) is not registered [Data filters: Read failed]";
        assert_eq!(missing_filter(unnamed).as_deref(), Some("?"));
    }

    #[test]
    fn session_restores_auto_printing() {
        let _outer = session();
        {
            let _inner = session();
        }
        let mut f: H5E_auto2_t = None;
        let mut d: *mut c_void = std::ptr::null_mut();
        // SAFETY: lock held by `_outer`.
        unsafe { H5Eget_auto2(H5E_DEFAULT, &mut f, &mut d) };
        // Inside the outer session printing is still off after the inner one ended.
        assert!(f.is_none());
        drop(_outer);
        let _l = lock();
        // SAFETY: lock held by `_l`.
        unsafe { H5Eget_auto2(H5E_DEFAULT, &mut f, &mut d) };
        assert!(f.is_some(), "default libhdf5 error printer restored");
    }
}
