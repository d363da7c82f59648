//! Reductionist response maps (see the rules in the [`super`] module doc): the key loop
//! ([`read_keys`]), then one step per property: element type and byte order
//! ([`data_type`]), shape ([`shape_of`]), count ([`count_of`]) and the layout the key set
//! and value types match ([`layout_of`]).

use minicbor::data::Type;
use minicbor::Decoder;

use super::count::{check_count_bytes, int_from_bytes_checked, walk_array};
use super::raw::{self, at, cbor_err};
use super::typed::{read_bytes_like, read_shape, TypedBytes};
use crate::dtype::{ByteOrder, Dtype};
use crate::error::Result;
use crate::payload::view::{check_data_len, effective_order, CountForm, CountInfo, DataLoc, Format, Layout, Parsed, Shape, MAX_NDIM};

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
        match int_from_bytes_checked(c, dt, order) {
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
            let (n, nested) = walk_array(d, sink)?;
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
    check_count_bytes(data, dt, order, offset)?;
    Ok(CountInfo { form: CountForm::Bytes, dtype: Some(dt), byte_order: effective_order(dt, order), len: (data.len() / item) as u64, scalar: 0, bytes: Some(data), offset })
}

const K_BYTES: u32 = 1;
const K_DTYPE: u32 = 2;
const K_SHAPE: u32 = 4;
const K_SHAPE_AB: u32 = 8;
const K_COUNT: u32 = 16;
const K_COUNT_AB: u32 = 32;
const K_BYTE_ORDER: u32 = 64;
const KEYS: [(&str, u32); 7] =
    [("bytes", K_BYTES), ("dtype", K_DTYPE), ("shape", K_SHAPE), ("shape_as_bytes", K_SHAPE_AB), ("count", K_COUNT), ("count_as_bytes", K_COUNT_AB), ("byte_order", K_BYTE_ORDER)];

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

/// The keys of a Reductionist map as read, before their values are reconciled.
#[derive(Default)]
struct Keys<'a> {
    /// Byte offset of the map's head.
    map_pos: usize,
    /// `K_*` bits of the known keys present.
    seen: u32,
    /// An unknown key was skipped.
    unknown: bool,
    bytes: Option<TypedBytes<'a>>,
    /// (dtype, byte order it names, was a numpy type string, byte offset).
    dtype: Option<(Dtype, Option<ByteOrder>, bool, usize)>,
    shape: Option<Shape>,
    shape_ab: Option<TypedBytes<'a>>,
    count: Option<CountVal<'a>>,
    count_ab: Option<TypedBytes<'a>>,
    /// (byte order, byte offset).
    byte_order: Option<(ByteOrder, usize)>,
}

/// Parse the Reductionist map at the decoder position (see the module doc): read its keys,
/// then derive the element type, shape, count and layout from them.
pub(crate) fn parse_reductionist<'a, F: FnMut(u64, i64)>(d: &mut Decoder<'a>, sink: &mut F) -> Result<Parsed<'a>> {
    let k = read_keys(d, sink)?;
    let Some(bytes) = k.bytes else {
        bail!(Malformed, "map at byte {} has no key \"bytes\" (the array data)", k.map_pos);
    };
    let (dtype, data_order) = data_type(&k, &bytes)?;
    let wire_order = k.byte_order.map_or(ByteOrder::Little, |(o, _)| o);
    let shape = shape_of(&k, &bytes, dtype, wire_order)?;
    let nelements = check_data_len(&shape, dtype, bytes.len(), "key \"bytes\"")?;
    let count = count_of(&k, wire_order, d.input())?;
    if count.form != CountForm::Absent && count.len != 1 && count.len != nelements {
        bail!(
            Malformed,
            "count at byte {} has {} elements: Reductionist sends 1 (full reductions, select) or one per result element (prod(shape {:?}) = {nelements})",
            count.offset,
            count.len,
            shape.as_slice()
        );
    }
    Ok(Parsed {
        data: bytes.loc,
        format: Format::Reductionist,
        layout: layout_of(&k, &bytes),
        dtype,
        byte_order: effective_order(dtype, data_order),
        fortran_order: false,
        shape,
        nelements,
        count,
    })
}

/// Read every entry of the map at the decoder position: known keys once each (a duplicate
/// is `Malformed`), unknown keys skipped.
fn read_keys<'a, F: FnMut(u64, i64)>(d: &mut Decoder<'a>, sink: &mut F) -> Result<Keys<'a>> {
    let len = d.input().len();
    let mut k = Keys { map_pos: d.position(), ..Keys::default() };
    let n = d.map().map_err(|e| cbor_err(e, "top-level map", len))?;
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
        if let Some(&(_, bit)) = KEYS.iter().find(|(name, _)| *name == key) {
            if k.seen & bit != 0 {
                bail!(Malformed, "duplicate key {key:?} at byte {kpos}");
            }
            k.seen |= bit;
        }
        read_value(d, key, &mut k, sink)?;
        i += 1;
    }
    Ok(k)
}

