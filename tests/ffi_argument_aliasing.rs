//! Arguments sharing memory with what a call writes (found by a new-user tryout): slice tables
//! lying inside the destination array of a many-slice copy or read, and payload outputs lying
//! inside the message they are decoded from.
//!
//! Before the fix, a copy validated every row and then re-read a later row's table entries
//! after an earlier row had written over them: it wrote outside its destination (and crashed
//! with a large value). Now the tables are read once, before anything is written (copied when
//! they lie inside the destination's bytes): the result is the one of the same call with the
//! tables elsewhere, and nothing outside the destination changes. Payload calls that write
//! while they parse refuse an output overlapping the input.

mod common;

use common::{create_file, ffi_close, ffi_open, last_error, DsSpec, TempDir};
use vh5::dtype::Dtype;
use vh5::ffi::document::payload_decode_document;
use vh5::ffi::hdf5::{vh5_array, vh5_read_many_slices};
use vh5::ffi::payload::{payload_copy_data, payload_decode_count};
use vh5::ffi::slices_write::vh5_copy_many_slices;
use vh5::ffi::vh5_status;

/// A 1-D uint64 `vh5_array` of `n` elements at `base` (`shape` must outlive the call).
fn arr(base: *mut u64, n: usize, shape: &[u64; 1]) -> vh5_array {
    vh5_array { base: base.cast(), base_len: n * 8, offset: 0, dtype: Dtype::UInt64.code(), itemsize: 8, ndim: 1, shape: shape.as_ptr(), strides: std::ptr::null() }
}

/// The tryout's case: `big[..64]` is the destination and holds the tables at 0..2 (src_start),
/// 2..4 (dst_start) and 4..6 (count); row 0 writes `src` into `dst[2..4]`, i.e. over row 1's
/// dst_start (40 -> 100, past the 64 elements of dst).
fn tables_in_dst(big: &mut [u64; 128]) {
    big.fill(0);
    big[..6].copy_from_slice(&[0, 0, 2, 40, 2, 1]);
}

#[test]
fn copy_tables_inside_destination_are_read_before_any_write() {
    let mut src = [2u64, 100];
    let mut big = [0u64; 128];
    tables_in_dst(&mut big);
    let (sshape, dshape) = ([2u64], [64u64]);
    let p = big.as_mut_ptr();
    let (s, d) = (arr(src.as_mut_ptr(), 2, &sshape), arr(p, 64, &dshape));
    // SAFETY: the arrays describe live buffers; the tables are 2 x 1 values inside `big`.
    let st = unsafe { vh5_copy_many_slices(&s, &d, 2, p, p.add(2), p.add(4), std::ptr::null(), std::ptr::null(), 0) };
    assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
    // The same call with the tables elsewhere (the reference).
    let mut want = [0u64; 64];
    want[..6].copy_from_slice(&[0, 0, 2, 40, 2, 1]);
    want[2..4].copy_from_slice(&src);
    want[40] = 2;
    assert_eq!(&big[..64], &want[..]);
    assert!(big[64..].iter().all(|&v| v == 0), "written outside dst: {:?}", &big[64..]);
}

#[test]
fn read_tables_inside_destination_are_read_before_any_write() {
    let dir = TempDir::new("aliasing");
    let path = dir.path("t.h5");
    let data: Vec<u8> = [2u64, 100, 5, 6].iter().flat_map(|v| v.to_ne_bytes()).collect();
    let mut chunked = DsSpec::new("chunked", &[4], Dtype::UInt64, Some(&data));
    chunked.chunk = Some(vec![2]);
    let mut gzip = DsSpec::new("gzip", &[4], Dtype::UInt64, Some(&data));
    (gzip.chunk, gzip.gzip) = (Some(vec![2]), Some(4));
    create_file(&path, &[DsSpec::new("contiguous", &[4], Dtype::UInt64, Some(&data)), chunked, gzip]);
    for name in ["contiguous", "chunked", "gzip"] {
        let (f, ds) = ffi_open(&path, name);
        let mut big = [0u64; 128];
        tables_in_dst(&mut big);
        let dshape = [64u64];
        let p = big.as_mut_ptr();
        let d = arr(p, 64, &dshape);
        // SAFETY: as in the copy test.
        let st = unsafe { vh5_read_many_slices(ds, &d, 2, p, p.add(2), p.add(4), std::ptr::null(), std::ptr::null(), 0) };
        assert_eq!(st, vh5_status::VH5_OK, "{name}: {}", last_error());
        assert_eq!(&big[..6], &[0, 0, 2, 100, 2, 1], "{name}");
        assert_eq!(big[40], 2, "{name}: row 1 must use its dst_start as passed (40)");
        assert!(big[64..].iter().all(|&v| v == 0), "{name}: written outside dst");
        ffi_close(&[ds, f]);
    }
}

#[test]
fn payload_outputs_inside_the_message_are_refused() {
    // tag 86 (float64 little-endian typed array) of [1.5], then room used as the output.
    let mut m = vec![0xd8u8, 86, 0x48];
    m.extend_from_slice(&1.5f64.to_le_bytes());
    m.extend_from_slice(&[0u8; 16]);
    let len = 11;
    let before = m.clone();
    let mut w = 7usize;
    let p = m.as_mut_ptr();
    // SAFETY: `m` is live; the output lies inside it (the case refused).
    let st = unsafe { payload_copy_data(p, len, p.add(3).cast(), 8, &mut w) };
    assert_eq!((st, w), (vh5_status::VH5_ERR_INVALID_ARGUMENT, 0));
    let msg = last_error();
    assert!(msg.contains("`out`") && msg.contains("byte offset 3"), "{msg}");
    // SAFETY: as above.
    let st = unsafe { payload_decode_count(p, len, p.cast(), 1, &mut w) };
    assert_eq!(st, vh5_status::VH5_ERR_INVALID_ARGUMENT);
    let (mut ni, mut nv) = (9usize, 9usize);
    // SAFETY: as above; the items output (capacity 1) starts inside the message.
    let st = unsafe { payload_decode_document(p, len, 0, p.add(4).cast(), 1, std::ptr::null_mut(), 0, &mut ni, &mut nv) };
    assert_eq!((st, ni, nv), (vh5_status::VH5_ERR_INVALID_ARGUMENT, 0, 0));
    assert!(last_error().contains("`items`"), "{}", last_error());
    assert_eq!(m, before, "nothing written");
    // Right after the message (not overlapping): accepted.
    // SAFETY: as above; bytes 11..19 are outside the message's 11 bytes.
    let st = unsafe { payload_copy_data(p, len, p.add(len).cast(), 8, &mut w) };
    assert_eq!((st, w), (vh5_status::VH5_OK, 8), "{}", last_error());
    assert_eq!(f64::from_ne_bytes(m[len..len + 8].try_into().unwrap()), 1.5);
}
