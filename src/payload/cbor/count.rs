//! The per-element `count` of Reductionist responses: walking CBOR integer arrays (flat or
//! nested) without allocation, and the rules for fixed-width counts (`count_as_bytes`, typed
//! arrays): every count is in 0..=INT64_MAX. Decoding a message's count into a caller buffer
//! is [`crate::payload::decode_count`].

use minicbor::data::Type;
use minicbor::Decoder;

use super::raw::{cbor_err, items_to_come, INDEF};
use crate::dtype::{ByteOrder, Dtype};
use crate::error::{Error, Result};
use crate::payload::view::MAX_COUNT_DEPTH;

/// Walk the CBOR integer array at the decoder position (definite or indefinite, nested up
/// to [`MAX_COUNT_DEPTH`] levels), calling `f(index, value)` for every leaf in C order
/// (depth-first). Returns the number of leaves and whether any element was an array.
///
/// Leaves must be unsigned integers fitting int64: a negative value, a value > INT64_MAX
/// or any other item is `Malformed`, naming the leaf index and its byte offset; deeper
/// nesting is `Unsupported`. Nested arrays need not be rectangular. No allocation: the
/// level stack is a fixed array.
///
/// Speed: this walk is what lets the decoder reach the keys after `count` (Reductionist
/// writes `count_as_bytes` and `byte_order` after it), so leaves take a fast path: a
/// complete unsigned-integer head (RFC 8949 §3: major type 0, additional information 0–27)
/// is read in place; everything else (arrays, breaks, errors, truncation) goes through
/// minicbor's decoder.
pub(crate) fn walk_array<F: FnMut(u64, i64)>(d: &mut Decoder<'_>, f: &mut F) -> Result<(u64, bool)> {
    let input = d.input();
    let len = input.len();
    let head = d.position();
    let n = d.array().map_err(|e| cbor_err(e, &format!("count array at byte {head}"), len))?;
    let mut stack = [0u64; MAX_COUNT_DEPTH];
    stack[0] = n.map_or(INDEF, |n| items_to_come(n, false, false));
    let mut depth = 1usize;
    let mut idx = 0u64;
    let mut nested = false;
    let mut pos = d.position();
    loop {
        while depth > 0 && stack[depth - 1] == 0 {
            depth -= 1;
        }
        if depth == 0 {
            break;
        }
        // fast path: a run of small unsigned integers inside a definite-length level
        if stack[depth - 1] != INDEF {
            stack[depth - 1] = uint_run(input, &mut pos, stack[depth - 1], &mut idx, f)?;
            if stack[depth - 1] == 0 {
                continue;
            }
        }
        d.set_position(pos);
        let Some(&b) = input.get(pos) else {
            bail!(Malformed, "truncated input: count array at byte {head} runs past the end of the {len}-byte message (at count element {idx})");
        };
        if stack[depth - 1] == INDEF {
            if b == 0xff {
                // the break byte closing an indefinite-length array (checked above)
                pos += 1;
                depth -= 1;
                continue;
            }
        } else {
            stack[depth - 1] -= 1;
        }
        match b >> 5 {
            0 => {
                let v = d.u64().map_err(|e| cbor_err(e, &format!("count element {idx} at byte {pos}"), len))?;
                if v > i64::MAX as u64 {
                    bail!(Malformed, "count element {idx} at byte {pos} = {v} does not fit int64");
                }
                f(idx, v as i64);
                idx += 1;
            }
            1 => {
                let v = d.int().map_err(|e| cbor_err(e, &format!("count element {idx} at byte {pos}"), len))?;
                bail!(Malformed, "count element {idx} at byte {pos} is negative ({})", i128::from(v));
            }
            4 => {
                if depth == MAX_COUNT_DEPTH {
                    bail!(Unsupported, "count array at byte {head} is nested deeper than {MAX_COUNT_DEPTH} levels (at byte {pos})");
                }
                let m = d.array().map_err(|e| cbor_err(e, &format!("nested count array at byte {pos}"), len))?;
                stack[depth] = m.map_or(INDEF, |m| items_to_come(m, false, false));
                depth += 1;
                nested = true;
            }
            _ => {
                let ty = d.datatype().map_or_else(|_| "?".to_string(), |t: Type| t.to_string());
                bail!(Malformed, "count element {idx} at byte {pos}: expected an unsigned integer or an array, found CBOR {ty}");
            }
        }
        pos = d.position();
    }
    d.set_position(pos);
    Ok((idx, nested))
}

