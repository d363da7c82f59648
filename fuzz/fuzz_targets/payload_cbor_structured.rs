//! (b) Structure-aware CBOR: `arbitrary` describes a Reductionist-like map (any dtype spelling,
//! shape / shape_as_bytes, every count form incl. nested and indefinite arrays, typed-array
//! tags, chunked data, extra keys holding arbitrary CBOR token streams, any key order), a
//! bare RFC 8746 typed array or a multi-dimensional array; minicbor's Encoder writes it, then
//! optional byte-level mutations are applied. Every input goes through
//! `vh5_fuzz::check_payload`; an unmutated, consistent message must also decode to exactly
//! the dtype, shape, byte order, data and counts that were encoded (an independent oracle).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use minicbor::data::Tag;
use minicbor::Encoder;
use vh5::dtype::{ByteOrder, Dtype};
use vh5::payload::{self, CountForm};

type Enc = Encoder<Vec<u8>>;

/// (dtype, Reductionist name, numpy char, itemsize, typed-array tag base for big-endian
/// (little = +4), or 0 when RFC 8746 has none).
const DTYPES: [(Dtype, &str, char, usize, u64); 14] = [
    (Dtype::Bool, "bool", 'b', 1, 0),
    (Dtype::Int8, "int8", 'i', 1, 72),
    (Dtype::Int16, "int16", 'i', 2, 73),
    (Dtype::Int32, "int32", 'i', 4, 74),
    (Dtype::Int64, "int64", 'i', 8, 75),
    (Dtype::UInt8, "uint8", 'u', 1, 64),
    (Dtype::UInt16, "uint16", 'u', 2, 65),
    (Dtype::UInt32, "uint32", 'u', 4, 66),
    (Dtype::UInt64, "uint64", 'u', 8, 67),
    (Dtype::Float16, "float16", 'f', 2, 80),
    (Dtype::Float32, "float32", 'f', 4, 81),
    (Dtype::Float64, "float64", 'f', 8, 82),
    (Dtype::Complex64, "complex64", 'c', 8, 0),
    (Dtype::Complex128, "complex128", 'c', 16, 0),
];

/// A token of an arbitrary (possibly ill-formed) CBOR stream.
#[derive(Arbitrary, Debug)]
enum Tok {
    U(u64),
    N(i64),
    Bytes(Vec<u8>),
    Str(String),
    Arr(u8),
    ArrIndef,
    Map(u8),
    MapIndef,
    BytesIndef(Vec<Vec<u8>>),
    Break,
    Tag(u16),
    TagBig(u64),
    Bool(bool),
    Null,
    Undefined,
    F64(f64),
    F16(u16),
    Simple(u8),
    HugeLen(u8, u64),
}

fn write_toks(e: &mut Enc, toks: &[Tok]) {
    for t in toks {
        let _ = match t {
            Tok::U(v) => e.u64(*v).map(|_| ()),
            Tok::N(v) => e.i64(*v).map(|_| ()),
            Tok::Bytes(b) => e.bytes(b).map(|_| ()),
            Tok::Str(s) => e.str(s).map(|_| ()),
            Tok::Arr(n) => e.array(*n as u64).map(|_| ()),
            Tok::ArrIndef => e.begin_array().map(|_| ()),
            Tok::Map(n) => e.map(*n as u64).map(|_| ()),
            Tok::MapIndef => e.begin_map().map(|_| ()),
            Tok::BytesIndef(cs) => {
                let _ = e.begin_bytes();
                for c in cs {
                    let _ = e.bytes(c);
                }
                e.end().map(|_| ())
            }
            Tok::Break => e.end().map(|_| ()),
            Tok::Tag(t) => e.tag(Tag::new(*t as u64)).map(|_| ()),
            Tok::TagBig(t) => e.tag(Tag::new(*t)).map(|_| ()),
            Tok::Bool(b) => e.bool(*b).map(|_| ()),
            Tok::Null => e.null().map(|_| ()),
            Tok::Undefined => e.undefined().map(|_| ()),
            Tok::F64(f) => e.f64(*f).map(|_| ()),
            Tok::F16(h) => {
                let w = e.writer_mut();
                w.push(0xf9);
                w.extend_from_slice(&h.to_be_bytes());
                Ok(())
            }
            Tok::Simple(s) => e.simple(*s).map(|_| ()),
            Tok::HugeLen(major, n) => {
                // a head claiming a huge length / count (major type 2..5) with nothing after
                let w = e.writer_mut();
                w.push(((major % 4) + 2) << 5 | 27);
                w.extend_from_slice(&n.to_be_bytes());
                Ok(())
            }
        };
    }
}

