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
//!   the layout [`Layout::Client`]; a skipped value may nest arrays and maps (definite or
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
//! - *rule*: no `shape` (and no non-empty `shape_as_bytes`) means a scalar when the data
//!   hold exactly one element, and a 1-D array of all elements otherwise;
//! - *rule*: no `byte_order` means little-endian (what every released server runs on);
//! - `count`: an unsigned integer (scalar), an integer array (flat or nested up to
//!   [`MAX_COUNT_DEPTH`] levels, flattened in C order; need not be rectangular), a typed
//!   array, or null (absent). `count_as_bytes` (i64 per element in `byte_order`), when
//!   non-empty, is preferred over `count`; negative counts are `Malformed`;
//! - the map must be the whole input: trailing bytes are `Malformed`.

use minicbor::data::Type;
use minicbor::Decoder;

use super::{check_data_len, count, effective_order, CountForm, CountInfo, DataLoc, Format, Layout, Parsed, Shape, MAX_NDIM};
use crate::dtype::{ByteOrder, Dtype};
use crate::error::{Error, Result};

/// RFC 8949 §3.4.6 self-described CBOR tag, accepted (once) before any payload.
const TAG_SELF_DESCRIBE: u64 = 55799;
/// cbindgen:ignore
/// RFC 8746 §3.1.1 multi-dimensional array, row-major.
pub const TAG_MULTIDIM_ROW_MAJOR: u64 = 40;
/// cbindgen:ignore
/// RFC 8746 §3.1.2 multi-dimensional array, column-major.
pub const TAG_MULTIDIM_COL_MAJOR: u64 = 1040;

/// Map a minicbor error to ours, naming what was being decoded.
/// `what` followed by "at byte {pos}", unless `what` already ends with that position (a key's
/// value is described as "value of key .. at byte N" and must not repeat it).
fn at(what: &str, pos: usize) -> String {
    let suffix = format!(" at byte {pos}");
    if what.ends_with(&suffix) {
        what.to_string()
    } else {
        format!("{what}{suffix}")
    }
}

pub(crate) fn cbor_err(e: minicbor::decode::Error, what: &str, len: usize) -> Error {
    if e.is_end_of_input() {
        err!(Malformed, "truncated input: {what} runs past the end of the {len}-byte message ({e})")
    } else {
        err!(Malformed, "{what}: {e}")
    }
}

/// The element type and byte order of an RFC 8746 typed-array tag (§2.1: tag = 64 +
/// 16·float + 8·signed + 4·little-endian + ll). `Ok(None)` when `tag` is not in 64..=87.
/// Errors (`Unsupported`): tag 76 (reserved), 83 / 87 (float128).
/// Tag 68 (uint8, clamped arithmetic) is plain uint8 for storage.
pub fn typed_array_tag(tag: u64) -> Result<Option<(Dtype, ByteOrder)>> {
    if !(64..=87).contains(&tag) {
        return Ok(None);
    }
    let t = (tag - 64) as u8;
    let float = t & 16 != 0;
    let signed = t & 8 != 0;
    let order = if t & 4 != 0 { ByteOrder::Little } else { ByteOrder::Big };
    let ll = t & 3;
    let dtype = if float {
        match ll {
            0 => Dtype::Float16,
            1 => Dtype::Float32,
            2 => Dtype::Float64,
            _ => bail!(Unsupported, "RFC 8746 tag {tag} is a float128 typed array: vh5 has no 128-bit float type"),
        }
    } else {
        match (signed, ll, t & 4 != 0) {
            (false, 0, _) => Dtype::UInt8, // 64, and 68 = uint8 clamped
            (true, 0, false) => Dtype::Int8,
            (true, 0, true) => bail!(Unsupported, "RFC 8746 tag {tag} is reserved (would be a little-endian int8)"),
            (false, 1, _) => Dtype::UInt16,
            (false, 2, _) => Dtype::UInt32,
            (false, _, _) => Dtype::UInt64,
            (true, 1, _) => Dtype::Int16,
            (true, 2, _) => Dtype::Int32,
            (true, _, _) => Dtype::Int64,
        }
    };
    Ok(Some((dtype, order)))
}

/// A byte string (possibly the content of a typed-array tag) found in the input.
#[derive(Debug, Clone, Copy)]
struct TypedBytes<'a> {
    loc: DataLoc<'a>,
    /// `(dtype, order, tag)` when wrapped in a typed-array tag.
    tag: Option<(Dtype, ByteOrder, u64)>,
}

