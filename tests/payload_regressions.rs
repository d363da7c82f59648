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
