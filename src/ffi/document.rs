//! C ABI of whole-document decoding: `payload_decode_document` (a thin wrapper over
//! `crate::payload::document`).

use super::payload::payload_view;
use super::{guard, refuse_output_in_input, slice_arg, slice_mut_arg, vh5_status, write_out};
use crate::error::Result;
use crate::payload::document::{self, DocFormat, Item, ItemKind, Sink};
use crate::payload::PayloadView;

/// `payload_decode_document` format: detect from the first bytes (a CBOR map or array tag
/// 40/1040/64-87/55799 → CBOR; a msgpack map or array16/32 → msgpack; a first byte 0x80-0xbf,
/// which starts a container in both, → the format that accepts the whole document; a
/// document well-formed in both, or a first byte valid in both such as a scalar, gives
/// VH5_ERR_INVALID_ARGUMENT: name the format).
pub const PAYLOAD_DOC_AUTO: u32 = 0;
/// `payload_decode_document` format: CBOR (RFC 8949).
pub const PAYLOAD_DOC_CBOR: u32 = 1;
/// `payload_decode_document` format: msgpack.
pub const PAYLOAD_DOC_MSGPACK: u32 = 2;

/// Deepest nesting of arrays, maps and tags in a document, and in a CBOR value skipped as an
/// unknown key of a Reductionist map (`[[1]]` has depth 2); deeper gives VH5_ERR_UNSUPPORTED.
pub const PAYLOAD_MAX_DEPTH: u32 = 64;
/// `payload_item.parent` of the root item.
pub const PAYLOAD_NO_PARENT: u64 = u64::MAX;

/// `payload_item.kind`: a map; its `children` (2 x entries) alternate key, value.
pub const PAYLOAD_ITEM_MAP: u32 = 1;
/// `payload_item.kind`: an array / list of `children` elements.
pub const PAYLOAD_ITEM_ARRAY: u32 = 2;
/// `payload_item.kind`: a UTF-8 text string (validated) at `data_offset`, `data_len` bytes.
pub const PAYLOAD_ITEM_TEXT: u32 = 3;
/// `payload_item.kind`: a byte string (msgpack bin) at `data_offset`, `data_len` bytes.
pub const PAYLOAD_ITEM_BYTES: u32 = 4;
/// `payload_item.kind`: an integer >= 0: `value`.
pub const PAYLOAD_ITEM_UINT: u32 = 5;
/// `payload_item.kind`: a negative integer, -1 - `value` (down to -2^64 in CBOR).
pub const PAYLOAD_ITEM_NEGINT: u32 = 6;
/// `payload_item.kind`: a float; `value` holds the bits of its float64 value (exact for
/// half / single floats, see PAYLOAD_ITEM_NARROW_FLOAT).
pub const PAYLOAD_ITEM_FLOAT: u32 = 7;
/// `payload_item.kind`: a boolean, `value` 0 or 1.
pub const PAYLOAD_ITEM_BOOL: u32 = 8;
/// `payload_item.kind`: msgpack nil / CBOR null.
pub const PAYLOAD_ITEM_NIL: u32 = 9;
/// `payload_item.kind`: CBOR undefined.
pub const PAYLOAD_ITEM_UNDEFINED: u32 = 10;
/// `payload_item.kind`: another CBOR simple value, `value`.
pub const PAYLOAD_ITEM_SIMPLE: u32 = 11;
/// `payload_item.kind`: a CBOR tag: `value` = tag number; one child, the tagged item.
pub const PAYLOAD_ITEM_TAG: u32 = 12;
/// `payload_item.kind`: a msgpack extension: `value` = its type (int8, sign-extended to 64
/// bits), data at `data_offset`, `data_len` bytes.
pub const PAYLOAD_ITEM_EXT: u32 = 13;
/// `payload_item.kind`: an array: a msgpack-numpy map (a msgpack map with keys "nd", "type"
/// and "data": the map's item itself becomes the view), an RFC 8746 typed array tag 64-87, a
/// multi-dimensional array tag 40/1040, or the value of key "bytes" of a CBOR map that
/// matches the Reductionist schema exactly (only the keys bytes, dtype, shape,
/// shape_as_bytes, count, count_as_bytes, byte_order; bytes and dtype present; bytes /
/// *_as_bytes a byte string or typed array, dtype / byte_order text, shape an array of
/// unsigned integers, count an unsigned integer, integer array, typed array or null): that
/// map stays a PAYLOAD_ITEM_MAP with all its entries, its "bytes" value the array decoded
/// from the whole map (shape, dtype, byte order); any other CBOR map is a plain map.
/// `value` = index of its payload_view in the `views` output, exactly as
/// payload_decode_view describes that array alone; `data_offset` / `data_len` repeat the
/// view's. Its content is not reported as items.
pub const PAYLOAD_ITEM_ARRAY_VIEW: u32 = 14;
/// `payload_item.flags`: a CBOR indefinite-length map, array or string. For a string the
/// content is not contiguous: `data_offset` is the head, `data_len` the total length, and
/// its `children` items (same kind) are the chunks, each contiguous.
pub const PAYLOAD_ITEM_INDEFINITE: u32 = 1;
/// `payload_item.flags` of a PAYLOAD_ITEM_ARRAY_VIEW: a msgpack-numpy map with `nd` false,
/// i.e. a numpy scalar (shape `()`), not a 0-d array.
pub const PAYLOAD_ITEM_NUMPY_SCALAR: u32 = 4;
/// `payload_item.flags`: a float stored in fewer than 64 bits (CBOR half/single, msgpack
/// float 32).
pub const PAYLOAD_ITEM_NARROW_FLOAT: u32 = 2;

