//! Property tests of the payload decoder against INDEPENDENT encoders: ciborium (`Value`
//! trees serialized by ciborium, not minicbor) for CBOR, and rmp's writer for msgpack-numpy.
//! Random arrays of every dtype, both byte orders, shapes including scalars and empty axes,
//! every count form (absent, scalar, flat, nested, count_as_bytes, typed array), every
//! Reductionist layout, typed-array tags, multi-dimensional tags and msgpack-numpy; then
//! random mutations and truncations must never panic and never yield a view outside the input.

use ciborium::value::Value;
use proptest::prelude::*;
use vh5::dtype::{ByteOrder, Dtype, ALL_NUMERIC};
use vh5::payload::{self, CountForm, Format, Layout};

#[derive(Debug, Clone)]
struct Arr {
    dtype: Dtype,
    order: ByteOrder,
    shape: Vec<u64>,
    /// wire bytes (in `order`)
    data: Vec<u8>,
}

fn arr() -> impl Strategy<Value = Arr> {
    (0..ALL_NUMERIC.len(), any::<bool>(), prop::collection::vec(0u64..4, 0..4)).prop_flat_map(|(di, big, shape)| {
        let dtype = ALL_NUMERIC[di];
        let n: u64 = shape.iter().product();
        let len = n as usize * dtype.itemsize().unwrap();
        prop::collection::vec(any::<u8>(), len).prop_map(move |data| Arr { dtype, order: if big { ByteOrder::Big } else { ByteOrder::Little }, shape: shape.clone(), data })
    })
}

/// The data in native order, computed independently of vh5 (reverse each swap unit).
fn native(a: &Arr) -> Vec<u8> {
    let unit = match a.dtype {
        Dtype::Complex64 => 4,
        Dtype::Complex128 => 8,
        d => d.itemsize().unwrap(),
    };
    let mut v = a.data.clone();
    if a.order != ByteOrder::NATIVE {
        v.chunks_mut(unit).for_each(|c| c.reverse());
    }
    v
}

/// RFC 8746 tag for a dtype/order, when one exists.
fn tag_of(d: Dtype, o: ByteOrder) -> Option<u64> {
    let le = if o == ByteOrder::Little { 4 } else { 0 };
    Some(match d {
        Dtype::UInt8 => 64,
        Dtype::Int8 => 72,
        Dtype::UInt16 => 65 + le,
        Dtype::UInt32 => 66 + le,
        Dtype::UInt64 => 67 + le,
        Dtype::Int16 => 73 + le,
        Dtype::Int32 => 74 + le,
        Dtype::Int64 => 75 + le,
        Dtype::Float16 => 80 + le,
        Dtype::Float32 => 81 + le,
        Dtype::Float64 => 82 + le,
        _ => return None,
    })
}

fn enc(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(v, &mut out).unwrap();
    out
}

fn t(s: &str) -> Value {
    Value::Text(s.into())
}

fn order_name(o: ByteOrder) -> &'static str {
    if o == ByteOrder::Little {
        "little"
    } else {
        "big"
    }
}

fn i64_bytes(v: &[i64], o: ByteOrder) -> Vec<u8> {
    v.iter().flat_map(|x| if o == ByteOrder::Little { x.to_le_bytes() } else { x.to_be_bytes() }).collect()
}

/// Count forms: 0 absent, 1 scalar, 2 flat array, 3 nested array, 4 count_as_bytes, 5 typed array (tag 79 / 75).
#[derive(Debug, Clone)]
struct Case {
    a: Arr,
    /// 0 = 0.12, 1 = 0.13.0, 2 = 0.13.1, 3 = client (no byte_order key when little, extra key)
    layout: u8,
    shape_as_bytes: bool,
    count_form: u8,
    counts: Vec<i64>,
    tagged_data: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (arr(), 0u8..4, any::<bool>(), 0u8..6, prop::collection::vec(0i64..i64::MAX, 0..6), any::<bool>()).prop_map(|(a, layout, sab, cf, counts, tagged)| Case {
        a,
        layout,
        shape_as_bytes: sab,
        count_form: cf,
        counts,
        tagged_data: tagged,
    })
}

