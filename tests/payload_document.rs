//! The payload_document fuzz oracle (fuzz/src/document_oracle.rs) replayed on stable Rust
//! over the committed seeds of fuzz/corpus/payload_document and, in all three format modes,
//! over the payload_decode seeds, so `cargo test` checks them without cargo-fuzz.

#[path = "../fuzz/src/document_oracle.rs"]
mod oracle;

use vh5::payload::document::{decode_document, DocFormat, ItemKind};

fn corpus(name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(name);
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn document_seeds_satisfy_the_fuzz_oracle() {
    let seeds = corpus("payload_document");
    assert!(seeds.len() >= 30, "only {} seeds", seeds.len());
    let mut ok = 0;
    for (name, b) in &seeds {
        if std::panic::catch_unwind(|| oracle::check_document(b)).is_err() {
            panic!("oracle failed on seed {name}");
        }
        let fmt = [DocFormat::Auto, DocFormat::Cbor, DocFormat::Msgpack][b.first().map_or(0, |f| *f as usize % 3)];
        ok += usize::from(b.len() > 1 && decode_document(&b[1..], fmt).is_ok());
    }
    assert!(ok >= 15 && ok < seeds.len(), "{ok} of {} seeds decode", seeds.len());
    for (name, b) in corpus("payload_decode") {
        for f in 0u8..3 {
            let mut m = vec![f];
            m.extend_from_slice(&b);
            if std::panic::catch_unwind(|| oracle::check_document(&m)).is_err() {
                panic!("oracle failed on payload_decode seed {name} with format byte {f}");
            }
        }
    }
}

/// The request's own document: xarray.Dataset.to_dict("array") packed with msgpack-numpy
/// (seed mp-xarray): three arrays found as views, the rest as items.
#[test]
fn xarray_to_dict_msgpack_numpy_document() {
    let seeds = corpus("payload_document");
    let b = &seeds.iter().find(|(n, _)| n == "mp-xarray").unwrap().1[1..];
    let d = decode_document(b, DocFormat::Auto).unwrap();
    assert_eq!(d.format, DocFormat::Msgpack);
    assert_eq!(d.views.len(), 3);
    assert_eq!(d.items.iter().filter(|i| i.kind == ItemKind::ArrayView).count(), 3);
    let shapes: Vec<_> = d.views.iter().map(|v| (v.dtype.name(), v.shape.as_slice().to_vec(), v.byte_order)).collect();
    assert_eq!(shapes[2].1, vec![5]);
    assert!(shapes.iter().any(|s| s.2 == Some(vh5::dtype::ByteOrder::Big)), "{shapes:?}");
}
