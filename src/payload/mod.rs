//! Zero-copy decoding of serialized array payloads (safe Rust, no C).
//!
//! A payload is one message holding an n-dimensional array: a Reductionist CBOR response
//! (reductionist-rs 0.12 – 0.13.1), a bare RFC 8746 typed array (CBOR tags 64–87), an RFC 8746
//! multi-dimensional array (tags 40 / 1040), or a msgpack-numpy map. [`decode_view`] turns
//! it into a [`PayloadView`]: a slice *borrowing the caller's buffer* at the first data
//! byte, plus dtype, shape, byte order, alignment and how the per-element `count` is stored.
//! Nothing proportional to the data is allocated or copied. Companions:
//! [`decode_count`] decodes any count form into native `i64`, and [`copy_data`] copies the
//! data into a caller buffer in native byte order.
//!
//! Module map: [`detect`] (format from the first byte, JSON error bodies), [`cbor`]
//! (Reductionist maps, typed arrays, multi-dimensional arrays, via minicbor), [`msgpack`]
//! (msgpack-numpy maps, via rmp), [`count`] (walking and decoding count arrays), [`copy`]
//! (native-order copies). All functions are pure and thread-safe; they never read outside
//! the input slice.

pub mod cbor;
pub mod copy;
pub mod count;
pub mod detect;
pub mod document;
pub mod msgpack;
pub mod values;

use crate::dtype::{ByteOrder, Dtype};
use crate::error::Result;

pub use copy::copy_data;
pub use count::decode_count;
pub use document::{decode_document, Document, DocFormat, Item, ItemKind};
pub use values::Scalar;

/// cbindgen:ignore
/// Most axes a payload may have (`PAYLOAD_MAX_NDIM` in C). More is `Unsupported`.
pub const MAX_NDIM: usize = 64;
/// cbindgen:ignore
/// Deepest nesting of a `count` array (`PAYLOAD_MAX_COUNT_DEPTH` in C): `[[1,2],[3,4]]` has
/// depth 2. Deeper is `Unsupported`.
pub const MAX_COUNT_DEPTH: usize = 64;

/// cbindgen:ignore
/// [`decode_view`] flag: fail with `Misaligned` rather than return data that is not aligned
/// for its element type.
pub const REQUIRE_ALIGNED: u32 = 1;
/// cbindgen:ignore
/// [`decode_view`] flag: fail with `ByteOrder` rather than return data the host must swap.
pub const REQUIRE_NATIVE: u32 = 2;
/// cbindgen:ignore
/// All flag bits [`decode_view`] knows.
pub const ALL_FLAGS: u32 = REQUIRE_ALIGNED | REQUIRE_NATIVE;

/// Which kind of message was detected (from its first byte, see [`detect`]).
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
    /// A CBOR integer array, possibly nested: decode with [`decode_count`].
    Array = 3,
}

/// Where and how the count is stored. Produced by [`decode_view`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountInfo<'a> {
    pub form: CountForm,
    /// Element type: of the bytes for [`CountForm::Bytes`] (int64 for Reductionist's
    /// `count_as_bytes`); int64 (what [`decode_count`] produces) for `Scalar` / `Array`;
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
    pub(crate) const ABSENT: CountInfo<'static> =
        CountInfo { form: CountForm::Absent, dtype: None, byte_order: None, len: 0, scalar: 0, bytes: None, offset: 0 };
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
/// string that only [`copy_data`] can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataLoc<'a> {
    Contiguous { data: &'a [u8], offset: usize },
    /// `head` is the offset of the indefinite byte-string head (0x5f); `len` the total bytes.
    Chunked { head: usize, len: usize },
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

/// Parse any supported message (format detected from its first byte).
pub(crate) fn parse(buf: &[u8]) -> Result<Parsed<'_>> {
    parse_with(buf, &mut |_, _| {})
}

