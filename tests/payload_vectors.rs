//! The payload decoder against the shared vectors (../shared/data/payloads, or env
//! VH5_SHARED_DATA): every Reductionist replica in reductionist_vectors.json, every real
//! server response in server/ (checked against the independently computed numpy values in
//! index.json), the server's JSON error bodies, and every truncated prefix of each.
//! Skips with a printed reason when the shared data is absent.

use std::path::PathBuf;

use serde_json::Value;
use vh5::dtype::{ByteOrder, Dtype};
use vh5::error::ErrorKind;
use vh5::payload::{self, CountForm, Format, Layout, Scalar};

fn shared() -> Option<PathBuf> {
    let p = std::env::var_os("VH5_SHARED_DATA").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/data")));
    if p.join("payloads").is_dir() {
        Some(p.join("payloads"))
    } else {
        println!("SKIP: shared test data not found at {} (set VH5_SHARED_DATA)", p.display());
        None
    }
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}

/// Flatten a (possibly nested) JSON int array in C order.
fn flat_ints(v: &Value, out: &mut Vec<i64>) {
    match v {
        Value::Array(a) => a.iter().for_each(|x| flat_ints(x, out)),
        Value::Number(n) => out.push(n.as_i64().unwrap()),
        other => panic!("not an int: {other}"),
    }
}

fn decoded_counts(buf: &[u8], expect_len: u64) -> Vec<i64> {
    let mut out = vec![-7i64; expect_len as usize + 1];
    let n = payload::decode_count(buf, &mut out).unwrap();
    assert_eq!(n as u64, expect_len);
    if expect_len > 0 {
        // one short: BufferTooSmall, nothing written beyond the slice (a sub-slice of a
        // larger buffer whose tail must stay untouched)
        let mut big = vec![-7i64; expect_len as usize + 4];
        let e = payload::decode_count(buf, &mut big[..expect_len as usize - 1]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::BufferTooSmall);
        assert!(e.message.contains(&expect_len.to_string()), "{}", e.message);
        assert!(big[expect_len as usize - 1..].iter().all(|&x| x == -7));
    }
    out.truncate(n);
    out
}

/// Every strict prefix of a valid message is rejected (never a panic, never a read past the end).
fn all_prefixes_fail(buf: &[u8], name: &str) {
    for i in 0..buf.len() {
        let e = payload::decode_view(&buf[..i], 0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed, "{name} prefix {i}: {}", e.message);
        assert!(payload::decode_count(&buf[..i], &mut [0; 4]).is_err());
        assert!(payload::copy_data(&buf[..i], &mut [0; 64]).is_err());
    }
}

