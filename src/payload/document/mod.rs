//! Whole documents: every value of a msgpack or CBOR message, and every array inside it as a
//! zero-copy [`PayloadView`], in one pass (safe Rust, no allocation proportional to the
//! input beyond the caller's output).
//!
//! The document is reported as a flat list of [`Item`]s in pre-order (a value before its
//! children): each names its kind, its parent (an earlier item, or [`NO_PARENT`] for the
//! root) and its position among the parent's children, so the tree can be rebuilt. A map's
//! children alternate key, value (positions 2k and 2k+1). Strings and byte strings give an
//! offset and length into the input.
//!
//! Arrays become one item of kind [`ItemKind::ArrayView`] whose `value` indexes the views:
//! - msgpack: every map with the keys `nd`, `type` and `data` (byte or text strings; without
//!   them `msgpack_numpy.decode` returns the map unchanged) is a msgpack-numpy array, decoded
//!   exactly as [`super::decode_view`] decodes a message holding only it (pickled objects
//!   and structured dtypes refused);
//! - CBOR: every RFC 8746 typed array (tags 64–87), multi-dimensional array (tags 40 /
//!   1040) and every map with both text keys `bytes` and `dtype` (a Reductionist map), decoded
//!   as [`super::decode_view`] does. Data held in an indefinite-length (chunked) byte string
//!   has no view: `Unsupported`.
//!
//! An error inside any array refuses the whole document (a silent half-answer is worse).
//! The self-describe tag 55799 in front of the root is skipped; other tags are
//! [`ItemKind::Tag`] items with one child.
//!
//! Limits: arrays, maps and tags nest at most [`MAX_DEPTH`] levels (deeper is
//! `Unsupported`, naming the byte); an item takes at least one input byte, so there are at
//! most `buf.len()` items; declared lengths are checked against the bytes left before
//! anything is done with them. Truncation at any byte is `Malformed`; trailing bytes after
//! the root value are `Malformed`.

mod cbor;
mod msgpack;

pub use super::cbor::raw::MAX_DEPTH;
use super::cbor::raw::INDEF;
use super::view::PayloadView;
use crate::error::Result;

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

/// One value of a document (fixed size; see the module doc).
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
    /// Detect from the first bytes (see [`detect_format`]).
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

/// How many items and views a document has (the final counts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// The format walked (never `Auto`).
    pub format: DocFormat,
    pub items: usize,
    pub views: usize,
}

/// A decoded document owning its item list (the views borrow the input).
#[derive(Debug, Clone)]
pub struct Document<'a> {
    pub format: DocFormat,
    pub items: Vec<Item>,
    pub views: Vec<PayloadView<'a>>,
}

struct VecSink<'a, 'b>(&'b mut Vec<Item>, &'b mut Vec<PayloadView<'a>>);

impl<'a> Sink<'a> for VecSink<'a, '_> {
    fn item(&mut self, idx: usize, it: Item) {
        self.0.truncate(idx);
        self.0.push(it);
    }
    fn children(&mut self, idx: usize, n: u64) {
        self.0[idx].children = n;
    }
    fn view(&mut self, idx: usize, v: PayloadView<'a>) {
        self.1.truncate(idx);
        self.1.push(v);
    }
}

/// Walk the whole document in `buf` into a [`Document`] (see the module doc).
/// Errors: as [`walk_document`].
pub fn decode_document(buf: &[u8], format: DocFormat) -> Result<Document<'_>> {
    let (mut items, mut views) = (Vec::new(), Vec::new());
    let c = walk_document(buf, format, &mut VecSink(&mut items, &mut views))?;
    items.truncate(c.items);
    views.truncate(c.views);
    Ok(Document { format: c.format, items, views })
}

