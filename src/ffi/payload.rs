//! C ABI of the payload half: `payload_decode_view`, `payload_decode_count`,
//! `payload_copy_data` (thin wrappers over `crate::payload`).

use super::{guard, refuse_output_in_input, slice_arg, slice_mut_arg, vh5_status, write_out};
use crate::dtype::{ByteOrder, Dtype};
use crate::error::{ErrorKind, Result};
use crate::payload::{self, CountForm, PayloadView};

/// `payload_view.format`: a Reductionist response (CBOR map, reductionist-rs 0.12 - 0.13.1,
/// or a client fixture of it).
pub const PAYLOAD_FORMAT_REDUCTIONIST: u32 = 1;
/// `payload_view.format`: a bare RFC 8746 typed array (CBOR tags 64-87): 1-D.
pub const PAYLOAD_FORMAT_TYPED_ARRAY: u32 = 2;
/// `payload_view.format`: an RFC 8746 multi-dimensional array (CBOR tag 40 row-major, 1040
/// column-major: `[dims, typed array or byte string]`).
pub const PAYLOAD_FORMAT_MULTIDIM: u32 = 3;
/// `payload_view.format`: a msgpack-numpy map (`nd`, `type`, `kind`, `shape`, `data`).
pub const PAYLOAD_FORMAT_MSGPACK_NUMPY: u32 = 4;

/// `payload_view.layout`: not a Reductionist map.
pub const PAYLOAD_LAYOUT_NONE: u32 = 0;
/// `payload_view.layout`: reductionist-rs 0.12.x, 5 keys (`bytes`, `dtype`, `shape`, `count`,
/// `byte_order`). A 0.13.0 response without `*_as_bytes` keys is identical and reported so.
pub const PAYLOAD_LAYOUT_REDUCTIONIST_0_12: u32 = 1;
/// `payload_view.layout`: reductionist-rs 0.13.0: `shape_as_bytes` / `count_as_bytes` present
/// only when non-empty (one of them here).
pub const PAYLOAD_LAYOUT_REDUCTIONIST_0_13_0: u32 = 2;
/// `payload_view.layout`: reductionist-rs 0.13.1: always the 7 keys (also a 0.13.0 response
/// where both `*_as_bytes` keys are non-empty, which is identical on the wire).
pub const PAYLOAD_LAYOUT_REDUCTIONIST_0_13_1: u32 = 3;
/// `payload_view.layout`: any other accepted map: count as a bare integer or nested arrays,
/// missing `shape` (a scalar) or `byte_order`, typed-array tags, numpy type strings, unknown
/// extra keys.
pub const PAYLOAD_LAYOUT_CLIENT: u32 = 4;

/// `payload_view.count_form`: the message has no count, or an empty one (`count_len` = 0).
pub const PAYLOAD_COUNT_ABSENT: u32 = 0;
/// `payload_view.count_form`: a bare integer, in `count_scalar` (`count_len` = 1).
pub const PAYLOAD_COUNT_SCALAR: u32 = 1;
/// `payload_view.count_form`: fixed-width integers viewed at `count_data` (`count_as_bytes`,
/// int64 in `count_byte_order`, or an RFC 8746 typed array of `count_dtype`). Read with
/// unaligned loads, or decode with payload_decode_count.
pub const PAYLOAD_COUNT_BYTES: u32 = 2;
/// `payload_view.count_form`: a CBOR integer array (possibly nested): decode it with
/// payload_decode_count into `count_len` int64 values.
pub const PAYLOAD_COUNT_ARRAY: u32 = 3;

/// `payload_decode_view` flag: fail with VH5_ERR_MISALIGNED instead of returning data that is
/// not aligned for its element type.
pub const PAYLOAD_REQUIRE_ALIGNED: u32 = 1;
/// `payload_decode_view` flag: fail with VH5_ERR_BYTE_ORDER instead of returning data that is
/// not in the host's byte order.
pub const PAYLOAD_REQUIRE_NATIVE: u32 = 2;
/// Capacity of `payload_view.shape`: payloads with more axes give VH5_ERR_UNSUPPORTED.
pub const PAYLOAD_MAX_NDIM: u32 = 64;
/// Deepest nesting of a `count` array accepted (`[[1]]` is depth 2); deeper gives
/// VH5_ERR_UNSUPPORTED.
pub const PAYLOAD_MAX_COUNT_DEPTH: u32 = 64;