/// Build a Reductionist-shaped map; returns the message, the expected count values, form and layout.
fn reductionist(c: &Case) -> (Vec<u8>, Vec<i64>, CountForm, Layout) {
    let a = &c.a;
    let o = a.order;
    // released layouts only have flat array / count_as_bytes counts and no tags
    let released = c.layout < 3;
    let cf = match c.layout {
        0 => 2, // 0.12 has no count_as_bytes
        1 | 2 => [2, 4][c.count_form as usize % 2],
        _ => c.count_form,
    };
    let tagged = !released && c.tagged_data && tag_of(a.dtype, o).is_some();
    // Reductionist sends 1 count (full reductions, select) or one per result element: an odd
    // number of drawn counts gives 1, an even one cycles them over the elements
    let n = a.shape.iter().product::<u64>() as usize;
    let mut counts = match c.counts.len() {
        0 => vec![],
        k if k % 2 == 1 || n == 0 => c.counts[..1].to_vec(),
        k => (0..n).map(|i| c.counts[i % k]).collect(),
    };
    if cf == 1 {
        counts.truncate(1);
        if counts.is_empty() {
            counts.push(5);
        }
    }
    let data = if tagged { Value::Tag(tag_of(a.dtype, o).unwrap(), Box::new(Value::Bytes(a.data.clone()))) } else { Value::Bytes(a.data.clone()) };
    let shape_arr = Value::Array(a.shape.iter().map(|&d| Value::Integer(d.into())).collect());
    let shape_bytes: Vec<u8> = a.shape.iter().flat_map(|&d| if o == ByteOrder::Little { d.to_le_bytes() } else { d.to_be_bytes() }).collect();
    let use_sab = c.shape_as_bytes && !a.shape.is_empty() && c.layout != 0;
    let flat = Value::Array(counts.iter().map(|&x| Value::Integer(x.into())).collect());
    let count_val = match cf {
        1 => Value::Integer(counts[0].into()),
        2 => flat.clone(),
        3 => Value::Array(counts.chunks(2).map(|ch| Value::Array(vec![Value::Array(ch.iter().map(|&x| Value::Integer(x.into())).collect())])).collect()),
        4 => Value::Array(vec![]),
        5 => Value::Tag(if o == ByteOrder::Little { 79 } else { 75 }, Box::new(Value::Bytes(i64_bytes(&counts, o)))),
        _ => Value::Null,
    };
    let cab = if cf == 4 { i64_bytes(&counts, o) } else { vec![] };
    let mut m: Vec<(Value, Value)> = vec![(t("bytes"), data), (t("dtype"), t(a.dtype.name()))];
    let shape_val = if use_sab { Value::Array(vec![]) } else { shape_arr };
    // scalar arrays with a client layout may omit shape when they hold exactly one element
    let omit_shape = !released && a.shape.is_empty();
    if !omit_shape {
        m.push((t("shape"), shape_val));
    }
    let include_ab = |non_empty: bool| match c.layout {
        0 => false,
        1 => non_empty,
        _ => true,
    };
    if include_ab(use_sab) {
        m.push((t("shape_as_bytes"), Value::Bytes(if use_sab { shape_bytes } else { vec![] })));
    }
    if cf != 0 || released {
        m.push((t("count"), count_val));
    }
    if include_ab(cf == 4 && !counts.is_empty()) {
        m.push((t("count_as_bytes"), Value::Bytes(cab)));
    }
    if released || o == ByteOrder::Big {
        m.push((t("byte_order"), t(order_name(o))));
    }
    if !released {
        m.push((t("future_key"), Value::Array(vec![Value::Integer(1.into()), t("x")])));
    }
    let layout = match c.layout {
        0 => Layout::Reductionist0_12,
        1 if use_sab && cf == 4 && !counts.is_empty() => Layout::Reductionist0_13_1, // identical on the wire
        1 if use_sab || (cf == 4 && !counts.is_empty()) => Layout::Reductionist0_13_0,
        1 => Layout::Reductionist0_12,
        2 => Layout::Reductionist0_13_1,
        _ => Layout::Client,
    };
    let form = match cf {
        0 => CountForm::Absent,
        1 => CountForm::Scalar,
        // an empty count (`[]`, an empty typed array, count_as_bytes empty next to `[]`) is none
        _ if counts.is_empty() => CountForm::Absent,
        2 | 3 => CountForm::Array,
        _ => CountForm::Bytes,
    };
    let counts = if cf == 0 { vec![] } else { counts };
    (enc(&Value::Map(m)), counts, form, layout)
}

