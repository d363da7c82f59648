//! Decoding a whole message: the format from its first byte ([`super::detect`]), then the
//! CBOR or msgpack decoder, then the view-only checks ([`decode_view`]).

use super::detect::{self, Detected};
use super::view::{DataLoc, Parsed, PayloadView};
use super::{cbor, msgpack};
use crate::dtype::ByteOrder;
use crate::error::Result;

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

/// Parse any supported message (format detected from its first byte).
pub(crate) fn parse(buf: &[u8]) -> Result<Parsed<'_>> {
    parse_with(buf, &mut |_, _| {})
}

/// [`parse`], handing every leaf of a `count` integer array to `sink(index, value)` during
/// the single walk over it.
pub(crate) fn parse_with<'a, F: FnMut(u64, i64)>(buf: &'a [u8], sink: &mut F) -> Result<Parsed<'a>> {
    let r = match detect::detect(buf) {
        Ok(Detected::Cbor) => cbor::parse(buf, sink),
        Ok(Detected::Msgpack) => msgpack::parse(buf),
        Err(e) => Err(e),
    };
    // An HDF5 or netCDF-3 file is named as such, with what reads it.
    r.map_err(|e| detect::name_other_file(buf, e))
}

/// Decode `buf` into a view borrowing it (see the payload module doc).
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
