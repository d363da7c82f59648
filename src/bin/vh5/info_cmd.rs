//! `vh5 info`: every dataset of an HDF5 file with shape, dtype, byte order, layout, chunks,
//! filters and fill value; objects that cannot be opened are listed with the reason.

use std::io::Write as _;

use vh5::dtype::Dtype;
use vh5::error::Result;
use vh5::hdf5::{self as h5, Layout};

use crate::{plural, status_name};

/// `vh5 info --help` (stdout, exit 0; on stderr with exit 2 after a usage error).
pub const HELP: &str = "usage: vh5 info [--allow-external] FILE
       vh5 info --version
  List every dataset of an HDF5 file: shape, dtype, byte order, layout, chunks, filters,
  fill value. A dataset that cannot be opened (written with a newer HDF5 format than the
  linked libhdf5 reads, damaged, stored in external files or virtual) is listed with the
  reason, and the exit status is then 1. Names are printed as bytes of UTF-8 as they are, a
  byte that is not UTF-8 or of a control character (newline, tab, DEL) as \\xNN and a
  backslash as \\\\ (the form `vh5 read` takes back).
  --allow-external  open datasets whose data lives in other files (external storage, virtual
                    datasets, external links); refused by default: a crafted file could
                    make vh5 read any file the process may read
  --version         vh5's version and the libhdf5 in use (version, origin, thread-safety)
  -h, --help        this help
  Exit status: 0 when every dataset was described, 1 otherwise, 2 for a usage error.";

/// `vh5 info ...`; returns the exit code.
pub fn run(args: &[String]) -> i32 {
    let mut path = None;
    let mut flags = 0;
    for a in args {
        match a.as_str() {
            "-h" | "--help" => {
                println!("{HELP}");
                return 0;
            }
            "--version" => return print_version(),
            "--allow-external" => flags |= vh5::hdf5::external::FILE_ALLOW_EXTERNAL,
            x if x.starts_with('-') && x != "-" => return usage(&format!("unknown option {x}")),
            x if path.is_none() => path = Some(x.to_string()),
            _ => return usage("give one FILE"),
        }
    }
    let Some(path) = path else { return usage("give one FILE") };
    match info(&path, flags) {
        Ok(0) => 0,
        Ok(bad) => {
            eprintln!("vh5: {} of {path} could not be opened (listed above with the reason)", plural(bad, "object"));
            1
        }
        Err(e) => crate::fail(&e),
    }
}

fn usage(why: &str) -> i32 {
    eprintln!("vh5 info: {why}\n{HELP}");
    2
}

/// `vh5 0.1.0` and `libhdf5 1.10.8 (system, not thread-safe)` on two lines; exit code.
pub fn print_version() -> i32 {
    println!("vh5 {}", env!("CARGO_PKG_VERSION"));
    let s = h5::session();
    match h5::version::library_info(s.lock()) {
        Ok(i) => {
            println!("{i}");
            0
        }
        Err(e) => crate::fail(&e),
    }
}

fn fmt_fill(info: &h5::DatasetInfo) -> String {
    let Some(fv) = &info.fill_value else { return "none".into() };
    let v = match info.dtype.dtype {
        Some(d) if d.itemsize() == Some(fv.len()) => fmt_element(d, fv),
        _ => return format!("{} bytes", fv.len()),
    };
    format!("{v}{}", if info.fill_value_user_defined { "" } else { " (default)" })
}