fn check_view(buf: &[u8], a: &Arr, shape: &[u64]) -> payload::PayloadView<'static> {
    let buf: &'static [u8] = Box::leak(buf.to_vec().into_boxed_slice());
    let v = payload::decode_view(buf, 0).unwrap_or_else(|e| panic!("{e} for {a:?}"));
    assert_eq!(v.dtype, a.dtype);
    assert_eq!(v.shape.as_slice(), shape);
    assert_eq!(v.data, &a.data[..]);
    assert_eq!(&buf[v.data_offset..v.data_offset + a.data.len()], &a.data[..]);
    assert_eq!(v.data.as_ptr(), buf[v.data_offset..].as_ptr());
    let expect_order = if a.dtype.itemsize() == Some(1) { None } else { Some(a.order) };
    assert_eq!(v.byte_order, expect_order);
    assert_eq!(v.needs_swap(), expect_order.is_some_and(|o| o != ByteOrder::NATIVE));
    let unit = match a.dtype {
        Dtype::Complex64 => 4,
        Dtype::Complex128 => 8,
        d => d.itemsize().unwrap(),
    };
    assert_eq!(v.aligned, (v.data.as_ptr() as usize) % unit == 0);
    let mut out = vec![0xeeu8; a.data.len() + 3];
    assert_eq!(payload::copy_data(buf, &mut out).unwrap(), a.data.len());
    assert_eq!(&out[..a.data.len()], &native(a)[..]);
    assert!(out[a.data.len()..].iter().all(|&b| b == 0xee), "wrote past the data length");
    v
}

