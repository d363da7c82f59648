//! Copying a payload's data and its count out of the message into caller buffers, in native
//! byte order.

use minicbor::Decoder;

use super::cbor::count::{bad_count_bytes, int_from_bytes_checked};
use super::cbor::raw::cbor_err;
use super::decode::{parse, parse_with};
use super::view::{CountForm, DataLoc};
use crate::dtype::{ByteOrder, Dtype};
use crate::error::Result;

/// Copy the data of the payload in `buf` into `out` in NATIVE byte order, keeping the
/// payload's element order (C order of the shape, or Fortran order for RFC 8746 tag 1040),
/// and return the number of bytes written (= prod(shape) × itemsize).
///
/// Unlike [`super::decode_view`], this also reads data stored as an indefinite-length
/// (chunked) CBOR byte string, and has no alignment or byte-order requirement.
/// Errors: anything the decoder reports for the message; `BufferTooSmall` when `out` is
/// shorter than the data (nothing is written; the message gives the needed byte count).
pub fn copy_data(buf: &[u8], out: &mut [u8]) -> Result<usize> {
    let p = parse(buf)?;
    let need = match p.data {
        DataLoc::Contiguous { data, .. } => data.len(),
        DataLoc::Chunked { len, .. } => len,
    };
    if out.len() < need {
        bail!(BufferTooSmall, "the data has {need} bytes ({} elements of {}) but the output holds only {} bytes", p.nelements, p.dtype.name(), out.len());
    }
    let out = &mut out[..need];
    match p.data {
        DataLoc::Contiguous { data, .. } => out.copy_from_slice(data),
        DataLoc::Chunked { head, .. } => {
            let mut d = Decoder::new(buf);
            d.set_position(head);
            let mut at = 0;
            for chunk in d.bytes_iter().map_err(|e| cbor_err(e, "chunked data", buf.len()))? {
                let c = chunk.map_err(|e| cbor_err(e, "chunked data", buf.len()))?;
                out[at..at + c.len()].copy_from_slice(c);
                at += c.len();
            }
        }
    }
    if p.byte_order.is_some_and(|o| o.needs_swap()) {
        swap_in_place(out, p.dtype);
    }
    Ok(need)
}

/// Decode the count of the payload in `buf` into `out` as native int64 and return how many
/// were written (0 when the payload has no count).
///
/// Forms: a bare integer (1 value); an integer array, flat or nested, flattened in C order;
/// `count_as_bytes` or a typed array, converted from its element type and byte order.
/// Errors: anything [`super::decode_view`] reports for the message (except the view-only
/// `Misaligned`/`ByteOrder` checks, which do not apply: a chunked data byte string is fine
/// here); `BufferTooSmall` when `out.len()` is less than the count length (nothing is
/// written beyond `out`; for an integer array the first `out.len()` values may have been
/// written, since counts are decoded during the single walk; the message gives the needed
/// count); `Malformed` for a negative count or one above INT64_MAX, naming its index and
/// byte offset.
pub fn decode_count(buf: &[u8], out: &mut [i64]) -> Result<usize> {
    // Integer-array counts are written during the parse's single walk (only indices < cap).
    let cap = out.len();
    let p = parse_with(buf, &mut |i, v| {
        if let Some(slot) = out.get_mut(i as usize) {
            *slot = v;
        }
    })?;
    let c = p.count;
    if c.len > cap as u64 {
        bail!(BufferTooSmall, "the count has {} elements but the output holds only {cap} (cap, in elements)", c.len);
    }
    match c.form {
        CountForm::Absent => Ok(0),
        CountForm::Scalar => {
            out[0] = c.scalar;
            Ok(1)
        }
        CountForm::Bytes => {
            let bytes = c.bytes.expect("bytes form has bytes");
            let dt = c.dtype.expect("bytes form has a dtype");
            let item = dt.itemsize().unwrap_or(1);
            let order = c.byte_order.unwrap_or(ByteOrder::Little);
            if dt == Dtype::Int64 && order == ByteOrder::NATIVE {
                for (o, b) in out.iter_mut().zip(bytes.chunks_exact(8)) {
                    *o = i64::from_ne_bytes(b.try_into().expect("8 bytes"));
                }
            } else {
                for (o, b) in out.iter_mut().zip(bytes.chunks_exact(item)) {
                    *o = int_from_bytes_checked(b, dt, order).unwrap_or(-1);
                }
            }
            // validate (vectorisable pass over what we wrote)
            if let Some(i) = out[..c.len as usize].iter().position(|&v| v < 0) {
                return Err(bad_count_bytes(bytes, i, dt, order, c.offset));
            }
            Ok(c.len as usize)
        }
        CountForm::Array => Ok(c.len as usize),
    }
}

/// Reverse the bytes of every swap unit of `dtype` in `data` (complex numbers swap each half).
pub fn swap_in_place(data: &mut [u8], dtype: Dtype) {
    match dtype.swap_unit() {
        2 => data.chunks_exact_mut(2).for_each(|c| c.swap(0, 1)),
        4 => data.chunks_exact_mut(4).for_each(|c| {
            let v = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]).swap_bytes();
            c.copy_from_slice(&v.to_ne_bytes())
        }),
        8 => data.chunks_exact_mut(8).for_each(|c| {
            let v = u64::from_ne_bytes(c.try_into().expect("8 bytes")).swap_bytes();
            c.copy_from_slice(&v.to_ne_bytes())
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps() {
        let mut a = [1u8, 2, 3, 4, 5, 6, 7, 8];
        swap_in_place(&mut a, Dtype::Float64);
        assert_eq!(a, [8, 7, 6, 5, 4, 3, 2, 1]);
        swap_in_place(&mut a, Dtype::Complex64);
        assert_eq!(a, [5, 6, 7, 8, 1, 2, 3, 4]);
        swap_in_place(&mut a, Dtype::Int16);
        assert_eq!(a, [6, 5, 8, 7, 2, 1, 4, 3]);
        swap_in_place(&mut a, Dtype::UInt8);
        assert_eq!(a, [6, 5, 8, 7, 2, 1, 4, 3]);
    }

    #[test]
    fn chunked_and_big_endian() {
        // tag 82 (float64 BE) around a chunked byte string: (_ h'3ff0000000', h'000000')
        let msg = [0xd8, 0x52, 0x5f, 0x45, 0x3f, 0xf0, 0, 0, 0, 0x43, 0, 0, 0, 0xff];
        let mut out = [0u8; 8];
        assert_eq!(copy_data(&msg, &mut out).unwrap(), 8);
        assert_eq!(f64::from_ne_bytes(out), 1.0);
        let e = super::super::decode_view(&msg, 0).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Unsupported);
        let mut small = [0u8; 7];
        let e = copy_data(&msg, &mut small).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::BufferTooSmall);
        assert!(e.message.contains("8 bytes"));
        assert_eq!(small, [0; 7]);
    }
}
