//! (c) Structure-aware msgpack-numpy: `arbitrary` describes a map (keys as str or bin, any
//! order, duplicates, missing keys, nd true/false, any numpy type string incl. '|O' pickles,
//! structured (list) types and kind 'V', extra keys holding arbitrary msgpack values incl.
//! ext types and huge declared lengths); rmp's writer encodes it, then optional byte-level
//! mutations. Every input goes through `vh5_fuzz::check_payload`; a clean message must decode
//! to exactly the dtype, byte order, shape and data encoded.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use rmp::encode as w;
use vh5::dtype::{ByteOrder, Dtype};

/// (dtype, numpy kind char, itemsize)
const DTYPES: [(Dtype, char, usize); 14] = [
    (Dtype::Bool, 'b', 1),
    (Dtype::Int8, 'i', 1),
    (Dtype::Int16, 'i', 2),
    (Dtype::Int32, 'i', 4),
    (Dtype::Int64, 'i', 8),
    (Dtype::UInt8, 'u', 1),
    (Dtype::UInt16, 'u', 2),
    (Dtype::UInt32, 'u', 4),
    (Dtype::UInt64, 'u', 8),
    (Dtype::Float16, 'f', 2),
    (Dtype::Float32, 'f', 4),
    (Dtype::Float64, 'f', 8),
    (Dtype::Complex64, 'c', 8),
    (Dtype::Complex128, 'c', 16),
];

/// An arbitrary msgpack token (containers declare counts; items follow as further tokens).
#[derive(Arbitrary, Debug)]
enum Tok {
    Nil,
    Bool(bool),
    U(u64),
    I(i64),
    F32(f32),
    F64(f64),
    Str(String),
    Bin(Vec<u8>),
    Arr(u8),
    Map(u8),
    Ext(i8, Vec<u8>),
    /// fixext 1/2/4/8/16 with the given payload byte
    FixExt(u8, i8, u8),
    /// a str32/bin32/array32/map32/ext32 head declaring a huge length
    Huge(u8, u32),
    Reserved,
}