fn check_counts(buf: &[u8], want: &[i64]) {
    let mut out = vec![-1i64; want.len()];
    assert_eq!(payload::decode_count(buf, &mut out).unwrap(), want.len());
    assert_eq!(out, want);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn reductionist_maps(c in case()) {
        let (buf, counts, form, layout) = reductionist(&c);
        let shape: Vec<u64> = if c.layout == 3 && c.a.shape.is_empty() { vec![] } else { c.a.shape.clone() };
        let v = check_view(&buf, &c.a, &shape);
        prop_assert_eq!(v.format, Format::Reductionist);
        prop_assert_eq!(v.layout, layout);
        prop_assert_eq!(v.count.form, form);
        prop_assert_eq!(v.count.len, counts.len() as u64);
        check_counts(&buf, &counts);
        if form == CountForm::Bytes {
            prop_assert_eq!(v.count.bytes.unwrap(), &i64_bytes(&counts, c.a.order)[..]);
            prop_assert_eq!(v.count.dtype, Some(Dtype::Int64));
        }
    }

    #[test]
    fn typed_arrays(a in arr()) {
        let Some(tag) = tag_of(a.dtype, a.order) else { return Ok(()) };
        let buf = enc(&Value::Tag(tag, Box::new(Value::Bytes(a.data.clone()))));
        let n = (a.data.len() / a.dtype.itemsize().unwrap()) as u64;
        let v = check_view(&buf, &a, &[n]);
        prop_assert_eq!(v.format, Format::TypedArray);
        prop_assert_eq!(v.count.form, CountForm::Absent);
        check_counts(&buf, &[]);
    }

    #[test]
    fn multidim_arrays(a in arr(), col in any::<bool>()) {
        let Some(tag) = tag_of(a.dtype, a.order) else { return Ok(()) };
        let dims = Value::Array(a.shape.iter().map(|&d| Value::Integer(d.into())).collect());
        let body = Value::Array(vec![dims, Value::Tag(tag, Box::new(Value::Bytes(a.data.clone())))]);
        let buf = enc(&Value::Tag(if col { 1040 } else { 40 }, Box::new(body)));
        let v = check_view(&buf, &a, &a.shape);
        prop_assert_eq!(v.format, Format::Multidim);
        prop_assert_eq!(v.fortran_order, col);
    }

    #[test]
    fn msgpack_numpy(a in arr(), str_keys in any::<bool>(), extra in any::<bool>()) {
        let mut w = Vec::new();
        let key = |w: &mut Vec<u8>, k: &str| if str_keys { rmp::encode::write_str(w, k).unwrap() } else { rmp::encode::write_bin(w, k.as_bytes()).map(|_| ()).unwrap() };
        rmp::encode::write_map_len(&mut w, 5 + extra as u32).unwrap();
        if extra {
            key(&mut w, "extra");
            rmp::encode::write_array_len(&mut w, 2).unwrap();
            rmp::encode::write_f64(&mut w, 1.5).unwrap();
            rmp::encode::write_nil(&mut w).unwrap();
        }
        key(&mut w, "nd");
        rmp::encode::write_bool(&mut w, true).unwrap();
        let prefix = if a.dtype.itemsize() == Some(1) { '|' } else if a.order == ByteOrder::Little { '<' } else { '>' };
        key(&mut w, "type");
        rmp::encode::write_str(&mut w, &format!("{prefix}{}{}", a.dtype.kind(), a.dtype.itemsize().unwrap())).unwrap();
        key(&mut w, "kind");
        rmp::encode::write_bin(&mut w, b"").unwrap();
        key(&mut w, "shape");
        rmp::encode::write_array_len(&mut w, a.shape.len() as u32).unwrap();
        for &d in &a.shape { rmp::encode::write_uint(&mut w, d).unwrap(); }
        key(&mut w, "data");
        rmp::encode::write_bin(&mut w, &a.data).unwrap();
        let v = check_view(&w, &a, &a.shape);
        prop_assert_eq!(v.format, Format::MsgpackNumpy);
    }

    /// Mutated / truncated messages: any result but a panic; a view always lies inside the input.
    #[test]
    fn mutations_never_panic(c in case(), edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4), cut in any::<prop::sample::Index>()) {
        let (mut buf, ..) = reductionist(&c);
        for (at, byte, op) in edits {
            if buf.is_empty() { break; }
            let i = at.index(buf.len());
            match op { 0 => buf[i] = byte, 1 => { buf.insert(i, byte); } _ => { buf.remove(i); } }
        }
        let keep = cut.index(buf.len() + 1);
        for b in [&buf[..], &buf[..keep]] {
            if let Ok(v) = payload::decode_view(b, 0) {
                let lo = b.as_ptr() as usize;
                let p = v.data.as_ptr() as usize;
                prop_assert!(p >= lo && p + v.data.len() <= lo + b.len());
                prop_assert_eq!(v.data.len() as u64, v.nelements * v.itemsize() as u64);
            }
            let _ = payload::decode_count(b, &mut [0i64; 8]);
            let _ = payload::copy_data(b, &mut [0u8; 256]);
        }
    }

    /// Pure random bytes with each accepted first byte.
    #[test]
    fn random_bytes_never_panic(first in prop::sample::select(vec![0xa7u8, 0xa5, 0xbf, 0xd8, 0xd9, 0x85, 0xde, 0xdf, 0x7b, 0x9f]), rest in prop::collection::vec(any::<u8>(), 0..64)) {
        let mut b = vec![first];
        b.extend_from_slice(&rest);
        let _ = payload::decode_view(&b, 0);
        let _ = payload::decode_count(&b, &mut [0i64; 8]);
        let _ = payload::copy_data(&b, &mut [0u8; 64]);
    }
}
