//! Format detection from the first byte, and recognition of server JSON error bodies.
//!
//! Rule (first byte `b`, after which the chosen decoder checks everything else):
//!
//! | `b` | format |
//! |---|---|
//! | `0xa0..=0xbf` | CBOR map (major type 5): Reductionist response |
//! | `0xc0..=0xdb` | CBOR tag (major type 6): RFC 8746 typed array 64–87, multi-dimensional array 40 / 1040 (optionally behind the self-describe tag 55799) |
//! | `0x80..=0x8f`, `0xde`, `0xdf` | msgpack map (fixmap, map16, map32): msgpack-numpy |
//! | `{` (optionally after JSON whitespace) | JSON: a Reductionist error body → `ServerError` |
//! | anything else | `Malformed`, naming the byte and what it would be |
//!
//! Ambiguity: `0x80..=0x8f` is also a CBOR array of 0–15 items (major type 4), but no
//! accepted CBOR payload is a bare array, so those bytes go to msgpack. `0xa0..=0xbf` is
//! also a msgpack fixstr, and `0xc0..=0xdb` are msgpack nil/bool/bin/ext/float/int/str
//! markers, none of which is a msgpack-numpy message; `0xde`/`0xdf` are not valid CBOR
//! heads (tag with reserved additional information 30/31). `{` (0x7b) would be a CBOR text
//! string head, never an accepted payload. So every first byte maps to at most one format
//! vh5 accepts.
//!
//! Files that are not payloads at all ([`other_file_kind`]: HDF5, netCDF-3) are named when
//! decoding fails ([`name_other_file`]), so every decoder's caller (C, Python, the CLI) is
//! told what the input is and what reads it rather than a decoder's complaint about byte 0.

use crate::error::{Error, ErrorKind, Result};

/// HDF5's superblock signature (HDF5 file format specification, "Format Signature").
pub const HDF5_SIGNATURE: &[u8] = b"\x89HDF\r\n\x1a\n";

/// What kind of non-payload file `buf` is, in words (`an HDF5 file (signature at byte 0)`,
/// `a netCDF-3 file (classic format)`), or `None`.
///
/// HDF5: the signature at byte 0, or (as libhdf5 searches) after a user block of 512, 1024,
/// 2048, ... bytes; a user block is looked for only when byte 0 starts no payload (so array
/// data that happens to hold the signature at such an offset is never taken for a file).
/// netCDF-3: `CDF` and format byte 1 (classic), 2 (64-bit offset) or 5 (CDF-5).
pub fn other_file_kind(buf: &[u8]) -> Option<String> {
    if buf.starts_with(HDF5_SIGNATURE) {
        return Some("an HDF5 file (signature at byte 0)".into());
    }
    if buf.len() >= 4 && &buf[..3] == b"CDF" {
        let kind = match buf[3] {
            1 => Some("classic"),
            2 => Some("64-bit offset"),
            5 => Some("CDF-5 (64-bit data)"),
            _ => None,
        };
        if let Some(kind) = kind {
            return Some(format!("a netCDF-3 file ({kind} format)"));
        }
    }
    let payload_start = buf.first().is_some_and(|&b| matches!(b, 0x80..=0x8f | 0xa0..=0xdb | 0xde | 0xdf | b'{'));
    let mut at = 512usize;
    while !payload_start && at.checked_add(HDF5_SIGNATURE.len()).is_some_and(|end| end <= buf.len()) {
        if &buf[at..at + HDF5_SIGNATURE.len()] == HDF5_SIGNATURE {
            return Some(format!("an HDF5 file (signature at byte {at} after a user block of {at} bytes)"));
        }
        at = at.checked_mul(2)?;
    }
    None
}

/// What reads a file of the kind [`other_file_kind`] gives (C names; the Python binding
/// rewrites them into its own terms).
fn reader_of(kind: &str) -> &'static str {
    if kind.starts_with("an HDF5") {
        "open it with vh5_file_open and read it with vh5_read_many_slices (Python: vh5.File(path); command line: vh5 info FILE)"
    } else {
        "netCDF-3 is not HDF5 either: read it with the netCDF library (Python: netCDF4.Dataset or scipy.io.netcdf_file)"
    }
}

/// `e`, the error decoding `buf` failed with, or `Unsupported` naming the input when it is an
/// HDF5 or netCDF-3 file ([`other_file_kind`]), not a serialized payload, and what reads it.
/// A server's error body (`ServerError`) is kept.
pub fn name_other_file(buf: &[u8], e: Error) -> Error {
    if e.kind == ErrorKind::ServerError {
        return e;
    }
    match other_file_kind(buf) {
        Some(kind) => Error::new(ErrorKind::Unsupported, format!("the input is {kind}, not a serialized array payload: {}", reader_of(&kind))),
        None => e,
    }
}

/// The decoder chosen from the first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detected {
    Cbor,
    Msgpack,
}

