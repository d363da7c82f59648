//! The C ABI of vh5: the only module with `extern "C"` functions.
//!
//! Conventions every export follows (see docs/ARCHITECTURE.md):
//! - returns [`vh5_status`] (`VH5_OK` = 0); enum values are stable forever;
//! - inputs that carry enums (dtype codes, flags) are plain integers and are checked;
//! - on failure a message naming the culprit is stored in a thread-local slot, copied out with
//!   [`vh5_last_error_message`];
//! - a Rust panic never crosses the boundary: it becomes `VH5_ERR_PANIC`;
//! - output structs are fully written on success and zeroed on failure;
//! - no pointer is kept past the call, and vh5 never returns memory the caller must free.
//!
//! Sub-modules add the exports of each half of the library.

use std::cell::RefCell;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::{Error, ErrorKind, Result};

mod args;
pub mod document;
pub(crate) mod fork;
pub mod hdf5;
pub mod objects;
pub mod payload;
pub mod planner;
pub mod slices_write;
pub mod threads;
pub mod version;

/// Status code returned by every fallible vh5 function. Values are stable across releases.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum vh5_status {
    /// Success.
    VH5_OK = 0,
    /// A required pointer argument was NULL.
    VH5_ERR_NULL_ARGUMENT = 1,
    /// An argument has an invalid value (unknown flag bits, step 0, ndim mismatch, overlapping
    /// destination strides, ...).
    VH5_ERR_INVALID_ARGUMENT = 2,
    /// Input bytes are not a well-formed message (truncated, wrong types, inconsistent lengths,
    /// trailing bytes, duplicate keys, ...).
    VH5_ERR_MALFORMED = 3,
    /// Well-formed input vh5 deliberately does not handle (pickled objects, variable-length
    /// types, indefinite lengths where a view is required, more than 64 axes, ...).
    VH5_ERR_UNSUPPORTED = 4,
    /// A caller buffer is smaller than needed.
    VH5_ERR_BUFFER_TOO_SMALL = 5,
    /// A selection reaches outside a dataset or array extent.
    VH5_ERR_OUT_OF_BOUNDS = 6,
    /// Element types do not match, or a dtype is unknown.
    VH5_ERR_DTYPE = 7,
    /// libhdf5 reported a failure; the message carries its error stack.
    VH5_ERR_HDF5 = 8,
    /// Operating-system level failure: missing file, permission denied, not an HDF5 file.
    VH5_ERR_IO = 9,
    /// A Rust panic was caught at the ABI boundary (a bug in vh5; please report it).
    VH5_ERR_PANIC = 10,
    /// Data is not aligned for its element type and the caller required alignment.
    VH5_ERR_MISALIGNED = 11,
    /// Data is not in native byte order and the caller required native order.
    VH5_ERR_BYTE_ORDER = 12,
    /// A named object (dataset, group) does not exist.
    VH5_ERR_NOT_FOUND = 13,
    /// A handle is not a valid open object of the expected kind (closed, wrong type).
    VH5_ERR_INVALID_HANDLE = 14,
    /// The input is a server's JSON error body (e.g. Reductionist's `{"error": ...}`), not
    /// an array payload; the message carries the server's own text.
    VH5_ERR_SERVER_ERROR = 15,
    /// An allocation vh5 needed failed (the system refused the memory) or would exceed a
    /// configured limit; the message names the chunk (or row) and the number of bytes. Sizes
    /// read from a file (chunk shape, stored chunk size, decoded size) never abort the process.
    VH5_ERR_NO_MEMORY = 16,
}

/// Element type codes used in `dtype` fields (plain `uint32_t` in structs). Stable forever.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum vh5_dtype {
    /// Not a valid dtype (zero-initialised structs).
    VH5_DTYPE_INVALID = 0,
    VH5_DTYPE_BOOL = 1,
    VH5_DTYPE_INT8 = 2,
    VH5_DTYPE_INT16 = 3,
    VH5_DTYPE_INT32 = 4,
    VH5_DTYPE_INT64 = 5,
    VH5_DTYPE_UINT8 = 6,
    VH5_DTYPE_UINT16 = 7,
    VH5_DTYPE_UINT32 = 8,
    VH5_DTYPE_UINT64 = 9,
    VH5_DTYPE_FLOAT16 = 10,
    VH5_DTYPE_FLOAT32 = 11,
    VH5_DTYPE_FLOAT64 = 12,
    /// Two float32: real, imaginary.
    VH5_DTYPE_COMPLEX64 = 13,
    /// Two float64: real, imaginary.
    VH5_DTYPE_COMPLEX128 = 14,
    /// Any other fixed-size type, moved as raw bytes of a stated item size: records of
    /// libhdf5's native memory type of the dataset's type (compound members in member order
    /// at native alignment, native byte order; `vh5_dataset_mem_type` describes it), which
    /// may differ from the file's layout. Records in another layout of the same size are
    /// moved unchanged, fields in the wrong places: a caller passing records with named
    /// fields compares their layout with `vh5_dataset_mem_type` first.
    VH5_DTYPE_OPAQUE = 15,
}

