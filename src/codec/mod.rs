//! HDF5 filter codecs (pure, safe Rust, no libhdf5): one module per filter with its decode and
//! encode side by side ([`deflate`], [`shuffle`], [`fletcher32`]; room for more), the ONE
//! parser of a dataset's pipeline ([`parse_pipeline`]) and the drivers that run a pipeline
//! over one chunk: [`Decoder`] (reverse pipeline order, skipping the filters whose bit is
//! set in the chunk's filter mask, as libhdf5's `H5Z_pipeline` does on read) and [`Encoder`]
//! (pipeline order, stored with filter mask 0), plus [`swap_bytes`] for chunks stored in the
//! other byte order. They run outside the libhdf5 lock on worker threads.
//!
//! Formats: HDF5 1.10 source (`src/H5Zdeflate.c`, `H5Zshuffle.c`, `H5Zfletcher32.c`,
//! `H5checksum.c`); HDF5 File Format Specification 3.0, IV.A.2.l "Filter Pipeline Message".
//! Scale-offset, n-bit, szip and plugins are not implemented here: such pipelines go through
//! libhdf5.

use flate2::{Compress, Compression};

pub mod deflate;
pub mod fletcher32;
pub mod shuffle;

/// A filter vh5 decodes and encodes itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// `H5Z_FILTER_DEFLATE` (1) at this level (0-9; only the encoder uses it).
    Deflate(u32),
    /// `H5Z_FILTER_SHUFFLE` (2) with the element size in bytes.
    Shuffle(usize),
    /// `H5Z_FILTER_FLETCHER32` (3).
    Fletcher32,
}

/// Map a pipeline (filter id, client data) in write order onto [`Filter`]s; `None` when some
/// filter is not one vh5 implements, or has client data libhdf5's own filter refuses (the
/// caller then lets libhdf5 run the pipeline, which refuses such chunks exactly as libhdf5
/// does): deflate needs exactly one value, a level <= 9 (`H5Zdeflate.c`: "invalid deflate
/// aggression level"); shuffle exactly one, a non-zero element size (`H5Zshuffle.c`:
/// "invalid shuffle parameters"), both checked by libhdf5 in either direction. Fletcher32
/// takes no client data (libhdf5 ignores any). The one parser of reads and writes.
pub fn parse_pipeline(specs: &[(i32, &[u32])]) -> Option<Vec<Filter>> {
    specs
        .iter()
        .map(|&(id, cd)| match (id, cd) {
            (1, &[level]) if level <= 9 => Some(Filter::Deflate(level)),
            (2, &[size]) if size > 0 => Some(Filter::Shuffle(size as usize)),
            (3, _) => Some(Filter::Fletcher32),
            _ => None,
        })
        .collect()
}

/// Reusable decoding state of one worker (an inflater and a spare buffer).
pub struct Decoder {
    inflate: libdeflater::Decompressor,
    spare: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder { inflate: libdeflater::Decompressor::new(), spare: Vec::new() }
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
                Filter::Deflate(_) => {
                    deflate::inflate(&mut self.inflate, buf, &mut self.spare, limit)?;
                    std::mem::swap(buf, &mut self.spare);
                }
                Filter::Shuffle(size) => {
                    crate::mem::reserve_total(&mut self.spare, buf.len(), || "unshuffle buffer".to_string())?;
                    shuffle::unshuffle(buf, &mut self.spare, size);
                    std::mem::swap(buf, &mut self.spare);
                }
                Filter::Fletcher32 => fletcher32::verify_and_strip(buf)?,
            }
        }
        Ok(())
    }
}

/// Reusable encoding state of one worker (a deflater per level used, and a spare buffer).
#[derive(Default)]
pub struct Encoder {
    deflate: Option<(u32, Compress)>,
    spare: Vec<u8>,
}

