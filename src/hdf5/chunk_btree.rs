//! Reading the chunk index of a chunked dataset straight from its file (HDF5 file format
//! specification 3.0, "Data Object Headers" IV.A, "Data Layout Message" IV.A.2.i, "Version 1
//! B-trees" III.A.1): the dataset's object header (version 1 or 2, continuation blocks
//! followed), its layout message (version 3, chunked: the B-tree's address and the chunk
//! dimensions) and the version-1 B-tree of raw data chunks (node type 1) it points to. Only
//! what [`super::chunk_index`] needs, every length and address bounded by the file; a layout
//! message of version 4 is handed to `super::chunk_v4` (libhdf5 1.10 builds); anything else (a node that is not
//! what it should be) is an `Err(reason)`: the caller then leaves the reading to libhdf5. Pure Rust over positioned
//! reads of the file; no libhdf5 call, no lock needed. On libhdf5 >= 1.14 the chunk index
//! comes from libhdf5's `H5Dchunk_iter` instead: only the object header and layout message
//! readers (for `super::layout_peek`) are built there.

use std::fs::File;
use std::os::unix::fs::FileExt;

/// Largest object header block or B-tree node read, bytes.
const MAX_BLOCK: u64 = 16 << 20;
/// Object header blocks (the first and its continuations) followed at most.
const MAX_OH_BLOCKS: usize = 256;
/// B-tree depth accepted.
#[cfg(not(hdf5_1_14))]
const MAX_LEVEL: u8 = 64;
/// Layout message type.
const LAYOUT: u16 = 0x0008;
/// Datatype message type.
const DATATYPE: u16 = 0x0003;
/// Filter pipeline message type.
const PIPELINE: u16 = 0x000B;
/// Object header message flag: the message is shared (its data is a reference).
const SHARED: u8 = 0x02;
/// Object header continuation message type.
const CONTINUATION: u16 = 0x0010;

type R<T> = std::result::Result<T, String>;
/// Entries of a B-tree node read with its header in one positioned read (libhdf5 writes up
/// to 64: twice its default chunk B-tree rank `istore_k` of 32).
#[cfg(not(hdf5_1_14))]
const NODE_ENTRIES: usize = 64;
#[cfg(not(hdf5_1_14))]
/// What [`Reader::walk`] calls per chunk: (offsets incl. the element offset, stored size, filter mask, address).
pub(super) type ChunkVisitor<'f> = dyn FnMut(&[u64], u32, u32, u64) -> std::result::Result<(), Fault> + 'f;

/// Positioned reads of one file whose addresses are relative to `base`.
pub(super) struct Reader<'a> {
    pub file: &'a File,
    pub file_len: u64,
    pub base: u64,
    /// Size of addresses / lengths in the file (2, 4 or 8 bytes).
    pub sa: usize,
    pub ss: usize,
}