#[derive(Arbitrary, Debug)]
enum DtypeSpell {
    Name,
    Numpy,
    /// numpy with '=' (native)
    NumpyNative,
    Absent,
    Garbage(String),
    NotAString(u64),
}

#[derive(Arbitrary, Debug)]
enum ShapeSpell {
    Array,
    ArrayIndef,
    AsBytes,
    Both,
    AsBytesAndEmptyShape,
    Absent,
    /// shape_as_bytes as a typed array of uint32 (tag 70/66)
    AsTypedU32,
    Tokens(Vec<Tok>),
}

#[derive(Arbitrary, Debug)]
enum OrderSpell {
    Key,
    Absent,
    Garbage(String),
}

#[derive(Arbitrary, Debug)]
enum CountTok {
    Open(u8),
    OpenIndef,
    Close,
    Leaf(u64),
}

#[derive(Arbitrary, Debug)]
enum CountSpec {
    Absent,
    Null,
    Scalar(u64),
    Flat(Vec<u32>),
    Nested(Vec<CountTok>),
    /// count_as_bytes (i64 in byte_order) with `count: []` (Reductionist 0.13)
    AsBytes(Vec<u32>),
    /// count_as_bytes and a count array of the same values
    AsBytesAndArray(Vec<u32>),
    /// typed-array count: tag index, raw bytes
    Typed(u8, Vec<u8>),
    Negative(i64),
    Tokens(Vec<Tok>),
}

#[derive(Arbitrary, Debug)]
struct RMap {
    dtype: u8,
    spell: DtypeSpell,
    shape: Vec<u8>,
    shape_spell: ShapeSpell,
    big: bool,
    order: OrderSpell,
    data_tag: bool,
    /// split the data into an indefinite-length byte string at these sizes
    chunks: Option<Vec<u8>>,
    fill: Vec<u8>,
    count: CountSpec,
    extra: Vec<(String, Vec<Tok>)>,
    /// rotate the key order
    rotate: u8,
    swap_pairs: Vec<(u8, u8)>,
    indef_map: bool,
}

#[derive(Arbitrary, Debug)]
enum Body {
    Reductionist(RMap),
    Typed { tag: u8, data: Vec<u8>, chunks: Option<Vec<u8>> },
    Multidim { col_major: bool, dims: Vec<u8>, dtype: u8, typed: bool, fill: Vec<u8>, dims_indef: bool },
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
    self_describe: bool,
    body: Body,
    mutations: Vec<Mutation>,
}

/// No shape (and no non-empty shape_as_bytes): shape `[]`, a scalar; data of `n` != 1
/// elements is then refused (the message is not clean).
fn no_shape(n: usize, expect_shape: &mut Vec<u64>, clean: &mut bool) {
    if n == 1 {
        expect_shape.clear();
    } else {
        *clean = false;
    }
}

/// What a clean message must decode to.
struct Expect {
    dtype: Dtype,
    order: Option<ByteOrder>,
    shape: Vec<u64>,
    data: Vec<u8>,
    counts: Option<Vec<i64>>,
    fortran: bool,
}

fn fill_data(fill: &[u8], n: usize) -> Vec<u8> {
    if fill.is_empty() {
        return vec![0x3c; n];
    }
    fill.iter().copied().cycle().take(n).collect()
}

fn data_bytes(e: &mut Enc, data: &[u8], chunks: &Option<Vec<u8>>) {
    match chunks {
        None => {
            e.bytes(data).unwrap();
        }
        Some(sizes) => {
            e.begin_bytes().unwrap();
            let mut rest = data;
            for &s in sizes {
                let k = (s as usize).min(rest.len());
                e.bytes(&rest[..k]).unwrap();
                rest = &rest[k..];
            }
            if !rest.is_empty() {
                e.bytes(rest).unwrap();
            }
            e.end().unwrap();
        }
    }
}