/// Read the value of `key` at the decoder position into `k`.
fn read_value<'a, F: FnMut(u64, i64)>(d: &mut Decoder<'a>, key: &str, k: &mut Keys<'a>, sink: &mut F) -> Result<()> {
    let len = d.input().len();
    let vpos = d.position();
    let what = format!("value of key {key:?} at byte {vpos}");
    let text = |d: &mut Decoder<'a>| d.str().map_err(|e| cbor_err(e, &format!("{what} (expected a text string)"), len));
    match key {
        "bytes" => k.bytes = Some(read_bytes_like(d, &what, true)?),
        "dtype" => {
            let (dt, o, np) = parse_dtype(text(d)?, vpos)?;
            k.dtype = Some((dt, o, np, vpos));
        }
        "shape" => k.shape = Some(read_shape(d, "key \"shape\"")?),
        "shape_as_bytes" => k.shape_ab = Some(read_bytes_like(d, &what, false)?),
        "count" => k.count = Some(read_count(d, sink)?),
        "count_as_bytes" => k.count_ab = Some(read_bytes_like(d, &what, false)?),
        "byte_order" => {
            let o = match text(d)? {
                "little" => ByteOrder::Little,
                "big" => ByteOrder::Big,
                s => bail!(Malformed, "{what}: byte_order {s:?} is neither \"little\" nor \"big\""),
            };
            k.byte_order = Some((o, vpos));
        }
        _ => {
            k.unknown = true;
            d.set_position(raw::skip(d.input(), vpos, &what)?);
        }
    }
    Ok(())
}

/// The element type and the byte order of the data: from the typed-array tag of `bytes`
/// (the `dtype` and `byte_order` keys must agree with it), else from the `dtype` key (a
/// numpy type string's order, else `byte_order`, else little-endian).
fn data_type(k: &Keys<'_>, bytes: &TypedBytes<'_>) -> Result<(Dtype, ByteOrder)> {
    match (bytes.tag, k.dtype) {
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
            if let Some((o, opos)) = k.byte_order {
                if o != to && tdt.itemsize() != Some(1) {
                    bail!(Malformed, "key \"byte_order\" at byte {opos} says {o:?} but the RFC 8746 tag {tag} of \"bytes\" says {to:?}-endian");
                }
            }
            Ok((tdt, to))
        }
        (None, Some((kdt, ko, _, kpos))) => {
            let o = match (ko, k.byte_order) {
                (Some(ko), Some((o, opos))) if ko != o && kdt.itemsize() != Some(1) => {
                    bail!(Malformed, "key \"dtype\" at byte {kpos} says {ko:?}-endian but key \"byte_order\" at byte {opos} says {o:?}")
                }
                (Some(ko), _) => ko,
                (None, Some((o, _))) => o,
                (None, None) => ByteOrder::Little,
            };
            Ok((kdt, o))
        }
        (None, None) => bail!(Malformed, "map at byte {} has no key \"dtype\" and \"bytes\" is not a typed array", k.map_pos),
    }
}

/// The shape: `shape_as_bytes` when non-empty (a non-empty `shape` must agree), else
/// `shape`, else `[]` (a scalar: the data must hold exactly one element).
fn shape_of(k: &Keys<'_>, bytes: &TypedBytes<'_>, dtype: Dtype, wire_order: ByteOrder) -> Result<Shape> {
    let from_ab = match &k.shape_ab {
        Some(b) if b.len() > 0 => Some(shape_from_bytes(b, wire_order)?),
        _ => None,
    };
    Ok(match (from_ab, k.shape) {
        (Some(a), Some(s)) if s.ndim() > 0 && a != s => {
            bail!(Malformed, "shape_as_bytes {:?} and shape {:?} disagree", a.as_slice(), s.as_slice())
        }
        (Some(a), _) => a,
        (None, Some(s)) => s,
        (None, None) => {
            // Reductionist always sends `shape` (`[]` for a scalar); a client that leaves it
            // out (PyActiveStorage's test fixtures drop an empty one) means `[]`.
            let item = dtype.itemsize().unwrap_or(1);
            if bytes.len() != item {
                bail!(
                    Malformed,
                    "map at byte {} has no key \"shape\" (nor a non-empty \"shape_as_bytes\"), which means shape [] (a scalar, as Reductionist sends it), but \"bytes\" holds {} bytes, not one {item}-byte {} element",
                    k.map_pos,
                    bytes.len(),
                    dtype.name()
                );
            }
            Shape::SCALAR
        }
    })
}