/// Hand over up to `left` leaves that are complete unsigned-integer heads, from `*pos` on
/// (advancing `*pos` and `*idx`); returns how many of the `left` remain (the first other
/// item stops the run). A value above INT64_MAX is `Malformed`.
#[inline(always)]
fn uint_run<F: FnMut(u64, i64)>(input: &[u8], pos: &mut usize, mut left: u64, idx: &mut u64, f: &mut F) -> Result<u64> {
    while left > 0 {
        let Some((v, adv)) = uint_head(input, *pos) else { break };
        if v > i64::MAX as u64 {
            bail!(Malformed, "count element {idx} at byte {pos} = {v} does not fit int64");
        }
        f(*idx, v as i64);
        *idx += 1;
        *pos += adv;
        left -= 1;
    }
    Ok(left)
}

/// A complete unsigned-integer head at `pos` (RFC 8949 §3.1 major type 0): `(value, bytes)`;
/// `None` for anything else or when the head is cut short (the caller's slow path reports it).
#[inline(always)]
fn uint_head(input: &[u8], pos: usize) -> Option<(u64, usize)> {
    let b = *input.get(pos)?;
    match b {
        0x00..=0x17 => Some((b as u64, 1)),
        0x18 => Some((*input.get(pos + 1)? as u64, 2)),
        0x19 => input.get(pos + 1..pos + 3).map(|s| (u16::from_be_bytes([s[0], s[1]]) as u64, 3)),
        0x1a => input.get(pos + 1..pos + 5).map(|s| (u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as u64, 5)),
        0x1b => input.get(pos + 1..pos + 9).map(|s| (u64::from_be_bytes(s.try_into().expect("8 bytes")), 9)),
        _ => None,
    }
}

/// Read one integer of type `dt` from exactly `dt.itemsize()` bytes `c` in `order`;
/// `None` when an unsigned value does not fit int64.
pub(crate) fn int_from_bytes_checked(c: &[u8], dt: Dtype, order: ByteOrder) -> Option<i64> {
    let mut a = [0u8; 8];
    let n = c.len();
    match order {
        ByteOrder::Little => a[..n].copy_from_slice(c),
        ByteOrder::Big => {
            for (i, &b) in c.iter().rev().enumerate() {
                a[i] = b;
            }
        }
    }
    let raw = u64::from_le_bytes(a);
    if dt.kind() == 'i' && n < 8 {
        let shift = 64 - 8 * n as u32;
        Some(((raw << shift) as i64) >> shift)
    } else if dt.kind() == 'i' {
        Some(raw as i64)
    } else {
        i64::try_from(raw).ok()
    }
}

/// Check fixed-width counts (`count_as_bytes`, a typed-array count) of type `dt` in `order`
/// starting at input byte `offset`: `Malformed` for the first one that is negative or above
/// INT64_MAX, naming its index, byte offset and raw bytes.
pub(crate) fn check_count_bytes(data: &[u8], dt: Dtype, order: ByteOrder, offset: usize) -> Result<()> {
    let item = dt.itemsize().unwrap_or(1);
    // Negative (signed) or above INT64_MAX (uint64): the top bit of the most significant byte.
    // Smaller unsigned types always fit.
    if dt.kind() == 'u' && item < 8 {
        return Ok(());
    }
    let msb = if order == ByteOrder::Big || item == 1 { 0 } else { item - 1 };
    let bad = |block: &[u8]| block.chunks_exact(item).position(|c| c[msb] & 0x80 != 0);
    // Blocks of 4 KiB tested without an early exit (the compiler vectorizes the OR of every
    // count's top byte: a 378 MB Reductionist message's counts were checked at ~6 GB/s one
    // count at a time), the first bad count located inside the block that has one.
    const BLOCK: usize = 4096;
    let whole = data.len() / item * item;
    let mut at = 0;
    while at < whole {
        let end = (at + BLOCK / item * item).min(whole);
        let block = &data[at..end];
        let any = block.chunks_exact(item).fold(0u8, |acc, c| acc | c[msb]) & 0x80 != 0;
        if any {
            let i = at / item + bad(block).expect("a count with its top bit set");
            return Err(bad_count_bytes(data, i, dt, order, offset));
        }
        at = end;
    }
    Ok(())
}

