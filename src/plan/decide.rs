//! The read planner's cost model (pure): per chunk, read it whole once or read its pieces
//! through libhdf5 ([`decide`]), under the strategy of [`PlannerMode`].

/// How `read_many_slices` reads a chunked dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlannerMode {
    /// Per call and per chunk, whichever the cost rule predicts faster (see [`decide`]).
    Auto,
    /// Every chunk touched is read whole once and all row pieces scattered from it.
    Chunks,
    /// One `H5Dread` per row (libhdf5's chunk cache does the rest); not for datasets whose
    /// pipeline vh5 decodes itself (read as in [`PlannerMode::Chunks`]).
    Rows,
}

impl PlannerMode {
    /// Parse `auto` / `chunks` / `rows` (case-insensitive).
    pub fn parse(s: &str) -> Option<PlannerMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Some(PlannerMode::Auto),
            "chunks" => Some(PlannerMode::Chunks),
            "rows" => Some(PlannerMode::Rows),
            _ => None,
        }
    }

    /// The mode's number in the C ABI (`VH5_PLANNER_AUTO` = 1, `VH5_PLANNER_CHUNKS` = 2,
    /// `VH5_PLANNER_ROWS` = 3; 0 there means "the default").
    pub fn code(self) -> u32 {
        match self {
            PlannerMode::Auto => 1,
            PlannerMode::Chunks => 2,
            PlannerMode::Rows => 3,
        }
    }

    /// The mode of a [`PlannerMode::code`]; `None` for any other number.
    pub fn from_code(code: u32) -> Option<PlannerMode> {
        match code {
            1 => Some(PlannerMode::Auto),
            2 => Some(PlannerMode::Chunks),
            3 => Some(PlannerMode::Rows),
            _ => None,
        }
    }

    /// The mode's name as [`PlannerMode::parse`] takes it: `auto`, `chunks` or `rows`.
    pub fn name(self) -> &'static str {
        match self {
            PlannerMode::Auto => "auto",
            PlannerMode::Chunks => "chunks",
            PlannerMode::Rows => "rows",
        }
    }
}

/// Estimated fixed cost of fetching one whole chunk raw (chunk lookup + `H5Dread_chunk`), ns.
pub const CHUNK_FETCH_NS: u64 = 4_000;
/// Estimated fixed cost of one `H5Dread` of a small hyperslab, ns.
pub const HDF5_READ_NS: u64 = 2_000;
/// Estimated bytes moved per ns (read from the page cache + copy).
pub const BYTES_PER_NS: u64 = 4;
/// Estimated extra cost of the first `H5Dread` into a chunk (libhdf5 looks it up and brings
/// it into its chunk cache), ns: one-row-per-chunk tables of unfiltered 128-byte chunks cost
/// 3-4x more per chunk through libhdf5 (`VH5_PLANNER=rows`) than fetched raw (`chunks`).
pub const HDF5_CHUNK_NS: u64 = 8_000;
/// Estimated cost of a stepped selection libhdf5 reads (a file-side step given to
/// `H5Dread`): per contiguous run, ns, plus per byte selected, ns. Calibrated on libhdf5
/// 1.10.8 with one-row reads of a 10000x2000 float64 dataset in 1000x1000 chunks
/// (`VH5_PLANNER=rows`, `VH5_CHUNK_CACHE_BYTES=0`, CPU time): step 2 on axis 0 over
/// 5000x2000 (10,000 runs of 8 KB) 715-755 ms, over 500x2000 (1,000 runs) 57-65 ms, over
/// 5000x10 (5,000 runs of 80 B) 26-34 ms: ~6 us per run + ~8 ns per byte, against ~0.4 ns
/// per byte for a whole-chunk read (20 chunks of 8 MB: 65-75 ms).
pub const STEP_RUN_NS: u64 = 6_000;
pub const STEP_BYTE_NS: u64 = 8;
/// Unfiltered chunks of at most this many decoded bytes, read whole by a call of at least
/// [`MANY_RAW_CHUNKS`] chunks, are scattered by worker threads too (see [`scatter_workers`]).
pub const SMALL_RAW_CHUNK_BYTES: u64 = 16 << 10;
/// See [`SMALL_RAW_CHUNK_BYTES`].
pub const MANY_RAW_CHUNKS: usize = 4096;
/// Unfiltered chunks of at least this many decoded bytes, read whole two or more at a time,
/// are fetched and scattered by worker threads too (see [`scatter_workers`]).
pub const BIG_RAW_CHUNK_BYTES: u64 = 1 << 20;

