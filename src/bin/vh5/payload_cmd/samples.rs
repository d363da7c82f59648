//! `vh5 payload --make-samples DIR`: a few small payloads for the README demo, shaped like
//! real Reductionist responses (reductionist-rs 0.12 / 0.13.0 / 0.13.1 key sets, serde_cbor
//! key order), plus a big-endian one, RFC 8746 typed and multi-dimensional arrays, a
//! msgpack-numpy map, and a server JSON error body. Encoded with minicbor's encoder and
//! rmp's writer.

use std::path::Path;

use minicbor::data::Tag;
use minicbor::Encoder;

type E = minicbor::encode::Error<std::convert::Infallible>;

fn f64s(v: &[f64], big: bool) -> Vec<u8> {
    v.iter().flat_map(|x| if big { x.to_be_bytes() } else { x.to_le_bytes() }).collect()
}

fn i64s(v: &[i64], big: bool) -> Vec<u8> {
    v.iter().flat_map(|x| if big { x.to_be_bytes() } else { x.to_le_bytes() }).collect()
}

/// A Reductionist map. `version`: "0.12", "0.13.0" or "0.13.1". `count_as_bytes`: put the
/// counts in count_as_bytes (and `count: []`).
fn reductionist(data: &[u8], dtype: &str, shape: &[u64], counts: &[i64], version: &str, count_as_bytes: bool, big: bool) -> Result<Vec<u8>, E> {
    let cab = if count_as_bytes { i64s(counts, big) } else { vec![] };
    let keys = match version {
        "0.12" => 5,
        "0.13.0" => 5 + u64::from(!cab.is_empty()),
        _ => 7,
    };
    let mut e = Encoder::new(Vec::new());
    e.map(keys)?.str("bytes")?.bytes(data)?.str("dtype")?.str(dtype)?.str("shape")?.array(shape.len() as u64)?;
    for &s in shape {
        e.u64(s)?;
    }
    if version == "0.13.1" {
        e.str("shape_as_bytes")?.bytes(&[])?;
    }
    e.str("count")?;
    if count_as_bytes {
        e.array(0)?;
    } else {
        e.array(counts.len() as u64)?;
        for &c in counts {
            e.i64(c)?;
        }
    }
    if version == "0.13.1" || (version == "0.13.0" && !cab.is_empty()) {
        e.str("count_as_bytes")?.bytes(&cab)?;
    }
    e.str("byte_order")?.str(if big { "big" } else { "little" })?;
    Ok(e.into_writer())
}

