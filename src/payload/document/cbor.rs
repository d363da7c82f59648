//! The CBOR document walker (RFC 8949 heads read in place; arrays via `payload::cbor`).

use super::schema::is_reductionist_map;
use super::walk::{check_room, Item, ItemKind, Sink, Walk, FLAG_INDEFINITE, FLAG_NARROW_FLOAT};
use crate::error::Result;
use crate::payload::cbor::raw::{ctx, head, items_to_come, major_name, skip, walk_string, Head};
use crate::payload::cbor::{parse_at, typed_array_tag, TAG_MULTIDIM_COL_MAJOR, TAG_MULTIDIM_ROW_MAJOR};
use crate::payload::decode::view_of;

/// The RFC 8949 §3.4.6 self-described CBOR tag (skipped in front of the root).
const TAG_SELF_DESCRIBE: u64 = 55799;

/// Walk the CBOR document; returns the byte after the root value.
pub(super) fn walk<'a, S: Sink<'a>>(w: &mut Walk<'a, '_, S>) -> Result<usize> {
    let buf = w.buf;
    let mut pos = 0;
    if let Ok(h) = head(buf, 0) {
        if h.major == 6 && h.arg == TAG_SELF_DESCRIBE {
            pos = h.len;
        }
    }
    loop {
        let h = head(buf, pos)?;
        let start = pos;
        if let Some(v) = w.take_rmap_bytes() {
            // The `bytes` value of a Reductionist map (a byte string or a typed array, checked
            // by the schema): the map's array in its place.
            pos = skip(buf, start, "value of key \"bytes\"")?;
            w.emit_view(start, v);
            if w.complete(pos)? {
                return Ok(pos);
            }
            continue;
        }
        match h.major {
            0 => {
                w.emit(ItemKind::UInt, 0, start, (0, 0), h.arg);
                pos += h.len;
            }
            1 => {
                w.emit(ItemKind::NegInt, 0, start, (0, 0), h.arg);
                pos += h.len;
            }
            2 | 3 => pos = string(w, start, &h)?,
            4 | 5 => {
                let map = h.major == 5;
                pos += h.len;
                let n = items_to_come(h.arg, map, h.indefinite());
                check_room(buf, pos, n, major_name(h.major), start)?;
                let kind = if map { ItemKind::Map } else { ItemKind::Array };
                let rmap = map && is_reductionist_map(buf, start);
                let view = if rmap {
                    let (p, _) = parse_at(buf, start, true)?;
                    Some(view_of(p, 0).map_err(|e| ctx(e, &format!("Reductionist map at byte {start}")))?)
                } else {
                    None
                };
                let idx = w.emit(kind, if h.indefinite() { FLAG_INDEFINITE } else { 0 }, start, (0, 0), 0);
                if n != 0 {
                    w.open(idx, n, map, start)?;
                    if let Some(v) = view {
                        w.open_rmap(v);
                    }
                    continue;
                }
            }
            6 => {
                let t = h.arg;
                let multidim = t == TAG_MULTIDIM_ROW_MAJOR || t == TAG_MULTIDIM_COL_MAJOR;
                if typed_array_tag(t)?.is_some() || (multidim && !plain_elements(buf, start + h.len)) {
                    let (p, end) = parse_at(buf, start, false)?;
                    let v = view_of(p, 0).map_err(|e| ctx(e, &format!("tag {t} at byte {start}")))?;
                    w.emit_view(start, v);
                    pos = end;
                } else {
                    let idx = w.emit(ItemKind::Tag, 0, start, (0, 0), t);
                    w.open(idx, 1, false, start)?;
                    pos += h.len;
                    continue;
                }
            }
            _ => {
                if h.is_break() {
                    if w.brk(pos)? {
                        return Ok(pos + 1);
                    }
                    pos += 1;
                    continue;
                }
                simple(w, start, &h);
                pos += h.len;
            }
        }
        if w.complete(pos)? {
            return Ok(pos);
        }
    }
}

/// True when the content of a tag 40 / 1040 at `pos` is `[dims, elements]` with `elements` a
/// plain CBOR array (of numbers, RFC 8746 §3.1.1 allows any array), not a typed array or byte
/// string: valid, but with no byte view. The document then keeps the tag as a generic tag (as
/// cbor2 decodes it) rather than refusing it. Any other shape answers false (the array parser
/// then reports what is wrong with it).
fn plain_elements(buf: &[u8], pos: usize) -> bool {
    let Ok(c) = head(buf, pos) else { return false };
    if c.major != 4 || c.indefinite() || c.arg != 2 {
        return false;
    }
    let mut p = pos + c.len;
    let Ok(d) = head(buf, p) else { return false };
    if d.major != 4 || d.indefinite() {
        return false;
    }
    if d.arg > 64 {
        return false;
    }
    p += d.len;
    for _ in 0..d.arg {
        match head(buf, p) {
            Ok(x) if x.major <= 1 => p += x.len,
            _ => return false,
        }
    }
    head(buf, p).is_ok_and(|e| e.major == 4)
}

/// A simple value or float (major type 7, not a break).
fn simple<'a, S: Sink<'a>>(w: &mut Walk<'a, '_, S>, start: usize, h: &Head) {
    let (kind, flags, value) = match h.info {
        20 | 21 => (ItemKind::Bool, 0, u64::from(h.info == 21)),
        22 => (ItemKind::Nil, 0, 0),
        23 => (ItemKind::Undefined, 0, 0),
        25 => (ItemKind::Float, FLAG_NARROW_FLOAT, f16_to_f64(h.arg as u16).to_bits()),
        26 => (ItemKind::Float, FLAG_NARROW_FLOAT, f64::from(f32::from_bits(h.arg as u32)).to_bits()),
        27 => (ItemKind::Float, 0, h.arg),
        _ => (ItemKind::Simple, 0, h.arg),
    };
    w.emit(kind, flags, start, (0, 0), value);
}

/// IEEE 754 binary16 to float64 (exact).
pub(crate) fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = (h >> 10) & 0x1f;
    let frac = f64::from(h & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + frac / 1024.0) * 2f64.powi(i32::from(e) - 15),
    }
}

/// A byte or text string at `start`: one item (definite), or an item with one child per
/// chunk (indefinite). Returns the byte after it.
fn string<'a, S: Sink<'a>>(w: &mut Walk<'a, '_, S>, start: usize, h: &Head) -> Result<usize> {
    let buf = w.buf;
    let kind = if h.major == 2 { ItemKind::Bytes } else { ItemKind::Text };
    if !h.indefinite() {
        let mut span = (0, 0);
        let end = walk_string(buf, start, h, &mut |s, e| span = (s, e - s))?;
        w.emit(kind, 0, start, span, 0);
        if kind == ItemKind::Text {
            w.mark_key(&buf[span.0..span.0 + span.1], true);
        }
        return Ok(end);
    }
    // Two passes over the chunk heads: the total first (the item comes before its chunks).
    // Chunk items (children of the string item) have `offset` = their first content byte.
    let (mut total, mut chunks) = (0usize, 0u64);
    walk_string(buf, start, h, &mut |s, e| {
        total += e - s;
        chunks += 1;
    })?;
    let idx = w.emit(kind, FLAG_INDEFINITE, start, (start, total), 0);
    w.sink.children(idx, chunks);
    let mut i = 0u64;
    walk_string(buf, start, h, &mut |s, e| {
        let ci = w.items;
        w.items += 1;
        w.sink.item(ci, Item { kind, flags: 0, parent: idx as u64, position: i, children: 0, offset: s, data_offset: s, data_len: e - s, value: 0 });
        i += 1;
    })
}
