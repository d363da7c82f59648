//! Shared oracle for the payload fuzz targets: [`check_payload`] runs every safe-Rust payload
//! entry point on one input and asserts the invariants vh5 promises (see docs/ROBUSTNESS.md).
//! Any violated invariant panics, which libFuzzer reports as a crash.

use vh5::dtype::{ByteOrder, Dtype};
use vh5::error::ErrorKind;
use vh5::payload::{self, CountForm, Format, Layout, PayloadView};

/// Largest output buffer the oracle allocates (inputs are far smaller than this; a bigger
/// `count_len` / `data_len` than the input could hold is itself an invariant violation).
const MAX_ALLOC: usize = 64 << 20;

/// The element range `[p, p+n)` lies inside `buf`; returns its offset.
fn offset_in(buf: &[u8], p: *const u8, n: usize, what: &str) -> usize {
    let base = buf.as_ptr() as usize;
    let a = p as usize;
    assert!(a >= base, "{what}: pointer {a:#x} before the input {base:#x}");
    let off = a - base;
    assert!(off.checked_add(n).is_some_and(|e| e <= buf.len()), "{what}: [{off}, {off}+{n}) outside the {}-byte input", buf.len());
    off
}

/// Swap unit of a dtype, computed here (not with vh5's helper).
fn unit(dt: Dtype) -> usize {
    match dt {
        Dtype::Complex64 => 4,
        Dtype::Complex128 => 8,
        Dtype::Bool | Dtype::Int8 | Dtype::UInt8 => 1,
        Dtype::Int16 | Dtype::UInt16 | Dtype::Float16 => 2,
        Dtype::Int32 | Dtype::UInt32 | Dtype::Float32 => 4,
        Dtype::Int64 | Dtype::UInt64 | Dtype::Float64 => 8,
        Dtype::Opaque => panic!("a payload never has an opaque dtype"),
    }
}

fn itemsize(dt: Dtype) -> usize {
    match dt {
        Dtype::Complex64 => 8,
        Dtype::Complex128 => 16,
        d => unit(d),
    }
}

/// Native-order copy of `data`, computed independently of `vh5::payload::copy`.
pub fn reference_native(data: &[u8], dt: Dtype, order: Option<ByteOrder>) -> Vec<u8> {
    let mut v = data.to_vec();
    let swap = match order {
        Some(ByteOrder::Little) => cfg!(target_endian = "big"),
        Some(ByteOrder::Big) => cfg!(target_endian = "little"),
        None => false,
    };
    if swap {
        for c in v.chunks_mut(unit(dt)) {
            c.reverse();
        }
    }
    v
}

/// Integer `i` of a count byte string, computed independently (`None`: does not fit i64).
fn count_at(bytes: &[u8], dt: Dtype, order: ByteOrder, i: usize) -> Option<i64> {
    let n = itemsize(dt);
    let c = &bytes[i * n..(i + 1) * n];
    let mut v: u128 = 0;
    let it: Box<dyn Iterator<Item = &u8>> = if order == ByteOrder::Big { Box::new(c.iter()) } else { Box::new(c.iter().rev()) };
    for &b in it {
        v = (v << 8) | b as u128;
    }
    let signed = matches!(dt, Dtype::Int8 | Dtype::Int16 | Dtype::Int32 | Dtype::Int64);
    let val: i128 = if signed && c.len() < 16 && (v >> (8 * n - 1)) & 1 == 1 { v as i128 - (1i128 << (8 * n)) } else { v as i128 };
    i64::try_from(val).ok()
}

