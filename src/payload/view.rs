//! What decoding a payload produces: the view ([`PayloadView`]) and its parts (format,
//! Reductionist layout, count, shape), the parse result every format's decoder returns
//! (`Parsed`), the limits, and the checks shared by the decoders. The bottom of the payload
//! modules: it imports none of them.

use crate::dtype::{ByteOrder, Dtype};
use crate::error::Result;

/// cbindgen:ignore
/// Most axes a payload may have (`PAYLOAD_MAX_NDIM` in C). More is `Unsupported`.
pub const MAX_NDIM: usize = 64;
/// cbindgen:ignore
/// Deepest nesting of a `count` array (`PAYLOAD_MAX_COUNT_DEPTH` in C): `[[1,2],[3,4]]` has
/// depth 2. Deeper is `Unsupported`.
pub const MAX_COUNT_DEPTH: usize = 64;

/// Which kind of message was detected (from its first byte, see [`super::detect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A CBOR map shaped like a Reductionist response (or a client fixture of it).
    Reductionist = 1,
    /// A bare RFC 8746 typed array (tags 64–87): 1-D.
    TypedArray = 2,
    /// An RFC 8746 multi-dimensional array (tag 40 row-major, 1040 column-major).
    Multidim = 3,
    /// A msgpack-numpy map (`nd`, `type`, `kind`, `shape`, `data`).
    MsgpackNumpy = 4,
}

/// Which Reductionist response layout a CBOR map has (only for [`Format::Reductionist`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Not a Reductionist map.
    None = 0,
    /// reductionist-rs 0.12.x: exactly `bytes, dtype, shape, count, byte_order` (shape and
    /// count arrays). A 0.13.0 response without `*_as_bytes` keys is identical on the wire
    /// and is reported as this layout.
    Reductionist0_12 = 1,
    /// reductionist-rs 0.13.0: the 0.12 keys plus `shape_as_bytes` and/or `count_as_bytes`,
    /// present only when non-empty.
    Reductionist0_13_0 = 2,
    /// reductionist-rs 0.13.1: always the 7 keys.
    Reductionist0_13_1 = 3,
    /// Any other map vh5 accepts: client-side fixtures (count as a bare integer or nested
    /// arrays, missing `shape` / `byte_order`), typed-array tags, unknown extra keys.
    Client = 4,
}

/// How `count` (non-missing elements per result element) is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountForm {
    /// No count in the message.
    Absent = 0,
    /// A bare integer ([`CountInfo::scalar`]).
    Scalar = 1,
    /// A byte string of fixed-width integers (`count_as_bytes`, or a typed array):
    /// [`CountInfo::bytes`] views it.
    Bytes = 2,
    /// A CBOR integer array, possibly nested: decode with [`super::decode_count`].
    Array = 3,
}

/// Where and how the count is stored. Produced by [`super::decode_view`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountInfo<'a> {
    pub form: CountForm,
    /// Element type: of the bytes for [`CountForm::Bytes`] (int64 for Reductionist's
    /// `count_as_bytes`); int64 (what [`super::decode_count`] produces) for `Scalar` / `Array`;
    /// `None` when absent.
    pub dtype: Option<Dtype>,
    /// Byte order of the bytes for [`CountForm::Bytes`] (None for 1-byte types and other forms).
    pub byte_order: Option<ByteOrder>,
    /// Number of count elements (0 absent, 1 scalar, leaves of a nested array).
    pub len: u64,
    /// The value for [`CountForm::Scalar`], else 0.
    pub scalar: i64,
    /// For [`CountForm::Bytes`], the raw bytes (borrowing the input); else `None`.
    pub bytes: Option<&'a [u8]>,
    /// Byte offset in the input of the count value: the array head for `Array`, the integer
    /// head for `Scalar`, the first content byte for `Bytes`; 0 when absent.
    pub offset: usize,
}

impl CountInfo<'_> {
    pub(crate) const ABSENT: CountInfo<'static> = CountInfo { form: CountForm::Absent, dtype: None, byte_order: None, len: 0, scalar: 0, bytes: None, offset: 0 };
}

/// A fixed-capacity shape (at most [`MAX_NDIM`] axes, no allocation).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    ndim: usize,
    dims: [u64; MAX_NDIM],
}

impl Shape {
    /// The empty shape `()` of a scalar.
    pub const SCALAR: Shape = Shape { ndim: 0, dims: [0; MAX_NDIM] };