/// Little-endian unsigned integer of `w` bytes at `buf[at..]` (`None` past the end).
pub(super) fn le(buf: &[u8], at: usize, w: usize) -> Option<u64> {
    let b = buf.get(at..at.checked_add(w)?)?;
    Some(b.iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
}

impl Reader<'_> {
    /// `len` bytes at address `addr` (relative to the base), at most 16 MiB, inside the file.
    pub fn read(&self, addr: u64, len: u64, what: &str) -> R<Vec<u8>> {
        let abs = self.base.checked_add(addr);
        let ok = abs.and_then(|a| a.checked_add(len)).is_some_and(|end| end <= self.file_len) && len <= MAX_BLOCK;
        if !ok {
            return Err(format!("{what}: {len} bytes at address {addr} are outside the file ({} bytes)", self.file_len));
        }
        let mut buf = vec![0u8; len as usize];
        self.file.read_exact_at(&mut buf, abs.unwrap_or(0)).map_err(|e| format!("{what}: reading {len} bytes at address {addr}: {e}"))?;
        Ok(buf)
    }

    /// Whether `addr` is the undefined address (every byte 0xFF).
    #[cfg(not(hdf5_1_14))]
    pub(super) fn undefined(&self, addr: u64) -> bool {
        self.sa == 8 && addr == u64::MAX || self.sa < 8 && addr == (1u64 << (8 * self.sa)) - 1
    }

    #[cfg(not(hdf5_1_14))]
    /// The chunk index that the layout message of the object header at `oh` gives: a
    /// version-1 B-tree (layout version 3) or one of the version 4 indexes vh5 reads
    /// ([`super::chunk_v4`]).
    pub fn layout(&self, oh: u64) -> R<Layout> {
        let mut found = None;
        self.messages(oh, &mut |ty, _, data| {
            if ty == LAYOUT && found.is_none() {
                found = Some(self.parse_layout(data));
            }
        })?;
        found.unwrap_or_else(|| Err("no layout message in the object header".into()))
    }

    /// The bytes of the layout, datatype and filter pipeline messages of the object header at
    /// `oh`, read without decoding the rest of the header; `None` for one it has not (not a
    /// dataset, no filters) and for a shared message (its data is a reference).
    pub fn layout_and_datatype_messages(&self, oh: u64) -> R<[Option<Vec<u8>>; 3]> {
        let (mut layout, mut dtype, mut pipeline) = (None, None, None);
        self.messages(oh, &mut |ty, flags, data| {
            if ty == LAYOUT && layout.is_none() {
                layout = Some(data.to_vec());
            } else if ty == DATATYPE && dtype.is_none() && flags & SHARED == 0 {
                dtype = Some(data.to_vec());
            } else if ty == PIPELINE && pipeline.is_none() && flags & SHARED == 0 {
                pipeline = Some(data.to_vec());
            }
        })?;
        Ok([layout, dtype, pipeline])
    }

    #[cfg(not(hdf5_1_14))]
    fn parse_layout(&self, d: &[u8]) -> R<Layout> {
        let bad = || "layout message truncated".to_string();
        let version = *d.first().ok_or_else(bad)?;
        if version == 4 {
            return super::chunk_v4::parse(self, d).map(Layout::V4);
        }
        if version != 3 {
            return Err(format!("layout message version {version}: only versions 3 (a version-1 B-tree) and 4 are read by vh5"));
        }
        if *d.get(1).ok_or_else(bad)? != 2 {
            return Err("layout message: not chunked".into());
        }
        let dimensionality = usize::from(*d.get(2).ok_or_else(bad)?);
        if !(2..=crate::geometry::MAX_RANK + 1).contains(&dimensionality) {
            return Err(format!("layout message: dimensionality {dimensionality}"));
        }
        let root = le(d, 3, self.sa).ok_or_else(bad)?;
        let dims = (0..dimensionality).map(|j| le(d, 3 + self.sa + 4 * j, 4).ok_or_else(bad)).collect::<R<Vec<u64>>>()?;
        if self.undefined(root) {
            return Err("layout message: no B-tree (no chunk written)".into());
        }
        Ok(Layout::BTree(Tree { root, dimensionality, dims }))
    }

    /// Call `f(type, flags, data)` for every message of the object header at `oh` (both header
    /// versions, continuation blocks followed).
    fn messages(&self, oh: u64, f: &mut dyn FnMut(u16, u8, &[u8])) -> R<()> {
        let head = self.read(oh, 16.min(self.file_len.saturating_sub(self.base.saturating_add(oh))), "object header")?;
        // (start address, length) of each block of messages.
        let mut blocks: Vec<(u64, u64)> = Vec::new();
        let (v2, crt_order);
        if head.starts_with(b"OHDR") {
            if head.get(4) != Some(&2) {
                return Err(format!("object header version {} (2 expected)", head.get(4).map_or("missing".into(), u8::to_string)));
            }
            let flags = head[5];
            crt_order = flags & 0x04 != 0;
            let mut p = 6u64;
            if flags & 0x20 != 0 {
                p += 16;
            }
            if flags & 0x10 != 0 {
                p += 4;
            }
            let w = 1usize << (flags & 3);
            let sz = le(&self.read(oh + p, w as u64, "object header")?, 0, w).unwrap_or(0);
            blocks.push((oh + p + w as u64, sz));
            v2 = true;
        } else {
            if head.first() != Some(&1) {
                return Err(format!("object header version {} (1 expected)", head.first().map_or("missing".into(), u8::to_string)));
            }
            let sz = le(&head, 8, 4).ok_or("object header truncated")?;
            blocks.push((oh + 16, sz));
            (v2, crt_order) = (false, false);
        }
        let mut i = 0;
        while i < blocks.len() {
            if i >= MAX_OH_BLOCKS {
                return Err("object header: too many continuation blocks".into());
            }
            let (start, len) = blocks[i];
            let mut b = self.read(start, len, "object header block")?;
            if v2 && i > 0 {
                if !b.starts_with(b"OCHK") || b.len() < 8 {
                    return Err("object header continuation block without its signature".into());
                }
                b.truncate(b.len() - 4); // checksum
                b.drain(..4);
            }
            let hdr = if v2 { 4 + 2 * usize::from(crt_order) } else { 8 };
            let mut p = 0usize;
            while p + hdr <= b.len() {
                let (ty, size, flags) = if v2 {
                    (u16::from(b[p]), le(&b, p + 1, 2).unwrap_or(0) as usize, b[p + 3])
                } else {
                    (le(&b, p, 2).unwrap_or(0) as u16, le(&b, p + 2, 2).unwrap_or(0) as usize, b[p + 4])
                };
                let data = b.get(p + hdr..p + hdr + size).ok_or("object header message runs past its block")?;
                if flags & SHARED != 0 && ty == LAYOUT {
                    return Err("shared layout message".into());
                }
                if ty == CONTINUATION {
                    let off = le(data, 0, self.sa).ok_or("continuation message truncated")?;
                    let l = le(data, self.sa, self.ss).ok_or("continuation message truncated")?;
                    blocks.push((off, l));
                } else {
                    f(ty, flags, data);
                }
                p += hdr + size;
            }
            i += 1;
        }
        Ok(())
    }

    /// The raw-data-chunk B-tree node at `addr` of `tree`: its level (checked against
    /// `want_level`, the level its parent implies), its entries and its body (keys and child
    /// addresses, the last key included), every key checked ([`Tree::check_keys`]). One
    /// positioned read for a node of up to [`NODE_ENTRIES`] entries (libhdf5's default), two
    /// for a larger one.
    #[cfg(not(hdf5_1_14))]
    fn node(&self, tree: &Tree, addr: u64, want_level: Option<u8>) -> std::result::Result<(u8, usize, Vec<u8>), Fault> {
        let (sa, hdr) = (self.sa, 8 + 2 * self.sa);
        let ks = tree.key_size();
        let step = ks + sa;
        let room = self.file_len.saturating_sub(self.base.saturating_add(addr));
        let guess = ((hdr + NODE_ENTRIES * step + ks) as u64).min(room).max(hdr as u64);
        let mut b = self.read(addr, guess, "B-tree node")?;
        if &b[..4] != b"TREE" || b[4] != 1 {
            return Err(Fault::Declined(format!("B-tree node at address {addr}: not a raw-data-chunk node (signature {:?}, type {})", &b[..4], b[4])));
        }
        let level = b[5];
        if want_level.is_some_and(|w| w != level) || level > MAX_LEVEL {
            let want = want_level.map_or(format!("at most {MAX_LEVEL}"), |w| w.to_string());
            return Err(Fault::Declined(format!("B-tree node at address {addr}: level {level}, expected {want}")));
        }
        let entries = le(&b, 6, 2).unwrap_or(0) as usize;
        let len = entries * step + ks;
        let body = match b.len() >= hdr + len {
            true => {
                b.truncate(hdr + len);
                b.split_off(hdr)
            }
            false => self.read(addr + hdr as u64, len as u64, "B-tree node")?,
        };
        tree.check_keys(addr, entries, &body, sa)?;
        Ok((level, entries, body))
    }

    /// The entry of the chunk whose key offsets (the chunk's dataset offsets and the element
    /// offset 0: `dimensionality` values) are `target` in `tree`: (stored size, filter mask,
    /// address), `None` when the tree holds no such chunk. One node read per level, every key
    /// of each node checked ([`Tree::check_keys`]): at each internal node the last child whose
    /// left key is not after `target` (keys compare as libhdf5's `H5D__btree_cmp3`, offset by
    /// offset).
    #[cfg(not(hdf5_1_14))]
    pub fn lookup(&self, tree: &Tree, target: &[u64]) -> std::result::Result<Option<(u32, u32, u64)>, Fault> {
        let (sa, ks) = (self.sa, tree.key_size());
        let (mut addr, mut want_level) = (tree.root, None);
        for _ in 0..=MAX_LEVEL {
            let (level, entries, body) = self.node(tree, addr, want_level)?;
            // Key `e` against `target`, offset by offset, read in place (no key built).
            let cmp = |e: usize| -> R<std::cmp::Ordering> {
                for (j, &t) in target.iter().enumerate().take(tree.dimensionality) {
                    let k = le(&body, e * (ks + sa) + 8 + 8 * j, 8).ok_or("B-tree node truncated")?;
                    if k != t {
                        return Ok(k.cmp(&t));
                    }
                }
                Ok(std::cmp::Ordering::Equal)
            };
            let child = |e: usize| le(&body, e * (ks + sa) + ks, sa).ok_or_else(|| "B-tree node truncated".to_string());
            if level == 0 {
                for e in 0..entries {
                    if cmp(e)?.is_eq() {
                        let k = e * (ks + sa);
                        let size = le(&body, k, 4).ok_or("B-tree node truncated")? as u32;
                        let mask = le(&body, k + 4, 4).ok_or("B-tree node truncated")? as u32;
                        return Ok(Some((size, mask, child(e)?)));
                    }
                }
                return Ok(None);
            }
            let mut pick = None;
            for e in 0..entries {
                if cmp(e)?.is_gt() {
                    break;
                }
                pick = Some(e);
            }
            let Some(e) = pick else { return Ok(None) };
            addr = child(e)?;
            if self.undefined(addr) {
                return Err(Fault::Declined(format!("B-tree node entry {e}: no address")));
            }
            want_level = Some(level - 1);
        }
        Err(Fault::Declined(format!("B-tree deeper than {MAX_LEVEL} levels")))
    }

    /// Walk `tree` node by node from the root (depth first), at most `max_nodes` nodes, every
    /// key of every node read checked ([`Tree::check_keys`]: the first damaged key ends the
    /// walk, `Fault::Damaged`), calling `leaf(offsets, stored size, filter mask, chunk address)`
    /// for every chunk of the leaves read (`offsets`: the chunk's dataset offsets, then the
    /// element offset). `Ok(true)`: the whole tree was walked; `Ok(false)`: it has more than
    /// `max_nodes` nodes (the rest unread).
    #[cfg(not(hdf5_1_14))]
    pub fn walk(&self, tree: &Tree, max_nodes: u64, leaf: &mut ChunkVisitor<'_>) -> std::result::Result<bool, Fault> {
        let (sa, ks) = (self.sa, tree.key_size());
        let mut stack: Vec<(u64, Option<u8>)> = vec![(tree.root, None)];
        let mut nodes = 0u64;
        let mut coords = vec![0u64; tree.dimensionality];
        while let Some((addr, want_level)) = stack.pop() {
            if nodes == max_nodes {
                return Ok(false);
            }
            nodes += 1;
            let (level, entries, body) = self.node(tree, addr, want_level)?;
            for e in 0..entries {
                let k = e * (ks + sa);
                let child = le(&body, k + ks, sa).ok_or("B-tree node truncated")?;
                if self.undefined(child) {
                    return Err(Fault::Declined(format!("B-tree node at address {addr}: entry {e} has no address")));
                }
                if level > 0 {
                    stack.push((child, Some(level - 1)));
                    continue;
                }
                let size = le(&body, k, 4).ok_or("B-tree node truncated")? as u32;
                let mask = le(&body, k + 4, 4).ok_or("B-tree node truncated")? as u32;
                for (j, c) in coords.iter_mut().enumerate() {
                    *c = le(&body, k + 8 + 8 * j, 8).ok_or("B-tree node truncated")?;
                }
                leaf(&coords, size, mask, child)?;
            }
        }
        Ok(true)
    }
}

