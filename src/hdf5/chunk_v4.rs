//! Reading the chunk index of a chunked dataset whose layout message is version 4 (what
//! libhdf5 writes when the file's lower library bound is 1.10 or later, h5py's
//! `libver='latest'`) straight from its file, for libhdf5 1.10 builds (HDF5 file format
//! specification 3.0, "Data Layout Message" IV.A.2.i version 4, "Fixed Array" III.H; libhdf5's
//! `H5Olayout.c`, `H5FAcache.c`, `H5Dfarray.c`, `H5Dsingle.c`, `H5Dnone.c`). Three of the five
//! index types are read:
//!
//! - **fixed array** (type 3; datasets of fixed maximal dimensions with more than one chunk):
//!   a header (`FAHD`) and a data block (`FADB`) holding one element per chunk of the grid of
//!   the maximal dimensions, in C order, the data block split in pages of `2^page_bits`
//!   elements when it holds more (each page followed by its checksum, a bitmap in the data
//!   block's prefix naming the pages ever written). An element is the chunk's address, and
//!   for a filtered dataset its stored size (in the fewest bytes that hold the chunk's byte
//!   size, plus one, at most 8) and filter mask. An undefined address: no chunk (the fill
//!   value).
//! - **single chunk** (type 1): the one chunk's address (and for a filtered dataset its
//!   stored size and filter mask) in the layout message.
//! - **implicit** (type 2; no filters, early allocation): every chunk of the grid of the
//!   maximal dimensions stored one after the other from the index address, in C order.
//!
//! **Declined** (libhdf5 reads, as before): the extensible array (type 4) and the version-2
//! B-tree (type 5), a layout flag vh5 does not know or "partial edge chunks unfiltered" (flag
//! 0x01), anything that is not what it should be. Every metadata block's Jenkins lookup3
//! checksum is verified ([`lookup3`]): a block libhdf5 would refuse is never used. Every
//! address and length is bounded by the file (`Reader::read`), the element count must equal
//! the dataset's chunk count on its maximal grid (memory bounded by that count, never by what
//! the file claims). The caller (`chunk_index::build`) then checks every entry against
//! libhdf5 as for the B-tree walk.

use super::chunk_btree::{le, Fault, Reader};

type R<T> = std::result::Result<T, String>;

/// Chunk index types of a version 4 layout message (`H5D_chunk_index_t`).
const SINGLE: u8 = 1;
const IMPLICIT: u8 = 2;
const FIXED_ARRAY: u8 = 3;
/// Layout flags: partial edge chunks are stored unfiltered; a single chunk with filters.
const DONT_FILTER_PARTIAL: u8 = 0x01;
const SINGLE_WITH_FILTER: u8 = 0x02;

/// The index of a chunked dataset of layout message version 4 that vh5 reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct V4Index {
    /// The layout message's dimensions: the chunk's, then the element size.
    pub dims: Vec<u64>,
    pub kind: V4Kind,
    /// The index's address (fixed array: its header; single: the chunk; implicit: the first
    /// chunk), relative to the base address; `None`: undefined (no chunk written).
    pub addr: Option<u64>,
}

/// Which index, with its own fields from the layout message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum V4Kind {
    /// Single chunk: (stored size, filter mask) when the layout says it is filtered.
    Single(Option<(u64, u32)>),
    Implicit,
    FixedArray {
        page_bits: u8,
    },
}

impl V4Index {
    /// Bytes of one chunk in the file type (the product of the layout's dimensions).
    pub fn chunk_bytes(&self) -> Option<u64> {
        self.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
    }
}

