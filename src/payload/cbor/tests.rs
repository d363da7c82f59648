//! Unit tests of the CBOR decoder (messages built by hand, byte by byte).
use super::*;
use crate::dtype::{ByteOrder, Dtype};
use crate::error::ErrorKind;
use crate::payload::{decode_view, CountForm, Format, Layout};

#[test]
fn tags() {
    assert_eq!(typed_array_tag(64).unwrap(), Some((Dtype::UInt8, ByteOrder::Big)));
    assert_eq!(typed_array_tag(68).unwrap().unwrap().0, Dtype::UInt8);
    assert_eq!(typed_array_tag(72).unwrap().unwrap().0, Dtype::Int8);
    assert_eq!(typed_array_tag(79).unwrap(), Some((Dtype::Int64, ByteOrder::Little)));
    assert_eq!(typed_array_tag(86).unwrap(), Some((Dtype::Float64, ByteOrder::Little)));
    assert_eq!(typed_array_tag(82).unwrap(), Some((Dtype::Float64, ByteOrder::Big)));
    assert_eq!(typed_array_tag(84).unwrap(), Some((Dtype::Float16, ByteOrder::Little)));
    assert_eq!(typed_array_tag(81).unwrap(), Some((Dtype::Float32, ByteOrder::Big)));
    assert_eq!(typed_array_tag(69).unwrap(), Some((Dtype::UInt16, ByteOrder::Little)));
    assert_eq!(typed_array_tag(74).unwrap(), Some((Dtype::Int32, ByteOrder::Big)));
    assert_eq!(typed_array_tag(76).unwrap_err().kind, ErrorKind::Unsupported);
    assert_eq!(typed_array_tag(83).unwrap_err().kind, ErrorKind::Unsupported);
    assert_eq!(typed_array_tag(87).unwrap_err().kind, ErrorKind::Unsupported);
    assert_eq!(typed_array_tag(63).unwrap(), None);
    assert_eq!(typed_array_tag(88).unwrap(), None);
}

fn text(out: &mut Vec<u8>, s: &str) {
    assert!(s.len() < 24);
    out.push(0x60 + s.len() as u8);
    out.extend_from_slice(s.as_bytes());
}

/// {"bytes": h'..', "dtype": dt, "shape": [..], "count": [..], "byte_order": "little"} (0.12)
fn v012(data: &[u8], dt: &str, shape: &[u8], count: &[u8]) -> Vec<u8> {
    let mut m = vec![0xa5];
    text(&mut m, "bytes");
    m.push(0x40 + data.len() as u8);
    m.extend_from_slice(data);
    text(&mut m, "dtype");
    text(&mut m, dt);
    text(&mut m, "shape");
    m.push(0x80 + shape.len() as u8);
    m.extend_from_slice(shape);
    text(&mut m, "count");
    m.push(0x80 + count.len() as u8);
    m.extend_from_slice(count);
    text(&mut m, "byte_order");
    text(&mut m, "little");
    m
}