/// Whether a call's whole chunks are scattered by worker threads as well as the calling
/// thread (true), or by the calling thread alone.
///
/// - `chunks` mode, filtered chunks: workers (decoding dominates).
/// - unfiltered chunks (`auto`, `rows`): the scatter is one copy no larger than the fetch, so
///   workers only when the call reads at least [`MANY_RAW_CHUNKS`] chunks of at most
///   [`SMALL_RAW_CHUNK_BYTES`]: there the per-chunk work is bookkeeping (cache lookup, piece
///   offsets, a short copy), not memory bandwidth, and batches of up to 256 chunks amortise
///   the hand-over. Measured (scripts/bench_scaling.py, 128-byte chunks, 2 threads, docs/
///   BENCHMARKS.md sessions 7-8): 16k and 64k chunks, whole and one row per chunk, the
///   calling thread alone took 1.2-2.5x the time of `chunks` mode (which has workers);
///   1k chunks were even (575 us vs 893 us, 604 vs 423). Large unfiltered chunks (at least
///   [`BIG_RAW_CHUNK_BYTES`], two or more): workers too, since their bytes are fetched with
///   positioned reads outside the libhdf5 lock (the chunk index): case 3 (20 chunks of 8 MB,
///   one row with step 2) ran 40.6 ms on the calling thread alone against 31.8 ms in `chunks`
///   mode (session 14; 33.7 vs 29.3 in session 13; sessions 7-8 measured the opposite,
///   36.8 vs 42.3 ms, when libhdf5 fetched every chunk under its lock).
pub fn scatter_workers(mode: PlannerMode, filtered: bool, chunk_bytes: u64, nwhole: usize) -> bool {
    filtered || mode == PlannerMode::Chunks || (chunk_bytes <= SMALL_RAW_CHUNK_BYTES && nwhole >= MANY_RAW_CHUNKS) || (chunk_bytes >= BIG_RAW_CHUNK_BYTES && nwhole >= 2)
}

/// Whether to read a chunk whole (true) or read its pieces through libhdf5 (false).
///
/// - `chunks` mode: always whole.
/// - filtered chunks (`auto`): whole, except in small calls (at most 4 chunks, one piece
///   each), where libhdf5's own chunk cache may already hold the decoded chunk (repeated small
///   calls) and a whole read could not do better than libhdf5 on a cold chunk anyway;
/// - unfiltered chunks (`auto`): whole when `CHUNK_FETCH_NS + chunk_bytes / BYTES_PER_NS`
///   <= `HDF5_CHUNK_NS + pieces * HDF5_READ_NS + step_ns + piece_bytes / BYTES_PER_NS`, i.e.
///   when the chunk's extra bytes cost less than the per-read overhead of its pieces (a few
///   tiny rows in a large chunk read their pieces; many rows in a chunk read it once) and
///   than libhdf5's cost of stepping: `step_ns` = [`STEP_RUN_NS`] per contiguous run +
///   [`STEP_BYTE_NS`] per byte of the pieces that have a file-side step (libhdf5 walks a
///   stepped selection run by run, ~20x slower per byte than a whole-chunk read; vh5 steps
///   in its copy engine over the chunk in memory).
///
/// `groups`: per chunk (pieces, bytes of the pieces, `step_ns`).
pub fn decide(mode: PlannerMode, filtered: bool, chunk_bytes: u64, groups: &[(usize, u64, u64)]) -> Vec<bool> {
    match mode {
        PlannerMode::Chunks => vec![true; groups.len()],
        PlannerMode::Rows => vec![false; groups.len()],
        PlannerMode::Auto if filtered => {
            let small = groups.len() <= 4 && groups.iter().all(|g| g.0 == 1);
            vec![!small; groups.len()]
        }
        PlannerMode::Auto => groups.iter().map(|&g| whole_unfiltered(chunk_bytes, g)).collect(),
    }
}

/// The `auto` rule of [`decide`] for one group of unfiltered chunks: (pieces, bytes of the
/// pieces, `step_ns`).
pub fn whole_unfiltered(chunk_bytes: u64, (pieces, bytes, step_ns): (usize, u64, u64)) -> bool {
    CHUNK_FETCH_NS + chunk_bytes / BYTES_PER_NS <= (HDF5_CHUNK_NS + pieces as u64 * HDF5_READ_NS).saturating_add(step_ns).saturating_add(bytes / BYTES_PER_NS)
}