#[test]
fn reductionist_vectors() {
    let Some(dir) = shared() else { return };
    let all: serde_json::Map<String, Value> = serde_json::from_slice(&std::fs::read(dir.join("reductionist_vectors.json")).unwrap()).unwrap();
    assert!(all.len() >= 26);
    let mut checked = 0;
    for (name, v) in &all {
        let buf = unhex(v["hex"].as_str().unwrap());
        assert_eq!(buf.len() as u64, v["len"].as_u64().unwrap());
        all_prefixes_fail(&buf, name);
        if name.starts_with("rs_test_cbor_response") {
            let e = payload::decode_view(&buf, 0).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Malformed, "{name}");
            assert!(e.message.contains("data length 3 bytes") && e.message.contains("= 24 bytes"), "{name}: {}", e.message);
            assert_eq!(payload::copy_data(&buf, &mut [0; 64]).unwrap_err().kind, ErrorKind::Malformed);
            checked += 1;
            continue;
        }
        let view = payload::decode_view(&buf, 0).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(view.format, Format::Reductionist);
        let Some(dec) = v.get("decoded") else {
            // client fixtures without a `decoded` field (see the data README): checked by hand
            let counts = decoded_counts(&buf, view.count.len);
            match name.as_str() {
                "pyas_unit_make_response_int32" => {
                    assert_eq!((view.dtype, view.shape.ndim(), view.layout), (Dtype::Int32, 0, Layout::Client));
                    assert_eq!(view.get(0), Some(Scalar::Int(i32::from_le_bytes([0x1a, 0x0a, 0x02, 0x08]) as i128)));
                    assert_eq!((view.count.form, counts), (CountForm::Scalar, vec![2]));
                }
                "pyas_refactor26_encode_result_nested_count" => {
                    assert_eq!((view.dtype, view.shape.as_slice(), view.layout), (Dtype::Float64, &[1u64, 1, 2][..], Layout::Client));
                    assert_eq!((view.get(0), view.get(1)), (Some(Scalar::Float(1.5)), Some(Scalar::Float(2.5))));
                    assert_eq!((view.count.form, counts), (CountForm::Array, vec![3, 4]));
                }
                other => panic!("unexpected vector without `decoded`: {other}"),
            }
            checked += 1;
            continue;
        };
        // data bytes, in place
        let data = unhex(dec["bytes"]["bytes_hex"].as_str().unwrap());
        assert_eq!(view.data, &data[..], "{name}");
        assert_eq!(&buf[view.data_offset..view.data_offset + data.len()], &data[..]);
        assert_eq!(view.dtype, Dtype::from_name(dec["dtype"].as_str().unwrap()).unwrap(), "{name}");
        let order = if dec["byte_order"] == "little" { ByteOrder::Little } else { ByteOrder::Big };
        assert_eq!(view.byte_order, Some(order));
        // shape: shape_as_bytes (u64 LE) when non-empty, else shape
        let sab = dec.get("shape_as_bytes").map(|s| unhex(s["bytes_hex"].as_str().unwrap())).unwrap_or_default();
        let shape: Vec<u64> = if sab.is_empty() { u64s(&dec["shape"]) } else { sab.chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect() };
        assert_eq!(view.shape.as_slice(), &shape[..], "{name}");
        // count: count_as_bytes (i64 LE) when non-empty, else count
        let cab = dec.get("count_as_bytes").map(|s| unhex(s["bytes_hex"].as_str().unwrap())).unwrap_or_default();
        let (want_count, form) = if cab.is_empty() {
            let mut c = vec![];
            flat_ints(&dec["count"], &mut c);
            (c, CountForm::Array)
        } else {
            (cab.chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect(), CountForm::Bytes)
        };
        assert_eq!(view.count.form, form, "{name}");
        assert_eq!(decoded_counts(&buf, view.count.len), want_count, "{name}");
        // layout from the source description
        let src = v["source"].as_str().unwrap();
        let layout = if src.contains("0.13.1") {
            Layout::Reductionist0_13_1
        } else if src.contains("0.13.0") && dec.get("count_as_bytes").is_some() {
            Layout::Reductionist0_13_0
        } else {
            Layout::Reductionist0_12 // 0.12, or 0.13.0 without *_as_bytes (identical)
        };
        assert_eq!(view.layout, layout, "{name}");
        // copy = the data in native order
        let mut out = vec![0u8; data.len()];
        assert_eq!(payload::copy_data(&buf, &mut out).unwrap(), data.len());
        assert_eq!(out, data); // little-endian host, little-endian vectors
        checked += 1;
    }
    assert_eq!(checked, all.len());
}

fn expected_scalar(v: &Value, dtype: Dtype) -> Scalar {
    match v {
        Value::String(s) => Scalar::Float(match s.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            o => panic!("{o}"),
        }),
        Value::Number(n) if dtype.kind() == 'f' => Scalar::Float(n.as_f64().unwrap()),
        Value::Number(n) => Scalar::Int(n.as_i64().map(i128::from).unwrap_or_else(|| n.as_u64().unwrap() as i128)),
        o => panic!("{o}"),
    }
}