/// One value of a document (64 bytes). Items come in pre-order: a value before its children,
/// so `parent` is always an earlier index.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct payload_item {
    /// PAYLOAD_ITEM_*.
    pub kind: u32,
    /// PAYLOAD_ITEM_INDEFINITE, PAYLOAD_ITEM_NARROW_FLOAT, PAYLOAD_ITEM_NUMPY_SCALAR.
    pub flags: u32,
    /// Index of the parent item in the output; PAYLOAD_NO_PARENT for the root.
    pub parent: u64,
    /// Index among the parent's children (maps: key 2k, value 2k+1); 0 for the root.
    pub position: u64,
    /// Number of direct children (maps: 2 x entries; tags: 1; chunked strings: chunks; else 0).
    pub children: u64,
    /// Byte offset in `buf` of the item's first byte (for string chunks: of their content).
    pub offset: u64,
    /// TEXT, BYTES, EXT, ARRAY_VIEW: byte offset in `buf` of the content / array data; else 0.
    pub data_offset: u64,
    /// TEXT, BYTES, EXT, ARRAY_VIEW: length in bytes of the content / array data; else 0.
    pub data_len: u64,
    /// UINT, NEGINT, FLOAT (bits), BOOL, SIMPLE, TAG, EXT (type), ARRAY_VIEW (view index); else 0.
    pub value: u64,
}

impl From<Item> for payload_item {
    fn from(i: Item) -> Self {
        payload_item {
            kind: i.kind as u32,
            flags: i.flags,
            parent: i.parent,
            position: i.position,
            children: i.children,
            offset: i.offset as u64,
            data_offset: i.data_offset as u64,
            data_len: i.data_len as u64,
            value: i.value,
        }
    }
}

const _: () = assert!(
    ItemKind::ArrayView as u32 == PAYLOAD_ITEM_ARRAY_VIEW
        && ItemKind::Map as u32 == PAYLOAD_ITEM_MAP
        && PAYLOAD_MAX_DEPTH as usize == document::MAX_DEPTH
        && document::FLAG_INDEFINITE == PAYLOAD_ITEM_INDEFINITE
        && document::FLAG_NARROW_FLOAT == PAYLOAD_ITEM_NARROW_FLOAT
        && document::FLAG_NUMPY_SCALAR == PAYLOAD_ITEM_NUMPY_SCALAR
        && std::mem::size_of::<payload_item>() == 64
);

/// Writes into the caller's arrays: item `first + i` into `items[i]`, view `first_view + i`
/// into `views[i]`, only below their capacities.
struct SliceSink<'o> {
    first: usize,
    first_view: usize,
    items: &'o mut [payload_item],
    views: &'o mut [payload_view],
}