/// Invariants of a successful view of `buf`.
fn check_view(buf: &[u8], v: &PayloadView<'_>) {
    let off = offset_in(buf, v.data.as_ptr(), v.data.len(), "data");
    assert_eq!(off, v.data_offset, "data_offset");
    let item = itemsize(v.dtype);
    assert_eq!(v.itemsize(), item);
    assert!(v.shape.ndim() <= payload::MAX_NDIM);
    let n = v.shape.as_slice().iter().try_fold(1u64, |a, &d| a.checked_mul(d)).expect("prod(shape) overflow in a view");
    assert_eq!(n, v.nelements, "nelements == prod(shape)");
    assert_eq!(v.data.len() as u128, n as u128 * item as u128, "data_len == nelements * itemsize");
    assert_eq!(v.byte_order.is_none(), item == 1, "byte order present iff itemsize > 1");
    assert_eq!(v.aligned, (v.data.as_ptr() as usize) % unit(v.dtype) == 0, "aligned flag");
    assert_eq!(v.layout == Layout::None, v.format != Format::Reductionist, "layout iff Reductionist");
    if v.fortran_order {
        assert_eq!(v.format, Format::Multidim);
    }
    if v.format == Format::TypedArray {
        assert_eq!(v.shape.ndim(), 1);
    }
    let c = &v.count;
    match c.form {
        CountForm::Absent => {
            assert_eq!((c.len, c.scalar, c.offset, c.dtype, c.bytes), (0, 0, 0, None, None));
        }
        CountForm::Scalar => {
            assert_eq!((c.len, c.dtype, c.bytes), (1, Some(Dtype::Int64), None));
            assert!(c.scalar >= 0);
            assert!(c.offset < buf.len());
        }
        CountForm::Array => {
            assert_eq!((c.dtype, c.bytes, c.scalar), (Some(Dtype::Int64), None, 0));
            assert!(c.offset < buf.len());
            assert!(c.len <= buf.len() as u64, "more count leaves than input bytes");
        }
        CountForm::Bytes => {
            let b = c.bytes.expect("bytes form has bytes");
            let dt = c.dtype.expect("bytes form has a dtype");
            assert!(matches!(dt, Dtype::Int8 | Dtype::Int16 | Dtype::Int32 | Dtype::Int64 | Dtype::UInt8 | Dtype::UInt16 | Dtype::UInt32 | Dtype::UInt64), "count dtype {dt:?}");
            let o = offset_in(buf, b.as_ptr(), b.len(), "count bytes");
            assert_eq!(o, c.offset);
            assert_eq!(b.len() as u64, c.len * itemsize(dt) as u64, "count bytes length");
            assert_eq!(c.byte_order.is_none(), itemsize(dt) == 1);
        }
    }
}

/// Run decode_view (all flag combinations), decode_count (exact and one-short buffers) and
/// copy_data (exact and one-short buffers) on `buf` and assert every invariant.
/// Returns the view when `buf` decodes (for targets with their own oracle).
pub fn check_payload(buf: &[u8]) -> Option<PayloadView<'_>> {
    let r = payload::decode_view(buf, 0);
    // Deterministic.
    assert_eq!(r, payload::decode_view(buf, 0));
    // Unknown flag bits are refused before anything else.
    assert_eq!(payload::decode_view(buf, 4).unwrap_err().kind, ErrorKind::InvalidArgument);
    match &r {
        Ok(v) => {
            check_view(buf, v);
            let a = payload::decode_view(buf, payload::REQUIRE_ALIGNED);
            if v.aligned {
                assert_eq!(a.as_ref().ok(), Some(v));
            } else {
                assert_eq!(a.unwrap_err().kind, ErrorKind::Misaligned);
            }
            let nat = payload::decode_view(buf, payload::REQUIRE_NATIVE);
            if v.needs_swap() {
                assert_eq!(nat.unwrap_err().kind, ErrorKind::ByteOrder);
            } else {
                assert_eq!(nat.as_ref().ok(), Some(v));
            }
            check_count(buf, v);
            check_copy(buf, Some(v));
        }
        Err(e) => {
            assert!(!e.message.is_empty(), "empty error message for {:?}", e.kind);
            assert!(
                matches!(e.kind, ErrorKind::Malformed | ErrorKind::Unsupported | ErrorKind::Dtype | ErrorKind::ServerError),
                "unexpected error kind {:?}: {}",
                e.kind,
                e.message
            );
            // Everything but the chunked-data refusal must fail the same way in copy_data
            // and decode_count.
            let chunked = e.kind == ErrorKind::Unsupported && e.message.contains("indefinite-length (chunked)") && e.message.contains("payload_copy_data");
            if chunked {
                check_copy(buf, None);
            } else {
                let mut out = vec![0u8; buf.len() * 2 + 16];
                assert_eq!(payload::copy_data(buf, &mut out).unwrap_err(), *e, "copy_data error differs from decode_view's");
                let mut cnt = vec![0i64; buf.len() + 1];
                assert_eq!(payload::decode_count(buf, &mut cnt).unwrap_err(), *e, "decode_count error differs from decode_view's");
            }
        }
    }
    r.ok()
}

