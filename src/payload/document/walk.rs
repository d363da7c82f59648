//! The walk shared by the CBOR and msgpack document walkers: the item types they report,
//! the sink they report to, and the stack of open containers ([`Walk`]), which also turns a
//! map that is an array (msgpack-numpy, Reductionist) into one view when it closes.

use crate::error::Result;
use crate::payload::cbor::raw::{ctx, INDEF, MAX_DEPTH};
use crate::payload::decode::view_of;
use crate::payload::msgpack;
use crate::payload::view::PayloadView;

/// `Item::parent` of the root item.
pub const NO_PARENT: u64 = u64::MAX;
/// `Item::flags`: a CBOR indefinite-length map, array, byte or text string. For strings the
/// item's children are the chunks (items of the same kind), `data_offset` is the head of
/// the indefinite string and `data_len` the total content length: no contiguous view.
pub const FLAG_INDEFINITE: u32 = 1;
/// `Item::flags` of an [`ItemKind::ArrayView`] of a msgpack-numpy map with `nd` false: a
/// numpy scalar (`msgpack_numpy.decode` returns `arr[0]`), not a 0-d array.
pub const FLAG_NUMPY_SCALAR: u32 = 4;
/// `Item::flags` of a float: it was stored with fewer than 64 bits (CBOR half / single,
/// msgpack float 32); `value` holds the exact float64 conversion.
pub const FLAG_NARROW_FLOAT: u32 = 2;

/// What an [`Item`] is.
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// A map: `children` = 2 × entries (key, value, key, value, ...).
    Map = 1,
    /// An array / list: `children` elements.
    Array = 2,
    /// A UTF-8 text string (validated): `data_offset`, `data_len`.
    Text = 3,
    /// A byte string (msgpack bin, or an old-style raw string is Text): `data_offset`, `data_len`.
    Bytes = 4,
    /// An integer ≥ 0: `value`.
    UInt = 5,
    /// A negative integer −1 − `value` (CBOR's own encoding: down to −2^64).
    NegInt = 6,
    /// A float: `value` holds the bits of the float64 (see [`FLAG_NARROW_FLOAT`]).
    Float = 7,
    /// `value` 0 (false) or 1 (true).
    Bool = 8,
    /// msgpack nil, CBOR null.
    Nil = 9,
    /// CBOR undefined (simple value 23).
    Undefined = 10,
    /// Another CBOR simple value: `value`.
    Simple = 11,
    /// A CBOR tag: `value` = tag number, one child (the tagged item).
    Tag = 12,
    /// A msgpack extension: `value` = the type (−128..=127 as two's complement in 64 bits),
    /// `data_offset`, `data_len` = its data.
    Ext = 13,
    /// An array: `value` = index of its [`PayloadView`] in the document's views.
    ArrayView = 14,
}

/// One value of a document (fixed size; see the [`super`] module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub kind: ItemKind,
    /// [`FLAG_INDEFINITE`], [`FLAG_NARROW_FLOAT`].
    pub flags: u32,
    /// Index of the parent item, [`NO_PARENT`] for the root.
    pub parent: u64,
    /// Index among the parent's children (maps: key 2k, value 2k+1); 0 for the root.
    pub position: u64,
    /// Number of direct children (maps: 2 × entries; tags: 1; chunked strings: chunks).
    pub children: u64,
    /// Byte offset of the item's first byte (its head) in the input.
    pub offset: usize,
    /// Text, Bytes, Ext: first content byte; ArrayView: the data offset of its view.
    pub data_offset: usize,
    /// Text, Bytes, Ext: content length in bytes; ArrayView: data length of its view.
    pub data_len: usize,
    /// UInt / NegInt / Bool / Simple / Tag / Ext / ArrayView value, Float bits; else 0.
    pub value: u64,
}

/// Which format a document is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocFormat {
    /// Detect from the first bytes (see [`super::detect_format`]).
    Auto = 0,
    Cbor = 1,
    Msgpack = 2,
}

/// Where the walker writes: items and views are handed over by index; an index may be
/// handed again (lower than before) when a map turns out to be an array and its already
/// reported children are rolled back.
pub trait Sink<'a> {
    /// Item `idx` (every index below it was handed before).
    fn item(&mut self, idx: usize, it: Item);
    /// The final `children` count of item `idx` (indefinite containers learn it at the end).
    fn children(&mut self, idx: usize, n: u64);
    /// View `idx`.
    fn view(&mut self, idx: usize, v: PayloadView<'a>);
}