impl<'a> Sink<'a> for SliceSink<'_> {
    fn item(&mut self, idx: usize, it: Item) {
        if let Some(s) = idx.checked_sub(self.first).and_then(|i| self.items.get_mut(i)) {
            *s = it.into();
        }
    }
    fn children(&mut self, idx: usize, n: u64) {
        if let Some(s) = idx.checked_sub(self.first).and_then(|i| self.items.get_mut(i)) {
            s.children = n;
        }
    }
    fn view(&mut self, idx: usize, v: PayloadView<'a>) {
        if let Some(s) = idx.checked_sub(self.first_view).and_then(|i| self.views.get_mut(i)) {
            *s = payload_view::from_view(&v);
        }
    }
}

/// Walk the whole msgpack or CBOR document in `buf` (`len` bytes) in one pass: every value
/// as a `payload_item` (kind, parent, position, offsets into `buf`), and every array in it
/// as a `payload_view` pointing INTO `buf` (see PAYLOAD_ITEM_ARRAY_VIEW for what counts as an
/// array). Nothing is allocated in proportion to the input; all output is the caller's.
///
/// `format`: PAYLOAD_DOC_AUTO, PAYLOAD_DOC_CBOR or PAYLOAD_DOC_MSGPACK. `items` holds
/// `items_cap` items and `views` `views_cap` views (either may be NULL when its capacity is
/// 0). `*n_items` / `*n_views` receive the number of items and views of the document.
///
/// Two-call pattern: call with capacities 0 (or a guess); on VH5_ERR_BUFFER_TOO_SMALL
/// `*n_items` and `*n_views` hold the NEEDED counts (the whole document was walked and
/// validated): allocate and call again. A document of `len` bytes has at most `len` items.
/// When too small, entries below the capacities may have been written and are meaningless.
///
/// Returns VH5_OK; VH5_ERR_NULL_ARGUMENT (`n_items` / `n_views` NULL, `buf` NULL with a
/// non-zero `len`, `items` / `views` NULL with a non-zero capacity); VH5_ERR_INVALID_ARGUMENT (unknown
/// `format`, or PAYLOAD_DOC_AUTO and the document is valid in both formats, or `items` /
/// `views` (their capacities), `n_items` or `n_views` overlapping `buf`'s bytes: then nothing
/// is written but the counts (0), nothing at all when a count overlaps, and the message
/// names the argument and its byte offset);
/// VH5_ERR_BUFFER_TOO_SMALL (see above); VH5_ERR_MALFORMED (truncated at any byte, not
/// well-formed, text not UTF-8, trailing bytes after the root value, declared lengths
/// beyond the input; the message names the byte offset); VH5_ERR_UNSUPPORTED (an HDF5 or
/// netCDF-3 file, named as such with what reads it; nesting deeper than PAYLOAD_MAX_DEPTH; array data in an indefinite-length byte string, which has no
/// view); VH5_ERR_SERVER_ERROR (a JSON error body); and for an array inside the document any
/// status payload_decode_view returns for it alone (pickled objects, structured dtypes, bad
/// lengths, unknown dtypes...: an error in any array refuses the whole document). On failure
/// other than VH5_ERR_BUFFER_TOO_SMALL `*n_items` = `*n_views` = 0. `buf` is only read.
/// Thread-safe; no state is kept.
///
/// # Safety
/// `buf` must be NULL or valid for reads of `len` bytes; `items` NULL or valid for writes of
/// `items_cap` payload_item; `views` NULL or valid for writes of `views_cap` payload_view;
/// `n_items`, `n_views` NULL or writable. The pointers in the views borrow `buf`.
#[no_mangle]
pub unsafe extern "C" fn payload_decode_document(
    buf: *const u8,
    len: usize,
    format: u32,
    items: *mut payload_item,
    items_cap: usize,
    views: *mut payload_view,
    views_cap: usize,
    n_items: *mut usize,
    n_views: *mut usize,
) -> vh5_status {
    guard(|| {
        // SAFETY: the caller's contract, passed on.
        let c = unsafe { walk_into(buf, len, format, (0, 0), items, items_cap, views, views_cap, n_items, n_views, usize::MAX) }?;
        if c.items > items_cap || c.views > views_cap {
            bail!(
                BufferTooSmall,
                "the document has {} items and {} array views but the outputs hold {items_cap} items and {views_cap} views (capacities, in elements)",
                c.items,
                c.views
            );
        }
        Ok(())
    })
}