impl TypedBytes<'_> {
    fn len(&self) -> usize {
        match self.loc {
            DataLoc::Contiguous { data, .. } => data.len(),
            DataLoc::Chunked { len, .. } => len,
        }
    }
}

/// Read a byte string or a typed array at the decoder position. `allow_chunked`: accept an
/// indefinite-length byte string (only for the data; others are `Unsupported`).
fn read_bytes_like<'a>(d: &mut Decoder<'a>, what: &str, allow_chunked: bool) -> Result<TypedBytes<'a>> {
    let len = d.input().len();
    let start = d.position();
    let mut tag = None;
    if d.datatype().map_err(|e| cbor_err(e, what, len))? == Type::Tag {
        let t = d.tag().map_err(|e| cbor_err(e, what, len))?.as_u64();
        match typed_array_tag(t)? {
            Some((dt, o)) => tag = Some((dt, o, t)),
            None => bail!(Malformed, "{}: CBOR tag {t} is not an RFC 8746 typed array (64-87)", at(what, start)),
        }
    }
    let pos = d.position();
    match d.datatype().map_err(|e| cbor_err(e, what, len))? {
        Type::Bytes => {
            let data = d.bytes().map_err(|e| cbor_err(e, what, len))?;
            let offset = d.position() - data.len();
            Ok(TypedBytes { loc: DataLoc::Contiguous { data, offset }, tag })
        }
        Type::BytesIndef => {
            if !allow_chunked {
                bail!(Unsupported, "{} is an indefinite-length (chunked) byte string: not supported here", at(what, pos));
            }
            let mut total = 0usize;
            for chunk in d.bytes_iter().map_err(|e| cbor_err(e, what, len))? {
                total += chunk.map_err(|e| cbor_err(e, what, len))?.len();
            }
            Ok(TypedBytes { loc: DataLoc::Chunked { head: pos, len: total }, tag })
        }
        other => bail!(
            Malformed,
            "{}: expected a byte string{}, found CBOR {other}", at(what, pos),
            if tag.is_some() { " inside the typed-array tag" } else { " or RFC 8746 typed array" }
        ),
    }
}

/// Read a definite or indefinite array of unsigned integers as a shape.
fn read_shape(d: &mut Decoder<'_>, what: &str) -> Result<Shape> {
    let len = d.input().len();
    let pos = d.position();
    let n = d.array().map_err(|e| cbor_err(e, &format!("{} (expected an array of unsigned integers)", at(what, pos)), len))?;
    let mut shape = Shape::SCALAR;
    let mut i = 0u64;
    loop {
        match n {
            Some(n) if i == n => break,
            None if d.datatype().map_err(|e| cbor_err(e, what, len))? == Type::Break => {
                d.set_position(d.position() + 1);
                break;
            }
            _ => {}
        }
        if shape.ndim() == MAX_NDIM {
            bail!(Unsupported, "{} has more than {MAX_NDIM} axes (PAYLOAD_MAX_NDIM)", at(what, pos));
        }
        let p = d.position();
        let v = d.u64().map_err(|e| cbor_err(e, &format!("{what} axis {i} at byte {p} (expected an unsigned integer)"), len))?;
        shape.push(v).expect("checked above");
        i += 1;
    }
    Ok(shape)
}

/// Decode a shape from `shape_as_bytes`: one u64 (or the tag's integer type) per axis.
fn shape_from_bytes(b: &TypedBytes<'_>, order: ByteOrder) -> Result<Shape> {
    let DataLoc::Contiguous { data, offset } = b.loc else { unreachable!("chunked refused") };
    let (dt, order) = match b.tag {
        Some((dt, o, _)) => (dt, o),
        None => (Dtype::UInt64, order),
    };
    let item = dt.itemsize().unwrap_or(1);
    if !matches!(dt.kind(), 'i' | 'u') {
        bail!(Dtype, "shape_as_bytes at byte {offset}: typed array of {} is not an integer type", dt.name());
    }
    if data.len() % item != 0 {
        bail!(Malformed, "shape_as_bytes at byte {offset}: {} bytes is not a whole number of {item}-byte {} axes", data.len(), dt.name());
    }
    if data.len() / item > MAX_NDIM {
        bail!(Unsupported, "shape_as_bytes at byte {offset} has {} axes, more than {MAX_NDIM} (PAYLOAD_MAX_NDIM)", data.len() / item);
    }
    let mut shape = Shape::SCALAR;
    for (i, c) in data.chunks_exact(item).enumerate() {
        match count::int_from_bytes_checked(c, dt, order) {
            Some(v) if v >= 0 => shape.push(v as u64).expect("checked above"),
            _ => bail!(Malformed, "shape_as_bytes axis {i} at byte {} is negative or above INT64_MAX", offset + i * item),
        }
    }
    Ok(shape)
}

