//! Raw CBOR heads (RFC 8949 §3) and skipping one complete data item in bounded memory.
//!
//! minicbor's `Decoder::skip` keeps a heap stack that grows by 16 bytes for every
//! indefinite-length array or map nested inside another container: a message of nested
//! `0x9f` bytes made it allocate ~16× the input (and abort the process when the allocation
//! failed). [`skip`] instead keeps a fixed stack of [`MAX_DEPTH`] levels (8 bytes each, on
//! the native stack): nesting deeper than that is `Unsupported`, naming the byte offset.

use crate::error::{Error, Result};

/// cbindgen:ignore
/// Deepest nesting of arrays and maps inside one skipped value, and inside a document
/// walked by [`crate::payload::document`] (`PAYLOAD_MAX_DEPTH` in C): `[[1]]` has depth 2.
pub const MAX_DEPTH: usize = 64;

/// Marks an indefinite-length level on a walk stack.
pub(crate) const INDEF: u64 = u64::MAX;

/// The number of items still to come for a CBOR array (`map`: a map, two per entry) whose
/// head declares `arg` entries, or [`INDEF`] when `indefinite`. A definite count never reads
/// as [`INDEF`] (`0x9b` + eight `0xff` declares 2^64 - 1 items; it was taken for an
/// indefinite array and closed by a break): it saturates at `INDEF - 1`, which no message
/// can hold.
pub(crate) fn items_to_come(arg: u64, map: bool, indefinite: bool) -> u64 {
    if indefinite {
        INDEF
    } else if map {
        arg.checked_mul(2).unwrap_or(INDEF - 1)
    } else {
        arg.min(INDEF - 1)
    }
}

/// One item of a walk completed: count it against the enclosing definite-length levels of
/// `stack[..*depth]` (items left in each, or [`INDEF`]), closing every level it completes.
/// `true` when the outermost item is complete (depth 0).
pub(crate) fn complete_item(stack: &mut [u64], depth: &mut usize) -> bool {
    loop {
        if *depth == 0 {
            return true;
        }
        let top = &mut stack[*depth - 1];
        if *top == INDEF {
            return false;
        }
        *top -= 1;
        if *top != 0 {
            return false;
        }
        *depth -= 1;
    }
}

/// One CBOR head: major type, additional information, argument and head length in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    /// Major type 0..=7.
    pub major: u8,
    /// Additional information 0..=31 (31: indefinite length, or break for major type 7).
    pub info: u8,
    /// The argument: value, length or tag number (0 for indefinite lengths).
    pub arg: u64,
    /// Bytes taken by the head itself.
    pub len: usize,
}

impl Head {
    /// Indefinite length (major types 2–5) or break (major type 7).
    pub fn indefinite(&self) -> bool {
        self.info == 31
    }

    /// The break byte 0xff.
    pub fn is_break(&self) -> bool {
        self.major == 7 && self.info == 31
    }
}

/// Name of a major type, for messages.
pub(crate) fn major_name(major: u8) -> &'static str {
    ["unsigned integer", "negative integer", "byte string", "text string", "array", "map", "tag", "simple value / float"][major as usize & 7]
}

/// Read the head at `pos`. Errors (`Malformed`, naming `pos`): truncated head, reserved
/// additional information 28–30, indefinite length for major types 0, 1, 6.
pub(crate) fn head(buf: &[u8], pos: usize) -> Result<Head> {
    let Some(&b) = buf.get(pos) else {
        bail!(Malformed, "truncated input: a CBOR item expected at byte {pos} but the message has only {} bytes", buf.len());
    };
    let (major, info) = (b >> 5, b & 31);
    let extra = match info {
        0..=23 => 0,
        24 => 1,
        25 => 2,
        26 => 4,
        27 => 8,
        31 if matches!(major, 2..=5 | 7) => return Ok(Head { major, info, arg: 0, len: 1 }),
        _ => bail!(Malformed, "byte {pos}: 0x{b:02x} is not a well-formed CBOR head ({} with additional information {info})", major_name(major)),
    };
    let arg = if extra == 0 {
        u64::from(info)
    } else {
        let Some(s) = buf.get(pos + 1..pos + 1 + extra) else {
            bail!(Malformed, "truncated input: the CBOR {} head at byte {pos} needs {} bytes but the message has only {}", major_name(major), 1 + extra, buf.len());
        };
        s.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x))
    };
    if major == 7 && info == 24 && arg < 32 {
        bail!(Malformed, "byte {pos}: 0xf8 0x{arg:02x} is not well-formed CBOR (a simple value below 32 takes no extra byte, RFC 8949 §3.3)");
    }
    Ok(Head { major, info, arg, len: 1 + extra })
}

