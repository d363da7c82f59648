//! HDF5 filter pipeline, encoding side, for raw chunks written with `H5Dwrite_chunk`: the
//! twin of [`super::decode`] (which decodes). Filters run in pipeline (write) order: shuffle,
//! deflate (zlib stream, `flate2`'s zlib-rs backend, at the level of the filter's client data)
//! and fletcher32 (checksum appended), exactly what libhdf5's `H5Z_pipeline` produces on
//! write, so the chunk is stored with filter mask 0 (every filter applied). Pure, safe Rust:
//! runs outside the libhdf5 lock on worker threads.
//!
//! Formats (HDF5 1.10 source `src/H5Zdeflate.c`, `H5Zshuffle.c`, `H5Zfletcher32.c`; HDF5 File
//! Format Specification 3.0, IV.A.2.l "Filter Pipeline Message"): deflate client data
//! `[level]` (0-9); shuffle client data `[element size in bytes]`, byte `b` of element `e`
//! stored at `b * nelem + e`, a tail of `nbytes % size` bytes unchanged; fletcher32: the
//! 4-byte checksum of [`super::decode::fletcher32`] appended little-endian (`UINT32ENCODE`).

use flate2::{Compress, Compression, FlushCompress, Status};

use super::decode::fletcher32;

/// A filter vh5 encodes itself, in pipeline order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeFilter {
    /// `H5Z_FILTER_DEFLATE` (1) at this level (0-9).
    Deflate(u32),
    /// `H5Z_FILTER_SHUFFLE` (2) with the element size in bytes.
    Shuffle(usize),
    /// `H5Z_FILTER_FLETCHER32` (3).
    Fletcher32,
}

/// Map a pipeline (filter id, client data) in write order onto [`EncodeFilter`]s; `None` when
/// some filter is not one vh5 implements (szip, nbit, scaleoffset, plugins: the caller then
/// lets libhdf5 run the pipeline through `H5Dwrite`).
pub fn encode_pipeline(specs: &[(i32, &[u32])]) -> Option<Vec<EncodeFilter>> {
    specs
        .iter()
        .map(|&(id, cd)| match id {
            1 => Some(EncodeFilter::Deflate(cd.first().map_or(6, |&l| l.min(9)))),
            2 => Some(EncodeFilter::Shuffle(cd.first().map_or(1, |&s| s.max(1) as usize))),
            3 => Some(EncodeFilter::Fletcher32),
            _ => None,
        })
        .collect()
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
    pub fn encode(&mut self, filters: &[EncodeFilter], buf: &mut Vec<u8>) -> Result<(), String> {
        for f in filters {
            match *f {
                EncodeFilter::Shuffle(size) => {
                    shuffle(buf, &mut self.spare, size);
                    std::mem::swap(buf, &mut self.spare);
                }
                EncodeFilter::Deflate(level) => {
                    let z = match &mut self.deflate {
                        Some((l, z)) if *l == level => {
                            z.reset();
                            z
                        }
                        slot => &mut slot.insert((level, Compress::new(Compression::new(level), true))).1,
                    };
                    deflate(z, buf, &mut self.spare)?;
                    std::mem::swap(buf, &mut self.spare);
                }
                EncodeFilter::Fletcher32 => {
                    let sum = fletcher32(buf);
                    buf.extend_from_slice(&sum.to_le_bytes());
                }
            }
        }
        Ok(())
    }
}

/// Deflate `input` into `out` (cleared first) as one zlib stream.
fn deflate(z: &mut Compress, input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    // zlib's compressBound: enough for one call in the common case.
    out.reserve(input.len() + (input.len() >> 12) + (input.len() >> 14) + 64);
    loop {
        let consumed = (z.total_in() as usize).min(input.len());
        let st = z.compress_vec(&input[consumed..], out, FlushCompress::Finish).map_err(|e| format!("deflate failed: {e}"))?;
        match st {
            Status::StreamEnd => return Ok(()),
            Status::Ok | Status::BufError => {
                if out.len() == out.capacity() {
                    out.reserve(out.capacity().max(4096));
                } else if st == Status::BufError {
                    return Err("deflate failed: no progress".into());
                }
            }
        }
    }
}

/// The shuffle filter: `src` holds whole elements of `size` bytes; `dst` receives byte planes.
pub fn shuffle(src: &[u8], dst: &mut Vec<u8>, size: usize) {
    dst.clear();
    let n = src.len();
    let nelem = n.checked_div(size).unwrap_or(0);
    if size <= 1 || nelem <= 1 {
        dst.extend_from_slice(src);
        return;
    }
    dst.resize(n, 0);
    let body = nelem * size;
    for (b, plane) in dst[..body].chunks_exact_mut(nelem).enumerate() {
        for (e, out) in plane.iter_mut().enumerate() {
            *out = src[e * size + b];
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::decode::{pipeline, Decoder};
    use proptest::prelude::*;

    #[test]
    fn maps_pipelines() {
        assert_eq!(
            encode_pipeline(&[(2, &[8]), (1, &[4]), (3, &[])]),
            Some(vec![EncodeFilter::Shuffle(8), EncodeFilter::Deflate(4), EncodeFilter::Fletcher32])
        );
        assert_eq!(encode_pipeline(&[(1, &[])]), Some(vec![EncodeFilter::Deflate(6)]));
        assert_eq!(encode_pipeline(&[(1, &[4]), (6, &[2])]), None);
        assert_eq!(encode_pipeline(&[(5, &[])]), None);
    }

    #[test]
    fn shuffle_layout() {
        let mut out = vec![];
        // 3 elements of 2 bytes + 1 tail byte
        shuffle(&[1, 2, 3, 4, 5, 6, 7], &mut out, 2);
        assert_eq!(out, vec![1, 3, 5, 2, 4, 6, 7]);
    }

    #[test]
    fn fletcher_appended_little_endian() {
        let mut buf = vec![1u8, 2, 3, 4, 5];
        Encoder::default().encode(&[EncodeFilter::Fletcher32], &mut buf).unwrap();
        let sum = fletcher32(&[1, 2, 3, 4, 5]);
        assert_eq!(&buf[5..], &sum.to_le_bytes());
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
            let enc = encode_pipeline(&refs).unwrap();
            let dec = pipeline(&refs).unwrap();
            let mut buf = data.clone();
            let mut e = Encoder::default();
            e.encode(&enc, &mut buf).unwrap();
            Decoder::default().decode(&dec, 0, &mut buf, data.len()).unwrap();
            prop_assert_eq!(buf, data);
        }
    }
}
