//! HDF5 names as bytes, and their one printable form.
//!
//! Link names (and so object paths) are byte strings in HDF5: files written by C programs or
//! other tools may hold names that are not UTF-8 (`b"temp\xe9rature"` in Latin-1). vh5
//! carries names as bytes everywhere and never replaces a byte (two distinct names must stay
//! distinct). Where a name is shown — error messages, the CLI's listings — it is written
//! with [`escape`]: valid UTF-8 as it is, a backslash as `\\`, and each byte that is not part
//! of valid UTF-8, or of a control character (newline, tab, DEL, C1), as `\xNN` (two
//! lowercase hex digits). [`unescape`] reads that form back,
//! so the text is unambiguous and round-trips.

/// The printable form of the name `bytes` (see the module docs): `a\xe9` for `b"a\xe9"`,
/// `a\\b` for `b"a\\b"`, `température` for its UTF-8 bytes, `a\x0ab` for `b"a\nb"` (control
/// characters, C0, DEL and C1, as the `\xNN` of their UTF-8 bytes).
pub fn escape(bytes: &[u8]) -> String {
    escaped(bytes, true)
}

/// Text from libhdf5 (error stack descriptions, which quote names: "object 'a\xe9' doesn't
/// exist") with each byte that is not UTF-8 as `\xNN` instead of U+FFFD, so two names stay
/// apart in it; backslashes are kept as they are (prose, not a name to read back).
pub fn escape_text(bytes: &[u8]) -> String {
    escaped(bytes, false)
}

fn escaped(bytes: &[u8], backslashes: bool) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for ch in chunk.valid().chars() {
            if ch == '\\' && backslashes {
                out.push_str("\\\\");
            } else if ch.is_control() && backslashes {
                // A newline, tab, DEL or C1 control would break or hide in a listing
                // (`a\x7fb` shows as `ab`): written as its UTF-8 bytes, which `unescape`
                // reads back.
                for b in ch.encode_utf8(&mut [0; 4]).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            } else {
                out.push(ch);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// The bytes of the printable form `text` ([`escape`]'s output, or any UTF-8 text in which
/// every backslash starts `\\` or `\xNN`). Errors: a backslash followed by anything else
/// (the message says how to write a backslash), or `\x` without two hex digits.
pub fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b'\\') => {
                out.push(b'\\');
                i += 2;
            }
            Some(b'x') => {
                let hex = b.get(i + 2..i + 4).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
                let Some(v) = hex else {
                    return Err(format!("`{text}`: `\\x` at byte {i} is not followed by two hex digits (a byte is written `\\xNN`, a backslash `\\\\`)"));
                };
                out.push(v);
                i += 4;
            }
            _ => return Err(format!("`{text}`: a backslash at byte {i} starts no escape (write a backslash as `\\\\`, a byte that is not UTF-8 as `\\xNN`)")),
        }
    }
    Ok(out)
}

/// libhdf5's name order of link paths relative to one group (`H5_ITER_INC` on
/// `H5_INDEX_NAME`): component by component, each compared byte by byte (`strcmp`), a group
/// before what it holds: `a`, `a/b`, `a-x`.
pub fn path_order(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.split(|&c| c == b'/').cmp(b.split(|&c| c == b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_marks_bytes_that_are_not_utf8_and_backslashes() {
        assert_eq!(escape(b"a\xe9"), "a\\xe9");
        assert_eq!(escape("température".as_bytes()), "température");
        assert_eq!(escape(b"a\\xe9"), "a\\\\xe9");
        assert_eq!(escape(b"\xed\xa0\x80/x\xff"), "\\xed\\xa0\\x80/x\\xff");
        assert_ne!(escape(b"a\xe9"), escape(b"a\xe8"));
        assert_eq!(escape_text(b"object 'a\xe9' in C:\\x"), "object 'a\\xe9' in C:\\x");
        assert_eq!(escape(b"nl\nx\ttab\x7fdel"), "nl\\x0ax\\x09tab\\x7fdel");
        assert_eq!(escape("c1\u{85}".as_bytes()), "c1\\xc2\\x85");
    }

    #[test]
    fn unescape_reads_back_every_escaped_name() {
        for name in [&b"a\xe9"[..], b"a\\xe9", b"\\", b"x\\\\y\xff\xfe", "é/\u{1F600}".as_bytes(), b"", b"\xc3", b"a\x7fb\n\t", "\u{85}".as_bytes()] {
            assert_eq!(unescape(&escape(name)).unwrap(), name, "{name:?}");
        }
        assert_eq!(unescape("a\\xE9").unwrap(), b"a\xe9");
        assert!(unescape("a\\b").unwrap_err().contains("starts no escape"));
        assert!(unescape("a\\x9").unwrap_err().contains("two hex digits"));
        assert!(unescape("a\\").is_err());
    }

    #[test]
    fn path_order_is_byte_order_per_component() {
        let mut v: Vec<&[u8]> = vec![b"a-x", b"a/b", b"a\xe9", b"a", b"a\xe8"];
        v.sort_by(|a, b| path_order(a, b));
        assert_eq!(v, vec![&b"a"[..], b"a/b", b"a-x", b"a\xe8", b"a\xe9"]);
    }
}
