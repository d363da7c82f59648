//! RFC 8746 typed arrays (tags 64–87, §2) and multi-dimensional arrays (tags 40 / 1040,
//! §3.1), and the byte strings and shapes a Reductionist map shares with them.

use minicbor::data::Type;
use minicbor::Decoder;

use super::raw::{at, cbor_err};
use crate::dtype::{ByteOrder, Dtype};
use crate::error::Result;
use crate::payload::view::{check_data_len, effective_order, CountInfo, DataLoc, Format, Layout, Parsed, Shape, MAX_NDIM};

/// cbindgen:ignore
/// RFC 8746 §3.1.1 multi-dimensional array, row-major.
pub const TAG_MULTIDIM_ROW_MAJOR: u64 = 40;
/// cbindgen:ignore
/// RFC 8746 §3.1.2 multi-dimensional array, column-major.
pub const TAG_MULTIDIM_COL_MAJOR: u64 = 1040;

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
pub(super) struct TypedBytes<'a> {
    pub loc: DataLoc<'a>,
    /// `(dtype, order, tag)` when wrapped in a typed-array tag.
    pub tag: Option<(Dtype, ByteOrder, u64)>,
}

impl TypedBytes<'_> {
    pub fn len(&self) -> usize {
        match self.loc {
            DataLoc::Contiguous { data, .. } => data.len(),
            DataLoc::Chunked { len, .. } => len,
        }
    }
}

/// Read a byte string or a typed array at the decoder position. `allow_chunked`: accept an
/// indefinite-length byte string (only for the data; others are `Unsupported`).
pub(super) fn read_bytes_like<'a>(d: &mut Decoder<'a>, what: &str, allow_chunked: bool) -> Result<TypedBytes<'a>> {
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
            "{}: expected a byte string{}, found CBOR {other}",
            at(what, pos),
            if tag.is_some() { " inside the typed-array tag" } else { " or RFC 8746 typed array" }
        ),
    }
}

/// Read a definite or indefinite array of unsigned integers as a shape.
pub(super) fn read_shape(d: &mut Decoder<'_>, what: &str) -> Result<Shape> {
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
        bail!(
            Malformed,
            "tag {tag} at byte {pos}: content must be a 2-element array [dims, elements], found {}",
            n.map_or("an indefinite-length array".to_string(), |n| format!("{n} elements"))
        );
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