/// A decoded payload: where its data is inside the caller's buffer and how to read it.
///
/// Every pointer points INTO the `buf` given to payload_decode_view and is valid exactly as
/// long as that buffer is (vh5 keeps nothing). On failure the struct is zeroed.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct payload_view {
    /// First data byte, inside `buf` (for empty data: `buf + data_offset`, not dereferenceable).
    /// May be misaligned for the element type (see `aligned`): read with memcpy.
    pub data: *const u8,
    /// Length of the data in bytes (= nelements * itemsize).
    pub data_len: usize,
    /// `data - buf`, in bytes.
    pub data_offset: usize,
    /// PAYLOAD_FORMAT_*.
    pub format: u32,
    /// PAYLOAD_LAYOUT_* (PAYLOAD_LAYOUT_NONE unless format is PAYLOAD_FORMAT_REDUCTIONIST).
    pub layout: u32,
    /// Element type, a VH5_DTYPE_* code.
    pub dtype: u32,
    /// Size of one element in bytes.
    pub itemsize: u32,
    /// Wire byte order of the data: VH5_ORDER_LITTLE / VH5_ORDER_BIG, or VH5_ORDER_NONE for
    /// 1-byte element types.
    pub byte_order: u32,
    /// 1 when the host must byte-swap each element (each half of a complex) to read it natively.
    pub needs_swap: u8,
    /// 1 when `data` (the address) is aligned for the element type (complex: for its halves).
    pub aligned: u8,
    /// 1 when elements are in column-major (Fortran) order of `shape` (RFC 8746 tag 1040);
    /// 0: C order.
    pub fortran_order: u8,
    /// Always 0.
    pub reserved: u8,
    /// Number of axes (0 for a scalar), at most PAYLOAD_MAX_NDIM.
    pub ndim: u32,
    /// Extent of each axis in elements; entries at and after `ndim` are 0.
    pub shape: [u64; 64],
    /// prod(shape) in elements (1 for a scalar), overflow-checked.
    pub nelements: u64,
    /// PAYLOAD_COUNT_*: how the per-element count is stored.
    pub count_form: u32,
    /// Element type of the count: for PAYLOAD_COUNT_BYTES the type of the bytes at
    /// `count_data` (VH5_DTYPE_INT64 for Reductionist's count_as_bytes); VH5_DTYPE_INT64 for
    /// SCALAR and ARRAY (what payload_decode_count produces); VH5_DTYPE_INVALID when absent.
    pub count_dtype: u32,
    /// Byte order of the bytes at `count_data` (VH5_ORDER_NONE for other forms).
    pub count_byte_order: u32,
    /// Number of count elements: 0 absent, 1 scalar, else the array or byte-string length
    /// (leaves of a nested array). Size the payload_decode_count output with it.
    pub count_len: u64,
    /// The count for PAYLOAD_COUNT_SCALAR, else 0.
    pub count_scalar: i64,
    /// For PAYLOAD_COUNT_BYTES: the count bytes inside `buf` (count_len * size of count_dtype
    /// bytes, possibly misaligned); else NULL.
    pub count_data: *const u8,
    /// Byte offset in `buf` of the count value (array head, integer head, or first byte of the
    /// byte string); 0 when absent.
    pub count_offset: usize,
}

fn order_code(o: Option<ByteOrder>) -> u32 {
    o.map_or(super::vh5_byte_order::VH5_ORDER_NONE as u32, |o| o.code())
}

impl payload_view {
    pub(crate) fn zeroed() -> Self {
        // SAFETY: every field is an integer, an integer array or a raw pointer: all-zero is valid.
        unsafe { std::mem::zeroed() }
    }

    pub(crate) fn from_view(v: &PayloadView<'_>) -> Self {
        let mut shape = [0u64; 64];
        shape[..v.shape.ndim()].copy_from_slice(v.shape.as_slice());
        payload_view {
            data: v.data.as_ptr(),
            data_len: v.data.len(),
            data_offset: v.data_offset,
            format: v.format as u32,
            layout: v.layout as u32,
            dtype: v.dtype.code(),
            itemsize: v.itemsize() as u32,
            byte_order: order_code(v.byte_order),
            needs_swap: v.needs_swap() as u8,
            aligned: v.aligned as u8,
            fortran_order: v.fortran_order as u8,
            reserved: 0,
            ndim: v.shape.ndim() as u32,
            shape,
            nelements: v.nelements,
            count_form: v.count.form as u32,
            count_dtype: v.count.dtype.map_or(0, Dtype::code),
            count_byte_order: order_code(v.count.byte_order),
            count_len: v.count.len,
            count_scalar: v.count.scalar,
            count_data: v.count.bytes.map_or(std::ptr::null(), |b| b.as_ptr()),
            count_offset: v.count.offset,
        }
    }
}

