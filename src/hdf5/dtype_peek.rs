//! Finding, before libhdf5 opens a dataset, a damaged datatype message that libhdf5 1.10
//! decodes without checking and crashes on (both found by the conformance suite's byte flips,
//! both refused by libhdf5 >= 2.0's `H5O__dtype_decode_helper`, so refusing them is libhdf5's
//! own rule, on every build):
//!
//! - an enumeration whose size differs from its base type's: libhdf5 1.10.8 allocates the
//!   member values by the base type's size and copies them by the enumeration's (`H5T_copy`
//!   inside `H5Oopen`: a segmentation fault; seed 26 at 8000 cases, "metadata byte 863" of an
//!   `enum>i2` dataset whose size byte was flipped; 2.0: "ENUM datatype size does not match
//!   parent");
//! - a compound member reaching past the end of its compound (member offset + member size >
//!   compound size): libhdf5 1.10.8 crashes opening it (seed 102 at 8000 cases, "metadata
//!   byte 951" of a `>c8` dataset, a complex number stored as a compound of two `>f4`; 2.0:
//!   "member type extends outside its parent compound type").
//!
//! Format read (HDF5 file format specification 3.0, IV.A.2.d "Datatype Message"): class and
//! version (byte 0), class bit fields (bytes 1-3), size (bytes 4-7), then the class's
//! properties: fixed-point 4 bytes, floating-point 12, time 2, string 0, bitfield 4, opaque
//! the tag (length in the low 8 class bits), reference 0; compound (member count in the low 16
//! class bits; each member's name, NUL-terminated and padded to 8 bytes before version 3, its
//! byte offset, 4 bytes before version 3 and the fewest bytes holding the compound's size from
//! version 3, version 1's 28 bytes of array dimensions, then its type); enumeration (base
//! type, then the member names as for compounds, then the values: count x base size);
//! variable-length (base type); array (rank, 3 reserved bytes before version 3, dimensions,
//! permutations before version 3, base type). Any other class or version, or a message that
//! ends early, says nothing: libhdf5 then decodes (and judges) it as before. Pure Rust over
//! the message's bytes; recursion bounded by `MAX_DEPTH` (64) levels.

/// Nesting of datatypes walked (each level is at least 8 bytes of the message).
const MAX_DEPTH: usize = 64;

/// Why the walk stopped early.
enum Stop {
    /// The message breaks a rule libhdf5 >= 2.0 enforces: the reason.
    Damaged(String),
    /// vh5 does not read this (class, version, truncation): no verdict.
    Unknown,
}

type W<T> = Result<T, Stop>;

/// A description of the damage when the datatype message `msg` (the message's data, not its
/// header) holds, at any depth, an enumeration whose size is not its base type's or a
/// compound member reaching past its compound's end; `None` when it has neither or vh5 cannot
/// read the message (see the module docs).
pub(super) fn datatype_damage(msg: &[u8]) -> Option<String> {
    match walk(msg, 0, 0) {
        Err(Stop::Damaged(why)) => Some(why),
        _ => None,
    }
}

fn byte(m: &[u8], at: usize) -> W<usize> {
    m.get(at).map(|&b| usize::from(b)).ok_or(Stop::Unknown)
}

fn uint(m: &[u8], at: usize, w: usize) -> W<u64> {
    super::chunk_btree::le(m, at, w).ok_or(Stop::Unknown)
}

/// Position after the NUL-terminated name at `at`: padded to a multiple of 8 bytes (NUL
/// included) before version 3.
fn skip_name(m: &[u8], at: usize, version: usize) -> W<usize> {
    let n = m.get(at..).and_then(|r| r.iter().position(|&b| b == 0)).ok_or(Stop::Unknown)?;
    Ok(at + if version < 3 { (n + 8) / 8 * 8 } else { n + 1 })
}

/// Bytes of a version-3 compound member offset: the fewest holding `size` (libhdf5's
/// `H5VM_limit_enc_size`: floor(log2(size)) / 8 + 1).
fn offset_bytes(size: u64) -> usize {
    (size.max(1).ilog2() / 8 + 1) as usize
}