/// Why a chunk B-tree cannot serve: damaged (a key libhdf5 >= 2.0 refuses, "bad coordinate
/// offset": vh5 refuses the read, since libhdf5 1.10 would read the chunk on another grid or
/// as never written) or declined (vh5 cannot use it, or one of its visitors refused an entry:
/// libhdf5 reads the dataset, as before). The message says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    Damaged(String),
    Declined(String),
}

impl From<String> for Fault {
    fn from(why: String) -> Fault {
        Fault::Declined(why)
    }
}

impl From<&str> for Fault {
    fn from(why: &str) -> Fault {
        Fault::Declined(why.into())
    }
}

impl Fault {
    /// The reason, whichever the kind.
    pub fn message(&self) -> &str {
        match self {
            Fault::Damaged(m) | Fault::Declined(m) => m,
        }
    }
}

/// A dataset's chunk index, as its layout message gives it.
#[cfg(not(hdf5_1_14))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Layout version 3: a version-1 B-tree.
    BTree(Tree),
    /// Layout version 4: a fixed array, a single chunk or implicit.
    V4(super::chunk_v4::V4Index),
}

/// A dataset's version-1 B-tree of raw data chunks, as its layout message gives it.
#[cfg(not(hdf5_1_14))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// The root node's address (relative to the base address).
    pub root: u64,
    /// Offsets per key: the dataset's rank + 1 (the element offset).
    pub dimensionality: usize,
    /// The layout message's dimensions: the chunk's, then the element size.
    pub dims: Vec<u64>,
}

