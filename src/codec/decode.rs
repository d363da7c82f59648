//! HDF5 filter pipeline, decoding side, for raw chunks read with `H5Dread_chunk`: deflate
//! (zlib stream, inflated with `flate2`'s zlib-rs backend), shuffle and fletcher32, applied in
//! reverse pipeline order and skipping the filters whose bit is set in the chunk's filter
//! mask, exactly as libhdf5's `H5Z_pipeline` does on read; plus in-place byte swapping of
//! big-endian elements. Pure, safe Rust: runs outside the libhdf5 lock on worker threads.
//!
//! Formats (HDF5 1.10 source, `src/H5Zdeflate.c`, `H5Zshuffle.c`, `H5Zfletcher32.c`,
//! `H5checksum.c`; HDF5 File Format Specification 3.0, IV.A.2.l "Filter Pipeline Message"):
//! - deflate (id 1): the chunk is one zlib stream (RFC 1950/1951);
//! - shuffle (id 2, client data [element size]): byte `b` of element `e` is stored at
//!   `b * nelem + e`; a tail of `nbytes % size` bytes is stored unchanged;
//! - fletcher32 (id 3): a 4-byte checksum appended to the data, little-endian; libhdf5 also
//!   accepts the checksum with its two 16-bit halves byte-swapped (files from before 1.6.3).

use flate2::{Decompress, FlushDecompress, Status};

/// A filter vh5 decodes itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// `H5Z_FILTER_DEFLATE` (1).
    Deflate,
    /// `H5Z_FILTER_SHUFFLE` (2) with the element size in bytes.
    Shuffle(usize),
    /// `H5Z_FILTER_FLETCHER32` (3).
    Fletcher32,
}

/// Map a pipeline (filter id, client data) in write order onto [`Filter`]s; `None` when some
/// filter is not one vh5 implements, or has client data libhdf5's own filter refuses (the
/// caller then lets libhdf5 decode, which refuses such chunks exactly as libhdf5 does):
/// deflate needs exactly one value, a level <= 9 (`H5Zdeflate.c`: "invalid deflate
/// aggression level"); shuffle exactly one, a non-zero element size (`H5Zshuffle.c`:
/// "invalid shuffle parameters"), both checked by libhdf5 in either direction. Fletcher32
/// takes no client data (libhdf5 ignores any).
pub fn pipeline(specs: &[(i32, &[u32])]) -> Option<Vec<Filter>> {
    specs
        .iter()
        .map(|&(id, cd)| match (id, cd) {
            (1, &[level]) if level <= 9 => Some(Filter::Deflate),
            (2, &[size]) if size > 0 => Some(Filter::Shuffle(size as usize)),
            (3, _) => Some(Filter::Fletcher32),
            _ => None,
        })
        .collect()
}

/// Reusable decoding state of one worker (an inflater and a spare buffer).
pub struct Decoder {
    inflate: Decompress,
    spare: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder { inflate: Decompress::new(true), spare: Vec::new() }
    }
}

impl Decoder {
    /// Decode the stored bytes of one chunk in `buf` (replaced by the decoded bytes):
    /// filters in reverse order, skipping filter `i` when bit `i` of `mask` is set.
    /// `expect_len` is the chunk's decoded size in bytes; the caller checks the final length.
    /// Errors are plain text for the caller to wrap with the chunk's coordinates (see
    /// [`Decoder::decode_checked`], which tells corrupt data and refused memory apart).
    pub fn decode(&mut self, filters: &[Filter], mask: u32, buf: &mut Vec<u8>, expect_len: usize) -> Result<(), String> {
        self.decode_checked(filters, mask, buf, expect_len).map_err(|e| e.message)
    }

