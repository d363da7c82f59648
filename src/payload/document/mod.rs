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
//!   and structured dtypes refused): the map's item becomes the view, as
//!   `msgpack_numpy.decode` replaces the map by the array;
//! - CBOR: every RFC 8746 typed array (tags 64–87) and multi-dimensional array (tags 40 /
//!   1040). A map that matches the Reductionist schema exactly (the `schema` module: only
//!   the keys `bytes`, `dtype`, `shape`, `shape_as_bytes`, `count`, `count_as_bytes`,
//!   `byte_order`, with `bytes` and `dtype`, each value of its type) stays a map with all its
//!   entries (nothing is dropped: `count`, `shape` ... are reported as the generic items
//!   they are) and only its `bytes` value is the view, decoded from the whole map as
//!   [`super::decode_view`] decodes it alone (shape, dtype, byte order; a contents error
//!   refuses the document). Any other map is a plain map, whatever its keys. Data held in an
//!   indefinite-length (chunked) byte string has no view: `Unsupported`.
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
mod schema;
mod walk;

pub use super::cbor::raw::MAX_DEPTH;
use super::view::PayloadView;
use crate::error::Result;
pub use walk::{DocFormat, Item, ItemKind, Sink, FLAG_INDEFINITE, FLAG_NARROW_FLOAT, FLAG_NUMPY_SCALAR, NO_PARENT};
use walk::{Level, Walk};

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
/// `Unsupported` (an HDF5 or netCDF-3 file, named as such with what reads it; nesting
/// deeper than [`MAX_DEPTH`], chunked array data, and the
/// `Unsupported` cases of [`super::decode_view`]: pickles, structured dtypes, float128 ...),
/// `Dtype`.
pub fn walk_document<'a, S: Sink<'a>>(buf: &'a [u8], format: DocFormat, sink: &mut S) -> Result<Counts> {
    // An HDF5 or netCDF-3 file is named as such, with what reads it.
    walk(buf, format, sink).map_err(|e| super::detect::name_other_file(buf, e))
}

/// [`walk_document`] without naming non-payload files.
fn walk<'a, S: Sink<'a>>(buf: &'a [u8], format: DocFormat, sink: &mut S) -> Result<Counts> {
    walk_until(buf, format, sink, usize::MAX).map(|(c, _)| c)
}

/// [`walk_document`] that may stop early: once `stop_at` items are reported and none of
/// them can change any more (the rest of the input is then not walked, nor validated).
/// Returns the counts so far (the final ones when it did not stop) and whether it stopped.
/// Errors: as [`walk_document`].
pub fn walk_document_until<'a, S: Sink<'a>>(buf: &'a [u8], format: DocFormat, sink: &mut S, stop_at: usize) -> Result<(Counts, bool)> {
    walk_until(buf, format, sink, stop_at).map_err(|e| super::detect::name_other_file(buf, e))
}

fn walk_until<'a, S: Sink<'a>>(buf: &'a [u8], format: DocFormat, sink: &mut S, stop_at: usize) -> Result<(Counts, bool)> {
    let format = match format {
        DocFormat::Auto => resolve_format(buf)?,
        f => f,
    };
    let mut w = Walk { buf, sink, items: 0, views: 0, stack: [Level::default(); MAX_DEPTH], depth: 0, format, rview: None, stop_at, stopped: false };
    let end = match format {
        DocFormat::Msgpack => msgpack::walk(&mut w)?,
        _ => cbor::walk(&mut w)?,
    };
    if end != buf.len() && !w.stopped {
        bail!(Malformed, "trailing bytes: the document ends at byte {end} but the input has {} bytes", buf.len());
    }
    Ok((Counts { format, items: w.items, views: w.views }, w.stopped))
}

/// The format of the document in `buf` as `DocFormat::Auto` decides it (see
/// [`detect_format`]; a document whose first byte starts a container in both formats is
/// walked in both). Errors: as [`walk_document`] with `Auto`.
pub fn resolve_format(buf: &[u8]) -> Result<DocFormat> {
    let mut f = detect_format(buf)?;
    // 0x80-0xbf start a container in both formats (msgpack fixmap/fixarray = CBOR
    // array; CBOR map = msgpack fixstr): a document well-formed in both is ambiguous,
    // never guessed (e.g. CBOR [100] is also the msgpack map {24: 100}); one that only
    // the other format accepts is that format's.
    if matches!(buf[0], 0x80..=0xbf) {
        let other = if f == DocFormat::Msgpack { DocFormat::Cbor } else { DocFormat::Msgpack };
        if walk(buf, other, &mut NullSink).is_ok() {
            if walk(buf, f, &mut NullSink).is_ok() {
                bail!(
                    InvalidArgument,
                    "byte 0: the document is well-formed both as msgpack and as CBOR (first byte 0x{:02x}): give the document format (PAYLOAD_DOC_CBOR or PAYLOAD_DOC_MSGPACK)",
                    buf[0]
                );
            }
            f = other;
        }
    }
    Ok(f)
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
            if matches!(buf[0], 0xa0..=0xbf) || super::detect::payload_tag(buf) {
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

#[cfg(test)]
mod tests;