fn write_toks(b: &mut Vec<u8>, toks: &[Tok]) {
    for t in toks {
        match t {
            Tok::Nil => drop(w::write_nil(b)),
            Tok::Bool(x) => drop(w::write_bool(b, *x)),
            Tok::U(x) => drop(w::write_uint(b, *x)),
            Tok::I(x) => drop(w::write_sint(b, *x)),
            Tok::F32(x) => drop(w::write_f32(b, *x)),
            Tok::F64(x) => drop(w::write_f64(b, *x)),
            Tok::Str(s) => drop(w::write_str(b, s)),
            Tok::Bin(x) => drop(w::write_bin(b, x)),
            Tok::Arr(n) => drop(w::write_array_len(b, *n as u32)),
            Tok::Map(n) => drop(w::write_map_len(b, *n as u32)),
            Tok::Ext(ty, x) => {
                if w::write_ext_meta(b, x.len() as u32, *ty).is_ok() {
                    b.extend_from_slice(x);
                }
            }
            Tok::FixExt(k, ty, v) => {
                let n = [1usize, 2, 4, 8, 16][*k as usize % 5];
                if w::write_ext_meta(b, n as u32, *ty).is_ok() {
                    b.extend(std::iter::repeat_n(*v, n));
                }
            }
            Tok::Huge(k, n) => {
                b.push([0xdb, 0xc6, 0xdd, 0xdf, 0xc9][*k as usize % 5]);
                b.extend_from_slice(&n.to_be_bytes());
            }
            Tok::Reserved => b.push(0xc1),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum TypeSpell {
    Good { native: bool },
    Pickle,
    Structured(Vec<Tok>),
    Garbage(String),
    NotAString(Vec<Tok>),
    Absent,
}

#[derive(Arbitrary, Debug)]
enum KindSpell {
    Empty,
    V,
    O,
    Other(String),
    Absent,
}

#[derive(Arbitrary, Debug)]
enum ShapeSpell {
    Good,
    Absent,
    Tokens(Vec<Tok>),
    Negative(i64),
}

#[derive(Arbitrary, Debug)]
struct MMap {
    dtype: u8,
    big: bool,
    nd: Option<bool>,
    ty: TypeSpell,
    kind: KindSpell,
    shape: Vec<u8>,
    shape_spell: ShapeSpell,
    fill: Vec<u8>,
    data_as_str: bool,
    /// data length minus this (mod 3) is wrong on purpose
    data_off: u8,
    bin_keys: Vec<bool>,
    extra: Vec<(String, Vec<Tok>)>,
    dup: Option<u8>,
    rotate: u8,
    swap_pairs: Vec<(u8, u8)>,
    map16: bool,
}

#[derive(Arbitrary, Debug)]
enum Body {
    Numpy(MMap),
    Tokens(Vec<Tok>),
}

#[derive(Arbitrary, Debug)]
enum Mutation {
    Truncate(u16),
    Flip(u16, u8),
    Insert(u16, u8),
    Remove(u16),
    Trailing(u8),
}

#[derive(Arbitrary, Debug)]
struct Msg {
    body: Body,
    mutations: Vec<Mutation>,
}

struct Expect {
    dtype: Dtype,
    order: Option<ByteOrder>,
    shape: Vec<u64>,
    data: Vec<u8>,
}

fn build_map(m: &MMap) -> (Vec<u8>, Option<Expect>) {
    let (dt, kind, item) = DTYPES[m.dtype as usize % DTYPES.len()];
    let dims: Vec<u64> = m.shape.iter().take(6).map(|&d| (d % 5) as u64).collect();
    let nd = m.nd.unwrap_or(true);
    let shape: Vec<u64> = if nd { dims.clone() } else { vec![] };
    let n = shape.iter().product::<u64>() as usize;
    let mut clean = m.nd.is_some();
    let bad_len = m.data_off % 3;
    if bad_len != 0 {
        clean = false;
    }
    let len = match bad_len {
        0 => n * item,
        1 => n * item + 1,
        _ => (n * item).saturating_sub(1),
    };
    let data: Vec<u8> = if m.fill.is_empty() { vec![0x5c; len] } else { m.fill.iter().copied().cycle().take(len).collect() };
    let mut order = if m.big { ByteOrder::Big } else { ByteOrder::Little };
    let mut entries: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut v = Vec::new();
    if let Some(x) = m.nd {
        w::write_bool(&mut v, x).unwrap();
        entries.push(("nd", std::mem::take(&mut v)));
    }
    match &m.ty {
        TypeSpell::Good { native } => {
            let s = if item == 1 {
                format!("|{kind}1")
            } else if *native {
                order = ByteOrder::NATIVE;
                format!("={kind}{item}")
            } else {
                format!("{}{kind}{item}", if m.big { '>' } else { '<' })
            };
            w::write_str(&mut v, &s).unwrap();
        }
        TypeSpell::Pickle => {
            clean = false;
            w::write_str(&mut v, "|O").unwrap();
        }
        TypeSpell::Structured(t) => {
            clean = false;
            w::write_array_len(&mut v, t.len() as u32).unwrap();
            write_toks(&mut v, t);
        }
        TypeSpell::Garbage(s) => {
            clean = false;
            w::write_str(&mut v, s).unwrap();
        }
        TypeSpell::NotAString(t) => {
            clean = false;
            write_toks(&mut v, t);
        }
        TypeSpell::Absent => clean = false,
    }
    if !matches!(m.ty, TypeSpell::Absent) {
        entries.push(("type", std::mem::take(&mut v)));
    }
    match &m.kind {
        KindSpell::Empty => drop(w::write_bin(&mut v, b"")),
        KindSpell::V => {
            clean = false;
            drop(w::write_bin(&mut v, b"V"))
        }
        KindSpell::O => {
            clean = false;
            drop(w::write_bin(&mut v, b"O"))
        }
        KindSpell::Other(s) => {
            if !s.is_empty() {
                clean = false;
            }
            drop(w::write_str(&mut v, s))
        }
        KindSpell::Absent => {}
    }
    if !matches!(m.kind, KindSpell::Absent) {
        entries.push(("kind", std::mem::take(&mut v)));
    }
    match &m.shape_spell {
        ShapeSpell::Good => {
            w::write_array_len(&mut v, dims.len() as u32).unwrap();
            for &d in &dims {
                w::write_uint(&mut v, d).unwrap();
            }
            entries.push(("shape", std::mem::take(&mut v)));
        }
        ShapeSpell::Absent => {
            if nd {
                clean = false;
            }
        }
        ShapeSpell::Tokens(t) => {
            clean = false;
            write_toks(&mut v, t);
            entries.push(("shape", std::mem::take(&mut v)));
        }
        ShapeSpell::Negative(x) => {
            clean = false;
            w::write_array_len(&mut v, 1).unwrap();
            w::write_sint(&mut v, *x).unwrap();
            entries.push(("shape", std::mem::take(&mut v)));
        }
    }
    if m.data_as_str {
        // old msgpack "raw": a str head around binary bytes
        w::write_str_len(&mut v, data.len() as u32).unwrap();
        v.extend_from_slice(&data);
    } else {
        w::write_bin(&mut v, &data).unwrap();
    }
    entries.push(("data", std::mem::take(&mut v)));
    let mut entries: Vec<(String, Vec<u8>)> = entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    for (k, t) in m.extra.iter().take(4) {
        let mut v = Vec::new();
        write_toks(&mut v, t);
        if t.len() != 1 || matches!(t[0], Tok::Arr(1..) | Tok::Map(1..) | Tok::Huge(..) | Tok::Reserved) {
            clean = false;
        }
        entries.push((format!("x_{k}"), v));
    }
    if let Some(d) = m.dup {
        let i = d as usize % entries.len();
        let e = entries[i].clone();
        entries.push(e);
        clean = false;
    }
    let r = m.rotate as usize % entries.len();
    entries.rotate_left(r);
    for &(a, b) in m.swap_pairs.iter().take(8) {
        let l = entries.len();
        entries.swap(a as usize % l, b as usize % l);
    }
    let mut out = Vec::new();
    if m.map16 {
        out.push(0xde);
        out.extend_from_slice(&(entries.len() as u16).to_be_bytes());
    } else {
        w::write_map_len(&mut out, entries.len() as u32).unwrap();
    }
    for (i, (k, v)) in entries.iter().enumerate() {
        if m.bin_keys.get(i).copied().unwrap_or(false) {
            w::write_bin(&mut out, k.as_bytes()).unwrap();
        } else {
            w::write_str(&mut out, k).unwrap();
        }
        out.extend_from_slice(v);
    }
    let order = if item == 1 { None } else { Some(order) };
    (out, clean.then_some(Expect { dtype: dt, order, shape, data }))
}

fuzz_target!(|msg: Msg| {
    let (mut buf, expect) = match &msg.body {
        Body::Numpy(m) => build_map(m),
        Body::Tokens(t) => {
            let mut b = Vec::new();
            write_toks(&mut b, t);
            (b, None)
        }
    };
    let clean = msg.mutations.is_empty();
    for mu in msg.mutations.iter().take(4) {
        let l = buf.len().max(1);
        match *mu {
            Mutation::Truncate(i) => buf.truncate(i as usize % l),
            Mutation::Flip(i, x) => {
                if let Some(v) = buf.get_mut(i as usize % l) {
                    *v ^= x | 1;
                }
            }
            Mutation::Insert(i, x) => buf.insert((i as usize % l).min(buf.len()), x),
            Mutation::Remove(i) => {
                if !buf.is_empty() {
                    buf.remove(i as usize % l);
                }
            }
            Mutation::Trailing(x) => buf.push(x),
        }
    }
    let view = vh5_fuzz::check_payload(&buf);
    if let (true, Some(x)) = (clean, expect) {
        let v = view.unwrap_or_else(|| panic!("consistent message refused: {:?}\n{msg:?}", vh5::payload::decode_view(&buf, 0).unwrap_err()));
        assert_eq!(v.dtype, x.dtype);
        assert_eq!(v.byte_order, x.order);
        assert_eq!(v.shape.as_slice(), &x.shape[..], "shape");
        assert_eq!(v.data, &x.data[..], "data");
    }
});