/// [`parse`], handing every leaf of a `count` integer array to `sink(index, value)` during
/// the single walk over it.
pub(crate) fn parse_with<'a, F: FnMut(u64, i64)>(buf: &'a [u8], sink: &mut F) -> Result<Parsed<'a>> {
    match detect::detect(buf)? {
        detect::Detected::Cbor => cbor::parse(buf, sink),
        detect::Detected::Msgpack => msgpack::parse(buf),
    }
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
    let n = shape
        .nelements()
        .ok_or_else(|| err!(Malformed, "{what}: prod(shape {:?}) overflows 64 bits", shape.as_slice()))?;
    let need = n
        .checked_mul(item)
        .ok_or_else(|| err!(Malformed, "{what}: prod(shape {:?}) = {n} elements x itemsize {item} overflows 64 bits", shape.as_slice()))?;
    if need != data_len as u64 {
        bail!(
            Malformed,
            "{what}: data length {data_len} bytes != prod(shape {:?}) = {n} elements x itemsize {item} ({}) = {need} bytes",
            shape.as_slice(),
            dtype.name()
        );
    }
    Ok(n)
}

/// Decode `buf` into a view borrowing it (see the module doc).
///
/// `flags`: [`REQUIRE_ALIGNED`], [`REQUIRE_NATIVE`]; other bits are `InvalidArgument`.
/// Errors: `Malformed` (truncated, wrong types, duplicate keys, length mismatch, trailing
/// bytes, negative counts ...), `Unsupported` (pickles, structured dtypes, indefinite-length
/// data, > 64 axes, count nesting > 64, float128, reserved tags), `Dtype` (unknown dtype or
/// conflicting `dtype` key), `ServerError` (a JSON error body), `Misaligned` / `ByteOrder`
/// (only when the matching flag is set). Allocates nothing proportional to the input; a
/// `count` integer array is walked (validated and counted) in time linear in its length.
pub fn decode_view(buf: &[u8], flags: u32) -> Result<PayloadView<'_>> {
    if flags & !ALL_FLAGS != 0 {
        bail!(InvalidArgument, "unknown flag bits 0x{:x} in `flags` (known: PAYLOAD_REQUIRE_ALIGNED=1, PAYLOAD_REQUIRE_NATIVE=2)", flags & !ALL_FLAGS);
    }
    view_of(parse(buf)?, flags)
}

/// The view of a parsed payload, with the checks `flags` ask for (see [`decode_view`]).
pub(crate) fn view_of(p: Parsed<'_>, flags: u32) -> Result<PayloadView<'_>> {
    let (data, data_offset) = match p.data {
        DataLoc::Contiguous { data, offset } => (data, offset),
        DataLoc::Chunked { head, len } => bail!(
            Unsupported,
            "the data is an indefinite-length (chunked) CBOR byte string at byte {head} ({len} bytes in chunks): it has no contiguous view; use payload_copy_data"
        ),
    };
    let align = p.dtype.swap_unit();
    let aligned = (data.as_ptr() as usize) % align == 0;
    let view = PayloadView {
        data,
        data_offset,
        format: p.format,
        layout: p.layout,
        dtype: p.dtype,
        byte_order: p.byte_order,
        aligned,
        fortran_order: p.fortran_order,
        shape: p.shape,
        nelements: p.nelements,
        count: p.count,
    };
    if flags & REQUIRE_ALIGNED != 0 && !aligned {
        bail!(
            Misaligned,
            "data at byte offset {data_offset} (address {:p}) is not {align}-byte aligned for {} and PAYLOAD_REQUIRE_ALIGNED was given; copy it with payload_copy_data",
            data.as_ptr(),
            p.dtype.name()
        );
    }
    if flags & REQUIRE_NATIVE != 0 && view.needs_swap() {
        bail!(
            ByteOrder,
            "data is {:?}-endian {} but the host is {:?}-endian and PAYLOAD_REQUIRE_NATIVE was given; copy it with payload_copy_data",
            p.byte_order.unwrap(),
            p.dtype.name(),
            ByteOrder::NATIVE
        );
    }
    Ok(view)
}

/// Number of count elements of the payload in `buf`, `None` when it does not decode (used to
/// report the needed size after `BufferTooSmall`).
pub(crate) fn count_len(buf: &[u8]) -> Option<u64> {
    parse(buf).ok().map(|p| p.count.len)
}

/// Data length in bytes of the payload in `buf` (chunked data included), `None` when it does
/// not decode.
pub(crate) fn data_len(buf: &[u8]) -> Option<usize> {
    parse(buf).ok().map(|p| match p.data {
        DataLoc::Contiguous { data, .. } => data.len(),
        DataLoc::Chunked { len, .. } => len,
    })
}