/// Walk the datatype encoded at `m[at..]`: (position after it, its size in bytes).
fn walk(m: &[u8], at: usize, depth: usize) -> W<(usize, u64)> {
    if depth > MAX_DEPTH {
        return Err(Stop::Unknown);
    }
    let head = byte(m, at)?;
    let version = head >> 4;
    let flags = uint(m, at + 1, 3)?;
    let size = uint(m, at + 4, 4)?;
    if !(1..=5).contains(&version) {
        return Err(Stop::Unknown);
    }
    let p = at + 8;
    let end = match head & 0x0f {
        0 | 4 => p + 4,
        1 => p + 12,
        2 => p + 2,
        3 | 7 => p,
        5 => p + (flags & 0xff) as usize,
        6 => compound(m, p, version, flags, size, depth)?,
        8 => {
            let (mut q, base) = walk(m, p, depth + 1)?;
            if base != size {
                return Err(Stop::Damaged(format!("an enumeration of {size} bytes over a base type of {base} bytes (datatype message byte {at})")));
            }
            for _ in 0..flags & 0xffff {
                q = skip_name(m, q, version)?;
            }
            q + (flags & 0xffff) as usize * base as usize
        }
        9 => walk(m, p, depth + 1)?.0,
        10 => {
            let rank = byte(m, p)?;
            let dims = if version < 3 { p + 4 } else { p + 1 };
            let base = dims + 4 * rank * if version < 3 { 2 } else { 1 };
            walk(m, base, depth + 1)?.0
        }
        _ => return Err(Stop::Unknown),
    };
    if end > m.len() {
        return Err(Stop::Unknown);
    }
    Ok((end, size))
}