    /// A shape from a slice; `None` when it has more than [`MAX_NDIM`] axes.
    pub fn from_slice(dims: &[u64]) -> Option<Shape> {
        let mut s = Shape::SCALAR;
        for &d in dims {
            s.push(d).ok()?;
        }
        Some(s)
    }

    /// Append an axis; `Err(())` when full.
    pub(crate) fn push(&mut self, d: u64) -> std::result::Result<(), ()> {
        if self.ndim == MAX_NDIM {
            return Err(());
        }
        self.dims[self.ndim] = d;
        self.ndim += 1;
        Ok(())
    }

    /// Number of axes.
    pub fn ndim(&self) -> usize {
        self.ndim
    }

    /// The extents, one per axis, in elements.
    pub fn as_slice(&self) -> &[u64] {
        &self.dims[..self.ndim]
    }

    /// prod(shape), `None` on u64 overflow (1 for a scalar).
    pub fn nelements(&self) -> Option<u64> {
        self.as_slice().iter().try_fold(1u64, |a, &d| a.checked_mul(d))
    }
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_slice())
    }
}

/// A decoded payload: everything needed to read the array in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadView<'a> {
    /// The data bytes, borrowing the caller's input (`data_len` = `data.len()` bytes).
    pub data: &'a [u8],
    /// `data` starts this many bytes into the input.
    pub data_offset: usize,
    pub format: Format,
    pub layout: Layout,
    pub dtype: Dtype,
    /// Wire byte order of `data`; `None` for 1-byte element types.
    pub byte_order: Option<ByteOrder>,
    /// `data` is aligned (in memory, not just by offset) for its element type
    /// (alignment = [`Dtype::swap_unit`]: complex numbers align like their halves).
    pub aligned: bool,
    /// Elements are in column-major (Fortran) order of `shape` (RFC 8746 tag 1040 only).
    /// Everywhere else, C order.
    pub fortran_order: bool,
    pub shape: Shape,
    /// prod(shape) (overflow-checked); `data.len() == nelements * itemsize` always holds.
    pub nelements: u64,
    pub count: CountInfo<'a>,
}

impl PayloadView<'_> {
    /// Size of one element in bytes.
    pub fn itemsize(&self) -> usize {
        self.dtype.itemsize().unwrap_or(1)
    }

    /// True when the host must byte-swap the data to read it natively.
    pub fn needs_swap(&self) -> bool {
        self.byte_order.is_some_and(|o| o.needs_swap())
    }
}

/// Where the data lies: one contiguous slice, or an indefinite-length (chunked) CBOR byte
/// string that only [`super::copy_data`] can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataLoc<'a> {
    Contiguous {
        data: &'a [u8],
        offset: usize,
    },
    /// `head` is the offset of the indefinite byte-string head (0x5f); `len` the total bytes.
    Chunked {
        head: usize,
        len: usize,
    },
}

/// The result of parsing any format, before the view-only checks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parsed<'a> {
    pub data: DataLoc<'a>,
    pub format: Format,
    pub layout: Layout,
    pub dtype: Dtype,
    pub byte_order: Option<ByteOrder>,
    pub fortran_order: bool,
    pub shape: Shape,
    pub nelements: u64,
    pub count: CountInfo<'a>,
}

/// Byte order to report for `dtype` given the wire order: `None` for 1-byte types.
pub(crate) fn effective_order(dtype: Dtype, order: ByteOrder) -> Option<ByteOrder> {
    if dtype.itemsize().unwrap_or(1) == 1 {
        None
    } else {
        Some(order)
    }
}

/// Check `data_len == prod(shape) * itemsize` (overflow-checked) and return prod(shape).
pub(crate) fn check_data_len(shape: &Shape, dtype: Dtype, data_len: usize, what: &str) -> Result<u64> {
    let item = dtype.itemsize().unwrap_or(1) as u64;
    let n = shape.nelements().ok_or_else(|| err!(Malformed, "{what}: prod(shape {:?}) overflows 64 bits", shape.as_slice()))?;
    let need = n.checked_mul(item).ok_or_else(|| err!(Malformed, "{what}: prod(shape {:?}) = {n} elements x itemsize {item} overflows 64 bits", shape.as_slice()))?;
    if need != data_len as u64 {
        bail!(Malformed, "{what}: data length {data_len} bytes != prod(shape {:?}) = {n} elements x itemsize {item} ({}) = {need} bytes", shape.as_slice(), dtype.name());
    }
    Ok(n)
}