/// The value of a `count` key, before choosing between it and `count_as_bytes`.
#[derive(Debug, Clone, Copy)]
enum CountVal<'a> {
    Null,
    Scalar { value: i64, offset: usize },
    Array { len: u64, nested: bool, offset: usize },
    Typed(TypedBytes<'a>),
}

fn read_count<'a, F: FnMut(u64, i64)>(d: &mut Decoder<'a>, sink: &mut F) -> Result<CountVal<'a>> {
    let len = d.input().len();
    let pos = d.position();
    let ty = d.datatype().map_err(|e| cbor_err(e, "value of key \"count\"", len))?;
    Ok(match ty {
        Type::U8 | Type::U16 | Type::U32 | Type::U64 => {
            let v = d.u64().map_err(|e| cbor_err(e, "count", len))?;
            let value = i64::try_from(v).map_err(|_| err!(Malformed, "count at byte {pos} = {v} does not fit int64"))?;
            CountVal::Scalar { value, offset: pos }
        }
        Type::I8 | Type::I16 | Type::I32 | Type::I64 | Type::Int => {
            let v = d.int().map_err(|e| cbor_err(e, "count", len))?;
            bail!(Malformed, "count at byte {pos} is negative ({})", i128::from(v))
        }
        Type::Array | Type::ArrayIndef => {
            let (n, nested) = count::walk_array(d, sink)?;
            CountVal::Array { len: n, nested, offset: pos }
        }
        Type::Tag => CountVal::Typed(read_bytes_like(d, "count", false)?),
        Type::Null | Type::Undefined => {
            d.set_position(raw::skip(d.input(), pos, "count")?);
            CountVal::Null
        }
        other => bail!(Malformed, "count at byte {pos}: expected an unsigned integer, an integer array or a typed array, found CBOR {other}"),
    })
}

/// Count info for a byte-string count (`count_as_bytes` or a typed array).
fn count_from_bytes<'a>(b: &TypedBytes<'a>, order: ByteOrder, what: &str) -> Result<CountInfo<'a>> {
    let DataLoc::Contiguous { data, offset } = b.loc else { unreachable!("chunked refused") };
    let (dt, order) = match b.tag {
        Some((dt, o, _)) => (dt, o),
        None => (Dtype::Int64, order),
    };
    if !matches!(dt.kind(), 'i' | 'u') {
        bail!(Dtype, "{}: typed array of {} is not an integer type", at(what, offset), dt.name());
    }
    let item = dt.itemsize().unwrap_or(1);
    if data.len() % item != 0 {
        bail!(Malformed, "{}: {} bytes is not a whole number of {item}-byte {} counts", at(what, offset), data.len(), dt.name());
    }
    // The same rule as a count integer array: every count is in 0..=INT64_MAX, whatever
    // the byte order (one pass over the count bytes).
    count::check_count_bytes(data, dt, order, offset)?;
    Ok(CountInfo {
        form: CountForm::Bytes,
        dtype: Some(dt),
        byte_order: effective_order(dt, order),
        len: (data.len() / item) as u64,
        scalar: 0,
        bytes: Some(data),
        offset,
    })
}

const K_BYTES: u32 = 1;
const K_DTYPE: u32 = 2;
const K_SHAPE: u32 = 4;
const K_SHAPE_AB: u32 = 8;
const K_COUNT: u32 = 16;
const K_COUNT_AB: u32 = 32;
const K_BYTE_ORDER: u32 = 64;
const KEYS: [(&str, u32); 7] = [
    ("bytes", K_BYTES),
    ("dtype", K_DTYPE),
    ("shape", K_SHAPE),
    ("shape_as_bytes", K_SHAPE_AB),
    ("count", K_COUNT),
    ("count_as_bytes", K_COUNT_AB),
    ("byte_order", K_BYTE_ORDER),
];

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
        other => bail!(
            Malformed,
            "byte {}: top-level CBOR {other} is not a supported payload (expected a map, typed-array tag 64-87 or tag 40/1040)",
            d.position()
        ),
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

