//! Unit tests of the document walker (messages built by hand).
use super::*;
use crate::dtype::Dtype;
use crate::error::ErrorKind;

fn doc(buf: &[u8], f: DocFormat) -> Document<'_> {
    decode_document(buf, f).unwrap_or_else(|e| panic!("{buf:02x?}: {e}"))
}

fn kinds(d: &Document<'_>) -> Vec<(ItemKind, u64, u64)> {
    d.items.iter().map(|i| (i.kind, i.parent, i.position)).collect()
}

/// msgpack-numpy map for a little-endian float64 vector (bin keys, as msgpack-numpy writes).
fn mpn(vals: &[f64]) -> Vec<u8> {
    let mut w = Vec::new();
    rmp::encode::write_map_len(&mut w, 5).unwrap();
    for (k, v) in [("nd", None), ("type", Some("<f8")), ("kind", Some("")), ("shape", None), ("data", None)] {
        rmp::encode::write_bin(&mut w, k.as_bytes()).unwrap();
        match k {
            "nd" => rmp::encode::write_bool(&mut w, true).unwrap(),
            "shape" => {
                rmp::encode::write_array_len(&mut w, 1).unwrap();
                rmp::encode::write_uint(&mut w, vals.len() as u64).unwrap();
            }
            "data" => {
                let b: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
                rmp::encode::write_bin(&mut w, &b).unwrap();
            }
            _ => rmp::encode::write_str(&mut w, v.unwrap()).unwrap(),
        }
    }
    w
}

#[test]
fn msgpack_nested_arrays_and_scalars() {
    // {"a": [1, -3, 1.5, nil, true, "x", b"yz", <array [1,2]>], "b": <array [3]>}
    let mut m = Vec::new();
    rmp::encode::write_map_len(&mut m, 2).unwrap();
    rmp::encode::write_str(&mut m, "a").unwrap();
    rmp::encode::write_array_len(&mut m, 8).unwrap();
    rmp::encode::write_uint(&mut m, 1).unwrap();
    rmp::encode::write_sint(&mut m, -3).unwrap();
    rmp::encode::write_f64(&mut m, 1.5).unwrap();
    rmp::encode::write_nil(&mut m).unwrap();
    rmp::encode::write_bool(&mut m, true).unwrap();
    rmp::encode::write_str(&mut m, "x").unwrap();
    rmp::encode::write_bin(&mut m, b"yz").unwrap();
    let a_at = m.len();
    m.extend_from_slice(&mpn(&[1.0, 2.0]));
    rmp::encode::write_str(&mut m, "b").unwrap();
    m.extend_from_slice(&mpn(&[3.0]));
    let d = doc(&m, DocFormat::Auto);
    assert_eq!(d.format, DocFormat::Msgpack);
    use ItemKind::*;
    assert_eq!(
        kinds(&d),
        vec![
            (Map, NO_PARENT, 0),
            (Text, 0, 0),
            (Array, 0, 1),
            (UInt, 2, 0),
            (NegInt, 2, 1),
            (Float, 2, 2),
            (Nil, 2, 3),
            (Bool, 2, 4),
            (Text, 2, 5),
            (Bytes, 2, 6),
            (ArrayView, 2, 7),
            (Text, 0, 2),
            (ArrayView, 0, 3)
        ]
    );
    assert_eq!((d.items[0].children, d.items[2].children), (4, 8));
    assert_eq!(d.items[4].value, 2); // -1 - 2 = -3
    assert_eq!(f64::from_bits(d.items[5].value), 1.5);
    assert_eq!(&m[d.items[9].data_offset..][..d.items[9].data_len], b"yz");
    assert_eq!((d.items[10].value, d.items[10].offset, d.items[12].value), (0, a_at, 1));
    assert_eq!(d.views.len(), 2);
    assert_eq!((d.views[0].dtype, d.views[0].shape.as_slice(), d.views[0].data.len()), (Dtype::Float64, &[2u64][..], 16));
    // exactly what decode_view gives for the map alone (offsets shifted)
    let alone = crate::payload::decode_view(&m[a_at..a_at + mpn(&[1.0, 2.0]).len()], 0).unwrap();
    assert_eq!(d.views[0].data_offset, alone.data_offset + a_at);
    assert_eq!((d.views[0].format, d.views[0].layout, d.views[0].dtype, d.views[0].shape), (alone.format, alone.layout, alone.dtype, alone.shape));
    // every prefix is an error, never a panic
    for i in 0..m.len() {
        assert!(decode_document(&m[..i], DocFormat::Msgpack).is_err(), "prefix {i}");
    }
    let mut t = m.clone();
    t.push(0);
    assert_eq!(decode_document(&t, DocFormat::Msgpack).unwrap_err().kind, ErrorKind::Malformed);
}

