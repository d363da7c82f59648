//! Deflate (`H5Z_FILTER_DEFLATE`, id 1, client data `[level]` 0-9): the chunk is one zlib
//! stream (RFC 1950/1951; HDF5 1.10 `src/H5Zdeflate.c`), inflated and deflated with
//! `flate2`'s zlib-rs backend. Both directions side by side.

use flate2::{Compress, Decompress, FlushCompress, FlushDecompress, Status};

/// Inflate the zlib stream `input` into `out` (cleared first), producing at most `limit`
/// bytes: a stream that would produce more is `Malformed` (it cannot be this chunk's data).
/// The output buffer is reserved fallibly (`NoMemory`), growing from `limit` at most.
pub(super) fn inflate(z: &mut Decompress, input: &[u8], out: &mut Vec<u8>, limit: usize) -> crate::error::Result<()> {
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