/// Byte order codes (`byte_order` fields, plain `uint32_t`).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum vh5_byte_order {
    VH5_ORDER_LITTLE = 0,
    VH5_ORDER_BIG = 1,
    /// Not applicable (single-byte elements).
    VH5_ORDER_NONE = 2,
}

/// Major version of the library (the soname is `libvh5.so.<major>`).
pub const VH5_VERSION_MAJOR: u32 = 0;
/// Minor version.
pub const VH5_VERSION_MINOR: u32 = 1;
/// Patch version.
pub const VH5_VERSION_PATCH: u32 = 0;

impl From<ErrorKind> for vh5_status {
    fn from(k: ErrorKind) -> Self {
        use vh5_status::*;
        match k {
            ErrorKind::NullArgument => VH5_ERR_NULL_ARGUMENT,
            ErrorKind::InvalidArgument => VH5_ERR_INVALID_ARGUMENT,
            ErrorKind::Malformed => VH5_ERR_MALFORMED,
            ErrorKind::Unsupported => VH5_ERR_UNSUPPORTED,
            ErrorKind::BufferTooSmall => VH5_ERR_BUFFER_TOO_SMALL,
            ErrorKind::OutOfBounds => VH5_ERR_OUT_OF_BOUNDS,
            ErrorKind::Dtype => VH5_ERR_DTYPE,
            ErrorKind::Hdf5 => VH5_ERR_HDF5,
            ErrorKind::Io => VH5_ERR_IO,
            ErrorKind::Panic => VH5_ERR_PANIC,
            ErrorKind::Misaligned => VH5_ERR_MISALIGNED,
            ErrorKind::ByteOrder => VH5_ERR_BYTE_ORDER,
            ErrorKind::NotFound => VH5_ERR_NOT_FOUND,
            ErrorKind::InvalidHandle => VH5_ERR_INVALID_HANDLE,
            ErrorKind::ServerError => VH5_ERR_SERVER_ERROR,
            ErrorKind::NoMemory => VH5_ERR_NO_MEMORY,
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn set_last_error(msg: &str) {
    LAST_ERROR.with(|e| {
        let mut e = e.borrow_mut();
        e.clear();
        e.push_str(msg);
    });
}

/// Run the body of an export: clears the last error, catches panics, maps errors to a status
/// and stores the message, and counts the call in flight for its whole duration, so that a
/// `fork()` on another thread waits for it (`fork`). Every fallible `extern "C"` function in
/// vh5 goes through this.
pub(crate) fn guard<F: FnOnce() -> Result<()>>(f: F) -> vh5_status {
    let _in_flight = fork::enter();
    LAST_ERROR.with(|e| e.borrow_mut().clear());
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => vh5_status::VH5_OK,
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.kind.into()
        }
        Err(payload) => {
            let what = payload.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| payload.downcast_ref::<String>().cloned()).unwrap_or_else(|| "unknown panic".to_string());
            set_last_error(&format!("internal error (panic caught at the vh5 ABI boundary; please report): {what}"));
            vh5_status::VH5_ERR_PANIC
        }
    }
}

/// [`guard`] for `vh5_close`, a cleanup call: when it succeeds, the calling thread's last
/// error message is left as it was (as a successful `close(2)` leaves `errno`), so closing
/// handles between a failing call and the read of its message does not erase the message. A
/// garbage-collected binding closes handles at arbitrary points: Python's cyclic collector
/// runs object finalizers between a failing call and `vh5_last_error_message`. A failing
/// close replaces the message with its own.
pub(crate) fn guard_keeping_last_error<F: FnOnce() -> Result<()>>(f: F) -> vh5_status {
    let before = LAST_ERROR.with(|e| std::mem::take(&mut *e.borrow_mut()));
    let st = guard(f);
    if st == vh5_status::VH5_OK {
        LAST_ERROR.with(|e| *e.borrow_mut() = before);
    }
    st
}

