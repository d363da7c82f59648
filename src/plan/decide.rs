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
}

/// Estimated fixed cost of fetching one whole chunk raw (chunk lookup + `H5Dread_chunk`), ns.
pub const CHUNK_FETCH_NS: u64 = 4_000;
/// Estimated fixed cost of one `H5Dread` of a small hyperslab, ns.
pub const HDF5_READ_NS: u64 = 2_000;
/// Estimated bytes moved per ns (read from the page cache + copy).
pub const BYTES_PER_NS: u64 = 4;
/// Whether to read a chunk whole (true) or read its pieces through libhdf5 (false).
///
/// - `chunks` mode: always whole.
/// - filtered chunks (`auto`): whole, except in small calls (at most 4 chunks, one piece
///   each), where libhdf5's own chunk cache may already hold the decoded chunk (repeated small
///   calls) and a whole read could not do better than libhdf5 on a cold chunk anyway;
/// - unfiltered chunks (`auto`): whole when `CHUNK_FETCH_NS + chunk_bytes / BYTES_PER_NS`
///   <= `pieces * HDF5_READ_NS + piece_bytes / BYTES_PER_NS`, i.e. when the chunk's extra
///   bytes cost less than the per-read overhead of its pieces (a few tiny rows in a large
///   chunk read their pieces; many rows in a chunk read it once).
pub fn decide(mode: PlannerMode, filtered: bool, chunk_bytes: u64, groups: &[(usize, u64)]) -> Vec<bool> {
    match mode {
        PlannerMode::Chunks => vec![true; groups.len()],
        PlannerMode::Rows => vec![false; groups.len()],
        PlannerMode::Auto if filtered => {
            let small = groups.len() <= 4 && groups.iter().all(|g| g.0 == 1);
            vec![!small; groups.len()]
        }
        PlannerMode::Auto => groups
            .iter()
            .map(|&(pieces, bytes)| CHUNK_FETCH_NS + chunk_bytes / BYTES_PER_NS <= pieces as u64 * HDF5_READ_NS + bytes / BYTES_PER_NS)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule() {
        // 80 KB chunks: one 800-byte piece -> pieces; 30 pieces -> whole.
        assert_eq!(decide(PlannerMode::Auto, false, 80_000, &[(1, 800), (30, 24_000)]), vec![false, true]);
        assert_eq!(decide(PlannerMode::Auto, true, 80_000, &[(1, 800)]), vec![false]);
        assert_eq!(decide(PlannerMode::Auto, true, 80_000, &[(2, 800)]), vec![true]);
        assert_eq!(decide(PlannerMode::Chunks, false, 1 << 30, &[(1, 8)]), vec![true]);
    }
}
