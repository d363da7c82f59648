//! Reading the chunk index of a chunked dataset straight from its file (HDF5 file format
//! specification 3.0, "Data Object Headers" IV.A, "Data Layout Message" IV.A.2.i, "Version 1
//! B-trees" III.A.1): the dataset's object header (version 1 or 2, continuation blocks
//! followed), its layout message (version 3, chunked: the B-tree's address and the chunk
//! dimensions) and the version-1 B-tree of raw data chunks (node type 1) it points to. Only
//! what [`super::chunk_index`] needs, every length and address bounded by the file; anything
//! else (layout version 4's other indexes, a node that is not what it should be) is an
//! `Err(reason)`: the caller then leaves the reading to libhdf5. Pure Rust over positioned
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
#[cfg(not(hdf5_1_14))]
/// What [`Reader::btree`] calls per chunk: (offsets incl. the element offset, stored size, filter mask, address).
pub(super) type ChunkVisitor<'f> = dyn FnMut(&[u64], u32, u32, u64) -> R<()> + 'f;

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

    #[cfg(not(hdf5_1_14))]
    fn undefined(&self, addr: u64) -> bool {
        self.sa == 8 && addr == u64::MAX || self.sa < 8 && addr == (1u64 << (8 * self.sa)) - 1
    }

    #[cfg(not(hdf5_1_14))]
    /// The layout message of the object header at `oh`: (B-tree root address,
    /// dimensionality = rank + 1, chunk dimensions including the element size).
    pub fn layout(&self, oh: u64) -> R<(u64, usize, Vec<u64>)> {
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
    fn parse_layout(&self, d: &[u8]) -> R<(u64, usize, Vec<u64>)> {
        let bad = || "layout message truncated".to_string();
        let version = *d.first().ok_or_else(bad)?;
        if version != 3 {
            return Err(format!("layout message version {version}: only version 3 (a version-1 B-tree) is read by vh5"));
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
        Ok((root, dimensionality, dims))
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

    /// The first key, in the version-1 B-tree of raw data chunks at `root` (keys of
    /// `dimensionality` offsets), whose offsets are not multiples of the layout message's
    /// dimensions `dims` (the chunk's, then the element size for the last offset, which
    /// libhdf5 writes as 0): libhdf5 >= 2.0's "bad coordinate offset" (`H5D__btree_decode_key`
    /// decodes every key of every node it loads). Every key of a node is checked, the last
    /// (right bound) and those of internal nodes included, node by node from the root, at most
    /// `max_nodes` nodes: (node address, key index, the key's offsets), or `None` when the
    /// nodes read hold none (a larger tree is checked in part).
    #[cfg(not(hdf5_1_14))]
    pub fn key_off_grid(&self, root: u64, dimensionality: usize, dims: &[u64], max_nodes: usize) -> R<Option<(u64, usize, Vec<u64>)>> {
        let (sa, ks) = (self.sa, 8 + 8 * dimensionality);
        let mut stack: Vec<(u64, Option<u8>)> = vec![(root, None)];
        let mut nodes = 0;
        while let Some((addr, want_level)) = stack.pop() {
            if nodes == max_nodes {
                break;
            }
            nodes += 1;
            let (level, entries, body) = self.node(addr, want_level, ks)?;
            for e in 0..=entries {
                let k = e * (ks + sa);
                let offsets = (0..dimensionality).map(|j| le(&body, k + 8 + 8 * j, 8).ok_or_else(|| "B-tree node truncated".to_string())).collect::<R<Vec<u64>>>()?;
                if offsets.iter().zip(dims).any(|(&o, &d)| d > 0 && o % d != 0) {
                    return Ok(Some((addr, e, offsets)));
                }
                if level > 0 && e < entries {
                    let child = le(&body, k + ks, sa).ok_or("B-tree node truncated")?;
                    if self.undefined(child) {
                        return Err(format!("B-tree node at address {addr}: entry {e} has no address"));
                    }
                    stack.push((child, Some(level - 1)));
                }
            }
        }
        Ok(None)
    }

    /// The raw-data-chunk B-tree node at `addr` (keys of `ks` bytes): its level (checked
    /// against `want_level`, the level its parent implies) and entries, and its body (keys and
    /// child addresses, the last key included).
    #[cfg(not(hdf5_1_14))]
    fn node(&self, addr: u64, want_level: Option<u8>, ks: usize) -> R<(u8, usize, Vec<u8>)> {
        let (sa, hdr) = (self.sa, 8 + 2 * self.sa);
        let h = self.read(addr, hdr as u64, "B-tree node")?;
        if &h[..4] != b"TREE" || h[4] != 1 {
            return Err(format!("B-tree node at address {addr}: not a raw-data-chunk node (signature {:?}, type {})", &h[..4], h[4]));
        }
        let level = h[5];
        if want_level.is_some_and(|w| w != level) || level > MAX_LEVEL {
            let want = want_level.map_or(format!("at most {MAX_LEVEL}"), |w| w.to_string());
            return Err(format!("B-tree node at address {addr}: level {level}, expected {want}"));
        }
        let entries = le(&h, 6, 2).unwrap_or(0) as usize;
        let body = self.read(addr + hdr as u64, (entries * (ks + sa) + ks) as u64, "B-tree node")?;
        Ok((level, entries, body))
    }

    /// The entry of the chunk whose key offsets (the chunk's dataset offsets and the element
    /// offset 0: `dimensionality` values) are `target` in the version-1 B-tree of raw data
    /// chunks at `root`: (stored size, filter mask, address), `None` when the tree holds no
    /// such chunk. One node read per level: at each internal node the last child whose left
    /// key is not after `target` (keys compare as libhdf5's `H5D__btree_cmp3`, offset by offset).
    #[cfg(not(hdf5_1_14))]
    pub fn lookup(&self, root: u64, dimensionality: usize, target: &[u64]) -> R<Option<(u32, u32, u64)>> {
        let (sa, ks) = (self.sa, 8 + 8 * dimensionality);
        let (mut addr, mut want_level) = (root, None);
        for _ in 0..=MAX_LEVEL {
            let (level, entries, body) = self.node(addr, want_level, ks)?;
            // Key `e` against `target`, offset by offset, read in place (no key built).
            let cmp = |e: usize| -> R<std::cmp::Ordering> {
                for (j, &t) in target.iter().enumerate().take(dimensionality) {
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
                return Err(format!("B-tree node entry {e}: no address"));
            }
            want_level = Some(level - 1);
        }
        Err(format!("B-tree deeper than {MAX_LEVEL} levels"))
    }

    /// Walk the version-1 B-tree of raw data chunks at `root` (keys of `dimensionality`
    /// offsets), calling `f(offsets, stored size, filter mask, chunk address)` for every
    /// chunk; more than `limit` chunks is an error.
    #[cfg(not(hdf5_1_14))]
    pub fn btree(&self, root: u64, dimensionality: usize, limit: u64, f: &mut ChunkVisitor<'_>) -> R<()> {
        let sa = self.sa;
        let ks = 8 + 8 * dimensionality;
        let mut stack: Vec<(u64, Option<u8>)> = vec![(root, None)];
        let (mut leaves, mut nodes) = (0u64, 0u64);
        let mut coords = vec![0u64; dimensionality];
        while let Some((addr, want_level)) = stack.pop() {
            nodes += 1;
            if nodes > limit.saturating_mul(2).saturating_add(64) {
                return Err("B-tree: more nodes than chunks".into());
            }
            let (level, entries, body) = self.node(addr, want_level, ks)?;
            for e in 0..entries {
                let k = e * (ks + sa);
                let child = le(&body, k + ks, sa).ok_or("B-tree node truncated")?;
                if self.undefined(child) {
                    return Err(format!("B-tree node at address {addr}: entry {e} has no address"));
                }
                if level > 0 {
                    stack.push((child, Some(level - 1)));
                    continue;
                }
                leaves += 1;
                if leaves > limit {
                    return Err(format!("B-tree: more than the {limit} chunks libhdf5 counts"));
                }
                let size = le(&body, k, 4).ok_or("B-tree node truncated")? as u32;
                let mask = le(&body, k + 4, 4).ok_or("B-tree node truncated")? as u32;
                for (j, c) in coords.iter_mut().enumerate() {
                    *c = le(&body, k + 8 + 8 * j, 8).ok_or("B-tree node truncated")?;
                }
                f(&coords, size, mask, child)?;
            }
        }
        Ok(())
    }
}
