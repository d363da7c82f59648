//! Finding, before libhdf5 opens a dataset, a damaged datatype message that libhdf5 1.10
//! decodes without checking and crashes on. An enumeration whose size differs from its base
//! type's: libhdf5 1.10.8 allocates the member values by the base type's size and copies them
//! by the enumeration's (`H5T_copy` inside `H5Oopen`: a segmentation fault; the conformance
//! suite's seed 26 at 8000 cases, "metadata byte 863" of an `enum>i2` dataset whose size byte
//! was flipped). libhdf5 >= 2.0 refuses such a message ("ENUM datatype size does not match
//! parent", `H5O__dtype_decode_helper`), so refusing it is libhdf5's own rule, on every build.
//! Two more of 2.0's rules, whose breach crashed libhdf5 1.10.8 the same way (seeds 54, 58 and
//! 59 at 8000 cases: one flipped size byte): a compound member reaching past the compound's
//! size ("member type extends outside its parent compound type"), and, in object headers
//! without a checksum (version 1), an integer, float or bitfield of more than one byte whose
//! size in bits exceeds twice its precision + offset ("datatype has unusually large # of
//! unused bits", `H5T_is_numeric_with_unusual_unused_bits`; libhdf5 2.x reads such a type only
//! with `H5Pset_relax_file_integrity_checks`, which vh5 does not offer). vh5 applies this one
//! only to sizes other than 2, 4 and 8 bytes: the crashes came from sizes of millions of bytes,
//! while a 2-, 4- or 8-byte number of reduced precision (a 12-bit integer at bit offset 0 in 4
//! bytes, which HDF5 2.x writes with that relaxation and libhdf5 1.10 writes and reads as any
//! other type) is a valid type; libhdf5 opens it and vh5 reads it as it reads the same
//! precision at another offset (raw records only: numpy has no dtype for it).
//!
//! And a number type whose bit fields do not fit: bit offset + precision past the type's bits,
//! or a floating-point type's sign, exponent or mantissa outside the precision, empty or
//! overlapping (what `H5Tset_fields` refuses to create): libhdf5 1.10.8 opens it and converts
//! with it, reading other values in every process and planner (seed 104 at 8000 cases,
//! "metadata byte 887" of a big-endian float dataset: a mantissa of 175 bits in a 32-bit
//! precision; 2.0: "mantissa range out of bounds").
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
/// header) holds, at any depth, an enumeration whose size is not its base type's, a compound
/// member reaching past its compound's size or (`checksummed` false: a version-1 object
/// header, no checksum) a number with unusually many unused bits; `None` when it has none
/// or vh5 cannot read the message (see the module docs).
pub(super) fn type_damage(msg: &[u8], checksummed: bool) -> Option<String> {
    match walk(msg, 0, 0, checksummed) {
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
/// `ck`: the object header has a checksum (see [`type_damage`]).
fn walk(m: &[u8], at: usize, depth: usize, ck: bool) -> W<(usize, u64)> {
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
        class @ (0 | 4) => {
            atomic_bits(m, p, class, size, at, ck)?;
            p + 4
        }
        1 => {
            float_fields(m, p, flags, size, at, ck)?;
            p + 12
        }
        2 => p + 2,
        3 | 7 => p,
        5 => p + (flags & 0xff) as usize,
        6 => compound(m, p, version, flags, size, depth, ck)?,
        8 => {
            let (mut q, base) = walk(m, p, depth + 1, ck)?;
            if base != size {
                return Err(Stop::Damaged(format!("an enumeration of {size} bytes over a base type of {base} bytes (datatype message byte {at})")));
            }
            for _ in 0..flags & 0xffff {
                q = skip_name(m, q, version)?;
            }
            q + (flags & 0xffff) as usize * base as usize
        }
        9 => walk(m, p, depth + 1, ck)?.0,
        10 => {
            let rank = byte(m, p)?;
            let dims = if version < 3 { p + 4 } else { p + 1 };
            let base = dims + 4 * rank * if version < 3 { 2 } else { 1 };
            walk(m, base, depth + 1, ck)?.0
        }
        _ => return Err(Stop::Unknown),
    };
    if end > m.len() {
        return Err(Stop::Unknown);
    }
    Ok((end, size))
}

/// Check the bit offset and precision of a fixed-point (class 0), floating-point (1) or
/// bitfield (4) type of `size` bytes (properties at `p`). Without a header checksum (`ck`
/// false), libhdf5 >= 2.0's `H5T_is_numeric_with_unusual_unused_bits`: more than one byte,
/// precision < size * 8 and size * 8 > 2 * (precision + offset), for sizes other than 2, 4
/// and 8 bytes (see the module docs). For numbers (not bitfields):
/// offset + precision must fit in the type's bits. Returns the precision.
fn atomic_bits(m: &[u8], p: usize, class: usize, size: u64, at: usize, ck: bool) -> W<u64> {
    let (offset, prec) = (uint(m, p, 2)?, uint(m, p + 2, 2)?);
    let bits = size.saturating_mul(8);
    let valid_size = matches!(size, 2 | 4 | 8);
    if !ck && size > 1 && !valid_size && prec < bits && bits > 2 * (prec + offset) {
        return Err(Stop::Damaged(format!(
            "a number of {size} bytes with {prec} bits of precision at bit offset {offset}: unusually many unused bits (datatype message byte {at})"
        )));
    }
    if class != 4 && offset + prec > bits {
        return Err(Stop::Damaged(format!("a number type of {size} bytes with bit offset {offset} and precision {prec} (datatype message byte {at})")));
    }
    Ok(prec)
}

/// Check the bit fields of a floating-point type (class bits `flags`, properties at `p`):
/// what `H5Tset_fields` requires of every type libhdf5 creates (and libhdf5 >= 2.0 checks when
/// decoding one): a known normalization, sign bit, exponent and mantissa inside the
/// precision, exponent and mantissa not empty, no two fields overlapping.
fn float_fields(m: &[u8], p: usize, flags: u64, size: u64, at: usize, ck: bool) -> W<()> {
    let prec = atomic_bits(m, p, 1, size, at, ck)?;
    let sign = (flags >> 8) & 0xff;
    let (epos, esize, mpos, msize) = (uint(m, p + 4, 1)?, uint(m, p + 5, 1)?, uint(m, p + 6, 1)?, uint(m, p + 7, 1)?);
    let why = if (flags >> 4) & 3 == 3 {
        "an unknown normalization"
    } else if sign >= prec {
        "its sign bit outside the precision"
    } else if esize == 0 || msize == 0 {
        "an empty exponent or mantissa"
    } else if epos + esize > prec || mpos + msize > prec {
        "its exponent or mantissa outside the precision"
    } else if (epos..epos + esize).contains(&sign) || (mpos..mpos + msize).contains(&sign) || (epos < mpos + msize && mpos < epos + esize) {
        "overlapping sign, exponent and mantissa"
    } else {
        return Ok(());
    };
    Err(Stop::Damaged(format!(
        "a floating-point type with {why} (precision {prec}, sign bit {sign}, exponent {esize} bits at {epos}, mantissa {msize} bits at {mpos}; datatype message byte {at})"
    )))
}

/// Walk a compound's members starting at `p`: the position after the last. A member whose
/// offset + size exceeds the compound's `size` is damage (libhdf5 >= 2.0: "member type
/// extends outside its parent compound type"; libhdf5 1.10.8 crashed on one: seed 58 at 8000
/// cases, a flipped size byte of a `<c16` member).
fn compound(m: &[u8], mut p: usize, version: usize, flags: u64, size: u64, depth: usize, ck: bool) -> W<usize> {
    for i in 0..flags & 0xffff {
        p = skip_name(m, p, version)?;
        let w = if version < 3 { 4 } else { offset_bytes(size) };
        let offset = uint(m, p, w)?;
        p += if version == 1 { 4 + 28 } else { w };
        let (q, msize) = walk(m, p, depth + 1, ck)?;
        if offset.checked_add(msize).is_none_or(|end| end > size) {
            return Err(Stop::Damaged(format!("compound member {i} of {msize} bytes at offset {offset} reaches past the compound's {size} bytes (datatype message byte {p})")));
        }
        p = q;
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As found in a version-2 object header (checksummed).
    fn type_damage_v2(m: &[u8]) -> Option<String> {
        type_damage(m, true)
    }

    /// An integer of `size` bytes with `prec` bits of precision at bit offset 0.
    fn int_prec(size: u32, prec: u16) -> Vec<u8> {
        let mut v = head(0, 1, 0, size);
        v.extend_from_slice(&0u16.to_le_bytes());
        v.extend_from_slice(&prec.to_le_bytes());
        v
    }

    #[test]
    fn numbers_with_unusually_many_unused_bits_in_unchecksummed_headers() {
        // seed 54 at 8000 cases: a `<u4` whose size byte was flipped to 9764868 bytes
        let why = type_damage(&int_prec(9764868, 32), false).expect("damage");
        assert!(why.contains("unusually many unused bits"), "{why}");
        // 8 bits in 3 or 16 bytes: 24 > 2 * 8, 128 > 2 * 8
        for size in [3, 16] {
            assert!(type_damage(&int_prec(size, 8), false).is_some(), "{size}");
        }
        // 17 bits in 4 bytes, full precision, 1-byte numbers: usual; a 12-bit number in 4 bytes
        // (32 > 2 * 12; libhdf5 2.x refuses it without H5Pset_relax_file_integrity_checks) or
        // 7 bits in 2 or 8 bytes: valid sizes, opened by libhdf5 1.10 as any reduced precision
        for (size, prec) in [(4, 17), (4, 32), (1, 3), (4, 12), (2, 7), (8, 7)] {
            assert_eq!(type_damage(&int_prec(size, prec), false), None, "{size} {prec}");
        }
        // checksummed headers: libhdf5 trusts the checksum
        assert_eq!(type_damage(&int_prec(9764868, 32), true), None);
    }

    /// A compound of `size` bytes (version 1, 2 or 3) with members "re" and "im", integers of
    /// `msize` bytes at byte offsets `offsets`.
    fn compound_of(version: u8, size: u32, msize: u32, offsets: [u32; 2]) -> Vec<u8> {
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
    fn compound_member_past_the_compound_is_damage() {
        for version in [1, 2, 3] {
            assert_eq!(type_damage_v2(&compound_of(version, 16, 8, [0, 8])), None, "version {version}");
            // padding after the last member, members out of order: still inside
            assert_eq!(type_damage_v2(&compound_of(version, 24, 8, [16, 0])), None, "version {version}");
            let why = type_damage_v2(&compound_of(version, 12, 8, [0, 8])).expect("damage");
            assert!(why.contains("compound member 1 of 8 bytes at offset 8 reaches past the compound's 12 bytes"), "{why}");
            // members larger than the compound (a flipped size byte)
            assert!(type_damage_v2(&compound_of(version, 2, 4, [0, 0])).is_some(), "version {version}");
        }
    }

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
            assert_eq!(type_damage_v2(&enumeration(version, 2, 2)), None, "version {version}");
        }
        assert_eq!(type_damage_v2(&int(4)), None);
    }

    #[test]
    fn enum_size_differing_from_its_base_is_damage() {
        for version in [1, 3] {
            let why = type_damage_v2(&enumeration(version, 4, 2)).expect("damage");
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
        assert!(type_damage_v2(&compound_of_enum_array(2)).is_some());
        // the same with a sound enumeration: nothing
        assert_eq!(type_damage_v2(&compound_of_enum_array(4)), None);
    }

    /// A floating-point type of `size` bytes: class bits (sign position `sign`, normalization
    /// `norm`), offset, precision, exponent and mantissa positions and sizes.
    fn float(size: u32, sign: u8, norm: u8, bits: [u16; 2], fields: [u8; 4]) -> Vec<u8> {
        let mut v = head(1, 1, u32::from(norm) << 4 | u32::from(sign) << 8 | 1, size);
        v.extend_from_slice(&bits[0].to_le_bytes());
        v.extend_from_slice(&bits[1].to_le_bytes());
        v.extend_from_slice(&fields);
        v.extend_from_slice(&127u32.to_le_bytes());
        v
    }

    #[test]
    fn number_types_libhdf5_creates_are_no_damage() {
        // IEEE f4 / f8 / f2, a 20-bit float at bit offset 4 of 4 bytes, integers of full and
        // reduced precision
        assert_eq!(type_damage_v2(&float(4, 31, 2, [0, 32], [23, 8, 0, 23])), None);
        assert_eq!(type_damage_v2(&float(8, 63, 2, [0, 64], [52, 11, 0, 52])), None);
        assert_eq!(type_damage_v2(&float(2, 15, 2, [0, 16], [10, 5, 0, 10])), None);
        assert_eq!(type_damage_v2(&float(4, 19, 2, [4, 20], [13, 6, 0, 13])), None);
        assert_eq!(type_damage_v2(&int(4)), None);
        let mut i12 = int(2);
        i12[10] = 12;
        i12[8] = 4; // offset 4, precision 12 of 16 bits
        assert_eq!(type_damage_v2(&i12), None);
    }

    #[test]
    fn number_types_whose_bit_fields_do_not_fit_are_damage() {
        for (t, words) in [
            // seed 104's flip: a mantissa of 175 bits in 32
            (float(4, 31, 2, [0, 32], [23, 8, 0, 175]), "exponent or mantissa outside the precision"),
            (float(4, 31, 2, [0, 32], [30, 8, 0, 23]), "exponent or mantissa outside the precision"),
            (float(4, 32, 2, [0, 32], [23, 8, 0, 23]), "sign bit outside the precision"),
            (float(4, 31, 2, [0, 32], [23, 0, 0, 23]), "empty exponent or mantissa"),
            (float(4, 31, 2, [0, 32], [20, 8, 0, 23]), "overlapping"),
            (float(4, 25, 2, [0, 32], [23, 8, 0, 23]), "overlapping"),
            (float(4, 31, 3, [0, 32], [23, 8, 0, 23]), "unknown normalization"),
            (float(4, 31, 2, [8, 32], [23, 8, 0, 23]), "bit offset 8 and precision 32"),
        ] {
            let why = type_damage_v2(&t).expect(words);
            assert!(why.contains(words), "{why}");
        }
        let mut i = int(2);
        i[10] = 17; // precision 17 of 16 bits
        assert!(type_damage_v2(&i).expect("damage").contains("precision 17"));
    }

    #[test]
    fn truncated_or_unknown_messages_give_no_verdict() {
        let e = enumeration(1, 4, 2);
        for n in 0..16 {
            // cut inside the base type: the enumeration cannot be judged
            assert_eq!(type_damage_v2(&e[..n]), None, "cut at {n}");
        }
        assert_eq!(type_damage_v2(&head(12, 1, 0, 4)), None);
        assert_eq!(type_damage_v2(&head(0, 0, 0, 4)), None);
        // deeply nested variable-length types: bounded, no verdict
        let mut v = Vec::new();
        for _ in 0..200 {
            v.extend(head(9, 1, 0, 16));
        }
        v.extend(int(4));
        assert_eq!(type_damage_v2(&v), None);
    }
}