/// The argument checks and the walk shared by [`payload_decode_document`] and
/// [`payload_decode_document_range`]: every output is checked against the message before it
/// is first written, both counts are zeroed (when not NULL) before either NULL is reported,
/// then items from `first.0` and views from `first.1` are written below their capacities
/// (walking until `stop_at`, see `walk_document_until`) and the counts set.
///
/// # Safety
/// As [`payload_decode_document`].
#[allow(clippy::too_many_arguments)]
unsafe fn walk_into(
    buf: *const u8,
    len: usize,
    format: u32,
    first: (usize, usize),
    items: *mut payload_item,
    items_cap: usize,
    views: *mut payload_view,
    views_cap: usize,
    n_items: *mut usize,
    n_views: *mut usize,
    stop_at: usize,
) -> Result<document::Counts> {
    refuse_output_in_input("n_items", n_items.cast_const().cast(), std::mem::size_of::<usize>(), buf, len)?;
    refuse_output_in_input("n_views", n_views.cast_const().cast(), std::mem::size_of::<usize>(), buf, len)?;
    // SAFETY: `n_items` / `n_views` are NULL or valid for one write (the caller's contract).
    let zeroed = unsafe { [write_out(n_items, "n_items", 0), write_out(n_views, "n_views", 0)] };
    zeroed.into_iter().collect::<Result<()>>()?;
    refuse_output_in_input("items", items.cast_const().cast(), items_cap.saturating_mul(std::mem::size_of::<payload_item>()), buf, len)?;
    refuse_output_in_input("views", views.cast_const().cast(), views_cap.saturating_mul(std::mem::size_of::<payload_view>()), buf, len)?;
    // SAFETY: `buf` is NULL or valid for `len` bytes (the caller's contract).
    let b = unsafe { slice_arg(buf, len, "buf") }?;
    // SAFETY: `items` / `views` are NULL or valid for `*_cap` writes (the caller's contract),
    // outside `buf`.
    let (items, views) = unsafe { (slice_mut_arg(items, items_cap, "items")?, slice_mut_arg(views, views_cap, "views")?) };
    let format = doc_format(format)?;
    let (c, _) = document::walk_document_until(b, format, &mut SliceSink { first: first.0, first_view: first.1, items, views }, stop_at)?;
    // SAFETY: as above (both checked non-NULL).
    unsafe { write_out(n_items, "n_items", c.items).and(write_out(n_views, "n_views", c.views)) }?;
    Ok(c)
}

/// The `payload_decode_document` format code as a [`DocFormat`].
fn doc_format(format: u32) -> Result<DocFormat> {
    Ok(match format {
        PAYLOAD_DOC_AUTO => DocFormat::Auto,
        PAYLOAD_DOC_CBOR => DocFormat::Cbor,
        PAYLOAD_DOC_MSGPACK => DocFormat::Msgpack,
        f => bail!(InvalidArgument, "unknown document format {f} (known: PAYLOAD_DOC_AUTO=0, PAYLOAD_DOC_CBOR=1, PAYLOAD_DOC_MSGPACK=2)"),
    })
}

