//! One summary row per payload class the fuzz targets and payload tests already cover, each
//! produced by calling the decoder on a small hand-made input (so the status is measured).

use ciborium::value::Value;
use vh5::ffi::payload::*;
use vh5::ffi::vh5_status::{self, *};

use super::{Guarded, Report};
use crate::common::last_error;

fn cbor(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(v, &mut out).unwrap();
    out
}

fn t(s: &str) -> Value {
    Value::Text(s.into())
}

/// A Reductionist 0.12 response: float64 [2, 3] little-endian, count [6].
fn reductionist(dtype: &str, data_len: usize, order: &str) -> Vec<u8> {
    let data: Vec<u8> = (0..data_len as u8).collect();
    cbor(&Value::Map(vec![
        (t("bytes"), Value::Bytes(data)),
        (t("dtype"), t(dtype)),
        (t("shape"), Value::Array(vec![Value::Integer(2.into()), Value::Integer(3.into())])),
        (t("count"), Value::Array(vec![Value::Integer(6.into())])),
        (t("byte_order"), t(order)),
    ]))
}

fn view(buf: &[u8], flags: u32) -> (vh5_status, String) {
    let mut v: payload_view = unsafe { std::mem::zeroed() };
    let st = unsafe { payload_decode_view(buf.as_ptr(), buf.len(), flags, &mut v) };
    let zeroed = v.data.is_null() && v.nelements == 0 && v.ndim == 0;
    (st, if st != VH5_OK && !zeroed { "(view not zeroed on failure)".into() } else { last_error() })
}

pub fn run(rep: &mut Report) {
    const C: &str = "payload";
    const V: &str = "payload_decode_view";
    let good = reductionist("float64", 48, "little");
    assert_eq!(view(&good, 0).0, VH5_OK, "{}", last_error());
    rep.check(C, "empty input", V, VH5_ERR_MALFORMED, view(&[], 0), &[]);
    rep.check(C, "Reductionist response cut in half", V, VH5_ERR_MALFORMED, view(&good[..good.len() / 2], 0), &["byte"]);
    let mut huge = vec![0xa1, 0x65];
    huge.extend_from_slice(b"bytes");
    huge.push(0x5b);
    huge.extend_from_slice(&(1u64 << 62).to_be_bytes());
    huge.extend_from_slice(&[0; 16]);
    rep.check(C, "byte string declaring 2^62 bytes (24 present)", V, VH5_ERR_MALFORMED, view(&huge, 0), &[]);
    let mut nested = Value::Integer(1.into());
    for _ in 0..200 {
        nested = Value::Array(vec![nested]);
    }
    let deep = cbor(&Value::Map(vec![
        (t("bytes"), Value::Bytes(vec![0; 8])),
        (t("dtype"), t("float64")),
        (t("shape"), Value::Array(vec![Value::Integer(1.into())])),
        (t("count"), nested),
        (t("byte_order"), t("little")),
    ]));
    rep.check(C, "count nested 200 arrays deep (limit 64)", V, VH5_ERR_UNSUPPORTED, view(&deep, 0), &["64"]);
    rep.check(C, "dtype \"float99\"", V, VH5_ERR_DTYPE, view(&reductionist("float99", 48, "little"), 0), &["float99"]);
    rep.check(C, "data 47 bytes for shape [2, 3] float64", V, VH5_ERR_MALFORMED, view(&reductionist("float64", 47, "little"), 0), &["47"]);
    rep.check(C, "trailing byte after the message", V, VH5_ERR_MALFORMED, view(&[good.clone(), vec![0]].concat(), 0), &[]);
    let mut pickled = Vec::new();
    rmp::encode::write_map_len(&mut pickled, 5).unwrap();
    for (k, v) in [("nd", None), ("type", Some("|O")), ("kind", Some("")), ("shape", None), ("data", Some("x"))] {
        rmp::encode::write_str(&mut pickled, k).unwrap();
        match (k, v) {
            ("nd", _) => rmp::encode::write_bool(&mut pickled, true).unwrap(),
            ("shape", _) => {
                rmp::encode::write_array_len(&mut pickled, 1).unwrap();
                rmp::encode::write_uint(&mut pickled, 1).unwrap();
            }
            ("kind", _) | ("data", _) => {
                rmp::encode::write_bin(&mut pickled, v.unwrap().as_bytes()).unwrap();
            }
            _ => rmp::encode::write_str(&mut pickled, v.unwrap()).unwrap(),
        }
    }
    rep.check(C, "msgpack-numpy pickled object (type \"|O\")", V, VH5_ERR_UNSUPPORTED, view(&pickled, 0), &["'O'", "pickle"]);
    rep.check(
        C,
        "Reductionist JSON error body {\"error\": {\"message\": \"chunk 3 missing\"}}",
        V,
        VH5_ERR_SERVER_ERROR,
        view(br#"{"error": {"message": "chunk 3 missing"}}"#, 0),
        &["chunk 3 missing"],
    );
    rep.check(C, "JSON document that is not an error body", V, VH5_ERR_MALFORMED, view(br#"{"error": "x"}"#, 0), &["JSON"]);
    rep.check(C, "unknown flag bit 0x100", V, VH5_ERR_INVALID_ARGUMENT, view(&good, 0x100), &["0x100"]);
    rep.check(C, "big-endian data with PAYLOAD_REQUIRE_NATIVE", V, VH5_ERR_BYTE_ORDER, view(&reductionist("float64", 48, "big"), PAYLOAD_REQUIRE_NATIVE), &[]);
    // The same message placed so that its float64 data starts at an odd address.
    let mut v: payload_view = unsafe { std::mem::zeroed() };
    unsafe { payload_decode_view(good.as_ptr(), good.len(), 0, &mut v) };
    let mut room = vec![0u8; good.len() + 16];
    let pad = (0..8).find(|p| (room.as_ptr() as usize + p + v.data_offset) % 8 == 1).unwrap();
    room[pad..pad + good.len()].copy_from_slice(&good);
    rep.replace.push((format!("{:#x}", room.as_ptr() as usize + pad + v.data_offset), "<address>".into()));
    rep.check(C, "float64 data at an odd address with PAYLOAD_REQUIRE_ALIGNED", V, VH5_ERR_MISALIGNED, view(&room[pad..pad + good.len()], PAYLOAD_REQUIRE_ALIGNED), &["align"]);
    let st = unsafe { payload_decode_view(good.as_ptr(), good.len(), 0, std::ptr::null_mut()) };
    rep.check(C, "out = NULL", V, VH5_ERR_NULL_ARGUMENT, (st, last_error()), &["`out`"]);
    // Output buffers one element / byte short: nothing written past them.
    let mut counts = Guarded::new(0, 0);
    let mut written = 7usize;
    let st = unsafe { payload_decode_count(good.as_ptr(), good.len(), counts.ptr() as *mut i64, 0, &mut written) };
    rep.check(C, "count into cap 0 (needs 1)", "payload_decode_count", VH5_ERR_BUFFER_TOO_SMALL, (st, last_error()), &[]);
    rep.ensure(counts.guards_intact() && written == 1, || format!("decode_count short: written {written}"));
    let mut out = Guarded::new(47, 0x33);
    let mut written = 0usize;
    let st = unsafe { payload_copy_data(good.as_ptr(), good.len(), out.ptr() as *mut _, 47, &mut written) };
    rep.check(C, "copy_data into 47 bytes (needs 48)", "payload_copy_data", VH5_ERR_BUFFER_TOO_SMALL, (st, last_error()), &["48"]);
    rep.ensure(out.untouched() && written == 48, || format!("copy_data short: written {written}"));
}