/// End of the content of a definite string whose head `h` is at `pos`; `Malformed` when it
/// runs past the end of `buf`.
pub(crate) fn string_end(buf: &[u8], pos: usize, h: &Head) -> Result<usize> {
    let start = pos + h.len;
    match usize::try_from(h.arg).ok().and_then(|n| start.checked_add(n)).filter(|&e| e <= buf.len()) {
        Some(e) => Ok(e),
        None => bail!(Malformed, "truncated input: the CBOR {} at byte {pos} declares {} bytes but only {} remain", major_name(h.major), h.arg, buf.len() - start),
    }
}

/// Walk the string (definite, or indefinite: definite chunks of the same major type up to a
/// break) whose head `h` is at `pos`, calling `f(start, end)` for each chunk's content.
/// Text (major type 3) must be UTF-8 chunk by chunk (RFC 8949 §3.2.3). Returns the end.
pub(crate) fn walk_string(buf: &[u8], pos: usize, h: &Head, f: &mut impl FnMut(usize, usize)) -> Result<usize> {
    let check = |s: usize, e: usize| -> Result<()> {
        if h.major == 3 && std::str::from_utf8(&buf[s..e]).is_err() {
            bail!(Malformed, "CBOR text string at byte {s} is not valid UTF-8");
        }
        Ok(())
    };
    if !h.indefinite() {
        let e = string_end(buf, pos, h)?;
        check(pos + h.len, e)?;
        f(pos + h.len, e);
        return Ok(e);
    }
    let mut p = pos + 1;
    loop {
        let c = head(buf, p)?;
        if c.is_break() {
            return Ok(p + 1);
        }
        if c.major != h.major || c.indefinite() {
            bail!(
                Malformed,
                "byte {p}: chunk of the indefinite-length {} at byte {pos} is a CBOR {} (expected a definite {})",
                major_name(h.major),
                major_name(c.major),
                major_name(h.major)
            );
        }
        let e = string_end(buf, p, &c)?;
        check(p + c.len, e)?;
        f(p + c.len, e);
        p = e;
    }
}

/// `what` followed by "at byte {pos}", unless `what` already ends with that position (a key's
/// value is described as "value of key .. at byte N" and must not repeat it).
pub(crate) fn at(what: &str, pos: usize) -> String {
    let suffix = format!(" at byte {pos}");
    if what.ends_with(&suffix) {
        what.to_string()
    } else {
        format!("{what}{suffix}")
    }
}

/// Map a minicbor error to ours, naming what was being decoded (`Malformed`; truncation
/// says so and gives the message length).
pub(crate) fn cbor_err(e: minicbor::decode::Error, what: &str, len: usize) -> Error {
    if e.is_end_of_input() {
        err!(Malformed, "truncated input: {what} runs past the end of the {len}-byte message ({e})")
    } else {
        err!(Malformed, "{what}: {e}")
    }
}

/// Prefix an error's message with `what` (the value being read).
pub(crate) fn ctx(mut e: crate::error::Error, what: &str) -> crate::error::Error {
    e.message = format!("{what}: {}", e.message);
    e
}

