//! `vh5 payload` on a whole document (a msgpack or CBOR message that is not one array):
//! every array in it with its path, dtype, shape, byte order and alignment.

use serde_json::{json, Value};
use vh5::payload::document::{decode_document, DocFormat, ItemKind, NO_PARENT};

/// The summary of the document in `buf`, `None` when it is not a document vh5 walks.
pub fn summarise_document(buf: &[u8]) -> Option<Value> {
    let d = decode_document(buf, DocFormat::Auto).ok()?;
    // path of every item: the parent's path plus `.key` / `["key"]` / `[i]`
    let mut paths: Vec<String> = Vec::with_capacity(d.items.len());
    let mut last_key: Vec<Option<String>> = vec![None; d.items.len()];
    let mut arrays = Vec::new();
    for it in &d.items {
        let path = if it.parent == NO_PARENT {
            "$".to_string()
        } else {
            let p = it.parent as usize;
            let parent = &d.items[p];
            match parent.kind {
                ItemKind::Map if it.position % 2 == 0 => {
                    // a key: remember it for the value that follows
                    let k = match it.kind {
                        ItemKind::Text | ItemKind::Bytes => String::from_utf8_lossy(&buf[it.data_offset..it.data_offset + it.data_len]).into_owned(),
                        ItemKind::UInt => it.value.to_string(),
                        ItemKind::NegInt => format!("-{}", u128::from(it.value) + 1),
                        _ => format!("<key {}>", it.position / 2),
                    };
                    last_key[p] = Some(k);
                    format!("{}<key>", paths[p])
                }
                ItemKind::Map => {
                    let k = last_key[p].clone().unwrap_or_default();
                    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !k.starts_with(|c: char| c.is_ascii_digit()) {
                        format!("{}.{k}", paths[p])
                    } else {
                        format!("{}[{k:?}]", paths[p])
                    }
                }
                _ => format!("{}[{}]", paths[p], it.position),
            }
        };
        if it.kind == ItemKind::ArrayView {
            let v = &d.views[it.value as usize];
            arrays.push(json!({
                "path": path,
                "format": crate::names::format_name(v.format),
                "dtype": v.dtype.name(),
                "shape": v.shape.as_slice(),
                "byte_order": crate::names::order_name(v.byte_order),
                "aligned": v.aligned,
                "fortran_order": v.fortran_order,
                "data_offset": v.data_offset,
                "data_len": v.data.len(),
            }));
        }
        paths.push(path);
    }
    Some(json!({
        "ok": true,
        "format": "document",
        "document_format": if d.format == DocFormat::Msgpack { "msgpack" } else { "cbor" },
        "items": d.items.len(),
        "arrays": arrays,
    }))
}

pub fn print_document(f: &str, v: &Value) {
    let arrays = v["arrays"].as_array().map_or(&[][..], |a| a.as_slice());
    println!("{f}: {} document, {}, {}", v["document_format"].as_str().unwrap_or("?"), crate::plural(&v["items"], "item"), crate::plural(arrays.len(), "array"));
    for a in arrays {
        println!(
            "  {}: {} shape {}, {}{}, {}, data offset {} ({} bytes)",
            a["path"].as_str().unwrap_or("?"),
            a["dtype"].as_str().unwrap_or("?"),
            a["shape"],
            a["byte_order"].as_str().map_or("no byte order".to_string(), |o| format!("{o}-endian")),
            if a["fortran_order"] == true { ", Fortran order" } else { "" },
            if a["aligned"] == true { "aligned" } else { "NOT aligned" },
            a["data_offset"],
            a["data_len"]
        );
    }
}
