//! msgpack-numpy payloads, decoded with rmp's low-level reader.
//!
//! Format (msgpack-numpy 0.4, `msgpack_numpy.encode`): a msgpack map whose keys are byte
//! or text strings:
//! - `nd`: true for an ndarray, false for a numpy scalar (then `shape` is absent: shape `()`);
//! - `type`: the numpy type string (`dtype.str`, e.g. `<f8`, `>i4`, `|u1`, `<c16`, `<f2`,
//!   `|b1`), or a list (`dtype.descr`) for structured dtypes;
//! - `kind`: `''` normally, `'V'` for structured dtypes; object arrays (`'O'`, type `|O`)
//!   carry a *pickle* in `data`;
//! - `shape`: array of unsigned integers;
//! - `data`: binary (or a raw/str string from old writers): the elements in C order.
//!
//! Object (pickle) payloads are refused with `Unsupported`: they are never unpickled, never
//! copied. Structured dtypes are `Unsupported`. Unknown extra keys are skipped; duplicate
//! known keys are `Malformed`; trailing bytes after the map are `Malformed`.

use rmp::decode::bytes::BytesReadError;
use rmp::decode::{self, Bytes, ValueReadError};
use rmp::Marker;

use super::view::{check_data_len, effective_order, CountInfo, DataLoc, Format, Layout, Parsed, Shape, MAX_NDIM};
use crate::dtype::{ByteOrder, Dtype};
use crate::error::{Error, Result};

/// A cursor over the input that hands rmp a fresh borrowed reader for each read.
struct Cur<'a> {
    buf: &'a [u8],
    pos: usize,
}

fn rmp_err(e: ValueReadError<BytesReadError>, what: &str, pos: usize, len: usize) -> Error {
    match e {
        ValueReadError::TypeMismatch(m) => err!(Malformed, "{what} at byte {pos}: unexpected msgpack {m:?}"),
        _ => err!(Malformed, "truncated input: {what} at byte {pos} runs past the end of the {len}-byte message"),
    }
}