/// One open container on the walk stack.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Level {
    /// Its item index.
    item: usize,
    /// Children still to come (INDEF: until a break).
    left: u64,
    /// Position of its next child.
    next: u64,
    /// Byte offset of its head.
    head: usize,
    /// Views reported before it opened (to roll back to).
    views_at: usize,
    /// Keys seen that mark an array map (see `mark_key`).
    marks: u8,
    /// Position of the value of a msgpack key "nd" (u64::MAX: none yet).
    nd_value: u64,
    /// Position of the value of the key "bytes" of a CBOR Reductionist map (u64::MAX: none yet).
    bytes_value: u64,
    /// A CBOR Reductionist map: its `bytes` value is reported as the view in `Walk::rview`.
    rmap: bool,
    map: bool,
    parent: u64,
    position: u64,
}

/// `Level::marks`: msgpack key "nd".
const M_ND: u8 = 4;
/// `Level::marks`: the "nd" value was false (a numpy scalar).
const M_ND_FALSE: u8 = 8;
/// `Level::marks`: msgpack keys "type" / "data".
const M_TYPE: u8 = 16;
const M_DATA: u8 = 32;

pub(super) struct Walk<'a, 's, S> {
    pub buf: &'a [u8],
    pub sink: &'s mut S,
    pub items: usize,
    pub views: usize,
    pub stack: [Level; MAX_DEPTH],
    pub depth: usize,
    pub format: DocFormat,
    /// The view of the open CBOR Reductionist map (at most one is open: their values hold
    /// no maps), reported in place of its `bytes` value.
    pub rview: Option<PayloadView<'a>>,
    /// Stop at the first safe point once this many items are reported (usize::MAX: never):
    /// items below it are then final (see `complete`).
    pub stop_at: usize,
    /// The walk stopped early (at `stop_at`): the rest of the input was not walked.
    pub stopped: bool,
}

impl<'a, S: Sink<'a>> Walk<'a, '_, S> {
    /// Report a new item under the current container; returns its index.
    pub fn emit(&mut self, kind: ItemKind, flags: u32, offset: usize, data: (usize, usize), value: u64) -> usize {
        let (parent, position) = if self.depth == 0 {
            (NO_PARENT, 0)
        } else {
            let l = &mut self.stack[self.depth - 1];
            l.next += 1;
            if l.next - 1 == l.nd_value && kind == ItemKind::Bool && value == 0 {
                l.marks |= M_ND_FALSE;
            }
            (l.item as u64, l.next - 1)
        };
        let idx = self.items;
        self.items += 1;
        self.sink.item(idx, Item { kind, flags, parent, position, children: 0, offset, data_offset: data.0, data_len: data.1, value });
        idx
    }

    /// Open container item `idx` (head at `head`) with `left` children to come (> 0 or INDEF).
    pub fn open(&mut self, idx: usize, left: u64, map: bool, head: usize) -> Result<()> {
        if self.depth == MAX_DEPTH {
            bail!(Unsupported, "byte {head}: the document nests arrays, maps and tags deeper than {MAX_DEPTH} levels (PAYLOAD_MAX_DEPTH)");
        }
        let (parent, position) = if self.depth == 0 {
            (NO_PARENT, 0)
        } else {
            let l = &self.stack[self.depth - 1];
            (l.item as u64, l.next - 1)
        };
        self.stack[self.depth] =
            Level { item: idx, left, next: 0, head, views_at: self.views, marks: 0, nd_value: u64::MAX, bytes_value: u64::MAX, rmap: false, map, parent, position };
        self.depth += 1;
        if left != INDEF {
            // Known now: the item is final once reported (a stopped walk never closes it).
            self.sink.children(idx, left);
        }
        Ok(())
    }

    /// The map just opened is a CBOR Reductionist map whose array is `v`.
    pub fn open_rmap(&mut self, v: PayloadView<'a>) {
        self.stack[self.depth - 1].rmap = true;
        self.rview = Some(v);
    }