impl Encoder {
    /// Encode the chunk bytes in `buf` (replaced by the stored bytes): every filter of
    /// `filters` in order (the result is stored with filter mask 0). Errors are plain text
    /// for the caller to wrap with the chunk's coordinates.
    pub fn encode(&mut self, filters: &[Filter], buf: &mut Vec<u8>) -> Result<(), String> {
        for f in filters {
            match *f {
                Filter::Shuffle(size) => {
                    shuffle::shuffle(buf, &mut self.spare, size);
                    std::mem::swap(buf, &mut self.spare);
                }
                Filter::Deflate(level) => {
                    let z = match &mut self.deflate {
                        Some((l, z)) if *l == level => {
                            z.reset();
                            z
                        }
                        slot => &mut slot.insert((level, Compress::new(Compression::new(level), true))).1,
                    };
                    deflate::deflate(z, buf, &mut self.spare)?;
                    std::mem::swap(buf, &mut self.spare);
                }
                Filter::Fletcher32 => fletcher32::append(buf),
            }
        }
        Ok(())
    }
}

/// An integer word whose bytes can be reversed.
trait Word: Copy {
    fn swapped(self) -> Self;
}

impl Word for u16 {
    #[inline(always)]
    fn swapped(self) -> Self {
        self.swap_bytes()
    }
}

impl Word for u32 {
    #[inline(always)]
    fn swapped(self) -> Self {
        self.swap_bytes()
    }
}

impl Word for u64 {
    #[inline(always)]
    fn swapped(self) -> Self {
        self.swap_bytes()
    }
}

/// Reverse the bytes of every word (AVX2 byte shuffles when the CPU has them; the baseline
/// x86-64 target has no byte shuffle, which makes the plain loop several times slower).
fn swap_words<T: Word>(words: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            return unsafe { swap_words_avx2(words) };
        }
    }
    words.iter_mut().for_each(|w| *w = w.swapped());
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn swap_words_avx2<T: Word>(words: &mut [T]) {
    words.iter_mut().for_each(|w| *w = w.swapped());
}