/// Pick the decoder for `buf` (see the module doc). JSON input becomes an error here:
/// `ServerError` for a Reductionist error body, `Malformed` for other JSON.
pub fn detect(buf: &[u8]) -> Result<Detected> {
    let Some(&b) = buf.first() else {
        bail!(Malformed, "empty input (0 bytes): expected a CBOR or msgpack payload");
    };
    let first_non_ws = buf.iter().copied().find(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'));
    if first_non_ws == Some(b'{') && (b == b'{' || b.is_ascii_whitespace()) {
        return Err(json_error(buf));
    }
    Ok(match b {
        // CBOR maps (0xa0-0xbf) and the tags of accepted payloads.
        0xa0..=0xbf => Detected::Cbor,
        0xc0..=0xdb if payload_tag(buf) => Detected::Cbor,
        // A 4- or 8-byte tag head cut short: let the CBOR decoder report the truncation.
        0xda | 0xdb if buf.len() < 3 => Detected::Cbor,
        // Tags no payload starts with: most likely a msgpack value that is not a map.
        0xc0..=0xdb => bail!(
            Malformed,
            "byte 0: first byte 0x{b:02x} starts a msgpack {}, not a msgpack-numpy payload (a map with keys nd, type, kind, shape, data); as CBOR it would be a tag that starts no supported payload (expected RFC 8746 typed array 64-87 or multi-dimensional array 40/1040)",
            describe_msgpack_head(b)
        ),
        0x80..=0x8f | 0xde | 0xdf => Detected::Msgpack,
        _ => bail!(
            Malformed,
            "byte 0: first byte 0x{b:02x} ({}) starts no supported payload: expected a CBOR map (0xa0-0xbf, Reductionist), a CBOR tag (0xc0-0xdb: RFC 8746 typed array 64-87 or multi-dimensional array 40/1040), or a msgpack map (0x80-0x8f, 0xde, 0xdf: msgpack-numpy)",
            describe_cbor_head(b)
        ),
    })
}

/// Whether `buf` starts with the head of a CBOR tag a payload (or a document's array) may
/// start with: 40, 1040, 64–87 (typed arrays, including the refused reserved / float128
/// ones, which then get their own message), or the self-describe tag 55799.
pub(crate) fn payload_tag(buf: &[u8]) -> bool {
    match buf.first() {
        Some(0xd8) => buf.get(1).is_some_and(|&t| t == 40 || (64..=87).contains(&t)),
        Some(0xd9) => matches!(buf.get(1..3), Some([0x04, 0x10]) | Some([0xd9, 0xf7])),
        _ => false,
    }
}

/// What a first byte is as a msgpack marker, for messages.
pub(crate) fn describe_msgpack_head(b: u8) -> &'static str {
    match b {
        0x00..=0x7f => "positive fixint",
        0x80..=0x8f => "fixmap",
        0x90..=0x9f => "fixarray",
        0xa0..=0xbf => "fixstr",
        0xc0 => "nil",
        0xc1 => "reserved byte 0xc1",
        0xc2 | 0xc3 => "bool",
        0xc4..=0xc6 => "bin",
        0xc7..=0xc9 => "ext",
        0xca => "float 32",
        0xcb => "float 64",
        0xcc..=0xcf => "uint",
        0xd0..=0xd3 => "int",
        0xd4..=0xd8 => "fixext",
        0xd9..=0xdb => "str",
        0xdc | 0xdd => "array",
        0xde | 0xdf => "map",
        0xe0..=0xff => "negative fixint",
    }
}

/// What a first byte would be as a CBOR head, for messages.
fn describe_cbor_head(b: u8) -> &'static str {
    match b >> 5 {
        0 => "a CBOR unsigned integer",
        1 => "a CBOR negative integer",
        2 => "a CBOR byte string",
        3 => "a CBOR text string",
        4 => "a CBOR array",
        5 => "a CBOR map",
        6 => "a CBOR tag",
        _ => "a CBOR simple value / float",
    }
}