/// Whether [`whole_unfiltered`] says "whole" for every group of chunks of `chunk_bytes`
/// whatever its pieces: a group has at least one piece and its bytes and `step_ns` only add
/// to the pieces' side, so one piece of 0 bytes, unstepped, is the least that side can be.
/// (Small chunks: 128-byte ones pass. Then no group's pieces need to be looked at: reading
/// every piece's coordinates cost ~10 ns per chunk, ~6% of a read of 262,144 one-chunk rows.)
pub fn always_whole_unfiltered(chunk_bytes: u64) -> bool {
    whole_unfiltered(chunk_bytes, (1, 0, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule() {
        // 80 KB chunks: one 800-byte piece -> pieces; 30 pieces -> whole.
        assert_eq!(decide(PlannerMode::Auto, false, 80_000, &[(1, 800, 0), (30, 24_000, 0)]), vec![false, true]);
        assert_eq!(decide(PlannerMode::Auto, true, 80_000, &[(1, 800, 0)]), vec![false]);
        assert_eq!(decide(PlannerMode::Auto, true, 80_000, &[(2, 800, 0)]), vec![true]);
        assert_eq!(decide(PlannerMode::Chunks, false, 1 << 30, &[(1, 8, 0)]), vec![true]);
        // One row with step 2 on axis 0 of an 8 MB chunk (500 runs of 8 KB): whole.
        assert_eq!(decide(PlannerMode::Auto, false, 8_000_000, &[(1, 4_000_000, 500 * STEP_RUN_NS + 4_000_000 * STEP_BYTE_NS)]), vec![true]);
        // A 10x10 stepped piece in an 8 MB chunk: still its own read.
        assert_eq!(decide(PlannerMode::Auto, false, 8_000_000, &[(1, 800, 10 * STEP_RUN_NS + 800 * STEP_BYTE_NS)]), vec![false]);
        // A piece covering a whole 128-byte chunk: fetched raw (libhdf5 costs more per chunk).
        assert_eq!(decide(PlannerMode::Auto, false, 128, &[(1, 128, 0)]), vec![true]);
    }

    proptest::proptest! {
        /// When `always_whole_unfiltered` holds, the rule says whole for any group.
        #[test]
        fn always_whole_means_whole_for_every_group(chunk_bytes in 0u64..1 << 20, pieces in 1usize..1000, bytes in 0u64..1 << 30, step_ns in 0u64..1 << 40) {
            if always_whole_unfiltered(chunk_bytes) {
                proptest::prop_assert!(whole_unfiltered(chunk_bytes, (pieces, bytes.min(chunk_bytes * pieces as u64), step_ns)));
            }
        }
    }

    #[test]
    fn always_whole_for_small_chunks_only() {
        assert!(always_whole_unfiltered(128));
        assert!(always_whole_unfiltered(16 << 10));
        assert!(!always_whole_unfiltered(80_000));
        assert!(!decide(PlannerMode::Auto, false, 80_000, &[(1, 0, 0)])[0]);
    }

    #[test]
    fn scatter_workers_for_many_small_raw_chunks() {
        // Filtered chunks and `chunks` mode: always.
        assert!(scatter_workers(PlannerMode::Auto, true, 1 << 30, 2));
        assert!(scatter_workers(PlannerMode::Chunks, false, 8 << 20, 20));
        // 65,536 unfiltered 128-byte chunks (bench_scaling "S ... raw 64k"): workers.
        assert!(scatter_workers(PlannerMode::Auto, false, 128, 65_536));
        assert!(scatter_workers(PlannerMode::Auto, false, SMALL_RAW_CHUNK_BYTES, MANY_RAW_CHUNKS));
        // 1,024 of them, or mid-size unfiltered chunks: the calling thread.
        assert!(!scatter_workers(PlannerMode::Auto, false, 128, 1_024));
        assert!(!scatter_workers(PlannerMode::Auto, false, SMALL_RAW_CHUNK_BYTES + 1, 1 << 20));
        assert!(!scatter_workers(PlannerMode::Auto, false, BIG_RAW_CHUNK_BYTES - 1, 20));
        // Large unfiltered chunks, two or more (case 3: 20 chunks of 8 MB): workers; one alone: not.
        assert!(scatter_workers(PlannerMode::Auto, false, 8_000_000, 20));
        assert!(!scatter_workers(PlannerMode::Auto, false, 8_000_000, 1));
    }
}
