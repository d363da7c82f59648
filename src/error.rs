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

/// One `vh5_status` code: its number, C name, the [`ErrorKind`] that maps to it (`None` for
/// `VH5_OK`) and when it is returned (the README's status table is rendered from `when`).
#[derive(Debug, Clone, Copy)]
pub struct Status {
    /// The stable number (`vh5_status` value).
    pub code: i32,
    /// The C enumerator name, NUL-terminated (what `vh5_status_name` returns).
    pub name: &'static std::ffi::CStr,
    /// The error kind reported with this code; `None` only for `VH5_OK`.
    pub kind: Option<ErrorKind>,
    /// When the code is returned, in the words of the README's status table.
    pub when: &'static str,
}

impl Status {
    /// The C name as a `&str` (ASCII).
    pub fn name_str(&self) -> &'static str {
        self.name.to_str().unwrap_or("VH5_UNKNOWN_STATUS")
    }
}

/// Every status code, in code order: THE one definition of the numbers, names and meanings.
/// The C enum `vh5_status` (a literal enum, which cbindgen needs), `vh5_status_name`, the
/// README's status table and the Python error classes are derived from it or checked against
/// it by tests (`ffi::tests`, tests/status_table.rs, tests/python/test_py_abi.py).
pub const STATUSES: [Status; 17] = [
    Status { code: 0, name: c"VH5_OK", kind: None, when: "success" },
    Status { code: 1, name: c"VH5_ERR_NULL_ARGUMENT", kind: Some(ErrorKind::NullArgument), when: "a required pointer is NULL" },
    Status { code: 2, name: c"VH5_ERR_INVALID_ARGUMENT", kind: Some(ErrorKind::InvalidArgument), when: "bad value: unknown flag bits, step 0, ndim mismatch, overlapping destination strides, tables of the wrong length" },
    Status { code: 3, name: c"VH5_ERR_MALFORMED", kind: Some(ErrorKind::Malformed), when: "payload bytes are not a well-formed message: truncated, wrong types, duplicate keys, data length != prod(shape) × itemsize, trailing bytes, negative counts" },
    Status { code: 4, name: c"VH5_ERR_UNSUPPORTED", kind: Some(ErrorKind::Unsupported), when: "well-formed but refused: pickled msgpack-numpy objects, variable-length HDF5 types, indefinite lengths where a view is asked for, payloads with more than 64 axes, datasets/arrays with more than 32 (HDF5's limit)" },
    Status { code: 5, name: c"VH5_ERR_BUFFER_TOO_SMALL", kind: Some(ErrorKind::BufferTooSmall), when: "a caller buffer (or shape × strides) exceeds the declared length" },
    Status { code: 6, name: c"VH5_ERR_OUT_OF_BOUNDS", kind: Some(ErrorKind::OutOfBounds), when: "a row reaches outside the dataset or the destination (without `VH5_SLICES_CLIP`)" },
    Status { code: 7, name: c"VH5_ERR_DTYPE", kind: Some(ErrorKind::Dtype), when: "element types differ (without `VH5_SLICES_CONVERT`) or a dtype is unknown" },
    Status { code: 8, name: c"VH5_ERR_HDF5", kind: Some(ErrorKind::Hdf5), when: "libhdf5 failed (corrupt chunk, locked file, ...)" },
    Status { code: 9, name: c"VH5_ERR_IO", kind: Some(ErrorKind::Io), when: "missing or unreadable file, not an HDF5 file" },
    Status { code: 10, name: c"VH5_ERR_PANIC", kind: Some(ErrorKind::Panic), when: "a bug in vh5 was caught at the boundary (please report)" },
    Status { code: 11, name: c"VH5_ERR_MISALIGNED", kind: Some(ErrorKind::Misaligned), when: "data not aligned and `PAYLOAD_REQUIRE_ALIGNED` was given" },
    Status { code: 12, name: c"VH5_ERR_BYTE_ORDER", kind: Some(ErrorKind::ByteOrder), when: "data not native and `PAYLOAD_REQUIRE_NATIVE` was given" },
    Status { code: 13, name: c"VH5_ERR_NOT_FOUND", kind: Some(ErrorKind::NotFound), when: "no dataset at that path" },
    Status { code: 14, name: c"VH5_ERR_INVALID_HANDLE", kind: Some(ErrorKind::InvalidHandle), when: "closed or wrong kind of id" },
    Status { code: 15, name: c"VH5_ERR_SERVER_ERROR", kind: Some(ErrorKind::ServerError), when: "the bytes are a server's JSON error body; the message is the server's" },
    Status { code: 16, name: c"VH5_ERR_NO_MEMORY", kind: Some(ErrorKind::NoMemory), when: "an allocation vh5 needed failed (sizes come from the file: chunk shape, stored chunk size); the message names the chunk and the bytes. Never an abort" },
];

impl ErrorKind {
    /// The `vh5_status` number this kind is reported with (from [`STATUSES`]).
    pub const fn code(self) -> i32 {
        let mut i = 0;
        while i < STATUSES.len() {
            if let Some(k) = STATUSES[i].kind {
                if k as u8 == self as u8 {
                    return STATUSES[i].code;
                }
            }
            i += 1;
        }
        // Unreachable: every kind has a row (checked by `every_kind_has_one_status`).
        -1
    }
}

/// The table row of a status number, if vh5 defines it.
pub fn status(code: i32) -> Option<&'static Status> {
    STATUSES.iter().find(|s| s.code == code)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_one_status() {
        for (i, s) in STATUSES.iter().enumerate() {
            assert_eq!(s.code, i as i32, "STATUSES is in code order without gaps");
            assert_eq!(s.kind.is_none(), s.code == 0, "only VH5_OK has no kind");
            if let Some(k) = s.kind {
                assert_eq!(k.code(), s.code, "{k:?}");
                assert_eq!(STATUSES.iter().filter(|t| t.kind == Some(k)).count(), 1, "{k:?} in one row");
            }
        }
        assert!(status(99).is_none() && status(-1).is_none());
    }
}