    /// [`Decoder::decode`] with typed errors: `Malformed` when the stored bytes are not a
    /// valid encoding vh5 can decode (corrupt stream, checksum mismatch); `Hdf5` when they are
    /// a valid zlib stream that inflates to more than the chunk can hold (the chunk is corrupt
    /// for certain: libhdf5 would silently keep the first bytes); `NoMemory` when a buffer
    /// could not be allocated.
    ///
    /// Memory is bounded by the chunk, never by the stored bytes: inflate stops (error) as
    /// soon as its output exceeds `expect_len` plus 4 bytes per filter (room for fletcher32
    /// checksums written before deflate), so a decompression bomb costs at most that much.
    pub fn decode_checked(&mut self, filters: &[Filter], mask: u32, buf: &mut Vec<u8>, expect_len: usize) -> crate::error::Result<()> {
        let limit = expect_len.saturating_add(4 * filters.len());
        for (i, f) in filters.iter().enumerate().rev() {
            if i < 32 && mask & (1 << i) != 0 {
                continue;
            }
            match *f {
                Filter::Deflate => {
                    self.inflate.reset(true);
                    inflate(&mut self.inflate, buf, &mut self.spare, limit)?;
                    std::mem::swap(buf, &mut self.spare);
                }
                Filter::Shuffle(size) => {
                    crate::mem::reserve_total(&mut self.spare, buf.len(), || "unshuffle buffer".to_string())?;
                    unshuffle(buf, &mut self.spare, size);
                    std::mem::swap(buf, &mut self.spare);
                }
                Filter::Fletcher32 => {
                    let n = buf.len();
                    if n < 4 {
                        bail!(Malformed, "fletcher32: {n} bytes, too short for a checksum");
                    }
                    let stored = u32::from_le_bytes([buf[n - 4], buf[n - 3], buf[n - 2], buf[n - 1]]);
                    let sum = fletcher32(&buf[..n - 4]);
                    let b = sum.to_le_bytes();
                    let reversed = u32::from_le_bytes([b[1], b[0], b[3], b[2]]);
                    if stored != sum && stored != reversed {
                        bail!(Malformed, "fletcher32 checksum mismatch (stored {stored:#010x}, computed {sum:#010x}): the chunk is corrupted");
                    }
                    buf.truncate(n - 4);
                }
            }
        }
        Ok(())
    }
}

/// Inflate the zlib stream `input` into `out` (cleared first), producing at most `limit`
/// bytes: a stream that would produce more is `Malformed` (it cannot be this chunk's data).
/// The output buffer is reserved fallibly (`NoMemory`), growing from `limit` at most.
fn inflate(z: &mut Decompress, input: &[u8], out: &mut Vec<u8>, limit: usize) -> crate::error::Result<()> {
    out.clear();
    crate::mem::reserve_total(out, limit.max(64), || "inflate buffer".to_string())?;
    loop {
        let before_in = z.total_in() as usize;
        let before_out = out.len();
        let st = z.decompress_vec(&input[before_in.min(input.len())..], out, FlushDecompress::Finish).map_err(|e| err!(Malformed, "inflate failed: {e}"))?;
        match st {
            Status::StreamEnd => return Ok(()),
            Status::Ok | Status::BufError => {
                let progressed = z.total_in() as usize != before_in || out.len() != before_out;
                if out.len() >= limit.max(64) {
                    bail!(Hdf5, "inflate: the zlib stream produces more than {limit} bytes after {} bytes of input (the chunk holds {limit} at most): refused", z.total_in());
                } else if out.len() == out.capacity() {
                    let grow = out.capacity().max(4096).min(limit.max(64) - out.len());
                    crate::mem::reserve_total(out, out.len() + grow, || "inflate buffer".to_string())?;
                } else if !progressed || z.total_in() as usize >= input.len() {
                    bail!(Malformed, "inflate failed: zlib stream truncated after {} bytes of input", z.total_in());
                }
            }
        }
    }
}

