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