/// The format PAYLOAD_DOC_AUTO picks for the document in `buf` (`len` bytes), into
/// `*format`: PAYLOAD_DOC_CBOR or PAYLOAD_DOC_MSGPACK. Walks the document up to twice when
/// its first byte starts a container in both formats (0x80-0xbf). Pass the answer to
/// [`payload_decode_document_range`] so that each window does not detect it again.
///
/// Returns VH5_OK; VH5_ERR_NULL_ARGUMENT (`format` NULL, `buf` NULL with a non-zero `len`);
/// and the errors of `payload_decode_document` with PAYLOAD_DOC_AUTO that detection
/// reports (VH5_ERR_INVALID_ARGUMENT for a document valid in both formats or a first byte
/// valid in both, VH5_ERR_SERVER_ERROR for a JSON error body, VH5_ERR_MALFORMED for empty
/// input, VH5_ERR_UNSUPPORTED for an HDF5 / netCDF-3 file). `*format` is 0 on failure.
/// Thread-safe; `buf` is only read.
///
/// # Safety
/// `buf` NULL or valid for reads of `len` bytes; `format` NULL or writable (outside `buf`).
#[no_mangle]
pub unsafe extern "C" fn payload_document_format(buf: *const u8, len: usize, format: *mut u32) -> vh5_status {
    guard(|| {
        refuse_output_in_input("format", format.cast_const().cast(), std::mem::size_of::<u32>(), buf, len)?;
        // SAFETY: `format` is NULL or valid for one write (the caller's contract).
        unsafe { write_out(format, "format", 0) }?;
        // SAFETY: `buf` is NULL or valid for `len` bytes (the caller's contract).
        let b = unsafe { slice_arg(buf, len, "buf") }?;
        let f = match document::resolve_format(b).map_err(|e| crate::payload::detect::name_other_file(b, e))? {
            DocFormat::Msgpack => PAYLOAD_DOC_MSGPACK,
            _ => PAYLOAD_DOC_CBOR,
        };
        // SAFETY: as above.
        unsafe { write_out(format, "format", f) }
    })
}