/// Undo the shuffle filter: `src` holds byte planes; `dst` receives whole elements.
pub fn unshuffle(src: &[u8], dst: &mut Vec<u8>, size: usize) {
    dst.clear();
    let n = src.len();
    let nelem = if size > 0 { n / size } else { 0 };
    if size <= 1 || nelem <= 1 {
        dst.extend_from_slice(src);
        return;
    }
    dst.resize(n, 0);
    let body = nelem * size;
    match size {
        2 => unshuffle_fixed::<2>(&src[..body], &mut dst[..body], nelem),
        4 => unshuffle_fixed::<4>(&src[..body], &mut dst[..body], nelem),
        8 => unshuffle8(&src[..body], &mut dst[..body], nelem),
        16 => unshuffle_fixed::<16>(&src[..body], &mut dst[..body], nelem),
        _ => {
            for b in 0..size {
                let plane = &src[b * nelem..(b + 1) * nelem];
                for (e, &byte) in plane.iter().enumerate() {
                    dst[e * size + b] = byte;
                }
            }
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
}

/// [`unshuffle`] of `nelem` 8-byte elements (`src`, `dst` exactly `8 * nelem` bytes): blocks
/// of 8 elements as an 8x8 byte matrix (one u64 per plane) transposed in registers with three
/// masked swap stages (bytes, 16-bit pairs, 32-bit halves; Hacker's Delight 7-3).
fn unshuffle8(src: &[u8], dst: &mut [u8], nelem: usize) {
    let full = nelem / 8 * 8;
    let word = |at: usize| u64::from_le_bytes(src[at..at + 8].try_into().expect("8 bytes"));
    for e0 in (0..full).step_by(8) {
        let mut r: [u64; 8] = std::array::from_fn(|b| word(b * nelem + e0));
        #[inline(always)]
        fn swap(r: &mut [u64; 8], a: usize, b: usize, shift: u32, mask: u64) {
            let t = ((r[a] >> shift) ^ r[b]) & mask;
            r[b] ^= t;
            r[a] ^= t << shift;
        }
        const M1: u64 = 0x00FF_00FF_00FF_00FF;
        const M2: u64 = 0x0000_FFFF_0000_FFFF;
        const M3: u64 = 0x0000_0000_FFFF_FFFF;
        swap(&mut r, 0, 1, 8, M1);
        swap(&mut r, 2, 3, 8, M1);
        swap(&mut r, 4, 5, 8, M1);
        swap(&mut r, 6, 7, 8, M1);
        swap(&mut r, 0, 2, 16, M2);
        swap(&mut r, 1, 3, 16, M2);
        swap(&mut r, 4, 6, 16, M2);
        swap(&mut r, 5, 7, 16, M2);
        swap(&mut r, 0, 4, 32, M3);
        swap(&mut r, 1, 5, 32, M3);
        swap(&mut r, 2, 6, 32, M3);
        swap(&mut r, 3, 7, 32, M3);
        for (k, v) in r.iter().enumerate() {
            dst[(e0 + k) * 8..(e0 + k) * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
    }
    for e in full..nelem {
        for b in 0..8 {
            dst[e * 8 + b] = src[b * nelem + e];
        }
    }
}

/// [`unshuffle`] of `nelem` elements of `N` bytes (`src` and `dst` exactly `N * nelem`
/// bytes): blocks of 16 elements, each element assembled from its `N` planes and stored at
/// once (the compiler vectorises the fixed-size gathers; ~4x the byte-by-byte loop).
fn unshuffle_fixed<const N: usize>(src: &[u8], dst: &mut [u8], nelem: usize) {
    const B: usize = 16;
    let planes: [&[u8]; N] = std::array::from_fn(|b| &src[b * nelem..(b + 1) * nelem]);
    let full = nelem / B * B;
    for (blk, out) in dst[..full * N].chunks_exact_mut(B * N).enumerate() {
        let e0 = blk * B;
        let mut tile = [[0u8; N]; B];
        for (b, plane) in planes.iter().enumerate() {
            let p: &[u8; B] = plane[e0..e0 + B].try_into().expect("16-byte block");
            for k in 0..B {
                tile[k][b] = p[k];
            }
        }
        for (k, t) in tile.iter().enumerate() {
            out[k * N..(k + 1) * N].copy_from_slice(t);
        }
    }
    for e in full..nelem {
        for (b, plane) in planes.iter().enumerate() {
            dst[e * N + b] = plane[e];
        }
    }
}

/// libhdf5's `H5_checksum_fletcher32`: Fletcher-32 over big-endian 16-bit words, an odd
/// trailing byte taken as the high byte of a last word.
pub fn fletcher32(data: &[u8]) -> u32 {
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let words = data.len() / 2;
    let mut k = 0usize;
    let mut left = words;
    while left > 0 {
        let t = left.min(360);
        left -= t;
        for _ in 0..t {
            sum1 += ((data[k] as u32) << 8) | data[k + 1] as u32;
            k += 2;
            sum2 += sum1;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if data.len() % 2 == 1 {
        sum1 += (data[k] as u32) << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    (sum2 << 16) | sum1
}

/// Reverse the byte order of every `unit`-byte word of `buf` in place (a tail shorter than
/// `unit` is left alone). `unit` <= 1 does nothing.
pub fn swap_bytes(buf: &mut [u8], unit: usize) {
    match unit {
        2 => buf.chunks_exact_mut(2).for_each(|w| w.swap(0, 1)),
        4 => buf.chunks_exact_mut(4).for_each(|w| {
            let v = u32::from_ne_bytes([w[0], w[1], w[2], w[3]]).swap_bytes();
            w.copy_from_slice(&v.to_ne_bytes());
        }),
        8 => buf.chunks_exact_mut(8).for_each(|w| {
            let v = u64::from_ne_bytes(w.try_into().expect("8 bytes")).swap_bytes();
            w.copy_from_slice(&v.to_ne_bytes());
        }),
        u if u > 1 => buf.chunks_exact_mut(u).for_each(|w| w.reverse()),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::{write::ZlibEncoder, Compression};
    use proptest::prelude::*;
    use std::io::Write;

    fn shuffle(src: &[u8], size: usize) -> Vec<u8> {
        let nelem = src.len() / size;
        if size <= 1 || nelem <= 1 {
            return src.to_vec();
        }
        let mut out = vec![0u8; src.len()];
        for e in 0..nelem {
            for b in 0..size {
                out[b * nelem + e] = src[e * size + b];
            }
        }
        out[nelem * size..].copy_from_slice(&src[nelem * size..]);
        out
    }

    fn deflate(src: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), Compression::new(4));
        e.write_all(src).unwrap();
        e.finish().unwrap()
    }

    /// Textbook Fletcher-32 (sums modulo 65535) over big-endian 16-bit words, odd tail padded.
    fn naive_fletcher(data: &[u8]) -> (u32, u32) {
        let (mut a, mut b) = (0u64, 0u64);
        for w in data.chunks(2) {
            let v = ((w[0] as u64) << 8) | w.get(1).map_or(0, |&x| x as u64);
            a = (a + v) % 65535;
            b = (b + a) % 65535;
        }
        (a as u32, b as u32)
    }

    proptest! {
        #[test]
        fn fletcher32_matches_textbook(data in proptest::collection::vec(any::<u8>(), 0..2000)) {
            let s = fletcher32(&data);
            let (a, b) = naive_fletcher(&data);
            // libhdf5 folds with end-around carry: same values modulo 65535.
            prop_assert_eq!((s & 0xffff) % 65535, a);
            prop_assert_eq!((s >> 16) % 65535, b);
        }
    }

    #[test]
    fn corrupted_streams_are_errors() {
        let data: Vec<u8> = (0..4000u32).flat_map(|x| x.to_le_bytes()).collect();
        let mut z = deflate(&data);
        let mut d = Decoder::default();
        let mut buf = z.clone();
        d.decode(&[Filter::Deflate], 0, &mut buf, data.len()).unwrap();
        assert_eq!(buf, data);
        // truncated
        let mut buf = z[..z.len() / 2].to_vec();
        assert!(d.decode(&[Filter::Deflate], 0, &mut buf, data.len()).unwrap_err().contains("inflate"));
        // garbage in the middle
        let mid = z.len() / 2;
        z[mid..mid + 8].copy_from_slice(&[0xff; 8]);
        let mut buf = z;
        assert!(d.decode(&[Filter::Deflate], 0, &mut buf, data.len()).is_err());
        // a decompression bomb (a valid stream of 64 MiB of zeros) stops at the limit
        let bomb = deflate(&vec![0u8; 64 << 20]);
        let mut buf = bomb.clone();
        let e = d.decode_checked(&[Filter::Deflate], 0, &mut buf, 4000).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Hdf5);
        assert!(e.message.contains("more than 4004 bytes"), "{}", e.message);
        assert!(d.spare.capacity() < 1 << 20 && buf.capacity() < 1 << 20, "the output grew past the limit");
        // a stream that produces fewer bytes decodes (the caller checks the length)
        let mut buf = deflate(&data[..100]);
        d.decode(&[Filter::Deflate], 0, &mut buf, data.len()).unwrap();
        assert_eq!(buf, &data[..100]);
        // exactly the limit is fine
        let mut buf = deflate(&data);
        d.decode(&[Filter::Deflate], 0, &mut buf, data.len() - 4).unwrap();
        assert_eq!(buf, data);
        // checksum mismatch
        let mut buf = data.clone();
        buf.extend_from_slice(&(fletcher32(&data) ^ 1).to_le_bytes());
        assert!(d.decode(&[Filter::Fletcher32], 0, &mut buf, data.len()).unwrap_err().contains("checksum"));
    }

    #[test]
    fn swap() {
        let mut b = vec![1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        swap_bytes(&mut b, 4);
        assert_eq!(b, vec![4, 3, 2, 1, 8, 7, 6, 5, 9]);
        swap_bytes(&mut b, 8);
        assert_eq!(b, vec![5, 6, 7, 8, 1, 2, 3, 4, 9]);
        let mut b = vec![1u8, 2, 3, 4, 5, 6];
        swap_bytes(&mut b, 3);
        assert_eq!(b, vec![3, 2, 1, 6, 5, 4]);
        assert!(pipeline(&[(1, &[4]), (2, &[8]), (3, &[])]).is_some());
        assert_eq!(pipeline(&[(2, &[8]), (32001, &[])]), None);
        // client data libhdf5 refuses: libhdf5 decodes (and refuses), never a no-op here
        assert_eq!(pipeline(&[(2, &[0])]), None);
        assert_eq!(pipeline(&[(2, &[])]), None);
        assert_eq!(pipeline(&[(2, &[4, 4])]), None);
        assert_eq!(pipeline(&[(1, &[10])]), None);
        assert_eq!(pipeline(&[(1, &[])]), None);
    }

    proptest! {
        /// shuffle -> deflate -> fletcher32 (h5py's order) decodes back, with any mask.
        #[test]
        fn pipeline_roundtrip(data in proptest::collection::vec(any::<u8>(), 0..3000), size in 1usize..9, mask in 0u32..8) {
            let mut enc = data.clone();
            if mask & 1 == 0 { enc = shuffle(&enc, size); }
            if mask & 2 == 0 { enc = deflate(&enc); }
            if mask & 4 == 0 { let s = fletcher32(&enc); enc.extend_from_slice(&s.to_le_bytes()); }
            let mut d = Decoder::default();
            d.decode(&[Filter::Shuffle(size), Filter::Deflate, Filter::Fletcher32], mask, &mut enc, data.len()).unwrap();
            prop_assert_eq!(enc, data);
        }
    }

    proptest! {
        /// The fixed-size block paths (2, 4, 8, 16 bytes) equal the byte-by-byte definition,
        /// tails (elements past the last block of 16, bytes past the last element) included.
        #[test]
        fn unshuffle_matches_definition(data in proptest::collection::vec(any::<u8>(), 0..1200), size in 1usize..18) {
            let mut got = Vec::new();
            unshuffle(&data, &mut got, size);
            let nelem = data.len() / size;
            let mut want = data.clone();
            if size > 1 && nelem > 1 {
                for e in 0..nelem {
                    for b in 0..size {
                        want[e * size + b] = data[b * nelem + e];
                    }
                }
            }
            prop_assert_eq!(&got, &want);
            // and shuffle (the test helper) inverts it
            if nelem > 1 {
                prop_assert_eq!(shuffle(&got, size), data);
            }
        }
    }
}