#[test]
fn reductionist_012() {
    let data: Vec<u8> = [4i32, 5, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
    let m = v012(&data, "int32", &[3], &[2, 2, 2]);
    let v = decode_view(&m, 0).unwrap();
    assert_eq!(v.layout, Layout::Reductionist0_12);
    assert_eq!(v.dtype, Dtype::Int32);
    assert_eq!(v.shape.as_slice(), &[3]);
    assert_eq!(v.data, &data[..]);
    assert_eq!(v.data_offset, 8);
    assert_eq!(v.count.form, CountForm::Array);
    assert_eq!(v.count.len, 3);
    let mut out = [0i64; 3];
    assert_eq!(crate::payload::decode_count(&m, &mut out).unwrap(), 3);
    assert_eq!(out, [2, 2, 2]);
    // every prefix is an error, never a panic
    for i in 0..m.len() {
        let e = decode_view(&m[..i], 0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed, "prefix {i}: {}", e.message);
    }
}

#[test]
fn bad_maps() {
    let data: Vec<u8> = [4i32, 5, 6].iter().flat_map(|v| v.to_le_bytes()).collect();
    // wrong length: shape [2]
    let e = decode_view(&v012(&data, "int32", &[2], &[2, 2]), 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Malformed);
    assert!(e.message.contains("12 bytes") && e.message.contains("8 bytes"), "{}", e.message);
    // unknown dtype
    let e = decode_view(&v012(&data, "float128", &[3], &[2, 2, 2]), 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Dtype);
    assert!(e.message.contains("float128"));
    // duplicate key: replace "dtype" by "bytes" (same length) -> second "bytes"
    let mut m = v012(&data, "int32", &[3], &[2, 2, 2]);
    let at = m.windows(5).position(|w| w == b"dtype").unwrap();
    m[at..at + 5].copy_from_slice(b"bytes");
    let e = decode_view(&m, 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Malformed);
    assert!(e.message.contains("duplicate key \"bytes\""), "{}", e.message);
    // trailing byte
    let mut m = v012(&data, "int32", &[3], &[2, 2, 2]);
    m.push(0);
    assert!(decode_view(&m, 0).unwrap_err().message.contains("trailing"));
    // negative count
    let e = decode_view(&v012(&data, "int32", &[3], &[2, 0x20, 2]), 0).unwrap_err();
    assert!(e.message.contains("negative"), "{}", e.message);
    // wrong value type for shape
    let mut m = v012(&data, "int32", &[3], &[2, 2, 2]);
    let at = m.windows(5).position(|w| w == b"shape").unwrap();
    m[at + 6] = 0x61; // "3"? -> a 1-char text instead of uint: shape [ "\x.." ]
    let e = decode_view(&m, 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Malformed);
    assert!(e.message.contains("shape"), "{}", e.message);
    // bad flags
    assert_eq!(decode_view(&v012(&data, "int32", &[3], &[2, 2, 2]), 4).unwrap_err().kind, ErrorKind::InvalidArgument);
}

#[test]
fn missing_shape_and_order_and_scalar_count() {
    // {"bytes": h'1a0a0208', "dtype": "int32", "count": 2}: scalar, little-endian
    let mut m = vec![0xa3];
    text(&mut m, "bytes");
    m.extend_from_slice(&[0x44, 0x1a, 0x0a, 0x02, 0x08]);
    text(&mut m, "dtype");
    text(&mut m, "int32");
    text(&mut m, "count");
    m.push(0x02);
    let v = decode_view(&m, 0).unwrap();
    assert_eq!(v.layout, Layout::Client);
    assert_eq!(v.shape.ndim(), 0);
    assert_eq!(v.byte_order, Some(ByteOrder::Little));
    assert_eq!(v.count.form, CountForm::Scalar);
    assert_eq!(v.count.scalar, 2);
    assert_eq!(i32::from_le_bytes(v.data.try_into().unwrap()), 0x08020a1a);
}

#[test]
fn typed_and_multidim() {
    // tag 86 float64 LE, 2 elements
    let mut m = vec![0xd8, 86, 0x50];
    m.extend_from_slice(&1.5f64.to_le_bytes());
    m.extend_from_slice(&(-2.0f64).to_le_bytes());
    let v = decode_view(&m, 0).unwrap();
    assert_eq!((v.format, v.dtype, v.shape.as_slice(), v.data_offset), (Format::TypedArray, Dtype::Float64, &[2u64][..], 3));
    // tag 1040 [[2, 1], tag 70 (uint32 LE)]
    let mut m = vec![0xd9, 0x04, 0x10, 0x82, 0x82, 0x02, 0x01, 0xd8, 70, 0x48];
    m.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
    let v = decode_view(&m, 0).unwrap();
    assert_eq!((v.format, v.dtype, v.fortran_order, v.shape.as_slice()), (Format::Multidim, Dtype::UInt32, true, &[2u64, 1][..]));
    // self-describe prefix
    let mut sd = vec![0xd9, 0xd9, 0xf7];
    sd.extend_from_slice(&m);
    assert_eq!(decode_view(&sd, 0).unwrap().data_offset, v.data_offset + 3);
    // elements as a plain array: unsupported
    let e = decode_view(&[0xd8, 40, 0x82, 0x81, 0x01, 0x81, 0x01], 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    // wrong length for dims
    let e = decode_view(&[0xd8, 40, 0x82, 0x81, 0x02, 0x41, 0x01], 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Malformed);
    // too many axes
    let mut m = vec![0xd8, 40, 0x82, 0x98, 65];
    m.extend(std::iter::repeat_n(0x01, 65));
    m.push(0x41);
    m.push(0);
    assert_eq!(decode_view(&m, 0).unwrap_err().kind, ErrorKind::Unsupported);
}

#[test]
fn dtype_conflict_with_tag() {
    let mut m = vec![0xa2];
    text(&mut m, "bytes");
    m.extend_from_slice(&[0xd8, 85, 0x44, 0, 0, 0x80, 0x3f]);
    text(&mut m, "dtype");
    text(&mut m, "float64");
    let e = decode_view(&m, 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Dtype);
    assert!(e.message.contains("float64") && e.message.contains("float32") && e.message.contains("85"), "{}", e.message);
}

#[test]
fn wrong_value_type_message_names_key_and_offset_once() {
    // {"bytes": "abc", "dtype": "int32", "shape": [1]}: "bytes" holds a text string.
    let mut m = vec![0xa3, 0x65];
    m.extend_from_slice(b"bytes");
    m.push(0x63);
    m.extend_from_slice(b"abc");
    m.push(0x65);
    m.extend_from_slice(b"dtype");
    m.push(0x65);
    m.extend_from_slice(b"int32");
    m.push(0x65);
    m.extend_from_slice(b"shape");
    m.extend_from_slice(&[0x81, 0x01]);
    let e = decode_view(&m, 0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Malformed);
    assert_eq!(e.message, "value of key \"bytes\" at byte 7: expected a byte string or RFC 8746 typed array, found CBOR string");
}