#[test]
fn msgpack_pickle_refused_and_bare_values() {
    let mut m = vec![0x91];
    let mut o = Vec::new();
    rmp::encode::write_map_len(&mut o, 5).unwrap();
    for (k, v) in [("nd", "T"), ("type", "|O"), ("kind", "O"), ("shape", "S"), ("data", "D")] {
        rmp::encode::write_bin(&mut o, k.as_bytes()).unwrap();
        match v {
            "T" => rmp::encode::write_bool(&mut o, true).unwrap(),
            "S" => {
                rmp::encode::write_array_len(&mut o, 1).unwrap();
                rmp::encode::write_uint(&mut o, 1).unwrap();
            }
            "D" => rmp::encode::write_bin(&mut o, b"\x80\x04pickle").unwrap(),
            _ => rmp::encode::write_str(&mut o, v).unwrap(),
        }
    }
    m.extend_from_slice(&o);
    let e = decode_document(&m, DocFormat::Msgpack).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.message.contains("pickle"), "{}", e.message);
    // a bare float is a document (when the format is given), and auto refuses to guess
    let f = [0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0];
    let d = doc(&f, DocFormat::Msgpack);
    assert_eq!((d.items[0].kind, f64::from_bits(d.items[0].value)), (ItemKind::Float, 1.5));
    let e = decode_document(&f, DocFormat::Auto).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("msgpack (float 64)"), "{}", e.message);
    // ext types
    let d = doc(&[0xd4, 0xff, 0x07], DocFormat::Msgpack);
    assert_eq!((d.items[0].kind, d.items[0].value as i64, d.items[0].data_offset, d.items[0].data_len), (ItemKind::Ext, -1, 2, 1));
}

#[test]
fn cbor_typed_arrays_reductionist_maps_and_tags() {
    // {"x": tag 86 [1.5], "r": {"bytes": h'01020304', "dtype": "int32", "count": [1]},
    //  "t": 1(2), "s": (_ "ab", "c"), "h": 1.5 (half)}
    let mut m = vec![0xa5, 0x61, b'x', 0xd8, 86, 0x48];
    m.extend_from_slice(&1.5f64.to_le_bytes());
    m.extend_from_slice(b"\x61r\xa3\x65bytes\x44\x01\x02\x03\x04\x65dtype\x65int32\x65count\x81\x01");
    m.extend_from_slice(b"\x61t\xc1\x02\x61s\x7f\x62ab\x61c\xff\x61h\xf9\x3e\x00");
    let d = doc(&m, DocFormat::Auto);
    assert_eq!(d.format, DocFormat::Cbor);
    use ItemKind::*;
    assert_eq!(
        kinds(&d),
        vec![
            (Map, NO_PARENT, 0),
            (Text, 0, 0),
            (ArrayView, 0, 1),
            (Text, 0, 2),
            // a Reductionist map stays a map; its "bytes" value is the array
            (Map, 0, 3),
            (Text, 4, 0),
            (ArrayView, 4, 1),
            (Text, 4, 2),
            (Text, 4, 3),
            (Text, 4, 4),
            (Array, 4, 5),
            (UInt, 10, 0),
            (Text, 0, 4),
            (Tag, 0, 5),
            (UInt, 13, 0),
            (Text, 0, 6),
            (Text, 0, 7),
            (Text, 16, 0),
            (Text, 16, 1),
            (Text, 0, 8),
            (Float, 0, 9)
        ]
    );
    assert_eq!((d.items[0].children, d.items[4].children), (10, 6));
    assert_eq!(d.views.len(), 2);
    assert_eq!((d.views[0].dtype, d.views[0].data_offset), (Dtype::Float64, 6));
    assert_eq!((d.views[1].dtype, d.views[1].layout, d.views[1].shape.as_slice()), (Dtype::Int32, crate::payload::Layout::Client, &[][..]));
    assert_eq!((d.views[1].count.form, d.views[1].count.len), (crate::payload::CountForm::Array, 1));
    assert_eq!((d.items[6].offset, d.items[6].data_offset, d.items[6].data_len), (23, 24, 4));
    assert_eq!((d.items[16].flags, d.items[16].data_len, d.items[16].children), (FLAG_INDEFINITE, 3, 2));
    assert_eq!(f64::from_bits(d.items[20].value), 1.5);
    for i in 0..m.len() {
        assert!(decode_document(&m[..i], DocFormat::Cbor).is_err(), "prefix {i}");
    }
    // A Reductionist map as the whole message: its view is decode_view's.
    let r = b"\xa2\x65bytes\x44\x01\x02\x03\x04\x65dtype\x65int32";
    let d = doc(r, DocFormat::Auto);
    assert_eq!(kinds(&d), vec![(Map, NO_PARENT, 0), (Text, 0, 0), (ArrayView, 0, 1), (Text, 0, 2), (Text, 0, 3)]);
    assert_eq!(d.views[0], crate::payload::decode_view(r, 0).unwrap());
    // Any other key, or a value of another type, makes it a plain map (nothing decoded).
    for other in [&b"\xa3\x65bytes\x44\x01\x02\x03\x04\x65dtype\x65int32\x62zz\x81\x01"[..], b"\xa2\x65bytes\x01\x65dtype\x61x"] {
        let d = doc(other, DocFormat::Cbor);
        assert!(d.views.is_empty() && d.items[0].kind == Map, "{other:?}");
    }
    // an error inside an array refuses the document
    let bad = b"\x81\xa2\x65bytes\x43\x01\x02\x03\x65dtype\x65int32";
    assert_eq!(decode_document(bad, DocFormat::Cbor).unwrap_err().kind, ErrorKind::Malformed);
    // chunked array data has no view
    let ch = b"\xa2\x65bytes\x5f\x42\x01\x02\x42\x03\x04\xff\x65dtype\x65int32";
    assert_eq!(decode_document(ch, DocFormat::Cbor).unwrap_err().kind, ErrorKind::Unsupported);
}

