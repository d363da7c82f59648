//! `vh5 payload`: summarise payload files (Reductionist CBOR, RFC 8746, msgpack-numpy).
//!
//! ```text
//! vh5 payload [--json] [--values N|all] [FILE ...]   (stdin when no FILE or FILE is -)
//! vh5 payload --make-samples DIR                     (write sample payloads for the demo)
//! ```
//!
//! Human output: one block per file. `--json`: one JSON object per file, one per line
//! (JSON Lines; a single file gives a single JSON document). Non-finite floats are written as
//! the strings "NaN", "Infinity", "-Infinity" (like the shared index.json), integers exactly,
//! complex numbers as [re, im]. Values are in payload order (C order, or Fortran order when
//! `fortran_order` is true). Exit code 0 when every file decoded, 1 otherwise, 2 for usage.

use std::io::Read;

use serde_json::{json, Value};
use vh5::payload::{self, CountForm, PayloadView, Scalar};

use crate::names::{format_name, layout_name, order_name};
use crate::{plural, status_name};

mod samples;

/// `vh5 payload --help` (stdout, exit 0; on stderr with exit 2 after a usage error).
pub const HELP: &str = "usage: vh5 payload [--json] [--values N|all] [FILE ...]
       vh5 payload --make-samples DIR
  Summarise array payloads: Reductionist CBOR responses, RFC 8746 typed arrays, msgpack-numpy
  maps, and documents (msgpack / CBOR messages holding such arrays: every array with its path).
  FILE ...            files to summarise; stdin when none is given or FILE is -
  --json              one JSON object per file, one per line (JSON Lines)
  --values N|all      how many values (and counts) to show (default 8; all: every one)
  --make-samples DIR  write sample payloads of every layout into DIR
  -h, --help          this help
  Exit status: 0 when every file decoded, 1 otherwise, 2 for a usage error.";

fn usage() -> i32 {
    eprintln!("{HELP}");
    2
}

pub fn run(args: &[String]) -> i32 {
    let mut json_out = false;
    let mut nvalues: Option<usize> = Some(8);
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json_out = true,
            "--values" => match it.next().map(String::as_str) {
                Some("all") => nvalues = None,
                Some(n) => match n.trim().parse() {
                    Ok(n) => nvalues = Some(n),
                    Err(_) => {
                        eprintln!("vh5 payload: --values expects a non-negative integer up to {} or `all`, got {n:?}", usize::MAX);
                        return usage();
                    }
                },
                None => {
                    eprintln!("vh5 payload: --values needs a value (a number, or `all`)");
                    return usage();
                }
            },
            "--make-samples" => {
                let Some(dir) = it.next() else { return usage() };
                return match samples::write_samples(std::path::Path::new(dir)) {
                    Ok(names) => {
                        for n in names {
                            println!("{dir}/{n}");
                        }
                        0
                    }
                    Err(e) => {
                        eprintln!("vh5 payload: cannot write samples to {dir}: {e}");
                        1
                    }
                };
            }
            "-h" | "--help" => {
                println!("{HELP}");
                return 0;
            }
            s if s.starts_with("--") => return usage(),
            _ => files.push(a.clone()),
        }
    }
    if files.is_empty() {
        files.push("-".into());
    }
    let mut failed = false;
    for f in &files {
        let bytes = if f == "-" {
            let mut b = Vec::new();
            std::io::stdin().read_to_end(&mut b).map(|_| b)
        } else {
            std::fs::read(f)
        };
        let report = match bytes {
            Ok(b) => summarise(&b, nvalues),
            Err(e) => Err(("VH5_ERR_IO".to_string(), format!("cannot read {f}: {e}"))),
        };
        failed |= report.is_err();
        if json_out {
            let v = match report {
                Ok(mut v) => {
                    v.as_object_mut().unwrap().insert("file".into(), json!(f));
                    v
                }
                Err((status, message)) => json!({"file": f, "ok": false, "status": status, "message": message}),
            };
            println!("{v}");
        } else {
            match report {
                Ok(v) => print_human(f, &v),
                Err((status, message)) => println!("{f}: {status}: {message}"),
            }
        }
    }
    i32::from(failed)
}

fn float(x: f64) -> Value {
    if x.is_nan() {
        json!("NaN")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        json!(x)
    }
}

fn scalar(s: Scalar) -> Value {
    match s {
        Scalar::Bool(b) => json!(b),
        Scalar::Int(i) => i64::try_from(i).map(|v| json!(v)).unwrap_or_else(|_| json!(i as u64)),
        Scalar::Float(x) => float(x),
        Scalar::Complex(re, im) => json!([float(re), float(im)]),
    }
}

