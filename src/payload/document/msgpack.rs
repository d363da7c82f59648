//! The msgpack document walker (markers read in place; msgpack-numpy maps via
//! `payload::msgpack`).

use super::walk::{check_room, ItemKind, Sink, Walk, FLAG_NARROW_FLOAT};
use crate::error::Result;

/// `n` big-endian bytes at `pos` (after a marker at `at`).
fn be(buf: &[u8], pos: usize, n: usize, at: usize) -> Result<u64> {
    match buf.get(pos..pos + n) {
        Some(s) => Ok(s.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))),
        None => bail!(Malformed, "truncated input: the msgpack value at byte {at} needs {} bytes but the message has only {}", pos + n - at, buf.len() - at),
    }
}

/// `len` content bytes at `pos` must be inside `buf`: returns the end.
fn span(buf: &[u8], pos: usize, len: u64, at: usize) -> Result<usize> {
    match usize::try_from(len).ok().and_then(|l| pos.checked_add(l)).filter(|&e| e <= buf.len()) {
        Some(e) => Ok(e),
        None => bail!(Malformed, "truncated input: the msgpack value at byte {at} declares {len} bytes but only {} remain", buf.len() - pos.min(buf.len())),
    }
}

/// Walk the msgpack document; returns the byte after the root value.
pub(super) fn walk<'a, S: Sink<'a>>(w: &mut Walk<'a, '_, S>) -> Result<usize> {
    let mut pos = 0;
    loop {
        let (end, opened) = value(w, pos)?;
        pos = end;
        if !opened && w.complete(pos)? {
            return Ok(pos);
        }
    }
}

/// Report the value whose marker is at `start`. Returns the byte after it (after its head
/// only for a non-empty map or array) and whether it opened a container whose children follow.
fn value<'a, S: Sink<'a>>(w: &mut Walk<'a, '_, S>, start: usize) -> Result<(usize, bool)> {
    let buf = w.buf;
    let Some(&m) = buf.get(start) else {
        bail!(Malformed, "truncated input: a msgpack value expected at byte {start} but the message has only {} bytes", buf.len());
    };
    let int = |n: usize| be(buf, start + 1, n, start);
    // (kind, value, flags, head length) for scalars; containers and strings elsewhere.
    let (kind, value, flags, hl) = match m {
        0x00..=0x7f => (ItemKind::UInt, u64::from(m), 0, 1),
        0xe0..=0xff => (ItemKind::NegInt, u64::from(!m), 0, 1), // -1 - value = m as i8
        0xc0 => (ItemKind::Nil, 0, 0, 1),
        0xc1 => bail!(Malformed, "byte {start}: 0xc1 is never used in msgpack"),
        0xc2 | 0xc3 => (ItemKind::Bool, u64::from(m == 0xc3), 0, 1),
        0xca => (ItemKind::Float, f64::from(f32::from_bits(int(4)? as u32)).to_bits(), FLAG_NARROW_FLOAT, 5),
        0xcb => (ItemKind::Float, int(8)?, 0, 9),
        0xcc..=0xcf => {
            let n = 1 << (m - 0xcc);
            (ItemKind::UInt, int(n)?, 0, 1 + n)
        }
        0xd0..=0xd3 => {
            let n = 1usize << (m - 0xd0);
            let raw = int(n)?;
            let shift = 64 - 8 * n as u32;
            let v = ((raw << shift) as i64) >> shift;
            if v < 0 {
                (ItemKind::NegInt, !(v as u64), 0, 1 + n)
            } else {
                (ItemKind::UInt, v as u64, 0, 1 + n)
            }
        }
        0xa0..=0xbf | 0xd9..=0xdb | 0xc4..=0xc6 => return Ok((string(w, m, start)?, false)),
        0xc7..=0xc9 | 0xd4..=0xd8 => return Ok((ext(w, m, start)?, false)),
        0x80..=0x9f | 0xdc..=0xdf => return container(w, m, start),
    };
    w.emit(kind, flags, start, (0, 0), value);
    Ok((start + hl, false))
}

/// A str or bin value (marker `m` at `start`); returns the byte after it.
fn string<'a, S: Sink<'a>>(w: &mut Walk<'a, '_, S>, m: u8, start: usize) -> Result<usize> {
    let buf = w.buf;
    let int = |n: usize| be(buf, start + 1, n, start);
    let (len, hl) = match m {
        0xa0..=0xbf => (u64::from(m & 0x1f), 1),
        0xd9 | 0xc4 => (int(1)?, 2),
        0xda | 0xc5 => (int(2)?, 3),
        _ => (int(4)?, 5),
    };
    let text = !(0xc4..=0xc6).contains(&m);
    let end = span(buf, start + hl, len, start)?;
    let s = &buf[start + hl..end];
    if text && std::str::from_utf8(s).is_err() {
        bail!(Malformed, "msgpack str at byte {start} is not valid UTF-8");
    }
    w.emit(if text { ItemKind::Text } else { ItemKind::Bytes }, 0, start, (start + hl, s.len()), 0);
    w.mark_key(s, text);
    Ok(end)
}

/// An ext value (marker `m` at `start`); returns the byte after it.
fn ext<'a, S: Sink<'a>>(w: &mut Walk<'a, '_, S>, m: u8, start: usize) -> Result<usize> {
    let buf = w.buf;
    let int = |n: usize| be(buf, start + 1, n, start);
    let (len, hl) = match m {
        0xc7 => (int(1)?, 3),
        0xc8 => (int(2)?, 4),
        0xc9 => (int(4)?, 6),
        _ => (1u64 << (m - 0xd4), 2),
    };
    let ty = be(buf, start + hl - 1, 1, start)? as u8 as i8;
    let end = span(buf, start + hl, len, start)?;
    w.emit(ItemKind::Ext, 0, start, (start + hl, end - start - hl), ty as i64 as u64);
    Ok(end)
}

/// A map or array (marker `m` at `start`): reported, and opened when not empty. Returns the
/// byte after its head and whether it was opened.
fn container<'a, S: Sink<'a>>(w: &mut Walk<'a, '_, S>, m: u8, start: usize) -> Result<(usize, bool)> {
    let buf = w.buf;
    let map = matches!(m, 0x80..=0x8f | 0xde | 0xdf);
    let (n, hl) = match m {
        0x80..=0x9f => (u64::from(m & 0x0f), 1),
        0xdc | 0xde => (be(buf, start + 1, 2, start)?, 3),
        _ => (be(buf, start + 1, 4, start)?, 5),
    };
    let n = if map { 2 * n } else { n };
    let pos = start + hl;
    check_room(buf, pos, n, if map { "msgpack map" } else { "msgpack array" }, start)?;
    let idx = w.emit(if map { ItemKind::Map } else { ItemKind::Array }, 0, start, (0, 0), 0);
    if n != 0 {
        w.open(idx, n, map, start)?;
    }
    Ok((pos, n != 0))
}