/// Bare typed array (64–87) or multi-dimensional array (40 / 1040).
pub(crate) fn parse_tagged<'a>(d: &mut Decoder<'a>) -> Result<Parsed<'a>> {
    let len = d.input().len();
    let pos = d.position();
    let mut probe = d.probe();
    let tag = probe.tag().map_err(|e| cbor_err(e, "top-level tag", len))?.as_u64();
    if typed_array_tag(tag)?.is_some() {
        let b = read_bytes_like(d, "typed array", true)?;
        let (dtype, order, _) = b.tag.expect("tagged");
        let item = dtype.itemsize().unwrap_or(1);
        if b.len() % item != 0 {
            bail!(Malformed, "typed array (tag {tag}) at byte {pos}: data length {} bytes is not a multiple of itemsize {item} ({})", b.len(), dtype.name());
        }
        let n = (b.len() / item) as u64;
        return Ok(Parsed {
            data: b.loc,
            format: Format::TypedArray,
            layout: Layout::None,
            dtype,
            byte_order: effective_order(dtype, order),
            fortran_order: false,
            shape: Shape::from_slice(&[n]).expect("1 axis"),
            nelements: n,
            count: CountInfo::ABSENT,
        });
    }
    if tag != TAG_MULTIDIM_ROW_MAJOR && tag != TAG_MULTIDIM_COL_MAJOR {
        bail!(Unsupported, "byte {pos}: CBOR tag {tag} is not a supported payload (expected RFC 8746 typed array 64-87 or multi-dimensional array 40/1040)");
    }
    d.tag().map_err(|e| cbor_err(e, "tag", len))?;
    let apos = d.position();
    let n = d.array().map_err(|e| cbor_err(e, &format!("content of tag {tag} at byte {apos} (expected [dims, elements])"), len))?;
    if n != Some(2) {
        bail!(Malformed, "tag {tag} at byte {pos}: content must be a 2-element array [dims, elements], found {}", n.map_or("an indefinite-length array".to_string(), |n| format!("{n} elements")));
    }
    let shape = read_shape(d, &format!("dims of tag {tag}"))?;
    let epos = d.position();
    let ety = d.datatype().map_err(|e| cbor_err(e, "elements", len))?;
    if matches!(ety, Type::Array | Type::ArrayIndef) {
        bail!(Unsupported, "tag {tag}: elements at byte {epos} are a CBOR array of numbers, not a typed array: they have no byte view");
    }
    let b = read_bytes_like(d, &format!("elements of tag {tag}"), true)?;
    // A plain byte string is a uint8 array (RFC 8746 §3.1: a byte string stands for tag 64).
    let (dtype, order) = b.tag.map_or((Dtype::UInt8, ByteOrder::Little), |(dt, o, _)| (dt, o));
    let nelements = check_data_len(&shape, dtype, b.len(), &format!("tag {tag} elements at byte {epos}"))?;
    Ok(Parsed {
        data: b.loc,
        format: Format::Multidim,
        layout: Layout::None,
        dtype,
        byte_order: effective_order(dtype, order),
        fortran_order: tag == TAG_MULTIDIM_COL_MAJOR,
        shape,
        nelements,
        count: CountInfo::ABSENT,
    })
}

/// Parse a dtype key: Reductionist name or numpy type string.
fn parse_dtype(s: &str, pos: usize) -> Result<(Dtype, Option<ByteOrder>, bool)> {
    if let Some(d) = Dtype::from_name(s) {
        return Ok((d, None, false));
    }
    if let Some((d, o)) = Dtype::from_numpy_str(s) {
        return Ok((d, o, true));
    }
    bail!(Dtype, "key \"dtype\" at byte {pos}: unknown dtype {s:?} (expected int8..int64, uint8..uint64, float16/32/64, complex64/128, bool, or a numpy type string like \"<f8\")")
}