/// The error for `buf` that is neither one array nor a document: the decoder's error `e`,
/// except that a known kind of file (HDF5, netCDF-3, JSON that is not a server's error body)
/// is named instead (`VH5_ERR_UNSUPPORTED`), and an unknown input gets its first bytes.
fn not_a_payload(buf: &[u8], e: vh5::error::Error) -> (String, String) {
    // Empty input: the decoder's own VH5_ERR_MALFORMED, as the library reports it.
    if e.kind == vh5::error::ErrorKind::ServerError || buf.is_empty() {
        return (status_name(e.kind), e.message);
    }
    match crate::sniff::not_a_payload(buf) {
        Some(what) => (status_name(vh5::error::ErrorKind::Unsupported), format!("the input is {what}")),
        None => (status_name(e.kind), format!("{} ({}; not a Reductionist, RFC 8746 or msgpack-numpy payload, HDF5, netCDF-3 or JSON)", e.message, crate::sniff::first_bytes(buf))),
    }
}

fn summarise(buf: &[u8], nvalues: Option<usize>) -> Result<Value, (String, String)> {
    let fail = |e: vh5::error::Error| (status_name(e.kind), e.message);
    let v: PayloadView<'_> = match payload::decode_view(buf, 0) {
        Ok(v) => v,
        // Not one array: a document holding arrays (its own error is reported when it is
        // not a document either).
        Err(e) => return super::payload_doc::summarise_document(buf).ok_or_else(|| not_a_payload(buf, e)),
    };
    let mut counts = vec![0i64; v.count.len as usize];
    payload::decode_count(buf, &mut counts).map_err(fail)?;
    let n = nvalues.map_or(v.nelements, |n| (n as u64).min(v.nelements));
    let values: Vec<Value> = (0..n).map(|i| scalar(v.get(i).expect("i < nelements"))).collect();
    let nc = nvalues.map_or(counts.len(), |n| n.min(counts.len()));
    let count = json!({
        "form": match v.count.form { CountForm::Absent => "absent", CountForm::Scalar => "scalar", CountForm::Bytes => "bytes", CountForm::Array => "array" },
        "dtype": v.count.dtype.map(|d| d.name()),
        "byte_order": order_name(v.count.byte_order),
        "offset": v.count.offset,
        "len": counts.len(),
        "zeros": counts.iter().filter(|&&c| c == 0).count(),
        "min": counts.iter().min(),
        "max": counts.iter().max(),
        "values": &counts[..nc],
    });
    Ok(json!({
        "ok": true,
        "format": format_name(v.format),
        "layout": layout_name(v.layout),
        "dtype": v.dtype.name(),
        "itemsize": v.itemsize(),
        "shape": v.shape.as_slice(),
        "nelements": v.nelements,
        "byte_order": order_name(v.byte_order),
        "needs_swap": v.needs_swap(),
        "aligned": v.aligned,
        "fortran_order": v.fortran_order,
        "data_offset": v.data_offset,
        "data_len": v.data.len(),
        "count": count,
        "values": values,
    }))
}

fn print_human(f: &str, v: &Value) {
    if v["format"] == "document" {
        return super::payload_doc::print_document(f, v);
    }
    let layout = v["layout"].as_str().map(|l| format!(" (layout {l})")).unwrap_or_default();
    println!("{f}: {}{layout}", v["format"].as_str().unwrap());
    let order = match v["byte_order"].as_str() {
        Some(o) => format!("{o}-endian{}", if v["needs_swap"] == true { ", needs swap on this host" } else { ", native" }),
        None => "no byte order (1-byte elements)".into(),
    };
    println!(
        "  dtype {} (itemsize {}), shape {} = {}{}, {order}",
        v["dtype"].as_str().unwrap(),
        v["itemsize"],
        v["shape"],
        plural(&v["nelements"], "element"),
        if v["fortran_order"] == true { ", Fortran order" } else { "" }
    );
    println!(
        "  data: offset {}, {} bytes, {}",
        v["data_offset"],
        v["data_len"],
        if v["aligned"] == true { "aligned" } else { "NOT aligned for its element type (read with unaligned loads or copy)" }
    );
    let c = &v["count"];
    if c["form"] == "absent" {
        println!("  count: absent");
    } else {
        println!(
            "  count: {} ({}), {}, {}, min {}, max {}; first: {}",
            c["form"].as_str().unwrap(),
            c["dtype"].as_str().unwrap_or("-"),
            plural(&c["len"], "element"),
            plural(&c["zeros"], "zero"),
            c["min"],
            c["max"],
            c["values"]
        );
    }
    println!("  values: {}", v["values"]);
}