#[test]
fn depth_limit_and_rollback_in_slices() {
    let mut ok = vec![0x81u8; MAX_DEPTH - 1];
    ok.push(0x9f);
    ok.push(0x01);
    ok.push(0xff);
    assert_eq!(doc(&ok, DocFormat::Cbor).items.len(), MAX_DEPTH + 1);
    let mut deep = vec![0x81u8; MAX_DEPTH + 1];
    deep.push(0x01);
    let e = decode_document(&deep, DocFormat::Cbor).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.message.contains("deeper than 64") && e.message.contains("byte 64"), "{}", e.message);
    let e = decode_document(&[0x91; 70], DocFormat::Msgpack).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    // huge declared lengths are refused before use
    let e = decode_document(&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], DocFormat::Cbor).unwrap_err();
    assert!(e.message.contains("truncated"), "{}", e.message);
    let e = decode_document(&[0xdd, 0xff, 0xff, 0xff, 0xff], DocFormat::Msgpack).unwrap_err();
    assert!(e.message.contains("truncated"), "{}", e.message);
    // stray break
    assert_eq!(decode_document(&[0x81, 0xff], DocFormat::Cbor).unwrap_err().kind, ErrorKind::Malformed);
}

#[test]
fn cbor_indefinite_map_break_after_a_key_is_malformed() {
    // {_ "a": <break>}, {_ "": 1, "b" <break>} and the same nested: a key without a value is
    // not well-formed CBOR (RFC 8949 §3.2.2); it used to be dropped silently.
    for (buf, at) in [(&[0xbf, 0x61, b'a', 0xff][..], 3), (&[0xbf, 0x60, 0x01, 0x61, b'b', 0xff], 5), (&[0x81, 0xbf, 0x60, 0xff], 3)] {
        let e = decode_document(buf, DocFormat::Cbor).err().unwrap_or_else(|| panic!("{buf:02x?} decoded"));
        assert_eq!(e.kind, ErrorKind::Malformed, "{buf:02x?}: {e}");
        assert!(e.message.starts_with(&format!("byte {at}: CBOR break (0xff) in place of a map value")), "{}", e.message);
    }
    // Even maps are untouched.
    doc(&[0xbf, 0x60, 0x01, 0xff], DocFormat::Cbor);
    doc(&[0xbf, 0xff], DocFormat::Cbor);
}

