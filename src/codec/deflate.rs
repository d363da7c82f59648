//! Deflate (`H5Z_FILTER_DEFLATE`, id 1, client data `[level]` 0-9): the chunk is one zlib
//! stream (RFC 1950/1951; HDF5 1.10 `src/H5Zdeflate.c`), inflated whole by libdeflate
//! (`libdeflater`: the decoded size of a chunk is known, no streaming needed) and deflated
//! with `flate2`'s zlib-rs backend. Both directions side by side.

use flate2::{Compress, FlushCompress, Status};
use libdeflater::{DecompressionError, Decompressor};

/// Inflate the zlib stream `input` into `out` (replaced: its old bytes are reused as space), producing at most `limit` bytes, in
/// one call of libdeflate (`libdeflate_zlib_decompress`: the whole output buffer at once,
/// Adler-32 checked, bytes after the stream's end ignored as zlib's `inflate` does). A stream
/// that would produce more than `limit` bytes is `Hdf5` (it cannot be this chunk's data: a
/// corrupt chunk or a decompression bomb); a stream libdeflate rejects (corrupt, truncated,
/// checksum mismatch) is `Malformed`. The output buffer is `limit` bytes, reserved fallibly
/// (`NoMemory`), then truncated to what the stream produced.
///
/// libdeflate rather than zlib-rs's streaming inflate: HDF5 chunks are small independent
/// streams whose decoded size is known, and libdeflate builds its Huffman tables and decodes
/// faster (a whole read of 15,625 16x16 float64 gzip+shuffle chunks: see docs/BENCHMARKS.md).
pub(super) fn inflate(z: &mut Decompressor, input: &[u8], out: &mut Vec<u8>, limit: usize) -> crate::error::Result<()> {
    let cap = limit.max(64);
    // libdeflate only writes the output buffer: the bytes a previous chunk left in it are
    // overwritten, not zeroed first (a memset of every chunk: 2.4% of case 6's samples).
    if out.len() < cap {
        crate::mem::resize_zeroed(out, cap, || "inflate buffer".to_string())?;
    } else {
        out.truncate(cap);
    }
    match z.zlib_decompress(input, out) {
        Ok(n) => {
            out.truncate(n);
            Ok(())
        }
        Err(DecompressionError::InsufficientSpace) => {
            out.clear();
            bail!(Hdf5, "inflate: the zlib stream produces more than {limit} bytes (the chunk holds {limit} at most): refused")
        }
        Err(DecompressionError::BadData) => {
            out.clear();
            bail!(
                Malformed,
                "inflate failed: not a valid zlib stream of at most {limit} bytes (invalid or truncated deflate data, or an Adler-32 mismatch; {} bytes of input)",
                input.len()
            )
        }
    }
}

/// Deflate `input` into `out` (cleared first) as one zlib stream.
pub(super) fn deflate(z: &mut Compress, input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
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