/// Items `first_item .. first_item + items_cap` of the document in `buf` (`len` bytes), and
/// views `first_view .. first_view + views_cap`: the windowed form of
/// [`payload_decode_document`], so that a caller can build a document of any size with
/// bounded buffers. Item `first_item + i` goes to `items[i]` and view `first_view + i` to
/// `views[i]`, exactly as `payload_decode_document` would report them (same `parent`
/// indices and view indices, counted from the document's first item and view). Views are
/// numbered in item order, so the views of a window's PAYLOAD_ITEM_ARRAY_VIEW items start
/// at the number of such items before the window and are at most as many as its items:
/// pass that number as `first_view` and `views_cap` = `items_cap` to get them all.
///
/// The walk stops as soon as the window is complete and final, so asking the windows in
/// order costs a walk of the document up to each window's end (a window of `k` items over
/// an `n`-item document: `n / k` windows, about `n^2 / (2k)` items walked in all: choose
/// `k` as a fraction of `n`). A window is final once no container still open below its end
/// can change it: one inside an open msgpack map (which may yet turn out to be a
/// msgpack-numpy array and roll back into one view) or an open indefinite-length CBOR
/// container (whose child count is known only at its break) waits for that container to
/// close, up to the whole document. Such a walk does not validate what lies after the
/// window: validate once with `payload_decode_document` (capacities 0) first.
///
/// `*n_items` / `*n_views` receive the numbers of items / views known when the walk ended:
/// the document's totals when it walked to the end, else at least `first_item + items_cap`
/// items. The window holds `min(*n_items, first_item + items_cap) - first_item` items (none
/// when `first_item` is beyond the end).
///
/// Returns VH5_OK, and the other statuses of `payload_decode_document` (NULL or overlapping
/// arguments, unknown `format`, malformed input...; never VH5_ERR_BUFFER_TOO_SMALL). On
/// failure `*n_items` = `*n_views` = 0. Thread-safe; `buf` is only read.
///
/// # Safety
/// As `payload_decode_document`: `buf` NULL or valid for reads of `len` bytes; `items` NULL
/// or valid for writes of `items_cap` payload_item; `views` NULL or valid for writes of
/// `views_cap` payload_view; `n_items`, `n_views` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn payload_decode_document_range(
    buf: *const u8,
    len: usize,
    format: u32,
    first_item: usize,
    items: *mut payload_item,
    items_cap: usize,
    first_view: usize,
    views: *mut payload_view,
    views_cap: usize,
    n_items: *mut usize,
    n_views: *mut usize,
) -> vh5_status {
    guard(|| {
        let stop_at = first_item.saturating_add(items_cap);
        // SAFETY: the caller's contract, passed on.
        unsafe { walk_into(buf, len, format, (first_item, first_view), items, items_cap, views, views_cap, n_items, n_views, stop_at) }?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `payload_decode_document` of `m[..len]` into `items` / `views` (NULL when `None`, with
    /// the capacity given anyway, to be refused).
    #[allow(clippy::too_many_arguments)]
    fn decode(
        m: &[u8],
        len: usize,
        format: u32,
        items: Option<&mut [payload_item]>,
        icap: usize,
        views: Option<&mut [payload_view]>,
        vcap: usize,
        ni: &mut usize,
        nv: &mut usize,
    ) -> vh5_status {
        assert!(len <= m.len() && items.as_ref().is_none_or(|s| icap <= s.len()) && views.as_ref().is_none_or(|s| vcap <= s.len()));
        let ip = items.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr());
        let vp = views.map_or(std::ptr::null_mut(), |s| s.as_mut_ptr());
        // SAFETY: every pointer is NULL or a live buffer of at least the length passed.
        unsafe { payload_decode_document(m.as_ptr(), len, format, ip, icap, vp, vcap, ni, nv) }
    }

    #[test]
    fn two_call_pattern() {
        // [1, tag 86 (float64 LE [1.5]), "ab"]
        let mut m = vec![0x83, 0x01, 0xd8, 86, 0x48];
        m.extend_from_slice(&1.5f64.to_le_bytes());
        m.extend_from_slice(b"\x62ab");
        let (mut ni, mut nv) = (0usize, 0usize);
        let st = decode(&m, m.len(), PAYLOAD_DOC_CBOR, None, 0, None, 0, &mut ni, &mut nv);
        assert_eq!((st, ni, nv), (vh5_status::VH5_ERR_BUFFER_TOO_SMALL, 4, 1));
        let mut items = vec![payload_item::default(); ni];
        let mut views = vec![payload_view::zeroed(); nv];
        let st = decode(&m, m.len(), PAYLOAD_DOC_CBOR, Some(&mut items), ni, Some(&mut views), nv, &mut ni, &mut nv);
        assert_eq!((st, ni, nv), (vh5_status::VH5_OK, 4, 1));
        assert_eq!(items[2].kind, PAYLOAD_ITEM_ARRAY_VIEW);
        assert_eq!((items[3].kind, items[3].data_offset, items[3].data_len, items[3].parent, items[3].position), (PAYLOAD_ITEM_TEXT, 14, 2, 0, 2));
        assert_eq!(views[0].data, m[5..].as_ptr());
        // auto: 0x83 starts a msgpack fixmap and a CBOR array; only CBOR accepts this
        // document, so it is CBOR's. It cannot tell the format of a scalar.
        let st = decode(&m, m.len(), PAYLOAD_DOC_AUTO, Some(&mut items), ni, Some(&mut views), nv, &mut ni, &mut nv);
        assert_eq!((st, ni, nv), (vh5_status::VH5_OK, 4, 1));
        let st = decode(&m[1..], 1, PAYLOAD_DOC_AUTO, Some(&mut items), ni, Some(&mut views), nv, &mut ni, &mut nv);
        assert_eq!((st, ni, nv), (vh5_status::VH5_ERR_INVALID_ARGUMENT, 0, 0));
        let st = decode(&m, m.len(), 9, Some(&mut items), 4, Some(&mut views), 1, &mut ni, &mut nv);
        assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
        let st = decode(&m, m.len(), 1, None, 4, Some(&mut views), 1, &mut ni, &mut nv);
        assert_eq!(st, vh5_status::VH5_ERR_NULL_ARGUMENT);
        let st = decode(&m, m.len() - 1, 1, Some(&mut items), 4, Some(&mut views), 1, &mut ni, &mut nv);
        assert_eq!((st, ni, nv), (vh5_status::VH5_ERR_MALFORMED, 0, 0));
        // a NULL count is refused, the other one still zeroed
        nv = 7;
        // SAFETY: live buffers of the capacities passed; `n_items` NULL is refused.
        let st = unsafe { payload_decode_document(m.as_ptr(), m.len(), 1, items.as_mut_ptr(), 4, views.as_mut_ptr(), 1, std::ptr::null_mut(), &mut nv) };
        assert_eq!((st, nv), (vh5_status::VH5_ERR_NULL_ARGUMENT, 0));
    }
}

#[cfg(test)]
mod range_tests {
    use super::*;

    /// Every window of every size, asked in order with no views, equals the same slice of the
    /// whole item list: early stops never cut an item that a later byte would still change
    /// (msgpack maps rolled back into views, indefinite containers closed late).
    #[test]
    fn windows_equal_the_whole_item_list() {
        // msgpack: [{"a": 1}, {"nd": true, "type": "<i1", "kind": "", "shape": [1], "data": bin 1}, 7]
        let mut mp = vec![0x93, 0x81, 0xa1, b'a', 0x01, 0x85];
        for (k, v) in [(&b"nd"[..], &b"\xc3"[..]), (b"type", b"\xa3<i1"), (b"kind", b"\xa0"), (b"shape", b"\x91\x01"), (b"data", b"\xc4\x01\x05")] {
            mp.push(0xa0 | k.len() as u8);
            mp.extend_from_slice(k);
            mp.extend_from_slice(v);
        }
        mp.push(0x07);
        // CBOR: [_ 1, {"bytes": h'05', "dtype": "int8", "count": [1]}, (_ "ab", "c"), [2, 3]]
        let cb = b"\x9f\x01\xa3\x65bytes\x41\x05\x65dtype\x64int8\x65count\x81\x01\x7f\x62ab\x61c\xff\x82\x02\x03\xff".to_vec();
        for (m, f) in [(mp, PAYLOAD_DOC_MSGPACK), (cb, PAYLOAD_DOC_CBOR)] {
            let (mut ni, mut nv) = (0usize, 0usize);
            let mut all = vec![payload_item::default(); m.len()];
            let mut views = vec![payload_view::zeroed(); 4];
            // SAFETY: live buffers of the capacities passed.
            let st = unsafe { payload_decode_document(m.as_ptr(), m.len(), f, all.as_mut_ptr(), m.len(), views.as_mut_ptr(), 4, &mut ni, &mut nv) };
            assert_eq!((st, nv), (vh5_status::VH5_OK, 1));
            all.truncate(ni);
            for k in 1..=ni {
                for first in (0..ni).step_by(k) {
                    let mut w = vec![payload_item::default(); k];
                    let mut wviews = vec![payload_view::zeroed(); k];
                    let first_view = all[..first].iter().filter(|i| i.kind == PAYLOAD_ITEM_ARRAY_VIEW).count();
                    let (mut wn, mut wv) = (0usize, 0usize);
                    // SAFETY: as above.
                    let st = unsafe { payload_decode_document_range(m.as_ptr(), m.len(), f, first, w.as_mut_ptr(), k, first_view, wviews.as_mut_ptr(), k, &mut wn, &mut wv) };
                    assert_eq!(st, vh5_status::VH5_OK);
                    let got = wn.min(first + k) - first;
                    assert_eq!(got, k.min(ni - first), "format {f} window {first}+{k}");
                    assert_eq!(&w[..got], &all[first..first + got], "format {f} window {first}+{k}");
                    // the window's views, numbered from first_view, as the whole call gives them
                    for it in w[..got].iter().filter(|i| i.kind == PAYLOAD_ITEM_ARRAY_VIEW) {
                        let (a, b) = (&wviews[it.value as usize - first_view], &views[it.value as usize]);
                        assert_eq!((a.data, a.data_offset, a.dtype, a.ndim, a.shape), (b.data, b.data_offset, b.dtype, b.ndim, b.shape));
                    }
                }
            }
        }
        // the format PAYLOAD_DOC_AUTO picks: a CBOR map, a msgpack map16; none for a scalar
        for (m, want) in [
            (&b"\xa1\x61a\x01"[..], (vh5_status::VH5_OK, PAYLOAD_DOC_CBOR)),
            (b"\xde\x00\x00", (vh5_status::VH5_OK, PAYLOAD_DOC_MSGPACK)),
            (b"\x01", (vh5_status::VH5_ERR_INVALID_ARGUMENT, 0)),
        ] {
            let mut out = 9u32;
            // SAFETY: live buffers.
            let st = unsafe { payload_document_format(m.as_ptr(), m.len(), &mut out) };
            assert_eq!((st, out), want, "{m:?}");
        }
    }
}