/// The count: `count_as_bytes` when non-empty, else `count` in whichever form it has, else
/// absent. A non-empty `count` array (or typed array) next to a non-empty `count_as_bytes`
/// must hold the same values (as many, equal element by element), as `shape` and
/// `shape_as_bytes` must; `input` is the whole message (an integer array is walked again).
fn count_of<'a>(k: &Keys<'a>, wire_order: ByteOrder, input: &'a [u8]) -> Result<CountInfo<'a>> {
    let int64 = |form, len, scalar, offset| CountInfo { form, dtype: Some(Dtype::Int64), byte_order: None, len, scalar, bytes: None, offset };
    Ok(match (&k.count_ab, k.count) {
        (Some(b), cv) if b.len() > 0 => {
            let c = count_from_bytes(b, wire_order, "count_as_bytes")?;
            match cv {
                Some(CountVal::Array { len: n, offset, .. }) if n != 0 => {
                    if n != c.len {
                        bail!(Malformed, "count at byte {offset} has {n} elements but count_as_bytes has {}", c.len);
                    }
                    check_counts_agree(&c, offset, |f| {
                        let mut d = Decoder::new(input);
                        d.set_position(offset);
                        walk_array(&mut d, &mut { f }).map(|_| ())
                    })?;
                }
                Some(CountVal::Typed(t)) if t.len() > 0 => {
                    let tc = count_from_bytes(&t, wire_order, "count")?;
                    if tc.len != c.len {
                        bail!(Malformed, "count at byte {} has {} elements but count_as_bytes has {}", tc.offset, tc.len, c.len);
                    }
                    check_counts_agree(&c, tc.offset, |f| {
                        (0..tc.len).for_each(|i| f(i, count_at(&tc, i)));
                        Ok(())
                    })?;
                }
                _ => {}
            }
            c
        }
        // An empty count (Reductionist's `[]` next to count_as_bytes) is no count.
        (_, None | Some(CountVal::Null) | Some(CountVal::Array { len: 0, .. })) => CountInfo::ABSENT,
        (_, Some(CountVal::Typed(b))) if b.len() == 0 => CountInfo::ABSENT,
        (_, Some(CountVal::Scalar { value, offset })) => int64(CountForm::Scalar, 1, value, offset),
        (_, Some(CountVal::Array { len, offset, .. })) => int64(CountForm::Array, len, 0, offset),
        (_, Some(CountVal::Typed(b))) => count_from_bytes(&b, wire_order, "count")?,
    })
}

/// Element `i` (< `c.len`) of a byte-string count already checked by [`count_from_bytes`].
fn count_at(c: &CountInfo<'_>, i: u64) -> i64 {
    let (Some(bytes), Some(dt)) = (c.bytes, c.dtype) else { return -1 };
    let item = dt.itemsize().unwrap_or(1);
    let at = i as usize * item;
    bytes.get(at..at + item).and_then(|b| int_from_bytes_checked(b, dt, c.byte_order.unwrap_or(ByteOrder::Little))).unwrap_or(-1)
}

/// `Malformed` naming the first element where the values `walk` hands out (those of the
/// `count` key at byte `count_offset`, as many as `ab` has) differ from `count_as_bytes` `ab`.
fn check_counts_agree<W>(ab: &CountInfo<'_>, count_offset: usize, walk: W) -> Result<()>
where
    W: FnOnce(&mut dyn FnMut(u64, i64)) -> Result<()>,
{
    let mut first: Option<(u64, i64)> = None;
    walk(&mut |i, v| {
        if first.is_none() && (i >= ab.len || count_at(ab, i) != v) {
            first = Some((i, v));
        }
    })?;
    if let Some((i, v)) = first {
        bail!(
            Malformed,
            "count (at byte {count_offset}) and count_as_bytes (at byte {}) disagree: element {i} is {v} in count but {} in count_as_bytes",
            ab.offset,
            count_at(ab, i)
        );
    }
    Ok(())
}

/// The Reductionist layout: only the exact released key sets with standard value types
/// (plain byte strings, a Reductionist dtype name, a flat count array); anything else is
/// [`Layout::Client`].
fn layout_of(k: &Keys<'_>, bytes: &TypedBytes<'_>) -> Layout {
    let standard_values = !k.unknown
        && bytes.tag.is_none()
        && k.dtype.is_some_and(|d| !d.2)
        && matches!(k.count, Some(CountVal::Array { nested: false, .. }))
        && !matches!(bytes.loc, DataLoc::Chunked { .. })
        && k.shape_ab.is_none_or(|b| b.tag.is_none())
        && k.count_ab.is_none_or(|b| b.tag.is_none());
    let base = K_BYTES | K_DTYPE | K_SHAPE | K_COUNT | K_BYTE_ORDER;
    if !standard_values || k.seen & base != base {
        Layout::Client
    } else if k.seen == base {
        Layout::Reductionist0_12
    } else if k.seen == base | K_SHAPE_AB | K_COUNT_AB {
        // A 0.13.0 response with both *_as_bytes keys non-empty is identical on the wire.
        Layout::Reductionist0_13_1
    } else if k.shape_ab.is_none_or(|b| b.len() > 0) && k.count_ab.is_none_or(|b| b.len() > 0) {
        // 0.13.0 writes each *_as_bytes key only when non-empty.
        Layout::Reductionist0_13_0
    } else {
        Layout::Client
    }
}