/// Write the samples into `dir` (created if needed); returns the file names.
pub fn write_samples(dir: &Path) -> std::io::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let io = |e: E| std::io::Error::other(e.to_string());
    let mut files: Vec<(&str, Vec<u8>)> = Vec::new();

    // sum over axis 0 of a (3, 4, 3) float64 array with missing values: 0.12 layout
    let vals: Vec<f64> = (0..12).map(|i| i as f64 * 1.5 - 4.0).collect();
    let counts: Vec<i64> = (0..12).map(|i| if i == 5 { 0 } else { 3 - (i % 2) }).collect();
    files.push(("sum_axis0_v012.cbor", reductionist(&f64s(&vals, false), "float64", &[4, 3], &counts, "0.12", false, false).map_err(io)?));
    // max over axis 1, int32, count_as_bytes: 0.13.0 layout (6 keys)
    let ints: Vec<u8> = [7i32, -2, 40000, 12, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
    files.push(("max_axis1_i32_v0130_count_as_bytes.cbor", reductionist(&ints, "int32", &[5], &[300, 300, 299, 1, 0], "0.13.0", true, false).map_err(io)?));
    // mean-like float32 (2, 3) with counts above 256: 0.13.1 layout (7 keys)
    let f32s: Vec<u8> = [0.5f32, -1.25, 3.0, 1e6, f32::NAN, 7.75].iter().flat_map(|v| v.to_le_bytes()).collect();
    files.push(("sum_f32_v0131.cbor", reductionist(&f32s, "float32", &[2, 3], &[256, 1000, 65536, 70000, 0, 3], "0.13.1", false, false).map_err(io)?));
    // a big-endian server (0.13.1, count_as_bytes big-endian too)
    files.push(("select_f64_big_endian_v0131.cbor", reductionist(&f64s(&[1.0, -2.5, 1e300], true), "float64", &[3], &[3], "0.13.1", true, true).map_err(io)?));
    // a big float64 result (100 x 100): data not 8-byte aligned in the message
    let big: Vec<f64> = (0..10_000).map(|i| (i as f64).sqrt()).collect();
    let bigc: Vec<i64> = (0..10_000).map(|i| 20 + (i % 7)).collect();
    files.push(("sum_f64_100x100_v0131.cbor", reductionist(&f64s(&big, false), "float64", &[100, 100], &bigc, "0.13.1", false, false).map_err(io)?));

    // RFC 8746 typed array: tag 86 = float64 little-endian, 1-D
    let mut e = Encoder::new(Vec::new());
    e.tag(Tag::new(86)).and_then(|e| e.bytes(&f64s(&[0.1, 0.2, 0.3, 0.4], false))).map_err(io)?;
    files.push(("typed_array_f64le.cbor", e.into_writer()));
    // RFC 8746 multi-dimensional array, tag 40 row-major [[2, 3], tag 74 = int32 big-endian]
    let mut e = Encoder::new(Vec::new());
    let i32be: Vec<u8> = (1..=6).flat_map(|v: i32| v.to_be_bytes()).collect();
    e.tag(Tag::new(40))
        .and_then(|e| e.array(2))
        .and_then(|e| e.array(2))
        .and_then(|e| e.u64(2))
        .and_then(|e| e.u64(3))
        .and_then(|e| e.tag(Tag::new(74)))
        .and_then(|e| e.bytes(&i32be))
        .map_err(io)?;
    files.push(("multidim_i32be_2x3.cbor", e.into_writer()));

    // msgpack-numpy: {nd: True, type: '<f4', kind: b'', shape: [2, 2], data: bin}
    // (writing msgpack into a Vec cannot fail)
    let mut w = Vec::new();
    rmp::encode::write_map_len(&mut w, 5).expect("Vec write");
    rmp::encode::write_bin(&mut w, b"nd").expect("Vec write");
    rmp::encode::write_bool(&mut w, true).expect("Vec write");
    rmp::encode::write_bin(&mut w, b"type").expect("Vec write");
    rmp::encode::write_str(&mut w, "<f4").expect("Vec write");
    rmp::encode::write_bin(&mut w, b"kind").expect("Vec write");
    rmp::encode::write_bin(&mut w, b"").expect("Vec write");
    rmp::encode::write_bin(&mut w, b"shape").expect("Vec write");
    rmp::encode::write_array_len(&mut w, 2).expect("Vec write");
    rmp::encode::write_uint(&mut w, 2).expect("Vec write");
    rmp::encode::write_uint(&mut w, 2).expect("Vec write");
    rmp::encode::write_bin(&mut w, b"data").expect("Vec write");
    let d: Vec<u8> = [1.0f32, 2.0, 3.0, 4.5].iter().flat_map(|v| v.to_le_bytes()).collect();
    rmp::encode::write_bin(&mut w, &d).expect("Vec write");
    files.push(("msgpack_numpy_f4_2x2.msgpack", w));

    // a Reductionist JSON error body (HTTP 400)
    files.push((
        "error_body.json",
        br#"{"error": {"message": "request data is not valid", "caused_by": ["selection[0].__all__: Validation error: Selection stride must not be equal to zero"]}}"#.to_vec(),
    ));

    let mut names = Vec::new();
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes)?;
        names.push(name.to_string());
    }
    Ok(names)
}