/// One element of type `d` (native byte order, `d.itemsize()` bytes) as numpy prints it:
/// integers exactly as integers, `True`/`False`, floats with a decimal point, complex `a+bj`.
fn fmt_element(d: Dtype, e: &[u8]) -> String {
    let a = |k: usize, w: usize| -> [u8; 8] {
        let mut a = [0u8; 8];
        a[..w].copy_from_slice(&e[k..k + w]);
        a
    };
    match d {
        Dtype::Bool => (if e[0] != 0 { "True" } else { "False" }).into(),
        Dtype::Int8 => (e[0] as i8).to_string(),
        Dtype::UInt8 => e[0].to_string(),
        Dtype::Int16 => i16::from_ne_bytes([e[0], e[1]]).to_string(),
        Dtype::UInt16 => u16::from_ne_bytes([e[0], e[1]]).to_string(),
        Dtype::Int32 => i32::from_ne_bytes([e[0], e[1], e[2], e[3]]).to_string(),
        Dtype::UInt32 => u32::from_ne_bytes([e[0], e[1], e[2], e[3]]).to_string(),
        Dtype::Int64 => i64::from_ne_bytes(a(0, 8)).to_string(),
        Dtype::UInt64 => u64::from_ne_bytes(a(0, 8)).to_string(),
        Dtype::Float16 | Dtype::Float32 | Dtype::Float64 | Dtype::Complex64 | Dtype::Complex128 | Dtype::Opaque => crate::read_cmd::sum_elements(d, e).0,
    }
}

/// One line describing dataset `d`.
fn describe(l: &h5::error::H5Session, d: &h5::Handle) -> Result<String> {
    let i = h5::dataset_info(l.lock(), d.id())?;
    let layout = match (&i.layout, &i.chunk) {
        (Layout::Chunked, Some(c)) => format!("chunks {c:?}"),
        (Layout::Contiguous, _) => "contiguous".into(),
        (Layout::Compact, _) => "compact".into(),
        (Layout::Virtual, _) => "virtual".into(),
        _ => "chunked".into(),
    };
    let filters = if i.filters.is_empty() {
        "no filters".to_string()
    } else {
        let names: Vec<String> = i.filters.iter().map(|(id, n)| if n.is_empty() { format!("filter {id}") } else { format!("{n} ({id})") }).collect();
        format!("filters: {}", names.join(", "))
    };
    let shape = if i.null_dataspace { "null (no elements: h5py.Empty)".to_string() } else { format!("{:?}", i.shape) };
    Ok(format!("shape {shape}, {}, {layout}, {filters}, fill value {}", i.dtype.description, fmt_fill(&i)))
}

/// List the datasets of `path`; returns how many objects could not be opened or described.
fn info(path: &str, flags: u32) -> Result<usize> {
    let s = h5::session();
    let l = s.lock();
    let f = h5::open_file(l, path, flags)?;
    let listed = h5::list_datasets(l, f.id())?;
    // writeln! (not println!) so a closed pipe (`vh5 info F | head`) ends quietly.
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{path}").is_err() {
        return Ok(0);
    }
    if listed.is_empty() && writeln!(out, "  (no datasets)").is_err() {
        return Ok(0);
    }
    let mut bad = 0;
    for it in listed {
        let line = match it.error {
            Some(e) => Err(e),
            None => h5::open_dataset(l, f.id(), &it.raw_path).and_then(|d| describe(&s, &d)),
        };
        let line = line.unwrap_or_else(|e| {
            bad += 1;
            // continuation lines (a libhdf5 error stack) indented under the entry
            format!("cannot open: {}: {}", status_name(e.kind), crate::cli_message(&e.message).replace('\n', "\n    "))
        });
        if writeln!(out, "  {}: {line}", it.path).is_err() {
            return Ok(bad);
        }
    }
    Ok(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_fill_value_is_printed_in_the_dataset_type() {
        assert_eq!(fmt_element(Dtype::Int32, &0i32.to_ne_bytes()), "0");
        assert_eq!(fmt_element(Dtype::Int32, &(-7i32).to_ne_bytes()), "-7");
        assert_eq!(fmt_element(Dtype::UInt64, &u64::MAX.to_ne_bytes()), "18446744073709551615");
        assert_eq!(fmt_element(Dtype::Int64, &(i64::MIN).to_ne_bytes()), "-9223372036854775808");
        assert_eq!(fmt_element(Dtype::Int8, &[0xff]), "-1");
        assert_eq!(fmt_element(Dtype::Bool, &[1]), "True");
        assert_eq!(fmt_element(Dtype::Float64, &0f64.to_ne_bytes()), "0.0");
        assert_eq!(fmt_element(Dtype::Float32, &1.5f32.to_ne_bytes()), "1.5");
    }
}