/// Error for a NULL pointer argument `name`.
pub(crate) fn null_arg(name: &str) -> Error {
    Error::new(ErrorKind::NullArgument, format!("argument `{name}` is NULL"))
}

/// Borrow `len` elements at `ptr` (argument `name`) as a slice; NULL is accepted only when
/// `len` is 0 (`NullArgument` otherwise).
///
/// # Safety
/// `ptr` must be NULL or valid for reads of `len` elements for the lifetime `'a` (the
/// caller's contract), and not written by anyone during it.
pub(crate) unsafe fn slice_arg<'a, T>(ptr: *const T, len: usize, name: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(null_arg(name));
    }
    // SAFETY: non-NULL and valid for `len` reads for `'a` (this function's contract).
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Borrow `len` elements at `ptr` (argument `name`) as a mutable slice: a caller's output
/// buffer. NULL is accepted only when `len` is 0 (`NullArgument` otherwise).
///
/// # Safety
/// `ptr` must be NULL or valid for reads and writes of `len` elements for the lifetime `'a`,
/// and not accessed by anyone else during it.
pub(crate) unsafe fn slice_mut_arg<'a, T>(ptr: *mut T, len: usize, name: &str) -> Result<&'a mut [T]> {
    if len == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        return Err(null_arg(name));
    }
    // SAFETY: non-NULL and valid, exclusively, for `len` elements for `'a` (this function's
    // contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
}

/// Store `value` in the caller's out-parameter `ptr` (argument `name`): the one place an
/// export writes through an out-pointer (handles, counts, info and view structs).
/// `NullArgument` naming the argument when `ptr` is NULL (nothing written).
///
/// Exports call it first with the value the out-parameter holds on failure (-1 for a handle,
/// 0 for a count, a zeroed struct), which also checks it for NULL before any other argument,
/// and again with the result on success.
///
/// # Safety
/// `ptr` must be NULL or valid and aligned for one write of a `T`.
pub(crate) unsafe fn write_out<T>(ptr: *mut T, name: &str, value: T) -> Result<()> {
    if ptr.is_null() {
        return Err(null_arg(name));
    }
    // SAFETY: non-NULL, valid and aligned for one write (this function's contract); `write`
    // does not drop the old contents, which may be uninitialised.
    unsafe { ptr.write(value) };
    Ok(())
}

/// Whether the `n` bytes at `p` share a byte with the `len` bytes at `start` (by address; no
/// memory is read).
pub(crate) fn overlaps(p: *const u8, n: usize, (start, len): (*const u8, usize)) -> bool {
    let (a, b) = (p as usize, start as usize);
    n > 0 && len > 0 && a < b.saturating_add(len) && b < a.saturating_add(n)
}

/// Refuse an output argument `name` (`n` bytes at `p`) that shares memory with the input
/// message `buf` (`len` bytes) of a call that writes its outputs while it parses the input
/// (the parse would read its own output): `InvalidArgument` naming both and the byte offset.
/// A NULL output passes (its own check reports it). Called before anything is written.
pub(crate) fn refuse_output_in_input(name: &str, p: *const u8, n: usize, buf: *const u8, len: usize) -> Result<()> {
    refuse_output_in("buf", "the message", (buf, len), name, p, n)
}

/// [`refuse_output_in_input`] for an input argument `input` (`what` it is) of `len` bytes.
pub(crate) fn refuse_output_in(input: &str, what: &str, (buf, len): (*const u8, usize), name: &str, p: *const u8, n: usize) -> Result<()> {
    if !p.is_null() && overlaps(p, n, (buf, len)) {
        let at = (p as usize).wrapping_sub(buf as usize) as isize;
        bail!(InvalidArgument, "`{name}` ({n} bytes) overlaps `{input}` ({what}, {len} bytes) at byte offset {at} of {input}: outputs must not share memory with the input");
    }
    Ok(())
}

/// [`refuse_output_in`] for every output of `outputs` (name, address, bytes) and the
/// NUL-terminated string argument `input` at `s` (its bytes and the NUL; nothing when NULL):
/// a call writing an out-parameter before it reads its string would change the string.
///
/// # Safety
/// `s` must be NULL or point to a NUL-terminated string.
pub(crate) unsafe fn refuse_outputs_in_string(input: &str, s: *const c_char, outputs: &[(&str, *const u8, usize)]) -> Result<()> {
    if s.is_null() {
        return Ok(());
    }
    // SAFETY: non-NULL and NUL-terminated (this function's contract).
    let len = unsafe { std::ffi::CStr::from_ptr(s) }.to_bytes_with_nul().len();
    for &(name, p, n) in outputs {
        refuse_output_in(input, "a string with its NUL", (s.cast(), len), name, p, n)?;
    }
    Ok(())
}