#[cfg(not(hdf5_1_14))]
impl Tree {
    /// Bytes per key: stored size (4), filter mask (4), `dimensionality` offsets of 8 bytes.
    fn key_size(&self) -> usize {
        8 + 8 * self.dimensionality
    }

    /// `Fault::Damaged` naming the first of the `entries + 1` keys of the node at `addr`
    /// (body `body`, child addresses of `sa` bytes) that holds an offset that is not a multiple
    /// of its layout dimension (the chunk's, then the element size for the element offset,
    /// which libhdf5 writes as 0): libhdf5 >= 2.0's "bad coordinate offset"
    /// (`H5D__btree_decode_key` decodes every key of every node it loads, the right bound and
    /// internal nodes' keys included), where libhdf5 1.10 reads the chunk on another grid or
    /// as never written.
    pub fn check_keys(&self, addr: u64, entries: usize, body: &[u8], sa: usize) -> std::result::Result<(), Fault> {
        let step = self.key_size() + sa;
        for e in 0..=entries {
            let mut bad = false;
            for (j, &d) in self.dims.iter().enumerate().take(self.dimensionality) {
                let o = le(body, e * step + 8 + 8 * j, 8).ok_or("B-tree node truncated")?;
                bad |= d > 0 && o % d != 0;
            }
            if bad {
                let offsets: Vec<u64> = (0..self.dimensionality).map(|j| le(body, e * step + 8 + 8 * j, 8).unwrap_or(0)).collect();
                let at = if addr == self.root { "its chunk B-tree's root node".to_string() } else { format!("the chunk B-tree node at file address {addr}") };
                return Err(Fault::Damaged(format!(
                    "key {e} of {at} holds the offsets {offsets:?}, not multiples of the chunk dimensions and element size {:?}",
                    &self.dims[..self.dimensionality.min(self.dims.len())]
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::io::Write;

    /// `f` given a reader of a file holding `bytes` (base address 0, 8-byte addresses).
    pub(in crate::hdf5) fn with_file(bytes: &[u8], f: impl FnOnce(&Reader<'_>)) {
        let p = std::env::temp_dir().join(format!("vh5-reader-{}-{:?}", std::process::id(), std::thread::current().id()));
        let mut t = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
        let _ = std::fs::remove_file(&p);
        t.write_all(bytes).unwrap();
        f(&Reader { file: &t, file_len: bytes.len() as u64, base: 0, sa: 8, ss: 8 });
    }

    /// A raw-data-chunk node of a 1-D dataset at `level`: one entry per key of `keys` but
    /// the last (the right bound), each key `[offset, element offset]`, children `children`.
    #[cfg(not(hdf5_1_14))]
    fn node(level: u8, keys: &[[u64; 2]], children: &[u64]) -> Vec<u8> {
        let mut b = b"TREE".to_vec();
        b.extend_from_slice(&[1, level]);
        b.extend_from_slice(&(children.len() as u16).to_le_bytes());
        b.extend_from_slice(&[0xFF; 16]); // no siblings
        for (e, k) in keys.iter().enumerate() {
            b.extend_from_slice(&40u32.to_le_bytes()); // stored size
            b.extend_from_slice(&0u32.to_le_bytes()); // filter mask
            b.extend_from_slice(&k[0].to_le_bytes());
            b.extend_from_slice(&k[1].to_le_bytes());
            if let Some(c) = children.get(e) {
                b.extend_from_slice(&c.to_le_bytes());
            }
        }
        b
    }

    /// A two-level tree of 5 chunks of 10 elements of 4 bytes: root at 0, leaves at 1000 and
    /// 2000 (chunks at 5000 + 100 * i); `damage` applied to the file bytes.
    #[cfg(not(hdf5_1_14))]
    fn tree_file(damage: impl FnOnce(&mut Vec<u8>)) -> (Vec<u8>, Tree) {
        let mut f = vec![0u8; 6000];
        let root = node(1, &[[0, 0], [30, 0], [50, 0]], &[1000, 2000]);
        let a = node(0, &[[0, 0], [10, 0], [20, 0], [30, 0]], &[5000, 5100, 5200]);
        let b = node(0, &[[30, 0], [40, 0], [50, 0]], &[5300, 5400]);
        for (at, n) in [(0, root), (1000, a), (2000, b)] {
            f[at..at + n.len()].copy_from_slice(&n);
        }
        damage(&mut f);
        (f, Tree { root: 0, dimensionality: 2, dims: vec![10, 4] })
    }

    /// Byte position of offset `j` of key `e` of the node at `at` (24-byte header, 32 bytes a key
    /// and child).
    #[cfg(not(hdf5_1_14))]
    fn key_at(at: usize, e: usize, j: usize) -> usize {
        at + 24 + e * 32 + 8 + 8 * j
    }

    #[cfg(not(hdf5_1_14))]
    fn walk_all(r: &Reader<'_>, t: &Tree, max_nodes: u64) -> std::result::Result<(bool, Vec<(u64, u64)>), Fault> {
        let mut seen = Vec::new();
        let whole = r.walk(t, max_nodes, &mut |o, _, _, addr| {
            seen.push((o[0], addr));
            Ok(())
        })?;
        Ok((whole, seen))
    }

    #[test]
    #[cfg(not(hdf5_1_14))]
    fn walk_and_lookup_of_a_sound_tree() {
        let (f, t) = tree_file(|_| {});
        with_file(&f, |r| {
            let (whole, mut seen) = walk_all(r, &t, 3).unwrap();
            assert!(whole);
            seen.sort_unstable();
            assert_eq!(seen, [(0, 5000), (10, 5100), (20, 5200), (30, 5300), (40, 5400)]);
            assert!(!walk_all(r, &t, 2).unwrap().0, "three nodes: stops after two");
            assert_eq!(r.lookup(&t, &[40, 0]).unwrap(), Some((40, 0, 5400)));
            assert_eq!(r.lookup(&t, &[20, 0]).unwrap(), Some((40, 0, 5200)));
            assert_eq!(r.lookup(&t, &[25, 0]).unwrap(), None);
        });
    }

    #[test]
    #[cfg(not(hdf5_1_14))]
    fn every_key_of_every_node_read_is_checked() {
        // (node, key, offset, value, what): a chunk key off the grid, the right bound of a
        // leaf, an internal node's key, an element offset that is no multiple of the element
        // size (2**64-1 as in the session-14 tryout, and 1).
        let cases = [
            (1000, 1, 0, 11, "leaf key"),
            (1000, 3, 0, 31, "right bound"),
            (0, 1, 0, 33, "root key"),
            (2000, 1, 1, u64::MAX, "element offset"),
            (2000, 0, 1, 1, "element offset 1"),
        ];
        for (at, e, j, v, what) in cases {
            let (f, t) = tree_file(|f| f[key_at(at, e, j)..key_at(at, e, j) + 8].copy_from_slice(&v.to_le_bytes()));
            with_file(&f, |r| {
                let Err(Fault::Damaged(why)) = walk_all(r, &t, 3) else { panic!("{what}: not refused") };
                let node = if at == 0 { "its chunk B-tree's root node".to_string() } else { format!("the chunk B-tree node at file address {at}") };
                assert!(why.starts_with(&format!("key {e} of {node} holds the offsets")), "{what}: {why}");
                assert!(why.ends_with("not multiples of the chunk dimensions and element size [10, 4]"), "{what}: {why}");
                // A lookup refuses it when it reads that node, not otherwise.
                let (through, other) = if at == 1000 {
                    ([10, 0], [40, 0])
                } else if at == 2000 {
                    ([40, 0], [10, 0])
                } else {
                    ([10, 0], [10, 0])
                };
                assert!(matches!(r.lookup(&t, &through), Err(Fault::Damaged(_))), "{what}");
                if at != 0 {
                    assert!(r.lookup(&t, &other).is_ok(), "{what}");
                }
            });
        }
        // An element offset that is a multiple of the element size is no damage (libhdf5 2.x
        // reads it): handed to the visitor, which decides.
        let (f, t) = tree_file(|f| f[key_at(1000, 2, 1)..key_at(1000, 2, 1) + 8].copy_from_slice(&8u64.to_le_bytes()));
        with_file(&f, |r| assert!(walk_all(r, &t, 3).unwrap().0));
    }

    #[test]
    #[cfg(not(hdf5_1_14))]
    fn a_node_that_is_not_one_is_declined() {
        let (f, t) = tree_file(|f| f[2000] = b'X');
        with_file(&f, |r| assert!(matches!(walk_all(r, &t, 3), Err(Fault::Declined(why)) if why.contains("not a raw-data-chunk node"))));
        let (f, t) = tree_file(|f| f[1005] = 3); // leaf A claims level 3
        with_file(&f, |r| assert!(matches!(walk_all(r, &t, 3), Err(Fault::Declined(why)) if why.contains("level 3, expected 0"))));
    }
}