const _: () = assert!(CountForm::Array as u32 == PAYLOAD_COUNT_ARRAY && PAYLOAD_MAX_NDIM as usize == payload::MAX_NDIM);

/// Decode the payload in `buf` (`len` bytes) into `*out`, a view pointing INTO `buf`.
///
/// Formats (detected from the first byte): Reductionist CBOR maps (reductionist-rs 0.12,
/// 0.13.0, 0.13.1 and client fixtures), RFC 8746 typed arrays (tags 64-87) and
/// multi-dimensional arrays (tags 40/1040), msgpack-numpy maps. Nothing is copied or
/// allocated in proportion to the data; a `count` integer array is walked once (validated,
/// counted) to reach the keys after it, and once more when a non-empty `count_as_bytes`
/// must be compared with it.
///
/// Reductionist rules (each documented in `src/payload/cbor.rs`): no `shape` (and no
/// non-empty `shape_as_bytes`) means `shape` `[]`, a scalar, as Reductionist sends it (data
/// of more than one element is then VH5_ERR_MALFORMED: no shape is invented); an empty
/// `count` (`[]`, Reductionist's companion of `count_as_bytes`) is PAYLOAD_COUNT_ABSENT; a
/// count of neither 1 nor prod(shape) elements is VH5_ERR_MALFORMED.
///
/// `flags`: 0, or PAYLOAD_REQUIRE_ALIGNED | PAYLOAD_REQUIRE_NATIVE.
///
/// Returns VH5_OK; VH5_ERR_NULL_ARGUMENT (`out` NULL, or `buf` NULL with `len` > 0);
/// VH5_ERR_INVALID_ARGUMENT (unknown flag bits; `out` overlapping `buf`'s bytes, where
/// the view would overwrite the message it points into: nothing written, the message names
/// `out` and its byte offset in `buf`); VH5_ERR_MALFORMED (truncated, wrong types,
/// duplicate keys, data length != prod(shape) * itemsize, trailing bytes, a count that is
/// negative or above INT64_MAX in any form and byte order (integer array, `count_as_bytes`,
/// typed array: the message names its index and byte offset), `shape` and `shape_as_bytes`
/// or `count` and `count_as_bytes` both non-empty and disagreeing (the message names both
/// keys; for counts the first differing element)...: the message names the key and byte
/// offset); VH5_ERR_UNSUPPORTED (an HDF5 file, signature at byte 0 or after a user block,
/// or a netCDF-3 file: the message names it and what reads it; pickled/structured
/// msgpack-numpy, indefinite-length data byte string, more than 64 axes, count nesting
/// deeper than 64, float128, reserved tags); VH5_ERR_DTYPE (unknown dtype, `dtype` key
/// contradicting a typed-array tag); VH5_ERR_SERVER_ERROR (`buf` is a server JSON error body;
/// the message carries the server's text); VH5_ERR_MISALIGNED / VH5_ERR_BYTE_ORDER (only
/// with the matching flag). On failure `*out` is zeroed (when `out` is not NULL) and
/// vh5_last_error_message() explains. `buf` is only read, within [buf, buf+len).
/// Thread-safe; no state is kept.
///
/// # Safety
/// `buf` must be NULL or valid for reads of `len` bytes; `out` must be NULL or point to a
/// writable `payload_view`. The pointers in `*out` borrow `buf`: valid while `buf` is.
#[no_mangle]
pub unsafe extern "C" fn payload_decode_view(buf: *const u8, len: usize, flags: u32, out: *mut payload_view) -> vh5_status {
    guard(|| {
        // A view written into the message would overwrite the bytes it points at.
        refuse_output_in_input("out", out.cast_const().cast(), std::mem::size_of::<payload_view>(), buf, len)?;
        // SAFETY: `out` is NULL or points to a writable payload_view (the caller's contract).
        unsafe { write_out(out, "out", payload_view::zeroed()) }?;
        // SAFETY: `buf` is NULL or valid for `len` bytes (the caller's contract).
        let b = unsafe { slice_arg(buf, len, "buf") }?;
        let v = payload::decode_view(b, flags)?;
        // SAFETY: as above.
        unsafe { write_out(out, "out", payload_view::from_view(&v)) }
    })
}