/// Turn a JSON input into the error to report.
///
/// Reductionist (0.12 – 0.13.1) answers failures with HTTP 4xx/5xx and a JSON body
/// `{"error": {"message": "...", "caused_by": ["...", ...]}}` (`caused_by` optional; a string
/// is accepted too). Such a body gives `ServerError` with the message
/// `this is a JSON error body from the server: <message> (caused by: <a>; <b>)`.
pub fn json_error(buf: &[u8]) -> crate::error::Error {
    let v: serde_json::Value = match serde_json::from_slice(buf) {
        Ok(v) => v,
        Err(e) => return err!(Malformed, "input starts with '{{' like JSON, not a CBOR or msgpack payload, and is not valid JSON either ({e})"),
    };
    let Some(msg) = v.get("error").and_then(|e| e.get("message")).and_then(|m| m.as_str()) else {
        return err!(Malformed, "input is a JSON document, not a CBOR or msgpack payload, and not a server error body (no \"error\".\"message\" string)");
    };
    let causes: Vec<String> = match v["error"].get("caused_by") {
        Some(serde_json::Value::Array(a)) => a.iter().map(|c| c.as_str().map(str::to_string).unwrap_or_else(|| c.to_string())).collect(),
        Some(serde_json::Value::String(s)) => vec![s.clone()],
        Some(serde_json::Value::Null) | None => vec![],
        Some(other) => vec![other.to_string()],
    };
    if causes.is_empty() {
        err!(ServerError, "this is a JSON error body from the server: {msg}")
    } else {
        err!(ServerError, "this is a JSON error body from the server: {msg} (caused by: {})", causes.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn hdf5_and_netcdf3_files_are_named_not_decoded() {
        let mut h = HDF5_SIGNATURE.to_vec();
        h.resize(4096, 0);
        assert_eq!(other_file_kind(&h).as_deref(), Some("an HDF5 file (signature at byte 0)"));
        for ub in [512usize, 1024, 4096] {
            let mut u = vec![0u8; ub];
            u.extend_from_slice(HDF5_SIGNATURE);
            assert_eq!(other_file_kind(&u), Some(format!("an HDF5 file (signature at byte {ub} after a user block of {ub} bytes)")));
            // a payload holding the signature in its data at such an offset is no file
            u[0] = 0xa5;
            assert_eq!(other_file_kind(&u), None);
        }
        let mut odd = vec![0u8; 700];
        odd.extend_from_slice(HDF5_SIGNATURE); // not at a user-block offset
        assert_eq!(other_file_kind(&odd), None);
        assert_eq!(other_file_kind(b"CDF\x01\0\0\0\0").as_deref(), Some("a netCDF-3 file (classic format)"));
        assert!(other_file_kind(b"CDF\x02\0\0").unwrap().contains("64-bit offset"));
        assert!(other_file_kind(b"CDF\x05\0\0").unwrap().contains("CDF-5"));
        assert_eq!(other_file_kind(b"CDF\x03\0\0"), None);
        assert_eq!(other_file_kind(b""), None);
        let e = name_other_file(&h, err!(Malformed, "cryptic"));
        assert_eq!(e.kind, ErrorKind::Unsupported);
        assert!(e.message.starts_with("the input is an HDF5 file (signature at byte 0), not a serialized array payload: open it with vh5_file_open"), "{}", e.message);
        let e = name_other_file(b"CDF\x01\0\0\0\0", err!(Malformed, "cryptic"));
        assert!(e.message.contains("netCDF-3 file (classic format), not a serialized array payload") && e.message.contains("netCDF library"), "{}", e.message);
        assert_eq!(name_other_file(b"\x01", err!(Malformed, "cryptic")).message, "cryptic");
        assert_eq!(name_other_file(&h, err!(ServerError, "boom")).kind, ErrorKind::ServerError);
    }

    #[test]
    fn first_bytes() {
        assert_eq!(detect(&[0xa7]).unwrap(), Detected::Cbor);
        assert_eq!(detect(&[0xd8, 0x56]).unwrap(), Detected::Cbor);
        // a msgpack float 64 (1.5) is named as msgpack, not as CBOR tag 11
        let e = detect(&[0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed);
        assert!(e.message.contains("msgpack float 64, not a msgpack-numpy payload"), "{}", e.message);
        assert_eq!(detect(&[0x85]).unwrap(), Detected::Msgpack);
        assert_eq!(detect(&[0xde]).unwrap(), Detected::Msgpack);
        assert_eq!(detect(&[0xdf]).unwrap(), Detected::Msgpack);
        let e = detect(&[0x9a]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed);
        assert!(e.message.contains("0x9a") && e.message.contains("CBOR array"), "{}", e.message);
        assert_eq!(detect(&[]).unwrap_err().kind, ErrorKind::Malformed);
        // tag heads: payload tags are CBOR; a 1- or 2-byte tag head naming another tag is
        // named as msgpack; a cut 4- or 8-byte tag head is left to the CBOR decoder
        assert!(payload_tag(&[0xd9, 0x04, 0x10]) && payload_tag(&[0xd8, 40]) && !payload_tag(&[0xd8, 5]));
        assert_eq!(detect(&[0xd8]).unwrap_err().kind, ErrorKind::Malformed);
        assert_eq!(detect(&[0xd9, 0x04]).unwrap_err().kind, ErrorKind::Malformed);
        assert_eq!(detect(&[0xda, 0x00]).unwrap(), Detected::Cbor);
    }

    #[test]
    fn json_bodies() {
        let body = br#"{"error": {"message": "request data is not valid", "caused_by": ["a", "b"]}}"#;
        let e = detect(body).unwrap_err();
        assert_eq!(e.kind, ErrorKind::ServerError);
        assert_eq!(e.message, "this is a JSON error body from the server: request data is not valid (caused by: a; b)");
        let e = detect(b"\n {\"error\": {\"message\": \"x\"}}").unwrap_err();
        assert_eq!(e.message, "this is a JSON error body from the server: x");
        let e = detect(b"{\"a\": 1}").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed);
        let e = detect(b"{\"error\": ").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Malformed);
        assert!(e.message.contains("not valid JSON"));
    }
}