pub(crate) fn parse_reductionist<'a, F: FnMut(u64, i64)>(d: &mut Decoder<'a>, sink: &mut F) -> Result<Parsed<'a>> {
    let len = d.input().len();
    let map_pos = d.position();
    let n = d.map().map_err(|e| cbor_err(e, "top-level map", len))?;
    let mut seen = 0u32;
    let mut unknown = false;
    let mut bytes = None;
    let mut dtype_key: Option<(Dtype, Option<ByteOrder>, bool, usize)> = None;
    let mut shape = None;
    let mut shape_ab = None;
    let mut count_val = None;
    let mut count_ab = None;
    let mut order_key: Option<(ByteOrder, usize)> = None;
    let mut i = 0u64;
    loop {
        match n {
            Some(n) if i == n => break,
            None if d.datatype().map_err(|e| cbor_err(e, &format!("map entry {i}"), len))? == Type::Break => {
                d.set_position(d.position() + 1);
                break;
            }
            _ => {}
        }
        let kpos = d.position();
        let key = match d.datatype().map_err(|e| cbor_err(e, &format!("key of map entry {i} at byte {kpos}"), len))? {
            Type::String => d.str().map_err(|e| cbor_err(e, &format!("key of map entry {i} at byte {kpos}"), len))?,
            other => bail!(Malformed, "key of map entry {i} at byte {kpos}: expected a text string, found CBOR {other}"),
        };
        let bit = KEYS.iter().find(|(k, _)| *k == key).map(|&(_, b)| b);
        if let Some(bit) = bit {
            if seen & bit != 0 {
                bail!(Malformed, "duplicate key {key:?} at byte {kpos}");
            }
            seen |= bit;
        }
        let vpos = d.position();
        let what = format!("value of key {key:?} at byte {vpos}");
        match key {
            "bytes" => bytes = Some(read_bytes_like(d, &what, true)?),
            "dtype" => {
                let s = d.str().map_err(|e| cbor_err(e, &format!("{what} (expected a text string)"), len))?;
                let (dt, o, np) = parse_dtype(s, vpos)?;
                dtype_key = Some((dt, o, np, vpos));
            }
            "shape" => shape = Some(read_shape(d, "key \"shape\"")?),
            "shape_as_bytes" => shape_ab = Some(read_bytes_like(d, &what, false)?),
            "count" => count_val = Some(read_count(d, sink)?),
            "count_as_bytes" => count_ab = Some(read_bytes_like(d, &what, false)?),
            "byte_order" => {
                let s = d.str().map_err(|e| cbor_err(e, &format!("{what} (expected a text string)"), len))?;
                let o = match s {
                    "little" => ByteOrder::Little,
                    "big" => ByteOrder::Big,
                    _ => bail!(Malformed, "{what}: byte_order {s:?} is neither \"little\" nor \"big\""),
                };
                order_key = Some((o, vpos));
            }
            _ => {
                unknown = true;
                d.set_position(raw::skip(d.input(), vpos, &what)?);
            }
        }
        i += 1;
    }

    let Some(bytes) = bytes else {
        bail!(Malformed, "map at byte {map_pos} has no key \"bytes\" (the array data)");
    };
    // dtype and the byte order of `bytes`.
    let (dtype, data_order) = match (bytes.tag, dtype_key) {
        (Some((tdt, to, tag)), key) => {
            if let Some((kdt, ko, _, kpos)) = key {
                if kdt != tdt {
                    bail!(Dtype, "key \"dtype\" at byte {kpos} says {} but the RFC 8746 tag {tag} of \"bytes\" says {}", kdt.name(), tdt.name());
                }
                if let Some(ko) = ko.filter(|_| tdt.itemsize() != Some(1)) {
                    if ko != to {
                        bail!(Malformed, "key \"dtype\" at byte {kpos} says {ko:?}-endian but the RFC 8746 tag {tag} of \"bytes\" says {to:?}-endian");
                    }
                }
            }
            if let Some((o, opos)) = order_key {
                if o != to && tdt.itemsize() != Some(1) {
                    bail!(Malformed, "key \"byte_order\" at byte {opos} says {o:?} but the RFC 8746 tag {tag} of \"bytes\" says {to:?}-endian");
                }
            }
            (tdt, to)
        }
        (None, Some((kdt, ko, _, kpos))) => {
            let o = match (ko, order_key) {
                (Some(ko), Some((o, opos))) if ko != o && kdt.itemsize() != Some(1) => {
                    bail!(Malformed, "key \"dtype\" at byte {kpos} says {ko:?}-endian but key \"byte_order\" at byte {opos} says {o:?}")
                }
                (Some(ko), _) => ko,
                (None, Some((o, _))) => o,
                (None, None) => ByteOrder::Little,
            };
            (kdt, o)
        }
        (None, None) => bail!(Malformed, "map at byte {map_pos} has no key \"dtype\" and \"bytes\" is not a typed array"),
    };
    let wire_order = order_key.map_or(ByteOrder::Little, |(o, _)| o);
    let item = dtype.itemsize().unwrap_or(1);

    // shape: shape_as_bytes when non-empty, else shape, else inferred.
    let shape_from_ab = match &shape_ab {
        Some(b) if b.len() > 0 => Some(shape_from_bytes(b, wire_order)?),
        _ => None,
    };
    let shape = match (shape_from_ab, shape) {
        (Some(a), Some(s)) if s.ndim() > 0 && a != s => {
            bail!(Malformed, "shape_as_bytes {:?} and shape {:?} disagree", a.as_slice(), s.as_slice())
        }
        (Some(a), _) => a,
        (None, Some(s)) => s,
        (None, None) => {
            if bytes.len() % item != 0 {
                bail!(Malformed, "no shape given and data length {} bytes is not a multiple of itemsize {item} ({})", bytes.len(), dtype.name());
            }
            let n = (bytes.len() / item) as u64;
            if n == 1 {
                Shape::SCALAR
            } else {
                Shape::from_slice(&[n]).expect("1 axis")
            }
        }
    };
    let nelements = check_data_len(&shape, dtype, bytes.len(), "key \"bytes\"")?;

    // count: count_as_bytes when non-empty, else count.
    let count = match (&count_ab, count_val) {
        (Some(b), cv) if b.len() > 0 => {
            let c = count_from_bytes(b, wire_order, "count_as_bytes")?;
            if let Some(CountVal::Array { len: n, offset, .. }) = cv {
                if n != 0 && n != c.len {
                    bail!(Malformed, "count at byte {offset} has {n} elements but count_as_bytes has {}", c.len);
                }
            }
            c
        }
        (_, None | Some(CountVal::Null)) => CountInfo::ABSENT,
        (_, Some(CountVal::Scalar { value, offset })) => CountInfo {
            form: CountForm::Scalar,
            dtype: Some(Dtype::Int64),
            byte_order: None,
            len: 1,
            scalar: value,
            bytes: None,
            offset,
        },
        (_, Some(CountVal::Array { len, offset, .. })) => CountInfo {
            form: CountForm::Array,
            dtype: Some(Dtype::Int64),
            byte_order: None,
            len,
            scalar: 0,
            bytes: None,
            offset,
        },
        (_, Some(CountVal::Typed(b))) => count_from_bytes(&b, wire_order, "count")?,
    };

    // Layout: only the exact released key sets with standard value types.
    let standard_values = !unknown
        && bytes.tag.is_none()
        && dtype_key.is_some_and(|k| !k.2)
        && matches!(count_val, Some(CountVal::Array { nested: false, .. }))
        && !matches!(bytes.loc, DataLoc::Chunked { .. })
        && shape_ab.is_none_or(|b| b.tag.is_none())
        && count_ab.is_none_or(|b| b.tag.is_none());
    let base = K_BYTES | K_DTYPE | K_SHAPE | K_COUNT | K_BYTE_ORDER;
    let layout = if !standard_values || seen & base != base {
        Layout::Client
    } else if seen == base {
        Layout::Reductionist0_12
    } else if seen == base | K_SHAPE_AB | K_COUNT_AB {
        // A 0.13.0 response with both *_as_bytes keys non-empty is identical on the wire.
        Layout::Reductionist0_13_1
    } else if shape_ab.is_none_or(|b| b.len() > 0) && count_ab.is_none_or(|b| b.len() > 0) {
        // 0.13.0 writes each *_as_bytes key only when non-empty.
        Layout::Reductionist0_13_0
    } else {
        Layout::Client
    };

    Ok(Parsed {
        data: bytes.loc,
        format: Format::Reductionist,
        layout,
        dtype,
        byte_order: effective_order(dtype, data_order),
        fortran_order: false,
        shape,
        nelements,
        count,
    })
}

pub(crate) mod raw;
#[cfg(test)]
mod tests;