#[test]
fn cbor_two_byte_simple_values_below_32_are_malformed() {
    // 0xf8 0x00..0x1f is not well-formed (RFC 8949 §3.3); it used to decode as a simple value.
    for b in [0x00u8, 0x14, 0x17, 0x1b, 0x1f] {
        let buf = [0x81, 0xf8, b];
        let e = decode_document(&buf, DocFormat::Cbor).err().unwrap_or_else(|| panic!("{buf:02x?} decoded"));
        assert_eq!(e.kind, ErrorKind::Malformed, "{buf:02x?}: {e}");
        assert!(e.message.starts_with("byte 1: 0xf8"), "{}", e.message);
    }
    let d = doc(&[0x81, 0xf8, 0x20], DocFormat::Cbor);
    assert_eq!((d.items[1].kind, d.items[1].value), (ItemKind::Simple, 32));
}

#[test]
fn cbor_array_of_2_pow_64_minus_1_items_is_not_indefinite() {
    // 0x9b ff..ff declares 2^64 - 1 items: it cannot be in any message. It was read as an
    // indefinite array, so [0x9b ff..ff, 1, <break>] decoded as [1].
    let huge = [0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
    for tail in [&[0x01, 0xff][..], &[0xff], &[0x01, 0x02, 0xff]] {
        for prefix in [&[][..], &[0x81], &[0xa1]] {
            let mut buf = prefix.to_vec();
            buf.extend_from_slice(&huge);
            buf.extend_from_slice(tail);
            if prefix == [0xa1] {
                buf.push(0x01);
            }
            let e = decode_document(&buf, DocFormat::Cbor).err().unwrap_or_else(|| panic!("{buf:02x?} decoded"));
            assert_eq!(e.kind, ErrorKind::Malformed, "{buf:02x?}: {e}");
        }
    }
    // The same array inside a skipped value and as a Reductionist count.
    let mut m = vec![0xa3, 0x65];
    m.extend_from_slice(b"bytes");
    m.extend_from_slice(&[0x41, 0x05, 0x65]);
    m.extend_from_slice(b"dtype");
    m.push(0x64);
    m.extend_from_slice(b"int8");
    m.push(0x65);
    m.extend_from_slice(b"count");
    m.extend_from_slice(&huge);
    m.extend_from_slice(&[0x01, 0xff]);
    let e = crate::payload::decode::decode_view(&m, 0).expect_err("count of 2^64 - 1 items decoded");
    assert_eq!(e.kind, ErrorKind::Malformed, "{e}");
    let e = decode_document(&m, DocFormat::Cbor).expect_err("document with a count of 2^64 - 1 items decoded");
    assert_eq!(e.kind, ErrorKind::Malformed, "{e}");
}

#[test]
fn cbor_reductionist_map_with_a_negative_count_refuses_the_document() {
    // {"bytes": h'0102', "dtype": "int8", "shape": [2], "count": [1, -1]}: count's type fits
    // the schema (integers), its value does not: the document is refused as decode_view
    // refuses the map, where it used to become a plain map (bytes a byte string).
    let mut m = vec![0xa4, 0x65];
    m.extend_from_slice(b"bytes");
    m.extend_from_slice(&[0x42, 0x01, 0x02, 0x65]);
    m.extend_from_slice(b"dtype");
    m.push(0x64);
    m.extend_from_slice(b"int8");
    m.push(0x65);
    m.extend_from_slice(b"shape");
    m.extend_from_slice(&[0x81, 0x02, 0x65]);
    m.extend_from_slice(b"count");
    for count in [&[0x82, 0x01, 0x20][..], &[0x82, 0x81, 0x01, 0x9f, 0x20, 0xff], &[0x82, 0x01, 0x1b, 0xff, 0, 0, 0, 0, 0, 0, 0]] {
        let mut b = m.clone();
        b.extend_from_slice(count);
        let e = decode_document(&b, DocFormat::Cbor).expect_err("negative count decoded");
        assert_eq!(e.kind, ErrorKind::Malformed, "{e}");
        assert!(e.message.contains("count element 1"), "{}", e.message);
    }
    // A count that is not integers stays a plain map.
    let mut b = m.clone();
    b.extend_from_slice(&[0x82, 0x01, 0x61, b'x']);
    let d = doc(&b, DocFormat::Cbor);
    assert!(d.views.is_empty());
}