/// Skip the complete data item at `pos` (any type, any nesting up to [`MAX_DEPTH`]) and
/// return the position after it. Memory: a fixed array of [`MAX_DEPTH`] levels, whatever the
/// input. `what` names the value in messages. Errors: `Malformed` (truncated, not
/// well-formed, a break outside an indefinite container), `Unsupported` (deeper than
/// [`MAX_DEPTH`]).
pub(crate) fn skip(buf: &[u8], pos: usize, what: &str) -> Result<usize> {
    let start = pos;
    let mut stack = [0u64; MAX_DEPTH];
    let mut depth = 0usize;
    let mut pos = pos;
    loop {
        let h = head(buf, pos).map_err(|e| ctx(e, what))?;
        let item_start = pos;
        match h.major {
            2 | 3 => pos = walk_string(buf, pos, &h, &mut |_, _| {}).map_err(|e| ctx(e, what))?,
            4 | 5 => {
                pos += h.len;
                let n = items_to_come(h.arg, h.major == 5, h.indefinite());
                if n != 0 {
                    if depth == MAX_DEPTH {
                        bail!(Unsupported, "{what} at byte {start} is nested deeper than {MAX_DEPTH} arrays/maps (PAYLOAD_MAX_DEPTH; at byte {item_start})");
                    }
                    stack[depth] = n;
                    depth += 1;
                    continue;
                }
            }
            6 => {
                // A tag is followed by its content: not an item by itself.
                pos += h.len;
                continue;
            }
            7 if h.is_break() => {
                if depth == 0 || stack[depth - 1] != INDEF {
                    bail!(Malformed, "{what}: unexpected CBOR break (0xff) at byte {pos} outside an indefinite-length array or map");
                }
                pos += 1;
                depth -= 1;
            }
            _ => pos += h.len,
        }
        if complete_item(&mut stack, &mut depth) {
            return Ok(pos);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn skips_every_kind() {
        let cases: &[&[u8]] = &[
            &[0x01],
            &[0x1b, 0, 0, 0, 0, 0, 0, 0, 1],
            &[0x38, 0x10],
            &[0x43, 1, 2, 3],
            &[0x5f, 0x41, 1, 0x40, 0xff],
            &[0x7f, 0x61, b'a', 0xff],
            &[0x82, 0x01, 0x9f, 0x02, 0xbf, 0x01, 0x02, 0xff, 0xff],
            &[0xa1, 0x01, 0x80],
            &[0xd8, 0x56, 0xc1, 0x40],
            &[0xf9, 0x3c, 0x00],
            &[0xf6],
            &[0x9f, 0x9f, 0xff, 0xff],
        ];
        for c in cases {
            let mut m = c.to_vec();
            m.push(0x07);
            assert_eq!(skip(&m, 0, "x").unwrap(), c.len(), "{c:02x?}");
            // every prefix is an error
            for i in 0..c.len() {
                assert_eq!(skip(&c[..i], 0, "x").unwrap_err().kind, ErrorKind::Malformed, "{c:02x?} prefix {i}");
            }
        }
        assert_eq!(skip(&[0xff], 0, "x").unwrap_err().kind, ErrorKind::Malformed);
        assert_eq!(skip(&[0x1c], 0, "x").unwrap_err().kind, ErrorKind::Malformed);
        assert_eq!(skip(&[0x5f, 0x61, b'a', 0xff], 0, "x").unwrap_err().kind, ErrorKind::Malformed);
        assert_eq!(skip(&[0x62, 0xff, 0xfe], 0, "x").unwrap_err().kind, ErrorKind::Malformed);
    }

    #[test]
    fn depth_limit() {
        for open in [0x81u8, 0x9f, 0xa1] {
            let mut ok = vec![open; MAX_DEPTH];
            if open == 0xa1 {
                ok = [0xa1, 0x00].repeat(MAX_DEPTH);
            }
            ok.push(0x01);
            if open == 0x9f {
                ok.extend(std::iter::repeat_n(0xff, MAX_DEPTH));
            }
            assert_eq!(skip(&ok, 0, "x").unwrap(), ok.len());
            let deep = [0x9f].repeat(MAX_DEPTH + 1);
            let e = skip(&deep, 0, "value of key \"z\"").unwrap_err();
            assert_eq!(e.kind, ErrorKind::Unsupported);
            assert!(e.message.contains("nested deeper than 64") && e.message.contains("at byte 64"), "{}", e.message);
        }
    }
}