impl<'a> Cur<'a> {
    fn with<T>(&mut self, what: &str, f: impl FnOnce(&mut Bytes<'a>) -> std::result::Result<T, ValueReadError<BytesReadError>>) -> Result<T> {
        let mut r = Bytes::new(&self.buf[self.pos..]);
        let v = f(&mut r).map_err(|e| rmp_err(e, what, self.pos, self.buf.len()))?;
        self.pos = self.buf.len() - r.remaining_slice().len();
        Ok(v)
    }

    fn marker(&self, what: &str) -> Result<Marker> {
        match self.buf.get(self.pos) {
            Some(&b) => Ok(Marker::from_u8(b)),
            None => bail!(Malformed, "truncated input: {what} expected at byte {} but the message has only {} bytes", self.pos, self.buf.len()),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            bail!(Malformed, "truncated input: {what} at byte {} declares {n} bytes but only {} remain", self.pos, self.buf.len() - self.pos);
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// A str, bin, or (old-style) raw string: its bytes.
    fn string_like(&mut self, what: &str) -> Result<&'a [u8]> {
        let n = match self.marker(what)? {
            Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => self.with(what, decode::read_str_len)?,
            Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => self.with(what, decode::read_bin_len)?,
            m => bail!(Malformed, "{what} at byte {}: expected a string or binary, found msgpack {m:?}", self.pos),
        };
        self.take(n as usize, what)
    }

    /// Skip one complete value (any type). msgpack containers always state their item
    /// count, so a running count of items still to skip suffices (no recursion, no
    /// allocation). rmp's `MessageLen` is not used: it panics (`todo!`) on ext types.
    fn skip(&mut self, what: &str) -> Result<()> {
        let mut left: u64 = 1;
        while left > 0 {
            left -= 1;
            let p = self.pos;
            let fixed = match self.marker(what)? {
                Marker::FixPos(_) | Marker::FixNeg(_) | Marker::Null | Marker::True | Marker::False => 1,
                Marker::U8 | Marker::I8 => 2,
                Marker::U16 | Marker::I16 | Marker::FixExt1 => 3,
                Marker::FixExt2 => 4,
                Marker::U32 | Marker::I32 | Marker::F32 => 5,
                Marker::FixExt4 => 6,
                Marker::U64 | Marker::I64 | Marker::F64 => 9,
                Marker::FixExt8 => 10,
                Marker::FixExt16 => 18,
                Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 | Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => {
                    self.string_like(what)?;
                    0
                }
                Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {
                    left += u64::from(self.with(what, decode::read_array_len)?);
                    0
                }
                Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => {
                    left += 2 * u64::from(self.with(what, decode::read_map_len)?);
                    0
                }
                Marker::Ext8 | Marker::Ext16 | Marker::Ext32 => {
                    let meta = self.with(what, decode::read_ext_meta)?;
                    self.take(meta.size as usize, what)?;
                    0
                }
                Marker::Reserved => bail!(Malformed, "{what} at byte {p}: reserved msgpack byte 0xc1"),
            };
            if fixed > 0 {
                self.take(fixed, what)?;
            }
        }
        Ok(())
    }
}

const K_ND: u32 = 1;
const K_TYPE: u32 = 2;
const K_KIND: u32 = 4;
const K_SHAPE: u32 = 8;
const K_DATA: u32 = 16;

/// Parse a whole msgpack-numpy input.
pub(crate) fn parse(buf: &[u8]) -> Result<Parsed<'_>> {
    let (p, end) = parse_at(buf, 0)?;
    if end != buf.len() {
        bail!(Malformed, "trailing bytes: the message ends at byte {end} but the input has {} bytes", buf.len());
    }
    Ok(p)
}

/// Parse the msgpack-numpy map starting at byte `start` of `buf`; returns it and the byte
/// after it.
pub(crate) fn parse_at(buf: &[u8], start: usize) -> Result<(Parsed<'_>, usize)> {
    let mut c = Cur { buf, pos: start };
    let n = c.with("top-level map", decode::read_map_len)?;
    let mut seen = 0u32;
    let (mut nd, mut ty, mut ty_is_list, mut kind, mut shape, mut data) = (None, None, false, None, None, None);
    let mut ty_pos = 0;
    for i in 0..n {
        let kpos = c.pos;
        let key = c.string_like(&format!("key of map entry {i}"))?;
        let bit = match key {
            b"nd" => K_ND,
            b"type" => K_TYPE,
            b"kind" => K_KIND,
            b"shape" => K_SHAPE,
            b"data" => K_DATA,
            _ => 0,
        };
        let name = String::from_utf8_lossy(key).into_owned();
        if bit != 0 {
            if seen & bit != 0 {
                bail!(Malformed, "duplicate key {name:?} at byte {kpos}");
            }
            seen |= bit;
        }
        let what = format!("value of key {name:?}");
        match bit {
            K_ND => nd = Some(c.with(&what, decode::read_bool)?),
            K_TYPE => {
                ty_pos = c.pos;
                match c.marker(&what)? {
                    Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => {
                        ty_is_list = true;
                        c.skip(&what)?;
                    }
                    _ => ty = Some(c.string_like(&what)?),
                }
            }
            K_KIND => kind = Some(c.string_like(&what)?),
            K_SHAPE => shape = Some(read_shape(&mut c, &what)?),
            K_DATA => {
                let dpos = c.pos;
                let d = c.string_like(&what)?;
                data = Some((d, c.pos - d.len(), dpos));
            }
            _ => c.skip(&what)?,
        }
    }
    let end = c.pos;
    let Some(nd) = nd else {
        bail!(Malformed, "msgpack map has no key \"nd\": not a msgpack-numpy payload");
    };
    let (dtype, order) = numpy_dtype(kind.unwrap_or(b""), ty, ty_is_list, ty_pos)?;
    let Some((data, offset, dpos)) = data else { bail!(Malformed, "msgpack-numpy map has no key \"data\"") };
    let shape = match (nd, shape) {
        (true, Some(s)) => s,
        (true, None) => bail!(Malformed, "msgpack-numpy map with nd=true has no key \"shape\""),
        (false, _) => Shape::SCALAR,
    };
    let nelements = check_data_len(&shape, dtype, data.len(), &format!("key \"data\" at byte {dpos}"))?;
    Ok((
        Parsed {
            data: DataLoc::Contiguous { data, offset },
            format: Format::MsgpackNumpy,
            layout: Layout::None,
            dtype,
            byte_order: effective_order(dtype, order.unwrap_or(ByteOrder::Little)),
            fortran_order: false,
            shape,
            nelements,
            count: CountInfo::ABSENT,
        },
        end,
    ))
}

/// Read the array of unsigned integers at the cursor as a shape (`what` names the value).
fn read_shape(c: &mut Cur<'_>, what: &str) -> Result<Shape> {
    let buf = c.buf;
    let spos = c.pos;
    let m = c.with(what, decode::read_array_len)?;
    if m as usize > MAX_NDIM {
        bail!(Unsupported, "key \"shape\" at byte {spos} has {m} axes, more than {MAX_NDIM} (PAYLOAD_MAX_NDIM)");
    }
    let mut s = Shape::SCALAR;
    for j in 0..m {
        let p = c.pos;
        let mut r = Bytes::new(&buf[p..]);
        let v: u64 = decode::read_int(&mut r).map_err(|e| match e {
            decode::NumValueReadError::TypeMismatch(m) => err!(Malformed, "shape axis {j} at byte {p}: expected an unsigned integer, found msgpack {m:?}"),
            decode::NumValueReadError::OutOfRange => err!(Malformed, "shape axis {j} at byte {p} is negative"),
            _ => err!(Malformed, "truncated input: shape axis {j} at byte {p} runs past the end of the {}-byte message", buf.len()),
        })?;
        c.pos = buf.len() - r.remaining_slice().len();
        s.push(v).expect("checked above");
    }
    Ok(s)
}

/// The element type and byte order of a msgpack-numpy map from its `kind` and `type` values
/// (`ty_is_list`: `type` was a list, a structured dtype; `ty_pos`: its byte offset).
/// Pickled object arrays, structured dtypes and other kinds are `Unsupported`.
fn numpy_dtype(kind: &[u8], ty: Option<&[u8]>, ty_is_list: bool, ty_pos: usize) -> Result<(Dtype, Option<ByteOrder>)> {
    if kind == b"O" || ty.is_some_and(|t| t.first() == Some(&b'|') && t.get(1) == Some(&b'O') || t == b"O") {
        bail!(Unsupported, "msgpack-numpy object array (kind 'O'): its data is a Python pickle, which vh5 never unpickles or copies");
    }
    if kind == b"V" || ty_is_list {
        bail!(Unsupported, "msgpack-numpy structured dtype (kind 'V', type at byte {ty_pos}): not supported");
    }
    if !kind.is_empty() {
        bail!(Unsupported, "msgpack-numpy kind {:?} is not supported (expected '' for plain numeric arrays)", String::from_utf8_lossy(kind));
    }
    let Some(ty) = ty else { bail!(Malformed, "msgpack-numpy map has no key \"type\"") };
    let ty_s = std::str::from_utf8(ty).map_err(|_| err!(Dtype, "key \"type\" at byte {ty_pos} is not UTF-8"))?;
    Dtype::from_numpy_str(ty_s).ok_or_else(|| err!(Dtype, "key \"type\" at byte {ty_pos}: unsupported numpy type string {ty_s:?} (expected e.g. <f8, >i4, |u1, <c16, <f2, |b1)"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn enc(ty: &str, kind: &str, shape: &[u64], data: &[u8], str_keys: bool) -> Vec<u8> {
        let mut w = Vec::new();
        let key = |w: &mut Vec<u8>, k: &str| {
            if str_keys {
                rmp::encode::write_str(w, k).unwrap()
            } else {
                rmp::encode::write_bin(w, k.as_bytes()).unwrap()
            }
        };
        rmp::encode::write_map_len(&mut w, 5).unwrap();
        key(&mut w, "nd");
        rmp::encode::write_bool(&mut w, true).unwrap();
        key(&mut w, "type");
        rmp::encode::write_str(&mut w, ty).unwrap();
        key(&mut w, "kind");
        rmp::encode::write_bin(&mut w, kind.as_bytes()).unwrap();
        key(&mut w, "shape");
        rmp::encode::write_array_len(&mut w, shape.len() as u32).unwrap();
        for &s in shape {
            rmp::encode::write_uint(&mut w, s).unwrap();
        }
        key(&mut w, "data");
        rmp::encode::write_bin(&mut w, data).unwrap();
        w
    }

    #[test]
    fn basic() {
        for str_keys in [false, true] {
            let data: Vec<u8> = (1..=6).flat_map(|v: i32| v.to_be_bytes()).collect();
            let m = enc(">i4", "", &[2, 3], &data, str_keys);
            let p = parse(&m).unwrap();
            assert_eq!(p.dtype, Dtype::Int32);
            assert_eq!(p.byte_order, Some(ByteOrder::Big));
            assert_eq!(p.shape.as_slice(), &[2, 3]);
            let DataLoc::Contiguous { data: d, offset } = p.data else { panic!() };
            assert_eq!(d, &data[..]);
            assert_eq!(&m[offset..offset + 24], &data[..]);
        }
    }

    #[test]
    fn refusals() {
        let e = parse(&enc("|O", "", &[1], b"\x80\x04pickle", false)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported);
        assert!(e.message.contains("pickle"));
        let e = parse(&enc("|V8", "V", &[1], &[0; 8], false)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported);
        let e = parse(&enc("<f16", "", &[1], &[0; 16], false)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Dtype);
        let e = parse(&enc("<f8", "", &[3], &[0; 16], false)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed);
        assert!(e.message.contains("16 bytes") && e.message.contains("24 bytes"), "{}", e.message);
        let m = enc("<f8", "", &[2], &[0; 16], false);
        for i in 0..m.len() {
            assert_eq!(parse(&m[..i]).unwrap_err().kind, ErrorKind::Malformed, "prefix {i}");
        }
        let mut t = m.clone();
        t.push(0);
        assert!(parse(&t).unwrap_err().message.contains("trailing"));
    }
}