/// Borrow a NUL-terminated C string argument as bytes (any bytes but NUL: HDF5 names and Unix
/// paths need not be UTF-8).
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string valid for the call.
pub(crate) unsafe fn bytes_arg<'a>(ptr: *const c_char, name: &str) -> Result<&'a [u8]> {
    if ptr.is_null() {
        return Err(null_arg(name));
    }
    // SAFETY: non-NULL and NUL-terminated, valid for `'a` (this function's contract).
    Ok(unsafe { std::ffi::CStr::from_ptr(ptr) }.to_bytes())
}

/// Copy the message of the last failure on the calling thread into `buf`.
///
/// `buf` (may be NULL when `cap` is 0) receives at most `cap - 1` bytes of UTF-8 text plus a
/// terminating NUL, like `snprintf`, cut at a character boundary so it stays valid UTF-8.
/// Returns the full length of the message in bytes (not counting the NUL), so a return value
/// `>= cap` means it was truncated. The message is the
/// empty string after a successful call, except `vh5_close`: a successful close leaves the
/// message of the thread's last failure as it was (cleanup between a failing call and this
/// read keeps its message). Thread-safe: each thread has its own message.
///
/// # Safety
/// `buf` must be NULL or valid for writes of `cap` bytes.
#[no_mangle]
pub unsafe extern "C" fn vh5_last_error_message(buf: *mut c_char, cap: usize) -> usize {
    catch_unwind(|| {
        LAST_ERROR.with(|e| {
            let e = e.borrow();
            // SAFETY: `buf` is NULL or valid for writes of `cap` bytes (the caller's contract).
            if let Ok(out @ [_, ..]) = unsafe { slice_mut_arg(buf.cast::<u8>(), cap, "buf") } {
                // Truncate at a UTF-8 character boundary, so the copy is always valid UTF-8.
                let mut n = e.len().min(out.len() - 1);
                while n > 0 && !e.is_char_boundary(n) {
                    n -= 1;
                }
                out[..n].copy_from_slice(&e.as_bytes()[..n]);
                out[n] = 0;
            }
            e.len()
        })
    })
    .unwrap_or(0)
}

/// The name of a status code as a static NUL-terminated string (`"VH5_OK"`,
/// `"VH5_ERR_MALFORMED"`, ...), or `"VH5_UNKNOWN_STATUS"` for a value vh5 does not define.
/// The pointer is valid for the life of the process; never free it. Thread-safe.
#[no_mangle]
pub extern "C" fn vh5_status_name(status: i32) -> *const c_char {
    match crate::error::status(status) {
        Some(s) => s.name.as_ptr(),
        None => c"VH5_UNKNOWN_STATUS".as_ptr(),
    }
}