/// Decode a version 4 chunked layout message `d` (its first byte the version).
pub(super) fn parse(r: &Reader<'_>, d: &[u8]) -> R<V4Index> {
    let bad = || "layout message truncated".to_string();
    let at = |i: usize| d.get(i).copied().ok_or_else(bad);
    if at(1)? != 2 {
        return Err("layout message: not chunked".into());
    }
    let flags = at(2)?;
    if flags & !(DONT_FILTER_PARTIAL | SINGLE_WITH_FILTER) != 0 || flags & DONT_FILTER_PARTIAL != 0 {
        return Err(format!("layout message version 4: flags {flags:#x} (unfiltered partial edge chunks or unknown): not read by vh5"));
    }
    let dimensionality = usize::from(at(3)?);
    if !(2..=crate::geometry::MAX_RANK + 1).contains(&dimensionality) {
        return Err(format!("layout message: dimensionality {dimensionality}"));
    }
    let w = usize::from(at(4)?);
    if !(1..=8).contains(&w) {
        return Err(format!("layout message: {w} bytes per dimension"));
    }
    let dims = (0..dimensionality).map(|j| le(d, 5 + w * j, w).ok_or_else(bad)).collect::<R<Vec<u64>>>()?;
    if dims.contains(&0) {
        return Err("layout message: a dimension of 0".into());
    }
    let mut p = 5 + w * dimensionality;
    let index_type = at(p)?;
    p += 1;
    let kind = match index_type {
        SINGLE if flags & SINGLE_WITH_FILTER != 0 => {
            let size = le(d, p, r.ss).ok_or_else(bad)?;
            let mask = le(d, p + r.ss, 4).ok_or_else(bad)? as u32;
            p += r.ss + 4;
            V4Kind::Single(Some((size, mask)))
        }
        SINGLE => V4Kind::Single(None),
        IMPLICIT => V4Kind::Implicit,
        FIXED_ARRAY => {
            let page_bits = at(p)?;
            p += 1;
            if page_bits == 0 || page_bits > 32 {
                return Err(format!("layout message: fixed array page bits {page_bits}"));
            }
            V4Kind::FixedArray { page_bits }
        }
        4 => return Err("layout message version 4, an extensible array chunk index: not read by vh5".into()),
        5 => return Err("layout message version 4, a version-2 B-tree chunk index: not read by vh5".into()),
        t => return Err(format!("layout message version 4, chunk index type {t}: not read by vh5")),
    };
    if index_type != SINGLE && flags & SINGLE_WITH_FILTER != 0 {
        return Err(format!("layout message: flags {flags:#x} with chunk index type {index_type}"));
    }
    let addr = le(d, p, r.sa).ok_or_else(bad)?;
    Ok(V4Index { dims, kind, addr: (!r.undefined(addr)).then_some(addr) })
}

/// Bob Jenkins' lookup3 `hashlittle` of `data` from `init`, byte by byte (so the same on any
/// host): libhdf5's metadata checksum (`H5_checksum_metadata`, `init` 0). No maintained crate
/// offers exactly this function (those found port lookup2, or wrap lookup3 in a streaming
/// hasher API of their own); the public-domain algorithm is a few lines, checked below
/// against the vectors of lookup3.c's driver and against checksums of libhdf5's own blocks.
pub fn lookup3(data: &[u8], init: u32) -> u32 {
    let mut a = 0xdead_beefu32.wrapping_add(data.len() as u32).wrapping_add(init);
    let (mut b, mut c) = (a, a);
    let word = |k: &[u8], i: usize| -> u32 { (0..4).fold(0u32, |acc, j| acc | u32::from(k.get(i + j).copied().unwrap_or(0)) << (8 * j)) };
    let mut rest = data;
    while rest.len() > 12 {
        a = a.wrapping_add(word(rest, 0));
        b = b.wrapping_add(word(rest, 4));
        c = c.wrapping_add(word(rest, 8));
        // mix
        a = a.wrapping_sub(c) ^ c.rotate_left(4);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a) ^ a.rotate_left(6);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b) ^ b.rotate_left(8);
        b = b.wrapping_add(a);
        a = a.wrapping_sub(c) ^ c.rotate_left(16);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a) ^ a.rotate_left(19);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b) ^ b.rotate_left(4);
        b = b.wrapping_add(a);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    // The last 1 to 12 bytes, zero-padded.
    a = a.wrapping_add(word(rest, 0));
    b = b.wrapping_add(word(rest, 4));
    c = c.wrapping_add(word(rest, 8));
    // final
    c = (c ^ b).wrapping_sub(b.rotate_left(14));
    a = (a ^ c).wrapping_sub(c.rotate_left(11));
    b = (b ^ a).wrapping_sub(a.rotate_left(25));
    c = (c ^ b).wrapping_sub(b.rotate_left(16));
    a = (a ^ c).wrapping_sub(c.rotate_left(4));
    b = (b ^ a).wrapping_sub(a.rotate_left(14));
    (c ^ b).wrapping_sub(b.rotate_left(24))
}