/// `Malformed` for fixed-width count `i` of `data` (type `dt` in `order`, starting at input
/// byte `offset`): negative or above INT64_MAX, naming its index, byte offset and raw bytes.
pub(crate) fn bad_count_bytes(data: &[u8], i: usize, dt: Dtype, order: ByteOrder, offset: usize) -> Error {
    let item = dt.itemsize().unwrap_or(1);
    let raw = &data[i * item..(i + 1) * item];
    err!(
        Malformed,
        "count element {i} at byte {} ({} {}-endian bytes {}) is negative or does not fit int64",
        offset + i * item,
        dt.name(),
        if order == ByteOrder::Little { "little" } else { "big" },
        raw.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn walk(hex: &[u8]) -> Result<(Vec<i64>, bool)> {
        let mut v = Vec::new();
        let mut d = Decoder::new(hex);
        let (n, nested) = walk_array(&mut d, &mut |i, x| {
            assert_eq!(i as usize, v.len());
            v.push(x)
        })?;
        assert_eq!(n as usize, v.len());
        assert_eq!(d.position(), hex.len());
        Ok((v, nested))
    }

    #[test]
    fn flat_nested_indefinite() {
        assert_eq!(walk(&[0x83, 0x01, 0x18, 0x20, 0x19, 0x01, 0x00]).unwrap(), (vec![1, 32, 256], false));
        // [[3], [4, [5]]]
        assert_eq!(walk(&[0x82, 0x81, 0x03, 0x82, 0x04, 0x81, 0x05]).unwrap(), (vec![3, 4, 5], true));
        // [_ 1, [_ 2, 3], []]
        assert_eq!(walk(&[0x9f, 0x01, 0x9f, 0x02, 0x03, 0xff, 0x80, 0xff]).unwrap(), (vec![1, 2, 3], true));
        assert_eq!(walk(&[0x80]).unwrap(), (vec![], false));
    }

    #[test]
    fn count_bytes_checked_block_by_block_name_the_first_bad_count() {
        // 10,000 counts (several 4 KiB blocks), one bad count at 7,777 and one after it: the
        // first is named, whatever the width and byte order; none bad: accepted.
        for (dt, item) in [(Dtype::Int64, 8), (Dtype::Int32, 4), (Dtype::UInt64, 8), (Dtype::Int16, 2)] {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                let mut data = vec![0x11u8; 10_000 * item];
                for c in data.chunks_exact_mut(item) {
                    let msb = if order == ByteOrder::Big { 0 } else { item - 1 };
                    c[msb] = 0x7f;
                }
                assert!(check_count_bytes(&data, dt, order, 100).is_ok(), "{dt:?} {order:?}");
                for bad in [9_000, 7_777] {
                    let msb = if order == ByteOrder::Big { 0 } else { item - 1 };
                    data[bad * item + msb] = 0x80;
                }
                let e = check_count_bytes(&data, dt, order, 100).unwrap_err();
                assert_eq!(e.kind, ErrorKind::Malformed);
                assert!(e.message.contains(&format!("count element 7777 at byte {}", 100 + 7_777 * item)), "{dt:?} {order:?}: {}", e.message);
            }
        }
    }

    #[test]
    fn bad_counts() {
        let e = walk(&[0x82, 0x01, 0x20]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed);
        assert!(e.message.contains("count element 1 at byte 2 is negative (-1)"), "{}", e.message);
        let e = walk(&[0x81, 0x1b, 0x80, 0, 0, 0, 0, 0, 0, 0]).unwrap_err();
        assert!(e.message.contains("9223372036854775808 does not fit int64"), "{}", e.message);
        let e = walk(&[0x82, 0x01]).unwrap_err();
        assert!(e.message.contains("truncated"), "{}", e.message);
        let e = walk(&[0x81, 0x61, 0x61]).unwrap_err();
        assert!(e.message.contains("found CBOR string"), "{}", e.message);
        let mut deep = vec![0x81u8; MAX_COUNT_DEPTH];
        deep.push(0x01);
        assert_eq!(walk(&deep).unwrap(), (vec![1], true));
        let mut deeper = vec![0x81u8; MAX_COUNT_DEPTH + 1];
        deeper.push(0x01);
        assert_eq!(walk(&deeper).unwrap_err().kind, ErrorKind::Unsupported);
    }

    #[test]
    fn ints_from_bytes() {
        assert_eq!(int_from_bytes_checked(&[0xff, 0xfe], Dtype::Int16, ByteOrder::Big), Some(-2));
        assert_eq!(int_from_bytes_checked(&[0xfe, 0xff], Dtype::Int16, ByteOrder::Little), Some(-2));
        assert_eq!(int_from_bytes_checked(&[0xfe, 0xff], Dtype::UInt16, ByteOrder::Little), Some(65534));
        assert_eq!(int_from_bytes_checked(&[0xff; 8], Dtype::UInt64, ByteOrder::Little), None);
        assert_eq!(int_from_bytes_checked(&[0xff; 8], Dtype::Int64, ByteOrder::Little), Some(-1));
        assert_eq!(int_from_bytes_checked(&[1, 0, 0, 0, 0, 0, 0, 0], Dtype::Int64, ByteOrder::Big), Some(1 << 56));
    }
}