/// The library version as a static NUL-terminated string, e.g. `"0.1.0"`. Matches
/// `VH5_VERSION_MAJOR/MINOR/PATCH` of the header the library was built with. Never free it.
#[no_mangle]
pub extern "C" fn vh5_version_string() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// The name of a dtype code as a static NUL-terminated string (`"float64"`, ...), or NULL for
/// an unknown code (including `VH5_DTYPE_INVALID`, 0): unlike `vh5_status_name`, which
/// returns the placeholder `"VH5_UNKNOWN_STATUS"`, a NULL here lets callers tell an unknown
/// code apart from a name, so check for NULL before printing it. Every dtype vh5 returns in
/// its output structs has a name. Never free it. Thread-safe.
#[no_mangle]
pub extern "C" fn vh5_dtype_name(dtype: u32) -> *const c_char {
    crate::dtype::Dtype::from_code(dtype).map_or(std::ptr::null(), |d| d.c_name().as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `vh5_dataset_info` is allocated by callers: a field added later must fit in what was
    /// trailing padding (`null_dataspace` did), never change the size or an offset.
    #[test]
    fn dataset_info_layout_is_stable() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<hdf5::vh5_dataset_info>(), 904);
        assert_eq!(offset_of!(hdf5::vh5_dataset_info, fill_value), 882);
        assert_eq!(offset_of!(hdf5::vh5_dataset_info, null_dataspace), 898);
        assert_eq!(offset_of!(hdf5::vh5_dataset_info, extent_may_change), 899);
    }

    /// The literal C enum (cbindgen needs one) agrees with `error::STATUSES` in numbers and
    /// names, and every error kind maps to its row's code.
    #[test]
    fn c_enum_matches_status_table() {
        use crate::error::STATUSES;
        use vh5_status::*;
        let all = [
            VH5_OK,
            VH5_ERR_NULL_ARGUMENT,
            VH5_ERR_INVALID_ARGUMENT,
            VH5_ERR_MALFORMED,
            VH5_ERR_UNSUPPORTED,
            VH5_ERR_BUFFER_TOO_SMALL,
            VH5_ERR_OUT_OF_BOUNDS,
            VH5_ERR_DTYPE,
            VH5_ERR_HDF5,
            VH5_ERR_IO,
            VH5_ERR_PANIC,
            VH5_ERR_MISALIGNED,
            VH5_ERR_BYTE_ORDER,
            VH5_ERR_NOT_FOUND,
            VH5_ERR_INVALID_HANDLE,
            VH5_ERR_SERVER_ERROR,
            VH5_ERR_NO_MEMORY,
        ];
        assert_eq!(all.len(), STATUSES.len());
        for (v, s) in all.iter().zip(STATUSES.iter()) {
            assert_eq!(*v as i32, s.code);
            assert_eq!(format!("{v:?}"), s.name_str());
            if let Some(k) = s.kind {
                assert_eq!(vh5_status::from(k), *v);
            }
        }
    }
    use std::ffi::CStr;

    /// The last error message copied through a buffer of `cap` bytes (NULL when 0), and the
    /// length `vh5_last_error_message` returned.
    fn last_message(cap: usize) -> (usize, String) {
        let mut buf = vec![0 as c_char; cap.max(1)];
        let p = if cap == 0 { std::ptr::null_mut() } else { buf.as_mut_ptr() };
        // SAFETY: `p` is NULL (cap 0) or holds `cap` bytes.
        let n = unsafe { vh5_last_error_message(p, cap) };
        // SAFETY: `buf` is NUL-terminated: by vh5, or still all zeros when cap is 0.
        (n, unsafe { CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap().to_owned())
    }

    /// A static string vh5 returned.
    fn static_str(p: *const c_char) -> &'static str {
        // SAFETY: vh5's name and version strings are static and NUL-terminated.
        unsafe { CStr::from_ptr(p) }.to_str().unwrap()
    }

    #[test]
    fn guard_maps_errors_and_panics() {
        let st = guard(|| Err(Error::new(ErrorKind::OutOfBounds, "row 3 axis 1: start 9 >= extent 4")));
        assert_eq!(st, vh5_status::VH5_ERR_OUT_OF_BOUNDS);
        let (n, s) = last_message(64);
        assert_eq!(s, "row 3 axis 1: start 9 >= extent 4");
        assert_eq!(n, s.len());
        // truncation: snprintf-like
        assert_eq!(last_message(4), (s.len(), "row".to_string()));

        let st = guard(|| panic!("boom"));
        assert_eq!(st, vh5_status::VH5_ERR_PANIC);
        assert!(last_message(0).0 > 0);

        // truncation never splits a UTF-8 character: "é" is 2 bytes
        guard(|| Err(Error::new(ErrorKind::Malformed, "aé")));
        assert_eq!(last_message(3), (3, "a".to_string()));

        assert_eq!(guard(|| Ok(())), vh5_status::VH5_OK);
        assert_eq!(last_message(0).0, 0);
    }

    #[test]
    fn names() {
        for (code, name) in
            [(0, "VH5_OK"), (3, "VH5_ERR_MALFORMED"), (15, "VH5_ERR_SERVER_ERROR"), (16, "VH5_ERR_NO_MEMORY"), (99, "VH5_UNKNOWN_STATUS"), (-1, "VH5_UNKNOWN_STATUS")]
        {
            assert_eq!(static_str(vh5_status_name(code)), name);
        }
        for d in crate::dtype::ALL_NUMERIC {
            assert_eq!(static_str(vh5_dtype_name(d.code())), d.name());
        }
        assert_eq!(static_str(vh5_dtype_name(15)), "opaque");
        assert!(vh5_dtype_name(0).is_null() && vh5_dtype_name(16).is_null());
        assert_eq!(static_str(vh5_version_string()), env!("CARGO_PKG_VERSION"));
        assert_eq!(env!("CARGO_PKG_VERSION"), format!("{VH5_VERSION_MAJOR}.{VH5_VERSION_MINOR}.{VH5_VERSION_PATCH}"));
    }
}