/// Walk the members of a compound of `size` bytes starting at `p`: the position after the
/// last. A member whose offset + size exceeds `size` is damage.
fn compound(m: &[u8], mut p: usize, version: usize, flags: u64, size: u64, depth: usize) -> W<usize> {
    for k in 0..flags & 0xffff {
        p = skip_name(m, p, version)?;
        let width = if version < 3 { 4 } else { offset_bytes(size) };
        let offset = uint(m, p, width)?;
        let at = p;
        p += if version == 1 { 4 + 28 } else { width };
        let (end, msize) = walk(m, p, depth + 1)?;
        if offset.saturating_add(msize) > size {
            return Err(Stop::Damaged(format!(
                "compound member {k} of {msize} bytes at byte offset {offset} reaches past the end of its compound of {size} bytes (datatype message byte {at})"
            )));
        }
        p = end;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A datatype header: class, version, class bits, size.
    fn head(class: u8, version: u8, bits: u32, size: u32) -> Vec<u8> {
        let mut v = vec![class | (version << 4)];
        v.extend_from_slice(&bits.to_le_bytes()[..3]);
        v.extend_from_slice(&size.to_le_bytes());
        v
    }

    fn int(size: u32) -> Vec<u8> {
        let mut v = head(0, 1, 0, size);
        v.extend_from_slice(&[0, 0, (8 * size) as u8, 0]);
        v
    }

    /// An enumeration of `size` bytes over an integer of `base` bytes, members "a" and "bc".
    fn enumeration(version: u8, size: u32, base: u32) -> Vec<u8> {
        let mut v = head(8, version, 2, size);
        v.extend(int(base));
        for name in [&b"a"[..], b"bc"] {
            let start = v.len();
            v.extend_from_slice(name);
            v.push(0);
            if version < 3 {
                v.resize(start + (name.len() + 8) / 8 * 8, 0); // padded from the name's start
            }
        }
        v.extend(std::iter::repeat_n(7u8, 2 * base as usize));
        v
    }

    #[test]
    fn enum_size_matching_its_base_is_no_damage() {
        for version in [1, 2, 3] {
            assert_eq!(datatype_damage(&enumeration(version, 2, 2)), None, "version {version}");
        }
        assert_eq!(datatype_damage(&int(4)), None);
    }

    #[test]
    fn enum_size_differing_from_its_base_is_damage() {
        for version in [1, 3] {
            let why = datatype_damage(&enumeration(version, 4, 2)).expect("damage");
            assert!(why.contains("enumeration of 4 bytes over a base type of 2 bytes"), "{why}");
        }
    }

    /// A version-3 compound of 8 bytes with one member "e" at offset 0 (1 offset byte): an
    /// array of 2 x an enumeration of 4 bytes over an integer of `base` bytes.
    fn compound_of_enum_array(base: u32) -> Vec<u8> {
        let mut arr = head(10, 3, 0, 8);
        arr.push(1);
        arr.extend_from_slice(&2u32.to_le_bytes());
        arr.extend(enumeration(3, 4, base));
        let mut c = head(6, 3, 1, 8);
        c.extend_from_slice(b"e\0");
        c.push(0);
        c.extend(arr);
        c
    }

    #[test]
    fn enum_inside_a_compound_and_an_array_is_found() {
        assert!(datatype_damage(&compound_of_enum_array(2)).is_some());
        // the same with a sound enumeration: nothing
        assert_eq!(datatype_damage(&compound_of_enum_array(4)), None);
    }

    /// A compound of `size` bytes (version 1, 2 or 3) with members "re" and "im", integers of
    /// `msize` bytes at byte offsets `offsets`.
    fn compound(version: u8, size: u32, msize: u32, offsets: [u32; 2]) -> Vec<u8> {
        let mut c = head(6, version, 2, size);
        for (name, off) in [(&b"re"[..], offsets[0]), (b"im", offsets[1])] {
            let start = c.len();
            c.extend_from_slice(name);
            c.push(0);
            if version < 3 {
                c.resize(start + (name.len() + 8) / 8 * 8, 0);
                c.extend_from_slice(&off.to_le_bytes());
                if version == 1 {
                    c.extend_from_slice(&[0; 28]);
                }
            } else {
                c.extend_from_slice(&off.to_le_bytes()[..offset_bytes(u64::from(size))]);
            }
            c.extend(int(msize));
        }
        c
    }

    #[test]
    fn compound_member_inside_its_compound_is_no_damage() {
        for version in [1, 2, 3] {
            assert_eq!(datatype_damage(&compound(version, 8, 4, [0, 4])), None, "version {version}");
            // padding after the last member, members out of order: still inside
            assert_eq!(datatype_damage(&compound(version, 16, 4, [8, 0])), None, "version {version}");
        }
    }

    #[test]
    fn compound_member_past_its_compound_end_is_damage() {
        for version in [1, 2, 3] {
            // the second member at offset 5 (a flipped offset byte): 5 + 4 > 8
            let why = datatype_damage(&compound(version, 8, 4, [0, 5])).expect("damage");
            assert!(why.contains("compound member 1 of 4 bytes at byte offset 5 reaches past the end of its compound of 8 bytes"), "{why}");
            // members larger than the compound (a flipped size byte)
            assert!(datatype_damage(&compound(version, 8, 8, [0, 4])).is_some(), "version {version}");
            // a compound of 2 bytes: offsets of 1 byte in version 3
            assert!(datatype_damage(&compound(version, 2, 4, [0, 0])).is_some(), "version {version}");
        }
    }

    #[test]
    fn truncated_or_unknown_messages_give_no_verdict() {
        let e = enumeration(1, 4, 2);
        for n in 0..16 {
            // cut inside the base type: the enumeration cannot be judged
            assert_eq!(datatype_damage(&e[..n]), None, "cut at {n}");
        }
        assert_eq!(datatype_damage(&head(12, 1, 0, 4)), None);
        assert_eq!(datatype_damage(&head(0, 0, 0, 4)), None);
        // deeply nested variable-length types: bounded, no verdict
        let mut v = Vec::new();
        for _ in 0..200 {
            v.extend(head(9, 1, 0, 16));
        }
        v.extend(int(4));
        assert_eq!(datatype_damage(&v), None);
    }
}