/// Walk the whole document in `buf`, handing every item and view to `sink` (see the module
/// doc); returns the final counts.
///
/// Errors: `InvalidArgument` (`Auto` cannot tell the format from the first byte: give it),
/// `ServerError` (a JSON error body), `Malformed` (truncated, not well-formed, invalid UTF-8
/// text, trailing bytes, and anything [`super::decode_view`] reports for an array inside),
/// `Unsupported` (nesting deeper than [`MAX_DEPTH`], chunked array data, and the
/// `Unsupported` cases of [`super::decode_view`]: pickles, structured dtypes, float128 ...),
/// `Dtype`.
pub fn walk_document<'a, S: Sink<'a>>(buf: &'a [u8], format: DocFormat, sink: &mut S) -> Result<Counts> {
    let format = match format {
        DocFormat::Auto => {
            let mut f = detect_format(buf)?;
            // 0x80-0xbf start a container in both formats (msgpack fixmap/fixarray = CBOR
            // array; CBOR map = msgpack fixstr): a document well-formed in both is ambiguous,
            // never guessed (e.g. CBOR [100] is also the msgpack map {24: 100}); one that only
            // the other format accepts is that format's.
            if matches!(buf[0], 0x80..=0xbf) {
                let other = if f == DocFormat::Msgpack { DocFormat::Cbor } else { DocFormat::Msgpack };
                if walk_document(buf, other, &mut NullSink).is_ok() {
                    if walk_document(buf, f, &mut NullSink).is_ok() {
                        bail!(
                            InvalidArgument,
                            "byte 0: the document is well-formed both as msgpack and as CBOR (first byte 0x{:02x}): give the document format (PAYLOAD_DOC_CBOR or PAYLOAD_DOC_MSGPACK)",
                            buf[0]
                        );
                    }
                    f = other;
                }
            }
            f
        }
        f => f,
    };
    let mut w = Walk { buf, sink, items: 0, views: 0, stack: [Level::default(); MAX_DEPTH], depth: 0, format };
    let end = match format {
        DocFormat::Msgpack => msgpack::walk(&mut w)?,
        _ => cbor::walk(&mut w)?,
    };
    if end != buf.len() {
        bail!(Malformed, "trailing bytes: the document ends at byte {end} but the input has {} bytes", buf.len());
    }
    Ok(Counts { format, items: w.items, views: w.views })
}

/// A sink that keeps nothing (the other-format check of `Auto`).
struct NullSink;

impl<'a> Sink<'a> for NullSink {
    fn item(&mut self, _: usize, _: Item) {}
    fn children(&mut self, _: usize, _: u64) {}
    fn view(&mut self, _: usize, _: PayloadView<'a>) {}
}

/// The format of a document from its first bytes: CBOR for a map (0xa0–0xbf) or a tag
/// vh5 decodes as an array (40, 1040, 64–87, or the self-describe tag 55799); msgpack for
/// a map or array (0x80–0x8f, 0xde, 0xdf; 0xdc, 0xdd). JSON is a `ServerError` /
/// `Malformed` as for [`super::decode_view`]. Anything else is valid in both formats (a
/// scalar, a CBOR array 0x80–0x9f...) and is `InvalidArgument`: name the format.
pub fn detect_format(buf: &[u8]) -> Result<DocFormat> {
    match super::detect::detect(buf) {
        Err(e) => {
            if e.kind == crate::error::ErrorKind::ServerError || buf.first().is_some_and(|&b| b == b'{' || b.is_ascii_whitespace()) {
                return Err(e);
            }
        }
        Ok(super::detect::Detected::Msgpack) => return Ok(DocFormat::Msgpack),
        Ok(super::detect::Detected::Cbor) => {
            let b = buf[0];
            let tag_ok = match b {
                0xa0..=0xbf => true,
                0xd8 => buf.get(1).is_some_and(|&t| t == 40 || (64..=87).contains(&t)),
                0xd9 => matches!(buf.get(1..3), Some([0x04, 0x10]) | Some([0xd9, 0xf7])),
                _ => false,
            };
            if tag_ok {
                return Ok(DocFormat::Cbor);
            }
        }
    }
    match buf.first() {
        Some(0xdc | 0xdd) => Ok(DocFormat::Msgpack),
        Some(&b) => bail!(
            InvalidArgument,
            "byte 0: the first byte 0x{b:02x} starts a value in both msgpack ({}) and CBOR ({}): give the document format (PAYLOAD_DOC_CBOR or PAYLOAD_DOC_MSGPACK)",
            super::detect::describe_msgpack_head(b),
            super::cbor::raw::major_name(b >> 5)
        ),
        None => bail!(Malformed, "empty input (0 bytes): expected a CBOR or msgpack document"),
    }
}

/// One open container on the walk stack.
#[derive(Debug, Clone, Copy, Default)]
struct Level {
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
    map: bool,
    parent: u64,
    position: u64,
}

/// `Level::marks`: CBOR text key "bytes" / "dtype"; msgpack key "nd".
const M_BYTES: u8 = 1;
const M_DTYPE: u8 = 2;
const M_ND: u8 = 4;
/// `Level::marks`: the "nd" value was false (a numpy scalar).
const M_ND_FALSE: u8 = 8;
/// `Level::marks`: msgpack keys "type" / "data".
const M_TYPE: u8 = 16;
const M_DATA: u8 = 32;

struct Walk<'a, 's, S> {
    buf: &'a [u8],
    sink: &'s mut S,
    items: usize,
    views: usize,
    stack: [Level; MAX_DEPTH],
    depth: usize,
    format: DocFormat,
}

impl<'a, S: Sink<'a>> Walk<'a, '_, S> {
    /// Report a new item under the current container; returns its index.
    fn emit(&mut self, kind: ItemKind, flags: u32, offset: usize, data: (usize, usize), value: u64) -> usize {
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
    fn open(&mut self, idx: usize, left: u64, map: bool, head: usize) -> Result<()> {
        if self.depth == MAX_DEPTH {
            bail!(Unsupported, "byte {head}: the document nests arrays, maps and tags deeper than {MAX_DEPTH} levels (PAYLOAD_MAX_DEPTH)");
        }
        let (parent, position) = if self.depth == 0 {
            (NO_PARENT, 0)
        } else {
            let l = &self.stack[self.depth - 1];
            (l.item as u64, l.next - 1)
        };
        self.stack[self.depth] = Level { item: idx, left, next: 0, head, views_at: self.views, marks: 0, nd_value: u64::MAX, map, parent, position };
        self.depth += 1;
        Ok(())
    }

    /// A key `s` (text when `text`) was just reported: remember the keys that make a map an array.
    fn mark_key(&mut self, s: &[u8], text: bool) {
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
            (DocFormat::Cbor, b"bytes", true) => M_BYTES,
            (DocFormat::Cbor, b"dtype", true) => M_DTYPE,
            _ => 0,
        };
    }

