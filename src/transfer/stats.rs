//! What a transfer did: the statistics every read, write and memory copy returns.

/// What a call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Rows that copied something.
    pub rows_read: usize,
    /// Rows skipped (a zero count, or clipped to zero with [`SLICES_CLIP`](super::SLICES_CLIP)).
    pub rows_skipped: usize,
    /// Elements copied (counting overlapping destinations each time).
    pub elements: u64,
    /// Rows whose hyperslab was read straight into the caller's buffer.
    pub direct_reads: usize,
    /// Chunks read whole once by the planner (raw or through libhdf5).
    pub chunks_read: usize,
    /// Of those, chunks read raw (`H5Dread_chunk`) and decoded by vh5.
    pub raw_chunks: usize,
    /// Row pieces read with their own `H5Dread` inside planned calls (chunks where a whole
    /// read does not pay) plus rows run in row order because their destinations overlap.
    pub hdf5_reads: usize,
    /// Whole chunks served by the dataset's decoded-chunk cache (no fetch, no decode;
    /// counted in `chunks_read` and `raw_chunks` too).
    pub cache_hits: usize,
    /// Raw chunk fetches that looked in the cache and did not find the chunk.
    pub cache_misses: usize,
}

/// What a write did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Rows that wrote something.
    pub rows_written: usize,
    /// Rows skipped (a zero count, or clipped to zero with [`SLICES_CLIP`](super::SLICES_CLIP)).
    pub rows_skipped: usize,
    /// Elements written (overlapping destinations counted each time).
    pub elements: u64,
    /// `H5Dwrite` calls made.
    pub hdf5_writes: usize,
    /// Chunked datasets: chunks written (each touched chunk once).
    pub chunks_written: usize,
    /// Chunked datasets: chunks read first because the rows covered them only in part (raw
    /// writes: also stored edge chunks covered entirely, whose bytes outside the extent are
    /// kept).
    pub chunks_read: usize,
    /// Chunked filtered datasets: chunks whose filters vh5 ran itself and stored raw with
    /// `H5Dwrite_chunk` (counted in `chunks_written` and `hdf5_writes` too).
    pub raw_chunks: usize,
    /// Raw writes: chunk results dropped because another write stored the chunk after it was
    /// read and before the result could be stored; each was read and merged again (and
    /// counted again in `chunks_read`).
    pub chunks_redone: usize,
}

/// What a copy did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Rows that copied something.
    pub rows_copied: usize,
    /// Rows skipped (a zero count, or clipped to zero with [`SLICES_CLIP`](super::SLICES_CLIP)).
    pub rows_skipped: usize,
    /// Elements copied (overlapping destinations counted each time).
    pub elements: u64,
    /// Rows whose source and destination byte ranges intersected, copied through scratch.
    pub rows_staged: usize,
}