/// Decode the count of the payload in `buf` (`len` bytes) into `out` as native int64.
///
/// Every count form: a bare integer (1 value); a CBOR integer array, flat or nested
/// (flattened in C order); `count_as_bytes` or a typed array (converted from its type and
/// byte order). `cap` is the capacity of `out` in ELEMENTS (`out` may be NULL when `cap` is
/// 0); `*written` receives the number of values written (0 when the payload has no count).
///
/// Returns VH5_OK; VH5_ERR_NULL_ARGUMENT (`written` NULL, `buf` NULL with `len` > 0, `out`
/// NULL with `cap` > 0); VH5_ERR_INVALID_ARGUMENT (`out`'s `cap` values overlap `buf`'s
/// bytes: only `*written` = 0 written; `written` overlaps them: nothing written; the message
/// names the argument and its byte offset in `buf`); VH5_ERR_BUFFER_TOO_SMALL when
/// `cap` < count length: nothing is
/// written beyond `out[cap-1]` (for an integer array the first `cap` values may be written,
/// as counts are decoded in a single pass), `*written` is set to the NEEDED count and the
/// message gives it;
/// VH5_ERR_MALFORMED for a negative count or one above INT64_MAX (the message names its
/// index and byte offset), and any status payload_decode_view returns for the message.
/// On other failures `*written` is 0 (and `out` may hold partial values up to `cap`).
/// Thread-safe.
///
/// # Safety
/// `buf` must be NULL or valid for reads of `len` bytes; `out` NULL or valid for writes of
/// `cap` int64 values; `written` NULL or a writable `size_t`. Nothing is retained.
#[no_mangle]
pub unsafe extern "C" fn payload_decode_count(buf: *const u8, len: usize, out: *mut i64, cap: usize, written: *mut usize) -> vh5_status {
    // SAFETY: the pointers as this function's contract says.
    unsafe { decode_into(buf, len, out, cap, written, payload::decode_count, |b| payload::count_len(b).map(|n| n as usize)) }
}

/// Copy the data of the payload in `buf` (`len` bytes) into `out` in NATIVE byte order,
/// keeping the payload's element order (C order, or Fortran order when the view says so).
///
/// `out_len` is the capacity of `out` in BYTES (`out` may be NULL when `out_len` is 0);
/// `*written` receives the number of bytes written (nelements * itemsize). `out` needs no
/// particular alignment, but an aligned buffer lets the caller use it as a typed array.
/// Unlike payload_decode_view this also reads data stored as an indefinite-length (chunked)
/// CBOR byte string.
///
/// Returns VH5_OK; VH5_ERR_NULL_ARGUMENT; VH5_ERR_INVALID_ARGUMENT (`out`'s `out_len` bytes
/// overlap `buf`'s: only `*written` = 0 written; `written` overlaps them: nothing written;
/// the message names the argument and its byte offset in `buf`); VH5_ERR_BUFFER_TOO_SMALL when `out_len` is less
/// than the data length (nothing written; `*written` is set to the NEEDED byte count; the
/// message gives it); and any status payload_decode_view returns for the message (except
/// VH5_ERR_MISALIGNED / VH5_ERR_BYTE_ORDER, which do not apply). Thread-safe.
///
/// # Safety
/// `buf` must be NULL or valid for reads of `len` bytes; `out` NULL or valid for writes of
/// `out_len` bytes; `written` NULL or a writable `size_t`. Nothing is retained.
#[no_mangle]
pub unsafe extern "C" fn payload_copy_data(buf: *const u8, len: usize, out: *mut std::ffi::c_void, out_len: usize, written: *mut usize) -> vh5_status {
    // SAFETY: the pointers as this function's contract says.
    unsafe { decode_into(buf, len, out.cast::<u8>(), out_len, written, payload::copy_data, payload::data_len) }
}

