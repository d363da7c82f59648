//! Which CBOR maps of a document are Reductionist arrays: decided by the key set and the
//! CBOR types of the values only (never by their contents), so that any other map, however
//! much it looks like one, stays a plain map.
//!
//! *Rule*: a map is a Reductionist map when it has at most 7 entries, every key is a
//! definite-length text string among `bytes`, `dtype`, `shape`, `shape_as_bytes`, `count`,
//! `count_as_bytes`, `byte_order` (each at most once), `bytes` and `dtype` are present, and
//! the values have these types:
//! - `bytes`, `shape_as_bytes`, `count_as_bytes`: a byte string, or an RFC 8746 typed array
//!   (tag 64-87 around a byte string);
//! - `dtype`, `byte_order`: a text string;
//! - `shape`: an array of unsigned integers;
//! - `count`: an unsigned integer, an array whose leaves are integers (nested up to
//!   [`MAX_COUNT_DEPTH`](crate::payload::MAX_COUNT_DEPTH) levels), a typed array, null or
//!   undefined.
//!
//! Such a map is then decoded as the single-array decoder decodes it: an error in its
//! contents (unknown dtype name, data length not prod(shape) x item size, ...) refuses the
//! document.

use crate::payload::cbor::raw::{complete_item, head, items_to_come, skip, Head, INDEF};
use crate::payload::cbor::typed_array_tag;
use crate::payload::MAX_COUNT_DEPTH;

/// The keys of a Reductionist map, in bit order (`bytes` = bit 0, `dtype` = bit 1).
const NAMES: [&[u8]; 7] = [b"bytes", b"dtype", b"shape", b"shape_as_bytes", b"count", b"count_as_bytes", b"byte_order"];

/// True when the CBOR map whose head is at `pos` of `buf` is a Reductionist map (see the
/// module doc). Reads only the map (at most 7 entries; a longer map is answered at once).
pub(super) fn is_reductionist_map(buf: &[u8], pos: usize) -> bool {
    let Ok(h) = head(buf, pos) else { return false };
    if h.major != 5 || (!h.indefinite() && h.arg > NAMES.len() as u64) {
        return false;
    }
    let (mut p, mut seen, mut i) = (pos + h.len, 0u32, 0u64);
    loop {
        if h.indefinite() {
            if buf.get(p) == Some(&0xff) {
                break;
            }
            if i == NAMES.len() as u64 {
                return false;
            }
        } else if i == h.arg {
            break;
        }
        let Some((j, vpos)) = key_at(buf, p) else { return false };
        if seen & (1 << j) != 0 {
            return false;
        }
        seen |= 1 << j;
        let Some(end) = value_fits(buf, vpos, j) else { return false };
        p = end;
        i += 1;
    }
    seen & 3 == 3
}

/// The index in [`NAMES`] of the definite text key at `p`, and the position after it.
fn key_at(buf: &[u8], p: usize) -> Option<(usize, usize)> {
    let k = head(buf, p).ok()?;
    if k.major != 3 || k.indefinite() {
        return None;
    }
    let s = p + k.len;
    let e = usize::try_from(k.arg).ok().and_then(|n| s.checked_add(n))?;
    let key = buf.get(s..e)?;
    Some((NAMES.iter().position(|n| *n == key)?, e))
}

/// The end of the value at `p` when it has the type key `j` asks for.
fn value_fits(buf: &[u8], p: usize, j: usize) -> Option<usize> {
    let h = head(buf, p).ok()?;
    let ok = match j {
        0 | 3 | 5 => h.major == 2 || typed(buf, p, &h),
        1 | 6 => h.major == 3,
        2 => return uint_array_end(buf, p, &h),
        _ if h.major == 4 => return int_array_end(buf, p),
        _ => h.major == 0 || typed(buf, p, &h) || (h.major == 7 && matches!(h.info, 22 | 23)),
    };
    if ok {
        skip(buf, p, "value").ok()
    } else {
        None
    }
}

/// The end of the array at `p` when its leaves are integers (either sign: a type check,
/// not a value check) nested up to [`MAX_COUNT_DEPTH`] levels. The values are checked when
/// the map is decoded: a negative count refuses the document (it was a plain map, its
/// `bytes` a byte string, because the walk that decodes counts was used here).
fn int_array_end(buf: &[u8], p: usize) -> Option<usize> {
    let mut left = [0u64; MAX_COUNT_DEPTH];
    let (mut depth, mut pos) = (0usize, p);
    loop {
        let h = head(buf, pos).ok()?;
        if depth > 0 && left[depth - 1] == INDEF && h.is_break() {
            pos += 1;
            depth -= 1;
        } else {
            match h.major {
                0 | 1 if depth > 0 => pos += h.len,
                4 => {
                    if depth == MAX_COUNT_DEPTH {
                        return None;
                    }
                    pos += h.len;
                    let n = items_to_come(h.arg, false, h.indefinite());
                    if n != 0 {
                        left[depth] = n;
                        depth += 1;
                        continue;
                    }
                }
                _ => return None,
            }
        }
        // One item completed: count it against the enclosing arrays.
        if complete_item(&mut left, &mut depth) {
            return Some(pos);
        }
    }
}

/// An RFC 8746 typed-array tag (64-87) at `p` around a byte string.
fn typed(buf: &[u8], p: usize, h: &Head) -> bool {
    h.major == 6 && typed_array_tag(h.arg).ok().flatten().is_some() && head(buf, p + h.len).is_ok_and(|c| c.major == 2)
}

/// The end of the array at `p` when every element is an unsigned integer.
fn uint_array_end(buf: &[u8], p: usize, h: &Head) -> Option<usize> {
    if h.major != 4 {
        return None;
    }
    let (mut q, mut i) = (p + h.len, 0u64);
    loop {
        if !h.indefinite() && i == h.arg {
            return Some(q);
        }
        let e = head(buf, q).ok()?;
        if h.indefinite() && e.is_break() {
            return Some(q + 1);
        }
        if e.major != 0 {
            return None;
        }
        q += e.len;
        i += 1;
    }
}