    /// Report the view of the array parsed at `head` as a new item.
    fn emit_view(&mut self, head: usize, v: PayloadView<'a>) {
        let vi = self.views;
        self.views += 1;
        self.emit(ItemKind::ArrayView, 0, head, (v.data_offset, v.data.len()), vi as u64);
        self.sink.view(vi, v);
    }

    /// The item just reported (or closed) is complete; `pos` is the byte after it. Closes
    /// every container it completes. Returns true when the root is complete.
    fn complete(&mut self, pos: usize) -> Result<bool> {
        loop {
            if self.depth == 0 {
                return Ok(true);
            }
            let top = &mut self.stack[self.depth - 1];
            if top.left == INDEF {
                return Ok(false);
            }
            top.left -= 1;
            if top.left != 0 {
                return Ok(false);
            }
            self.close(pos)?;
        }
    }

    /// A break byte at `pos`: closes the innermost indefinite container.
    fn brk(&mut self, pos: usize) -> Result<bool> {
        if self.depth == 0 || self.stack[self.depth - 1].left != INDEF {
            bail!(Malformed, "byte {pos}: unexpected CBOR break (0xff) outside an indefinite-length array, map or string");
        }
        self.close(pos + 1)?;
        self.complete(pos + 1)
    }

    /// Close the innermost container (its last byte is before `end`). A map marked as an
    /// array is parsed again as one and replaces its reported children by one view.
    fn close(&mut self, end: usize) -> Result<()> {
        self.depth -= 1;
        let l = self.stack[self.depth];
        self.sink.children(l.item, l.next);
        let array = match self.format {
            DocFormat::Msgpack => l.marks & (M_ND | M_TYPE | M_DATA) == M_ND | M_TYPE | M_DATA,
            _ => l.marks & (M_BYTES | M_DTYPE) == M_BYTES | M_DTYPE,
        };
        if !l.map || !array {
            return Ok(());
        }
        let (p, pend) = match self.format {
            DocFormat::Msgpack => super::msgpack::parse_at(self.buf, l.head)?,
            _ => super::cbor::parse_at(self.buf, l.head, true)?,
        };
        if pend != end {
            bail!(Malformed, "byte {}: the array map ends at byte {pend} as an array but at byte {end} as a map", l.head);
        }
        let v = super::decode::view_of(p, 0).map_err(|e| super::cbor::raw::ctx(e, &format!("array map at byte {}", l.head)))?;
        // Roll back: the map's item becomes the view; its children are forgotten.
        self.items = l.item;
        self.views = l.views_at;
        let vi = self.views;
        self.views += 1;
        self.items += 1;
        self.sink.item(
            l.item,
            Item { kind: ItemKind::ArrayView, flags: if l.marks & M_ND_FALSE != 0 { FLAG_NUMPY_SCALAR } else { 0 }, parent: l.parent, position: l.position, children: 0, offset: l.head, data_offset: v.data_offset, data_len: v.data.len(), value: vi as u64 },
        );
        self.sink.view(vi, v);
        Ok(())
    }
}

/// `n` declared children need at least `n` more bytes: check before trusting `n`.
fn check_room(buf: &[u8], pos: usize, n: u64, what: &str, head: usize) -> Result<()> {
    if n != INDEF && n > (buf.len() - pos.min(buf.len())) as u64 {
        bail!(Malformed, "truncated input: the {what} at byte {head} declares {n} items but only {} bytes remain", buf.len() - pos.min(buf.len()));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