fn same(a: Scalar, b: Scalar) -> bool {
    match (a, b) {
        (Scalar::Float(x), Scalar::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        _ => a == b,
    }
}

#[test]
fn server_responses() {
    let Some(dir) = shared() else { return };
    let index: Value = serde_json::from_slice(&std::fs::read(dir.join("server/index.json")).unwrap()).unwrap();
    let cases = index["cases"].as_array().unwrap();
    assert!(cases.len() >= 20);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let buf = std::fs::read(dir.join("server").join(c["file"].as_str().unwrap())).unwrap();
        all_prefixes_fail(&buf, name);
        let view = payload::decode_view(&buf, 0).unwrap_or_else(|e| panic!("{name}: {e}"));
        // where the server's payload differs from numpy, `server_observed` says what it holds
        let mut exp = c["expected"].clone();
        if let Some(obs) = c.get("server_observed").filter(|o| o.is_object()) {
            for (k, v) in obs.as_object().unwrap() {
                exp[k] = v.clone();
            }
        }
        let dtype = Dtype::from_name(exp["dtype"].as_str().unwrap()).unwrap();
        assert_eq!(view.dtype, dtype, "{name}");
        assert_eq!(view.shape.as_slice(), &u64s(&exp["shape"])[..], "{name}");
        assert_eq!(view.byte_order, Some(ByteOrder::Little));
        assert_eq!(view.layout, Layout::Reductionist0_13_1, "{name}");
        assert_eq!(view.data_offset as u64, c["cbor_layout"]["bytes_data_offset"].as_u64().unwrap(), "{name}");
        assert_eq!(view.aligned, (buf.as_ptr() as usize + view.data_offset) % dtype.itemsize().unwrap() == 0);
        let values = exp["values"].as_array().unwrap();
        assert_eq!(view.nelements as usize, values.len(), "{name}");
        for (i, want) in values.iter().enumerate() {
            let got = view.get(i as u64).unwrap();
            assert!(same(got, expected_scalar(want, dtype)), "{name}[{i}]: got {got:?} want {want}");
        }
        let want_count: Vec<i64> = exp["count"].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect();
        assert_eq!(view.count.len, exp["count_len"].as_u64().unwrap());
        let form = if exp["count_in"] == "count_as_bytes" { CountForm::Bytes } else { CountForm::Array };
        assert_eq!(view.count.form, form, "{name}");
        assert_eq!(decoded_counts(&buf, view.count.len), want_count, "{name}");
        // copy: native order, same values
        let mut out = vec![0u8; view.data.len()];
        payload::copy_data(&buf, &mut out).unwrap();
        assert_eq!(out, view.data);
        // flags: these payloads are little-endian (native here); alignment depends on offset
        assert!(payload::decode_view(&buf, payload::REQUIRE_NATIVE).is_ok());
        let r = payload::decode_view(&buf, payload::REQUIRE_ALIGNED);
        if view.aligned {
            assert!(r.is_ok());
        } else {
            assert_eq!(r.unwrap_err().kind, ErrorKind::Misaligned);
        }
    }
}

#[test]
fn server_error_bodies() {
    let Some(dir) = shared() else { return };
    let index: Value = serde_json::from_slice(&std::fs::read(dir.join("server/index.json")).unwrap()).unwrap();
    let errors = index["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 3);
    for c in errors {
        let buf = std::fs::read(dir.join("server").join(c["file"].as_str().unwrap())).unwrap();
        let e = payload::decode_view(&buf, 0).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ServerError);
        let msg = c["body_json"]["error"]["message"].as_str().unwrap();
        assert!(e.message.starts_with(&format!("this is a JSON error body from the server: {msg} (caused by: ")), "{}", e.message);
        for cause in c["body_json"]["error"]["caused_by"].as_array().unwrap() {
            assert!(e.message.contains(cause.as_str().unwrap()), "{}", e.message);
        }
        assert_eq!(payload::decode_count(&buf, &mut [0; 4]).unwrap_err().kind, ErrorKind::ServerError);
        assert_eq!(payload::copy_data(&buf, &mut [0; 4]).unwrap_err().kind, ErrorKind::ServerError);
    }
}