/// Encode a Reductionist map. Returns the expectation when the message is consistent.
fn reductionist(e: &mut Enc, m: &RMap) -> Option<Expect> {
    let (dt, name, kind, item, tagbase) = DTYPES[m.dtype as usize % DTYPES.len()];
    let dims: Vec<u64> = m.shape.iter().take(6).map(|&d| (d % 5) as u64).collect();
    let n: usize = dims.iter().product::<u64>() as usize;
    let mut clean = true;
    let data = fill_data(&m.fill, n * item);
    let wire_big = matches!(m.order, OrderSpell::Key) && m.big;
    let order_str = if m.big { "big" } else { "little" };
    let u64s = |v: &[u64], big: bool| -> Vec<u8> { v.iter().flat_map(|x| if big { x.to_be_bytes() } else { x.to_le_bytes() }).collect() };

    // Each entry: (key, writer)
    let mut entries: Vec<(String, Box<dyn Fn(&mut Enc) + '_>)> = Vec::new();
    let use_tag = m.data_tag && tagbase != 0;
    let data_c = data.clone();
    let tag_no = tagbase + if m.big || item == 1 { 0 } else { 4 };
    entries.push((
        "bytes".into(),
        Box::new(move |e: &mut Enc| {
            if use_tag {
                e.tag(Tag::new(tag_no)).unwrap();
            }
            data_bytes(e, &data_c, &m.chunks);
        }),
    ));
    let mut data_order_big = wire_big;
    match &m.spell {
        DtypeSpell::Name => entries.push(("dtype".into(), Box::new(move |e: &mut Enc| drop(e.str(name))))),
        DtypeSpell::Numpy | DtypeSpell::NumpyNative => {
            let native = matches!(m.spell, DtypeSpell::NumpyNative);
            let s = if item == 1 {
                format!("|{kind}1")
            } else if native {
                format!("={kind}{item}")
            } else {
                format!("{}{kind}{item}", if m.big { '>' } else { '<' })
            };
            if item > 1 {
                data_order_big = if native { cfg!(target_endian = "big") } else { m.big };
                // a numpy order contradicting the byte_order key is an error
                if matches!(m.order, OrderSpell::Key) && data_order_big != m.big {
                    clean = false;
                }
            }
            entries.push(("dtype".into(), Box::new(move |e: &mut Enc| drop(e.str(&s)))));
        }
        DtypeSpell::Absent => {
            if !use_tag {
                clean = false;
            }
        }
        DtypeSpell::Garbage(s) => {
            clean = false;
            entries.push(("dtype".into(), Box::new(move |e: &mut Enc| drop(e.str(s)))));
        }
        DtypeSpell::NotAString(v) => {
            clean = false;
            let v = *v;
            entries.push(("dtype".into(), Box::new(move |e: &mut Enc| drop(e.u64(v)))));
        }
    }
    if use_tag {
        data_order_big = m.big;
        if matches!(m.order, OrderSpell::Key) && item > 1 && !m.big != !wire_big {
            // key says the same as the tag here (both from m.big)
        }
        if let DtypeSpell::NumpyNative = m.spell {
            if item > 1 && cfg!(target_endian = "big") != m.big {
                clean = false;
            }
        }
    }
    if m.chunks.is_some() {
        // chunked data has no view; check_payload covers copy_data.
        clean = false;
    }
    let dims_c = dims.clone();
    let shape_arr = move |e: &mut Enc| {
        e.array(dims_c.len() as u64).unwrap();
        for &d in &dims_c {
            e.u64(d).unwrap();
        }
    };
    let sab = u64s(&dims, wire_big);
    let mut expect_shape = dims.clone();
    match &m.shape_spell {
        ShapeSpell::Array => entries.push(("shape".into(), Box::new(shape_arr))),
        ShapeSpell::ArrayIndef => {
            let d = dims.clone();
            entries.push((
                "shape".into(),
                Box::new(move |e: &mut Enc| {
                    e.begin_array().unwrap();
                    for &x in &d {
                        e.u64(x).unwrap();
                    }
                    e.end().unwrap();
                }),
            ))
        }
        ShapeSpell::AsBytes | ShapeSpell::Both | ShapeSpell::AsBytesAndEmptyShape => {
            if dims.is_empty() {
                // empty shape_as_bytes means "use shape": a scalar only if shape says so
                if !matches!(m.shape_spell, ShapeSpell::Both | ShapeSpell::AsBytesAndEmptyShape) {
                    no_shape(n, &mut expect_shape, &mut clean);
                }
            }
            let s = sab.clone();
            entries.push(("shape_as_bytes".into(), Box::new(move |e: &mut Enc| drop(e.bytes(&s)))));
            match m.shape_spell {
                ShapeSpell::Both => entries.push(("shape".into(), Box::new(shape_arr))),
                ShapeSpell::AsBytesAndEmptyShape => entries.push(("shape".into(), Box::new(|e: &mut Enc| drop(e.array(0))))),
                _ => {}
            }
        }
        ShapeSpell::AsTypedU32 => {
            let b: Vec<u8> = dims.iter().flat_map(|&x| if m.big { (x as u32).to_be_bytes() } else { (x as u32).to_le_bytes() }).collect();
            let t = if m.big { 66 } else { 70 };
            if dims.is_empty() {
                no_shape(n, &mut expect_shape, &mut clean);
            }
            entries.push((
                "shape_as_bytes".into(),
                Box::new(move |e: &mut Enc| {
                    e.tag(Tag::new(t)).unwrap();
                    e.bytes(&b).unwrap();
                }),
            ));
        }
        ShapeSpell::Absent => no_shape(n, &mut expect_shape, &mut clean),
        ShapeSpell::Tokens(t) => {
            clean = false;
            entries.push(("shape".into(), Box::new(move |e: &mut Enc| write_toks(e, t))));
        }
    }
    let mut counts: Option<Vec<i64>> = None;
    match &m.count {
        CountSpec::Absent => {}
        CountSpec::Null => entries.push(("count".into(), Box::new(|e: &mut Enc| drop(e.null())))),
        CountSpec::Scalar(v) => {
            if *v > i64::MAX as u64 {
                clean = false;
            }
            counts = Some(vec![*v as i64]);
            let v = *v;
            entries.push(("count".into(), Box::new(move |e: &mut Enc| drop(e.u64(v)))));
        }
        CountSpec::Flat(v) => {
            counts = Some(v.iter().map(|&x| x as i64).collect());
            entries.push((
                "count".into(),
                Box::new(move |e: &mut Enc| {
                    e.array(v.len() as u64).unwrap();
                    for &x in v {
                        e.u32(x).unwrap();
                    }
                }),
            ));
        }
        CountSpec::Nested(toks) => {
            // A well-formed nested array: Open(k) takes at most k following items (closing
            // early is padded with leaves 0), OpenIndef until Close; everything closed at the end.
            let mut leaves = Vec::new();
            let mut w = Enc::new(Vec::new());
            let mut stack: Vec<Option<u8>> = Vec::new(); // remaining items, None = indefinite
            fn took(stack: &mut Vec<Option<u8>>) {
                if let Some(Some(k)) = stack.last_mut() {
                    *k -= 1;
                }
            }
            fn settle(stack: &mut Vec<Option<u8>>) {
                while let Some(Some(0)) = stack.last() {
                    stack.pop();
                }
            }
            let mut depth_max = 1;
            w.begin_array().unwrap();
            stack.push(None);
            for t in toks.iter().take(200) {
                settle(&mut stack);
                if stack.is_empty() {
                    break;
                }
                match t {
                    CountTok::Open(k) if stack.len() < 60 => {
                        took(&mut stack);
                        let k = k % 4;
                        w.array(k as u64).unwrap();
                        stack.push(Some(k));
                        depth_max = depth_max.max(stack.len());
                    }
                    CountTok::OpenIndef if stack.len() < 60 => {
                        took(&mut stack);
                        w.begin_array().unwrap();
                        stack.push(None);
                        depth_max = depth_max.max(stack.len());
                    }
                    CountTok::Close => match stack.pop() {
                        Some(None) => {
                            w.end().unwrap();
                        }
                        Some(Some(k)) => {
                            for _ in 0..k {
                                w.u8(0).unwrap();
                                leaves.push(0);
                            }
                        }
                        None => {}
                    },
                    CountTok::Leaf(_) | CountTok::Open(_) | CountTok::OpenIndef => {
                        let v = if let CountTok::Leaf(v) = t { *v >> 1 } else { 1 };
                        took(&mut stack);
                        w.u64(v).unwrap();
                        leaves.push(v as i64);
                    }
                }
            }
            settle(&mut stack);
            while let Some(s) = stack.pop() {
                match s {
                    None => {
                        w.end().unwrap();
                    }
                    Some(k) => {
                        for _ in 0..k {
                            w.u8(0).unwrap();
                            leaves.push(0);
                        }
                    }
                }
                settle(&mut stack);
            }
            counts = Some(leaves);
            let bytes = w.into_writer();
            entries.push(("count".into(), Box::new(move |e: &mut Enc| e.writer_mut().extend_from_slice(&bytes))));
        }
        CountSpec::AsBytes(v) | CountSpec::AsBytesAndArray(v) => {
            let vals: Vec<i64> = v.iter().map(|&x| x as i64).collect();
            let b: Vec<u8> = vals.iter().flat_map(|x| if wire_big { x.to_be_bytes() } else { x.to_le_bytes() }).collect();
            let both = matches!(m.count, CountSpec::AsBytesAndArray(_));
            // empty count_as_bytes: the `count` array (empty, or the same values) is used
            counts = Some(vals.clone());
            entries.push((
                "count".into(),
                Box::new(move |e: &mut Enc| {
                    if both {
                        e.array(v.len() as u64).unwrap();
                        for &x in v {
                            e.u32(x).unwrap();
                        }
                    } else {
                        e.array(0).unwrap();
                    }
                }),
            ));
            entries.push(("count_as_bytes".into(), Box::new(move |e: &mut Enc| drop(e.bytes(&b)))));
        }
        CountSpec::Typed(t, raw) => {
            clean = false;
            let t = 64 + (*t as u64 % 24);
            entries.push((
                "count".into(),
                Box::new(move |e: &mut Enc| {
                    e.tag(Tag::new(t)).unwrap();
                    e.bytes(raw).unwrap();
                }),
            ));
        }
        CountSpec::Negative(v) => {
            clean = false;
            let v = *v;
            entries.push(("count".into(), Box::new(move |e: &mut Enc| drop(e.i64(v)))));
        }
        CountSpec::Tokens(t) => {
            clean = false;
            entries.push(("count".into(), Box::new(move |e: &mut Enc| write_toks(e, t))));
        }
    }
    // The count rules: an empty count is no count; else one count, or one per element.
    match counts.as_ref().map(Vec::len) {
        Some(0) => counts = None,
        Some(k) if k != 1 && k != n => clean = false,
        _ => {}
    }
    match &m.order {
        OrderSpell::Key => entries.push(("byte_order".into(), Box::new(move |e: &mut Enc| drop(e.str(order_str))))),
        OrderSpell::Absent => {}
        OrderSpell::Garbage(s) => {
            clean = false;
            entries.push(("byte_order".into(), Box::new(move |e: &mut Enc| drop(e.str(s)))));
        }
    }
    for (k, toks) in m.extra.iter().take(4) {
        let key = format!("x_{k}");
        entries.push((key, Box::new(move |e: &mut Enc| write_toks(e, toks))));
        // arbitrary token streams are rarely one well-formed item
        clean = false;
    }
    if !entries.is_empty() {
        let r = m.rotate as usize % entries.len();
        entries.rotate_left(r);
        for &(a, b) in m.swap_pairs.iter().take(8) {
            let l = entries.len();
            entries.swap(a as usize % l, b as usize % l);
        }
    }
    if m.indef_map {
        e.begin_map().unwrap();
    } else {
        e.map(entries.len() as u64).unwrap();
    }
    for (k, w) in &entries {
        e.str(k).unwrap();
        w(e);
    }
    if m.indef_map {
        e.end().unwrap();
    }
    let order = if item == 1 {
        None
    } else if data_order_big {
        Some(ByteOrder::Big)
    } else {
        Some(ByteOrder::Little)
    };
    clean.then_some(Expect { dtype: dt, order, shape: expect_shape, data, counts, fortran: false })
}

fn build(msg: &Msg) -> (Vec<u8>, Option<Expect>) {
    let mut e = Enc::new(Vec::new());
    if msg.self_describe {
        e.tag(Tag::new(55799)).unwrap();
    }
    let expect = match &msg.body {
        Body::Reductionist(m) => reductionist(&mut e, m),
        Body::Typed { tag, data, chunks } => {
            let t = 64 + (*tag as u64 % 24);
            e.tag(Tag::new(t)).unwrap();
            data_bytes(&mut e, data, chunks);
            None
        }
        Body::Multidim { col_major, dims, dtype, typed, fill, dims_indef } => {
            let (dt, _, _, item, tagbase) = DTYPES[*dtype as usize % DTYPES.len()];
            let dims: Vec<u64> = dims.iter().take(6).map(|&d| (d % 5) as u64).collect();
            let n = dims.iter().product::<u64>() as usize;
            let typed = *typed && tagbase != 0;
            let (dt, item) = if typed { (dt, item) } else { (Dtype::UInt8, 1) };
            let data = fill_data(fill, n * item);
            e.tag(Tag::new(if *col_major { 1040 } else { 40 })).unwrap();
            e.array(2).unwrap();
            if *dims_indef {
                e.begin_array().unwrap();
            } else {
                e.array(dims.len() as u64).unwrap();
            }
            for &d in &dims {
                e.u64(d).unwrap();
            }
            if *dims_indef {
                e.end().unwrap();
            }
            if typed {
                e.tag(Tag::new(if item == 1 { tagbase } else { tagbase + 4 })).unwrap();
            }
            e.bytes(&data).unwrap();
            let order = if item == 1 { None } else { Some(ByteOrder::Little) };
            Some(Expect { dtype: dt, order, shape: dims, data, counts: None, fortran: *col_major })
        }
        Body::Tokens(t) => {
            write_toks(&mut e, t);
            None
        }
    };
    let mut b = e.into_writer();
    let clean = msg.mutations.is_empty();
    for mu in msg.mutations.iter().take(4) {
        let l = b.len().max(1);
        match *mu {
            Mutation::Truncate(i) => b.truncate(i as usize % l),
            Mutation::Flip(i, x) => {
                if let Some(v) = b.get_mut(i as usize % l) {
                    *v ^= x | 1;
                }
            }
            Mutation::Insert(i, x) => b.insert((i as usize % l).min(b.len()), x),
            Mutation::Remove(i) => {
                if !b.is_empty() {
                    b.remove(i as usize % l);
                }
            }
            Mutation::Trailing(x) => b.push(x),
        }
    }
    (b, if clean { expect } else { None })
}

fuzz_target!(|msg: Msg| {
    let (buf, expect) = build(&msg);
    let view = vh5_fuzz::check_payload(&buf);
    if let Some(x) = expect {
        let v = view.unwrap_or_else(|| panic!("consistent message refused: {:?}\n{msg:?}", payload::decode_view(&buf, 0).unwrap_err()));
        assert_eq!(v.dtype, x.dtype);
        assert_eq!(v.byte_order, x.order);
        assert_eq!(v.shape.as_slice(), &x.shape[..], "shape");
        assert_eq!(v.data, &x.data[..], "data");
        assert_eq!(v.fortran_order, x.fortran);
        let mut out = vec![0i64; buf.len() + 1];
        let n = payload::decode_count(&buf, &mut out).expect("decode_count on a consistent message");
        match x.counts {
            Some(c) => {
                assert_eq!(&out[..n], &c[..], "counts");
                assert_ne!(v.count.form, CountForm::Absent);
            }
            None => assert_eq!((n, v.count.form), (0, CountForm::Absent)),
        }
    }
});
