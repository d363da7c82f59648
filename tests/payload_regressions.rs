//! Regression tests for inputs found while fuzzing the payload decoder (docs/ROBUSTNESS.md).
//! Each test feeds the exact input bytes to the public API and checks the precise outcome.

use vh5::error::ErrorKind;
use vh5::payload::{copy_data, decode_count, decode_view};

/// A dtype string whose byte 2 falls inside a multi-byte UTF-8 character made
/// `Dtype::from_numpy_str` slice a `str` off a char boundary and panic (found by review of
/// the fuzz oracle's paths, reproduced with the payload_decode target). Now: `Dtype` error.
#[test]
fn numpy_dtype_string_with_multibyte_char() {
    // CBOR {"bytes": h'00', "dtype": "<é"}
    let msg = b"\xa2\x65bytes\x41\x00\x65dtype\x63<\xc3\xa9";
    let e = decode_view(msg, 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Dtype);
    assert!(e.message.contains("unknown dtype \"<é\""), "{}", e.message);
    assert_eq!(copy_data(msg, &mut [0u8; 4]).unwrap_err().kind, ErrorKind::Dtype);
    assert_eq!(decode_count(msg, &mut [0i64; 4]).unwrap_err().kind, ErrorKind::Dtype);
    // The same in a msgpack-numpy `type` (fixmap of nd, type, shape, data).
    let mut m = vec![0x84, 0xa2, b'n', b'd', 0xc3, 0xa4, b't', b'y', b'p', b'e', 0xa4, b'>', 0xe2, 0x82, 0xac];
    m.extend_from_slice(&[0xa5, b's', b'h', b'a', b'p', b'e', 0x91, 0x01, 0xa4, b'd', b'a', b't', b'a', 0xc4, 0x01, 0x00]);
    let e = decode_view(&m, 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Dtype);
    assert!(e.message.contains("\">€\""), "{}", e.message);
}

/// The fuzz oracle (fuzz/src/lib.rs: every invariant of decode_view / decode_count /
/// copy_data, with exact and one-short output buffers) run on stable Rust over the committed
/// seed corpus and every regression input, so `cargo test` replays them without cargo-fuzz.
#[path = "../fuzz/src/lib.rs"]
mod oracle;

#[test]
fn committed_corpus_satisfies_the_fuzz_oracle() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/payload_decode");
    let mut n = 0;
    let mut decoded = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let r = std::panic::catch_unwind(|| oracle::check_payload(&bytes).is_some());
        match r {
            Ok(ok) => decoded += ok as usize,
            Err(_) => panic!("oracle failed on {}", path.display()),
        }
        n += 1;
    }
    assert!(n >= 80, "only {n} seeds in {}", dir.display());
    // The seeds mix valid messages (layouts, formats, samples) and refusals.
    assert!(decoded >= 25 && decoded < n, "{decoded} of {n} seeds decode");
    println!("{n} seeds, {decoded} decode");
}

/// `{"bytes": h'0100000002000000', "dtype": "int32", "shape": [2], "count": [],
/// "count_as_bytes": <two int64 counts, the second `second`>, "byte_order": order}`
fn count_as_bytes_message(order: &str, second: i64, typed_tag: Option<u8>) -> Vec<u8> {
    let big = order == "big";
    let i32b = |v: i32| if big { v.to_be_bytes() } else { v.to_le_bytes() };
    let i64b = |v: i64| if big { v.to_be_bytes() } else { v.to_le_bytes() };
    let mut m = vec![0xa6, 0x65];
    m.extend_from_slice(b"bytes");
    m.push(0x48);
    m.extend_from_slice(&i32b(1));
    m.extend_from_slice(&i32b(2));
    m.extend_from_slice(b"\x65dtype\x65int32\x65shape\x81\x02\x65count\x80\x6ecount_as_bytes");
    if let Some(t) = typed_tag {
        m.extend_from_slice(&[0xd8, t]);
    }
    m.push(0x50);
    m.extend_from_slice(&i64b(7));
    m.extend_from_slice(&i64b(second));
    m.extend_from_slice(b"\x6abyte_order");
    m.push(0x60 + order.len() as u8);
    m.extend_from_slice(order.as_bytes());
    m
}

/// Issue: a negative count in `count_as_bytes` was accepted by decode_view (so Python's
/// zero-copy count view showed it) in little-endian messages and refused only where the
/// counts were decoded (payload_decode_count, and so Python's big-endian path). One rule
/// now: every entry point refuses it with `Malformed`, naming the count index and byte
/// offset, in both byte orders; so does a count above INT64_MAX in a uint64 typed array.
#[test]
fn reductionist_count_as_bytes_negative_both_byte_orders() {
    use vh5::ffi::payload::{payload_copy_data, payload_decode_count, payload_decode_view, payload_view};
    use vh5::ffi::vh5_status::{VH5_ERR_MALFORMED, VH5_OK};
    for order in ["little", "big"] {
        let ok = count_as_bytes_message(order, 3, None);
        let v = decode_view(&ok, 0).unwrap();
        assert_eq!(v.count.len, 2);
        let mut c = [0i64; 2];
        assert_eq!(decode_count(&ok, &mut c).unwrap(), 2);
        assert_eq!(c, [7, 3]);
        // the second count starts 8 bytes after the first: find the first's offset.
        let off = v.count.offset + 8;
        for (m, what) in [
            (count_as_bytes_message(order, -1, None), "int64"),
            (count_as_bytes_message(order, i64::MIN, None), "int64"),
            (count_as_bytes_message(order, -1, Some(if order == "big" { 75 } else { 79 })), "int64"),
            (count_as_bytes_message(order, -1, Some(if order == "big" { 67 } else { 71 })), "uint64"),
        ] {
            let off = if m.len() > ok.len() { off + 2 } else { off };
            let want = format!("count element 1 at byte {off} ({what} {order}-endian bytes");
            for e in [decode_view(&m, 0).map(|_| ()).unwrap_err(), decode_count(&m, &mut [0i64; 2]).map(|_| ()).unwrap_err(), copy_data(&m, &mut [0u8; 8]).map(|_| ()).unwrap_err()]
            {
                assert_eq!(e.kind, ErrorKind::Malformed, "{order}: {}", e.message);
                assert!(e.message.contains(&want) && e.message.contains("is negative or does not fit int64"), "{order}: {}", e.message);
            }
            // the C ABI
            unsafe {
                let mut pv: payload_view = std::mem::zeroed();
                assert_eq!(payload_decode_view(m.as_ptr(), m.len(), 0, &mut pv), VH5_ERR_MALFORMED);
                let (mut c, mut w) = ([0i64; 2], 9usize);
                assert_eq!(payload_decode_count(m.as_ptr(), m.len(), c.as_mut_ptr(), 2, &mut w), VH5_ERR_MALFORMED);
                assert_eq!(w, 0);
                let mut d = [0u8; 8];
                assert_eq!(payload_copy_data(m.as_ptr(), m.len(), d.as_mut_ptr().cast(), 8, &mut w), VH5_ERR_MALFORMED);
                assert_ne!(payload_decode_view(ok.as_ptr(), ok.len(), 0, &mut pv), VH5_ERR_MALFORMED);
                assert_eq!(payload_decode_view(ok.as_ptr(), ok.len(), 0, &mut pv), VH5_OK);
            }
        }
    }
}