/// Reverse the byte order of every `unit`-byte word of `buf` in place (a tail shorter than
/// `unit` is left alone). `unit` <= 1 does nothing.
pub fn swap_bytes(buf: &mut [u8], unit: usize) {
    // Aligned buffers (the usual case) go word by word, which the compiler vectorises (with
    // byte shuffles when the CPU has AVX2: see `swap_words`).
    match unit {
        2 => {
            // SAFETY: u16 accepts every bit pattern; align_to_mut splits at alignment.
            if let (&mut [], words, &mut []) = unsafe { buf.align_to_mut::<u16>() } {
                return swap_words(words);
            }
        }
        4 => {
            // SAFETY: u32 accepts every bit pattern; align_to_mut splits at alignment.
            if let (&mut [], words, &mut []) = unsafe { buf.align_to_mut::<u32>() } {
                return swap_words(words);
            }
        }
        8 => {
            // SAFETY: u64 accepts every bit pattern; align_to_mut splits at alignment.
            if let (&mut [], words, &mut []) = unsafe { buf.align_to_mut::<u64>() } {
                return swap_words(words);
            }
        }
        _ => {}
    }
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
        let mut out = Vec::new();
        super::shuffle::shuffle(src, &mut out, size);
        out
    }

    fn deflate(src: &[u8]) -> Vec<u8> {
        let mut e = ZlibEncoder::new(Vec::new(), Compression::new(4));
        e.write_all(src).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn corrupted_streams_are_errors() {
        let data: Vec<u8> = (0..4000u32).flat_map(|x| x.to_le_bytes()).collect();
        let mut z = deflate(&data);
        let mut d = Decoder::default();
        let mut buf = z.clone();
        d.decode(&[Filter::Deflate(4)], 0, &mut buf, data.len()).unwrap();
        assert_eq!(buf, data);
        // truncated
        let mut buf = z[..z.len() / 2].to_vec();
        assert!(d.decode(&[Filter::Deflate(4)], 0, &mut buf, data.len()).unwrap_err().contains("inflate"));
        // garbage in the middle
        let mid = z.len() / 2;
        z[mid..mid + 8].copy_from_slice(&[0xff; 8]);
        let mut buf = z;
        assert!(d.decode(&[Filter::Deflate(4)], 0, &mut buf, data.len()).is_err());
        // a decompression bomb (a valid stream of 64 MiB of zeros) stops at the limit
        let bomb = deflate(&vec![0u8; 64 << 20]);
        let mut buf = bomb.clone();
        let e = d.decode_checked(&[Filter::Deflate(4)], 0, &mut buf, 4000).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::Hdf5);
        assert!(e.message.contains("more than 4004 bytes"), "{}", e.message);
        assert!(d.spare.capacity() < 1 << 20 && buf.capacity() < 1 << 20, "the output grew past the limit");
        // a stream that produces fewer bytes decodes (the caller checks the length)
        let mut buf = deflate(&data[..100]);
        d.decode(&[Filter::Deflate(4)], 0, &mut buf, data.len()).unwrap();
        assert_eq!(buf, &data[..100]);
        // exactly the limit is fine
        let mut buf = deflate(&data);
        d.decode(&[Filter::Deflate(4)], 0, &mut buf, data.len() - 4).unwrap();
        assert_eq!(buf, data);
        // checksum mismatch
        let mut buf = data.clone();
        buf.extend_from_slice(&(fletcher32::fletcher32(&data) ^ 1).to_le_bytes());
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
        assert!(parse_pipeline(&[(1, &[4]), (2, &[8]), (3, &[])]).is_some());
        assert_eq!(parse_pipeline(&[(2, &[8]), (32001, &[])]), None);
        // client data libhdf5 refuses: libhdf5 decodes (and refuses), never a no-op here
        assert_eq!(parse_pipeline(&[(2, &[0])]), None);
        assert_eq!(parse_pipeline(&[(2, &[])]), None);
        assert_eq!(parse_pipeline(&[(2, &[4, 4])]), None);
        assert_eq!(parse_pipeline(&[(1, &[10])]), None);
        assert_eq!(parse_pipeline(&[(1, &[])]), None);
    }

    proptest! {
        /// shuffle -> deflate -> fletcher32 (h5py's order) decodes back, with any mask.
        #[test]
        fn pipeline_roundtrip(data in proptest::collection::vec(any::<u8>(), 0..3000), size in 1usize..9, mask in 0u32..8) {
            let mut enc = data.clone();
            if mask & 1 == 0 { enc = shuffle(&enc, size); }
            if mask & 2 == 0 { enc = deflate(&enc); }
            if mask & 4 == 0 { let s = fletcher32::fletcher32(&enc); enc.extend_from_slice(&s.to_le_bytes()); }
            let mut d = Decoder::default();
            d.decode(&[Filter::Shuffle(size), Filter::Deflate(4), Filter::Fletcher32], mask, &mut enc, data.len()).unwrap();
            prop_assert_eq!(enc, data);
        }
    }

    #[test]
    fn maps_pipelines() {
        assert_eq!(parse_pipeline(&[(2, &[8]), (1, &[4]), (3, &[])]), Some(vec![Filter::Shuffle(8), Filter::Deflate(4), Filter::Fletcher32]));
        assert_eq!(parse_pipeline(&[(1, &[4]), (6, &[2])]), None);
        assert_eq!(parse_pipeline(&[(5, &[])]), None);
    }

    proptest! {
        /// Encoding then decoding with the read side's decoder gives the input back, for
        /// every combination of the three filters and element sizes.
        #[test]
        fn roundtrip_through_decoder(data in proptest::collection::vec(any::<u8>(), 0..3000), size in 1usize..17, level in 0u32..10, which in 0u8..8) {
            let mut specs: Vec<(i32, Vec<u32>)> = vec![];
            if which & 1 != 0 { specs.push((2, vec![size as u32])); }
            if which & 2 != 0 { specs.push((1, vec![level])); }
            if which & 4 != 0 { specs.push((3, vec![])); }
            let refs: Vec<(i32, &[u32])> = specs.iter().map(|(i, c)| (*i, c.as_slice())).collect();
            let filters = parse_pipeline(&refs).unwrap();
            let mut buf = data.clone();
            let mut e = Encoder::default();
            e.encode(&filters, &mut buf).unwrap();
            Decoder::default().decode(&filters, 0, &mut buf, data.len()).unwrap();
            prop_assert_eq!(buf, data);
        }
    }
}
