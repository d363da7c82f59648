//! Error values shared by every pure module.
//!
//! Pure modules (payload, slices, hdf5) return [`Error`]: a kind plus a human message that
//! names the culprit (argument, row, axis, key or byte offset). The ffi layer maps
//! [`ErrorKind`] onto the stable `vh5_status` codes of the C ABI and stores the message in
//! the calling thread's last-error slot.

use std::fmt;

/// What kind of failure happened. Each maps to exactly one C status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A required pointer argument was NULL.
    NullArgument,
    /// An argument has an invalid value (bad flag bits, step 0, ndim mismatch, overlapping strides...).
    InvalidArgument,
    /// Input bytes are not a well-formed message of the detected format (truncated, wrong types,
    /// data length inconsistent with shape and dtype, trailing bytes...).
    Malformed,
    /// Well-formed input that vh5 deliberately does not handle (pickled objects, variable-length
    /// types, indefinite-length strings where a view is required, too many axes...).
    Unsupported,
    /// A caller buffer is smaller than what the operation needs.
    BufferTooSmall,
    /// A selection reaches outside a dataset or array extent.
    OutOfBounds,
    /// Element types do not match, or a dtype is unknown.
    Dtype,
    /// libhdf5 reported a failure; the message carries its error stack.
    Hdf5,
    /// An operating-system level I/O failure (missing file, permission, not an HDF5 file).
    Io,
    /// A Rust panic was caught at the ABI boundary (a bug in vh5).
    Panic,
    /// Data is not aligned for its element type and the caller required alignment.
    Misaligned,
    /// Data is not in native byte order and the caller required native order.
    ByteOrder,
    /// A named object (dataset, group, key) does not exist.
    NotFound,
    /// A handle is not a valid open vh5/HDF5 object of the expected kind.
    InvalidHandle,
    /// The input is a JSON error body from a server (e.g. Reductionist), not an array payload.
    ServerError,
    /// An allocation vh5 needed failed, or its size (set by numbers in a file: chunk shape,
    /// stored chunk size) exceeds a configured limit; the message names the chunk and the bytes.
    NoMemory,
}

/// An error with its kind and a message naming the culprit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.kind, self.message)
    }
}

impl std::error::Error for Error {}

/// Result alias used across the crate.
pub type Result<T> = std::result::Result<T, Error>;

/// Build an [`Error`] with `format!` syntax: `err!(Malformed, "bad key {k:?} at byte {off}")`.
#[macro_export]
macro_rules! err {
    ($kind:ident, $($arg:tt)*) => {
        $crate::error::Error::new($crate::error::ErrorKind::$kind, format!($($arg)*))
    };
}

/// Return early with an [`Error`]: `bail!(OutOfBounds, "row {i} axis {j}: ...")`.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::err!($kind, $($arg)*))
    };
}
