//! CBOR payloads (RFC 8949), decoded with minicbor's borrowing low-level `Decoder`:
//!
//! - Reductionist responses: a map with text keys `bytes`, `dtype`, `shape`,
//!   `shape_as_bytes`, `count`, `count_as_bytes`, `byte_order` (reductionist-rs 0.12 – 0.13.1,
//!   serialized by serde_cbor 0.11; see REFERENCE.md for the key table), plus client-side
//!   fixtures of it;
//! - bare RFC 8746 typed arrays (tags 64–87, §2), 1-D;
//! - RFC 8746 multi-dimensional arrays (tag 40 row-major, tag 1040 column-major, §3.1):
//!   `[dims, elements]` with `elements` a typed array or a plain byte string (uint8).
//!
//! Reductionist map rules (each documented choice is marked *rule*):
//! - keys may come in any order; unknown keys are skipped (forward compatibility) and make
//!   the layout [`Layout::Client`](crate::payload::Layout::Client); a skipped value may nest arrays and maps (definite or
//!   indefinite) up to [`raw::MAX_DEPTH`] levels, walked with a fixed stack (deeper is
//!   `Unsupported`); a known key twice is `Malformed`; non-text keys are `Malformed`;
//! - `bytes`: a definite byte string, or an RFC 8746 typed array (tag 64–87 around a byte
//!   string), whose tag then gives dtype and byte order. A `dtype` key naming another type is
//!   `Dtype`; a `byte_order` key contradicting the tag is `Malformed`. An indefinite-length
//!   (chunked) byte string is accepted only by [`super::copy_data`];
//! - `dtype`: a Reductionist name (`int32`, ..., `float64`, also `int8`, `uint8`, `int16`,
//!   `uint16`, `float16`, `complex64`, `complex128`, `bool`) or a numpy type string (`<f8`);
//!   unknown names are `Dtype`;
//! - *rule*: `shape_as_bytes` (u64 per axis in `byte_order`), when non-empty, is preferred
//!   over `shape`; both non-empty and different is `Malformed`;
//! - *rule*: no `shape` (and no non-empty `shape_as_bytes`) means `shape` `[]`, a scalar:
//!   Reductionist always sends `shape` (`[]` for a scalar, REFERENCE.md), and the clients
//!   that leave it out (PyActiveStorage's test fixtures) drop an empty one. Data of any other
//!   length than one element is then `Malformed` (no shape is invented);
//! - *rule*: no `byte_order` means little-endian (what every released server runs on);
//! - `count`: an unsigned integer (scalar), an integer array (flat or nested up to
//!   [`MAX_COUNT_DEPTH`](crate::payload::MAX_COUNT_DEPTH) levels, flattened in C order; need not be rectangular), a typed
//!   array, or null (absent). `count_as_bytes` (i64 per element in `byte_order`), when
//!   non-empty, is preferred over `count`; a non-empty `count` array or typed array next to
//!   it must hold the same values (as many, equal element by element), else `Malformed`
//!   naming both keys and the first differing element; negative counts are `Malformed`;
//! - *rule*: an empty count (`[]`, an empty typed array; Reductionist's `count` next to a
//!   non-empty `count_as_bytes`) is no count (absent);
//! - *rule*: a count has 1 element (full reductions, `select`) or prod(shape) elements
//!   (axis reductions): any other number fits no Reductionist response and is `Malformed`;
//! - the map must be the whole input: trailing bytes are `Malformed`.

use minicbor::data::Type;
use minicbor::Decoder;

use crate::error::Result;
use crate::payload::view::Parsed;
use raw::cbor_err;

pub(crate) mod count;
pub(crate) mod raw;
mod reductionist;
mod typed;

pub(crate) use reductionist::parse_reductionist;
pub(crate) use typed::parse_tagged;
pub use typed::{typed_array_tag, TAG_MULTIDIM_COL_MAJOR, TAG_MULTIDIM_ROW_MAJOR};

/// RFC 8949 §3.4.6 self-described CBOR tag, accepted (once) before any payload.
const TAG_SELF_DESCRIBE: u64 = 55799;

/// Parse a whole CBOR input (detected as CBOR by its first byte). `sink(index, value)`
/// receives every leaf of a `count` integer array while it is walked (so counts are decoded
/// in the same pass).
pub(crate) fn parse<'a, F: FnMut(u64, i64)>(buf: &'a [u8], sink: &mut F) -> Result<Parsed<'a>> {
    let mut d = Decoder::new(buf);
    let len = buf.len();
    let mut ty = d.datatype().map_err(|e| cbor_err(e, "first item", len))?;
    let mut p = d.probe();
    if ty == Type::Tag && p.tag().is_ok_and(|t| t.as_u64() == TAG_SELF_DESCRIBE) {
        d.tag().map_err(|e| cbor_err(e, "self-describe tag", len))?;
        ty = d.datatype().map_err(|e| cbor_err(e, "item after the self-describe tag 55799", len))?;
    }
    let parsed = match ty {
        Type::Map | Type::MapIndef => parse_reductionist(&mut d, sink)?,
        Type::Tag => parse_tagged(&mut d)?,
        other => bail!(Malformed, "byte {}: top-level CBOR {other} is not a supported payload (expected a map, typed-array tag 64-87 or tag 40/1040)", d.position()),
    };
    if d.position() != len {
        bail!(Malformed, "trailing bytes: the message ends at byte {} but the input has {len} bytes", d.position());
    }
    Ok(parsed)
}

/// Parse the Reductionist map (`map`) or the typed / multi-dimensional array tag at byte
/// `pos` of `buf` (inside a document); returns it and the byte after it.
pub(crate) fn parse_at(buf: &[u8], pos: usize, map: bool) -> Result<(Parsed<'_>, usize)> {
    let mut d = Decoder::new(buf);
    d.set_position(pos);
    let p = if map { parse_reductionist(&mut d, &mut |_, _| {})? } else { parse_tagged(&mut d)? };
    Ok((p, d.position()))
}

#[cfg(test)]
mod tests;