/// `Fault::Declined` unless the last 4 bytes of `block` are the lookup3 checksum of the rest
/// (libhdf5 refuses such a block: "incorrect metadata checksum").
fn check_sum(block: &[u8], what: &str, addr: u64) -> std::result::Result<(), Fault> {
    let n = block.len().checked_sub(4).ok_or("metadata block truncated")?;
    let stored = le(block, n, 4).unwrap_or(0) as u32;
    if lookup3(&block[..n], 0) != stored {
        return Err(Fault::Declined(format!("{what} at address {addr}: incorrect metadata checksum (libhdf5 refuses it)")));
    }
    Ok(())
}

/// What [`Reader::fixed_array`] calls per allocated chunk: (element index on the grid of the
/// maximal dimensions, address relative to the base, stored size, filter mask).
pub(super) type ElementVisitor<'f> = dyn FnMut(u64, u64, u64, u32) -> std::result::Result<(), Fault> + 'f;

impl Reader<'_> {
    /// Read the fixed array whose header is at `hdr_addr` and call `visit` for every element
    /// with a defined address. `page_bits`: the layout message's; `filtered`: whether the
    /// dataset has filters (elements then carry size and mask); `chunk_bytes`: a chunk's size
    /// in the file type; `nelmts`: the chunks of the dataset's maximal grid (the header must
    /// say the same). Every block's checksum verified.
    pub(super) fn fixed_array(
        &self,
        hdr_addr: u64,
        page_bits: u8,
        filtered: bool,
        chunk_bytes: u64,
        nelmts: u64,
        visit: &mut ElementVisitor<'_>,
    ) -> std::result::Result<(), Fault> {
        let (sa, ss) = (self.sa, self.ss);
        let hdr = self.read(hdr_addr, (4 + 4 + ss + sa + 4) as u64, "fixed array header")?;
        if &hdr[..4] != b"FAHD" || hdr[4] != 0 {
            return Err(Fault::Declined(format!("fixed array header at address {hdr_addr}: signature {:?} version {} (FAHD 0 expected)", &hdr[..4], hdr[4])));
        }
        check_sum(&hdr, "fixed array header", hdr_addr)?;
        // Element: address, then (filtered) the stored size in `size_len` bytes and the mask.
        let size_len = if filtered { (1 + (chunk_bytes.max(1).ilog2() as usize + 8) / 8).min(8) } else { 0 };
        let esize = sa + if filtered { size_len + 4 } else { 0 };
        let (class, elmt, bits) = (hdr[5], usize::from(hdr[6]), hdr[7]);
        let n = le(&hdr, 8, ss).unwrap_or(0);
        if class != u8::from(filtered) || elmt != esize || bits != page_bits || n != nelmts {
            return Err(Fault::Declined(format!(
                "fixed array header at address {hdr_addr}: class {class}, {elmt}-byte elements, page bits {bits}, {n} elements; \
                 expected class {}, {esize}-byte elements, page bits {page_bits}, {nelmts} elements (the dataset's chunks)",
                u8::from(filtered)
            )));
        }
        let dblk = le(&hdr, 8 + ss, sa).unwrap_or(0);
        if self.undefined(dblk) || n == 0 {
            return Ok(()); // no data block: no chunk written
        }
        let per_page = 1u64 << page_bits;
        let npages = if n > per_page { n.div_ceil(per_page) } else { 0 };
        let bitmap = npages.div_ceil(8) as usize;
        // Prefix: signature, version, class, header address, page bitmap (then, unpaged, the
        // elements), checksum.
        let prefix = 4 + 2 + sa + bitmap;
        let elems_len = if npages == 0 { n.checked_mul(esize as u64).ok_or("fixed array too large")? } else { 0 };
        let block = self.read(dblk, prefix as u64 + elems_len + 4, "fixed array data block")?;
        if &block[..4] != b"FADB" || block[4] != 0 || block[5] != class || le(&block, 6, sa) != Some(hdr_addr) {
            return Err(Fault::Declined(format!("fixed array data block at address {dblk}: not the data block of the header at address {hdr_addr}")));
        }
        check_sum(&block, "fixed array data block", dblk)?;
        let decode = |buf: &[u8], first: u64, count: u64, visit: &mut ElementVisitor<'_>| -> std::result::Result<(), Fault> {
            for i in 0..count as usize {
                let at = i * esize;
                let addr = le(buf, at, sa).ok_or("fixed array element truncated")?;
                if self.undefined(addr) {
                    continue;
                }
                let (size, mask) = match filtered {
                    true => (le(buf, at + sa, size_len).ok_or("fixed array element truncated")?, le(buf, at + sa + size_len, 4).ok_or("fixed array element truncated")? as u32),
                    false => (chunk_bytes, 0),
                };
                visit(first + i as u64, addr, size, mask)?;
            }
            Ok(())
        };
        if npages == 0 {
            return decode(&block[prefix..], 0, n, visit);
        }
        let page_size = per_page * esize as u64 + 4;
        let pages_at = dblk.checked_add(prefix as u64 + 4).ok_or("fixed array data block address overflows")?;
        for page in 0..npages {
            if block[4 + 2 + sa + (page / 8) as usize] & (0x80 >> (page % 8)) == 0 {
                continue; // never written: every element undefined
            }
            let first = page * per_page;
            let count = per_page.min(n - first);
            let addr = pages_at.checked_add(page * page_size).ok_or("fixed array page address overflows")?;
            let buf = self.read(addr, count * esize as u64 + 4, "fixed array data block page")?;
            check_sum(&buf, "fixed array data block page", addr)?;
            decode(&buf, first, count, visit)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::chunk_btree::tests::with_file;
    use super::*;

    /// `body` followed by its lookup3 checksum.
    fn sealed(mut body: Vec<u8>) -> Vec<u8> {
        let sum = lookup3(&body, 0);
        body.extend_from_slice(&sum.to_le_bytes());
        body
    }

    /// A file holding a fixed array of `n` unfiltered elements (8-byte addresses) at 0 (header)
    /// and 100 (data block), pages of 4 elements when `n` > 4; element `i` is `1000 + i` unless
    /// `i` is in `holes` (undefined); pages in `unwritten` have their bitmap bit clear (and
    /// garbage elements); `damage` applied to the file bytes.
    fn array_file(n: u64, holes: &[u64], unwritten: &[u64], damage: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut hdr = b"FAHD".to_vec();
        hdr.extend_from_slice(&[0, 0, 8, 2]);
        hdr.extend_from_slice(&n.to_le_bytes());
        hdr.extend_from_slice(&100u64.to_le_bytes());
        let mut f = sealed(hdr);
        f.resize(100, 0);
        let elem = |i: u64| if holes.contains(&i) { u64::MAX } else { 1000 + i };
        let npages = if n > 4 { n.div_ceil(4) } else { 0 };
        let mut prefix = b"FADB".to_vec();
        prefix.extend_from_slice(&[0, 0]);
        prefix.extend_from_slice(&0u64.to_le_bytes());
        let mut bitmap = vec![0u8; npages.div_ceil(8) as usize];
        for p in (0..npages).filter(|p| !unwritten.contains(p)) {
            bitmap[(p / 8) as usize] |= 0x80 >> (p % 8);
        }
        prefix.extend_from_slice(&bitmap);
        if npages == 0 {
            (0..n).for_each(|i| prefix.extend_from_slice(&elem(i).to_le_bytes()));
        }
        f.extend_from_slice(&sealed(prefix));
        for p in 0..npages {
            let page: Vec<u8> = (p * 4..(p * 4 + 4).min(n)).flat_map(|i| if unwritten.contains(&p) { [0x55; 8] } else { elem(i).to_le_bytes() }).collect();
            f.extend_from_slice(&sealed(page));
        }
        damage(&mut f);
        f
    }

    fn visit_all(f: &[u8], n: u64) -> std::result::Result<Vec<(u64, u64)>, Fault> {
        let mut seen = Vec::new();
        let mut out = Ok(());
        with_file(f, |r| {
            out = r.fixed_array(0, 2, false, 80, n, &mut |i, addr, size, mask| {
                assert_eq!((size, mask), (80, 0));
                seen.push((i, addr));
                Ok(())
            })
        });
        out.map(|()| seen)
    }

    #[test]
    fn fixed_array_elements_pages_and_holes() {
        // Unpaged: 3 elements, one undefined.
        assert_eq!(visit_all(&array_file(3, &[1], &[], |_| {}), 3).unwrap(), [(0, 1000), (2, 1002)]);
        // Paged: 10 elements in pages of 4, 4 and 2 (the last partial), page 1 never written
        // (its garbage unread), element 9 undefined.
        let want: Vec<(u64, u64)> = [0, 1, 2, 3, 8].iter().map(|&i| (i, 1000 + i)).collect();
        assert_eq!(visit_all(&array_file(10, &[9], &[1], |_| {}), 10).unwrap(), want);
        // Another element count than the dataset's chunks: declined.
        assert!(matches!(visit_all(&array_file(10, &[], &[], |_| {}), 11), Err(Fault::Declined(w)) if w.contains("10 elements")));
    }

    #[test]
    fn fixed_array_block_with_a_wrong_checksum_is_declined() {
        // (byte, block): header's element count, data block bitmap, an element of page 2
        // (pages at 100 + 15 + 4, 36 bytes each).
        for (at, what) in [(9, "fixed array header"), (114, "fixed array data block"), (119 + 72 + 3, "fixed array data block page")] {
            let f = array_file(10, &[], &[], |f| f[at] ^= 0x10);
            let Err(Fault::Declined(why)) = visit_all(&f, 10) else { panic!("{what}: not declined") };
            assert!(why.starts_with(what) && why.ends_with("incorrect metadata checksum (libhdf5 refuses it)"), "{why}");
        }
    }

    #[test]
    fn lookup3_matches_a_block_libhdf5_wrote() {
        // A fixed array header h5py (libhdf5 2.0) wrote: its last 4 bytes are the checksum.
        let hdr = [0x46, 0x41, 0x48, 0x44, 0x00, 0x00, 0x08, 0x0a, 0x8f, 0, 0, 0, 0, 0, 0, 0, 0xdb, 0x01, 0, 0, 0, 0, 0, 0, 0xab, 0x67, 0x86, 0xfb];
        assert_eq!(lookup3(&hdr[..24], 0), 0xfb86_67ab);
        assert!(check_sum(&hdr, "fixed array header", 0).is_ok());
    }

    #[test]
    fn lookup3_matches_the_reference_vectors() {
        // lookup3.c's driver5 (hashlittle).
        assert_eq!(lookup3(b"", 0), 0xdead_beef);
        assert_eq!(lookup3(b"", 0xdead_beef), 0xbd5b_7dde);
        assert_eq!(lookup3(b"Four score and seven years ago", 0), 0x1777_0551);
        assert_eq!(lookup3(b"Four score and seven years ago", 1), 0xcd62_8161);
    }
}