    /// The next item is the `bytes` value of an open Reductionist map: the view it becomes.
    pub fn take_rmap_bytes(&mut self) -> Option<PayloadView<'a>> {
        let l = self.stack[..self.depth].last()?;
        if l.rmap && l.next == l.bytes_value {
            self.rview.take()
        } else {
            None
        }
    }

    /// A key `s` (text when `text`) was just reported: remember the keys that make a map an array.
    pub fn mark_key(&mut self, s: &[u8], text: bool) {
        if self.depth == 0 {
            return;
        }
        let l = &mut self.stack[self.depth - 1];
        if !l.map || l.next % 2 != 1 {
            return;
        }
        l.marks |= match (self.format, s, text) {
            (DocFormat::Msgpack, b"nd", _) => {
                l.nd_value = l.next;
                M_ND
            }
            (DocFormat::Msgpack, b"type", _) => M_TYPE,
            (DocFormat::Msgpack, b"data", _) => M_DATA,
            (DocFormat::Cbor, b"bytes", true) => {
                l.bytes_value = l.next;
                0
            }
            _ => 0,
        };
    }

    /// Report the view of the array parsed at `head` as a new item.
    pub fn emit_view(&mut self, head: usize, v: PayloadView<'a>) {
        let vi = self.views;
        self.views += 1;
        self.emit(ItemKind::ArrayView, 0, head, (v.data_offset, v.data.len()), vi as u64);
        self.sink.view(vi, v);
    }

    /// The item just reported (or closed) is complete; `pos` is the byte after it. Closes
    /// every container it completes. Returns true when the root is complete.
    pub fn complete(&mut self, pos: usize) -> Result<bool> {
        loop {
            if self.depth == 0 {
                return Ok(true);
            }
            let top = &mut self.stack[self.depth - 1];
            if top.left == INDEF {
                return Ok(self.stop_here());
            }
            top.left -= 1;
            if top.left != 0 {
                return Ok(self.stop_here());
            }
            self.close(pos)?;
        }
    }

    /// True (and `stopped` set) when the walk has reported `stop_at` items and none of them
    /// can change any more: every container still open below `stop_at` has a known child
    /// count and is not a msgpack map (which may still turn into a view and roll back).
    fn stop_here(&mut self) -> bool {
        let e = self.stop_at;
        if self.items < e {
            return false;
        }
        let msgpack = self.format == DocFormat::Msgpack;
        self.stopped = self.stack[..self.depth].iter().all(|l| l.item >= e || (l.left != INDEF && !(l.map && msgpack)));
        self.stopped
    }

    /// A break byte at `pos`: closes the innermost indefinite container.
    pub fn brk(&mut self, pos: usize) -> Result<bool> {
        if self.depth == 0 || self.stack[self.depth - 1].left != INDEF {
            bail!(Malformed, "byte {pos}: unexpected CBOR break (0xff) outside an indefinite-length array, map or string");
        }
        let l = &self.stack[self.depth - 1];
        if l.map && l.next % 2 == 1 {
            bail!(Malformed, "byte {pos}: CBOR break (0xff) in place of a map value: the key at the end of the indefinite-length map at byte {} has no value", l.head);
        }
        self.close(pos + 1)?;
        self.complete(pos + 1)
    }

    /// Close the innermost container (its last byte is before `end`). A msgpack map marked
    /// as an array is parsed again as one and replaces its reported children by one view.
    fn close(&mut self, end: usize) -> Result<()> {
        self.depth -= 1;
        let l = self.stack[self.depth];
        self.sink.children(l.item, l.next);
        if l.rmap {
            self.rview = None;
        }
        let array = self.format == DocFormat::Msgpack && l.marks & (M_ND | M_TYPE | M_DATA) == M_ND | M_TYPE | M_DATA;
        if !l.map || !array {
            return Ok(());
        }
        let (p, pend) = msgpack::parse_at(self.buf, l.head)?;
        if pend != end {
            bail!(Malformed, "byte {}: the array map ends at byte {pend} as an array but at byte {end} as a map", l.head);
        }
        let v = view_of(p, 0).map_err(|e| ctx(e, &format!("array map at byte {}", l.head)))?;
        // Roll back: the map's item becomes the view; its children are forgotten.
        self.items = l.item;
        self.views = l.views_at;
        let vi = self.views;
        self.views += 1;
        self.items += 1;
        self.sink.item(
            l.item,
            Item {
                kind: ItemKind::ArrayView,
                flags: if l.marks & M_ND_FALSE != 0 { FLAG_NUMPY_SCALAR } else { 0 },
                parent: l.parent,
                position: l.position,
                children: 0,
                offset: l.head,
                data_offset: v.data_offset,
                data_len: v.data.len(),
                value: vi as u64,
            },
        );
        self.sink.view(vi, v);
        Ok(())
    }
}

/// `n` declared children need at least `n` more bytes: check before trusting `n`.
pub(super) fn check_room(buf: &[u8], pos: usize, n: u64, what: &str, head: usize) -> Result<()> {
    if n != INDEF && n > (buf.len() - pos.min(buf.len())) as u64 {
        bail!(Malformed, "truncated input: the {what} at byte {head} declares {n} items but only {} bytes remain", buf.len() - pos.min(buf.len()));
    }
    Ok(())
}