/// The body of [`payload_decode_count`] and [`payload_copy_data`]: `decode` the message in
/// `buf` into the caller's `out` (`cap` elements) and store the number of elements written in
/// `*written` (0 on failure, the number `needed` on `BufferTooSmall`).
///
/// # Safety
/// `buf` NULL or valid for reads of `len` bytes; `out` NULL or valid for writes of `cap`
/// elements; `written` NULL or valid for one write.
unsafe fn decode_into<T>(
    buf: *const u8,
    len: usize,
    out: *mut T,
    cap: usize,
    written: *mut usize,
    decode: fn(&[u8], &mut [T]) -> Result<usize>,
    needed: fn(&[u8]) -> Option<usize>,
) -> vh5_status {
    guard(|| {
        // Every output is checked before it is first written (`*written = 0` inside the
        // message would change it before it is parsed).
        refuse_output_in_input("written", written.cast_const().cast(), std::mem::size_of::<usize>(), buf, len)?;
        // SAFETY: `written` is NULL or valid for one write (this function's contract).
        unsafe { write_out(written, "written", 0) }?;
        refuse_output_in_input("out", out.cast_const().cast(), cap.saturating_mul(std::mem::size_of::<T>()), buf, len)?;
        // SAFETY: `buf` is NULL or valid for `len` bytes (this function's contract).
        let b = unsafe { slice_arg(buf, len, "buf") }?;
        // SAFETY: `out` is NULL or valid for `cap` writes (this function's contract), outside `buf`.
        let o = unsafe { slice_mut_arg(out, cap, "out") }?;
        let n = match decode(b, o) {
            Ok(n) => n,
            Err(e) if e.kind == ErrorKind::BufferTooSmall => match needed(b) {
                // SAFETY: as above.
                Some(n) => return unsafe { write_out(written, "written", n) }.and(Err(e)),
                None => return Err(e),
            },
            Err(e) => return Err(e),
        };
        // SAFETY: as above.
        unsafe { write_out(written, "written", n) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `payload_decode_view` of `m[..len]` (`len` may exceed `m` only with `p` NULL).
    fn view(p: *const u8, len: usize, flags: u32, out: Option<&mut payload_view>) -> vh5_status {
        // SAFETY: `p` is NULL or a live buffer of `len` bytes; `out` is NULL or a live view.
        unsafe { payload_decode_view(p, len, flags, out.map_or(std::ptr::null_mut(), |v| v as *mut _)) }
    }

    #[test]
    fn view_and_errors() {
        // tag 86: float64 LE [1.5]
        let mut m = vec![0xd8, 86, 0x48];
        m.extend_from_slice(&1.5f64.to_le_bytes());
        let mut v = payload_view::zeroed();
        assert_eq!(view(m.as_ptr(), m.len(), 0, Some(&mut v)), vh5_status::VH5_OK);
        assert_eq!((v.format, v.dtype, v.itemsize, v.ndim, v.shape[0], v.data_offset, v.data_len), (2, 12, 8, 1, 1, 3, 8));
        assert_eq!(v.data, m[3..].as_ptr());
        assert_eq!(view(m.as_ptr(), m.len() - 1, 0, Some(&mut v)), vh5_status::VH5_ERR_MALFORMED);
        assert_eq!((v.data, v.ndim, v.format), (std::ptr::null(), 0, 0));
        assert_eq!(view(m.as_ptr(), m.len(), 8, Some(&mut v)), vh5_status::VH5_ERR_INVALID_ARGUMENT);
        assert_eq!(view(m.as_ptr(), m.len(), 0, None), vh5_status::VH5_ERR_NULL_ARGUMENT);
        assert_eq!(view(std::ptr::null(), 4, 0, Some(&mut v)), vh5_status::VH5_ERR_NULL_ARGUMENT);
        let mut out = [0u8; 8];
        let mut w = 0usize;
        // SAFETY: live buffers of the lengths passed.
        assert_eq!(unsafe { payload_copy_data(m.as_ptr(), m.len(), out.as_mut_ptr().cast(), 7, &mut w) }, vh5_status::VH5_ERR_BUFFER_TOO_SMALL);
        assert_eq!(w, 8);
        // SAFETY: as above.
        assert_eq!(unsafe { payload_copy_data(m.as_ptr(), m.len(), out.as_mut_ptr().cast(), 8, &mut w) }, vh5_status::VH5_OK);
        assert_eq!((w, f64::from_ne_bytes(out)), (8, 1.5));
        let mut c = [0i64; 1];
        // SAFETY: as above.
        assert_eq!(unsafe { payload_decode_count(m.as_ptr(), m.len(), c.as_mut_ptr(), 1, &mut w) }, vh5_status::VH5_OK);
        assert_eq!(w, 0);
        // SAFETY: as above (`out` NULL with a capacity: refused before any write).
        assert_eq!(unsafe { payload_decode_count(m.as_ptr(), m.len(), std::ptr::null_mut(), 1, &mut w) }, vh5_status::VH5_ERR_NULL_ARGUMENT);
        // SAFETY: as above.
        assert_eq!(unsafe { payload_copy_data(m.as_ptr(), m.len(), out.as_mut_ptr().cast(), 8, std::ptr::null_mut()) }, vh5_status::VH5_ERR_NULL_ARGUMENT);
    }
}