/// decode_count into exactly count_len and count_len-1 (with guard elements after the slice).
fn check_count(buf: &[u8], v: &PayloadView<'_>) {
    let c = &v.count;
    let n = usize::try_from(c.len).unwrap();
    assert!(n <= MAX_ALLOC / 8);
    const GUARD: i64 = 0x5a5a_5a5a_5a5a_5a5a;
    let mut out = vec![GUARD; n + 4];
    let r = payload::decode_count(buf, &mut out[..n]);
    assert!(out[n..].iter().all(|&g| g == GUARD), "decode_count wrote past cap");
    match r {
        Ok(w) => {
            assert_eq!(w, n, "decode_count wrote count_len values");
            assert!(out[..n].iter().all(|&x| x >= 0), "negative count returned");
            match c.form {
                CountForm::Scalar => assert_eq!(out[0], c.scalar),
                CountForm::Bytes => {
                    let (b, dt) = (c.bytes.unwrap(), c.dtype.unwrap());
                    let order = c.byte_order.unwrap_or(ByteOrder::Little);
                    for (i, &x) in out[..n].iter().enumerate() {
                        assert_eq!(Some(x), count_at(b, dt, order, i), "count element {i}");
                    }
                }
                _ => {}
            }
        }
        Err(e) => {
            // Only byte-string counts are validated after the view (negative / > INT64_MAX).
            assert_eq!(c.form, CountForm::Bytes, "decode_count failed on a decodable {:?} count: {e:?}", c.form);
            assert_eq!(e.kind, ErrorKind::Malformed);
            let (b, dt) = (c.bytes.unwrap(), c.dtype.unwrap());
            let order = c.byte_order.unwrap_or(ByteOrder::Little);
            assert!((0..n).any(|i| count_at(b, dt, order, i).is_none_or(|x| x < 0)), "count rejected though all are valid: {}", e.message);
        }
    }
    if n > 0 {
        let mut out = vec![GUARD; n + 3];
        let e = payload::decode_count(buf, &mut out[..n - 1]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BufferTooSmall, "{}", e.message);
        assert!(out[n - 1..].iter().all(|&g| g == GUARD), "decode_count wrote past cap on BufferTooSmall");
        // Integer-array counts are decoded during the single walk, so values below cap may
        // be written (documented). That includes the `count` array of a message whose
        // count_as_bytes wins (form Bytes). A scalar count is never written on failure.
        if c.form == CountForm::Scalar {
            assert!(out[..n - 1].iter().all(|&g| g == GUARD), "decode_count wrote on BufferTooSmall");
        }
    }
}

/// copy_data into exactly data_len and data_len-1 bytes (guarded). `v` is `None` for
/// chunked data (no view).
fn check_copy(buf: &[u8], v: Option<&PayloadView<'_>>) {
    // Learn the needed length from a too-small buffer when there is no view.
    let need = match v {
        Some(v) => v.data.len(),
        None => {
            let mut out = vec![0u8; buf.len()];
            match payload::copy_data(buf, &mut out) {
                Ok(n) => n,
                Err(e) => panic!("copy_data failed on chunked data: {e:?}"),
            }
        }
    };
    assert!(need <= buf.len(), "data longer than the input");
    const G: u8 = 0xa5;
    let mut out = vec![G; need + 8];
    let w = payload::copy_data(buf, &mut out[..need]).expect("copy_data into exactly data_len");
    assert_eq!(w, need);
    assert!(out[need..].iter().all(|&g| g == G), "copy_data wrote past out_len");
    if let Some(v) = v {
        assert_eq!(&out[..need], &reference_native(v.data, v.dtype, v.byte_order)[..], "copied data != reference");
    }
    if need > 0 {
        let mut out = vec![G; need + 8];
        let e = payload::copy_data(buf, &mut out[..need - 1]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BufferTooSmall);
        assert!(out.iter().all(|&g| g == G), "copy_data wrote on BufferTooSmall");
    }
}
