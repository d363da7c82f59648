//! Chunk planning (pure, safe Rust), ONE planner for reads and writes: map the rows of a call
//! onto the dataset's chunk grid so that every chunk needed is visited once and all row pieces
//! inside it are copied from (reads) or into (writes) it, and find the rows whose
//! destinations overlap (reads: those must run in row order: "the later row wins" cannot be
//! kept when pieces of different rows are scattered chunk by chunk).
//!
//! A [`Plan`] holds the pieces ([`super::grid::Piece`] plus where each lies in the caller's
//! array) grouped by chunk in C order of the chunk grid, and inside a chunk in row order.
//! [`Plan::block`] turns a piece into the two strided blocks the copy engine moves: one in a
//! chunk buffer, one in the caller's array.

mod order;
mod pool;

pub use order::COUNTING_SPAN;
pub use pool::{POOL_PLANS, RECYCLE_BUDGET_BYTES};

use super::grid::ChunkGrid;
use crate::geometry::{axis_stride, ArrayLayout, Row, MAX_RANK};

/// One piece: a row's part inside one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PieceKey {
    /// C-order linear index of the chunk on the grid.
    pub chunk: u64,
    /// Index of the row in the caller's table.
    pub row: usize,
    /// Index of the piece's coordinates in `Plan::coords` (in units of `3 * ndim`).
    pub at: usize,
}

/// All pieces of a set of rows, grouped by chunk.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub ndim: usize,
    /// Sorted by (chunk, row).
    pub pieces: Vec<PieceKey>,
    /// Per piece, `3 * ndim` values: dataset start, array start, count (elements).
    coords: Vec<u64>,
    /// Per chunk touched: (linear chunk index, range of `pieces`).
    pub groups: Vec<(u64, std::ops::Range<usize>)>,
    /// Buffers [`Plan::finish`] sorts into (the sorted vectors swap with them).
    spare: (Vec<PieceKey>, Vec<u64>),
    /// The caller's buffers ([`Plan::take_scratch`], [`Plan::take_rows`]), kept with the others.
    scratch: Vec<u64>,
    rows: Vec<usize>,
    /// The counting sort's table ([`Plan::finish`]).
    counts: Vec<usize>,
    /// The most bytes its buffers ever held (kept plans: see `pool`).
    written: usize,
}

impl Plan {
    /// An empty plan for a dataset of `ndim` axes.
    pub fn new(ndim: usize) -> Plan {
        Plan { ndim, ..Default::default() }
    }

    /// An empty plan with room for `pieces` pieces.
    pub fn with_capacity(ndim: usize, pieces: usize) -> Plan {
        Plan { ndim, pieces: Vec::with_capacity(pieces), coords: Vec::with_capacity(pieces.saturating_mul(3 * ndim)), ..Default::default() }
    }

    /// An empty buffer for the caller's own use while it plans (kept with the plan's buffers
    /// by [`Plan::recycle`] once handed back with [`Plan::keep_scratch`]: the destination
    /// boxes of a read's rows, 4-8 MB fresh per call for 262,144 rows).
    pub fn take_scratch(&mut self) -> Vec<u64> {
        let mut v = std::mem::take(&mut self.scratch);
        v.clear();
        v
    }

    /// Hand back a buffer taken with [`Plan::take_scratch`].
    pub fn keep_scratch(&mut self, v: Vec<u64>) {
        self.scratch = v;
    }

    /// As [`Plan::take_scratch`], a buffer of row numbers (a read's rows that copy something).
    pub fn take_rows(&mut self) -> Vec<usize> {
        let mut v = std::mem::take(&mut self.rows);
        v.clear();
        v
    }

    /// Hand back a buffer taken with [`Plan::take_rows`].
    pub fn keep_rows(&mut self, v: Vec<usize>) {
        self.rows = v;
    }

    /// Add the pieces of row `i` of a READ (valid: inside the dataset; steps of both sides
    /// included): the dataset is the row's source side. Rows must be added in increasing `i`.
    pub fn add_row(&mut self, grid: &ChunkGrid, i: usize, r: &Row) -> usize {
        let n = self.ndim;
        self.add(grid, i, &r.count[..n], (&r.src_start[..n], &r.src_step[..n]), (&r.dst_start[..n], &r.dst_step[..n]))
    }

    /// Add the pieces of row `i` of a WRITE: the dataset is the row's destination side.
    pub fn add_write_row(&mut self, grid: &ChunkGrid, i: usize, r: &Row) -> usize {
        let n = self.ndim;
        self.add(grid, i, &r.count[..n], (&r.dst_start[..n], &r.dst_step[..n]), (&r.src_start[..n], &r.src_step[..n]))
    }

    /// Add the pieces of row `i` copying `count` elements per axis between the dataset
    /// (`dataset` = start and step, cut by `grid`) and the caller's array (`array`). Returns
    /// the number of pieces added. (What [`Plan::add_row`] does, for callers that validated
    /// the row without building a [`Row`].)
    pub fn add(&mut self, grid: &ChunkGrid, i: usize, count: &[u64], dataset: (&[u64], &[u64]), array: (&[u64], &[u64])) -> usize {
        let n = self.ndim;
        let before = self.pieces.len();
        // The row's pieces, exactly: per axis the chunks its span covers, or its count when
        // the step exceeds the chunk (every element in a chunk of its own). Reserved up front
        // (a whole read of 65,536 chunks grew the plan by doubling: every call copied it into
        // fresh pages, 2,000 page faults). At most 2^24 at once (a larger row grows as before).
        let chunk = grid.chunk();
        let mut first = [0u64; MAX_RANK];
        let mut est = 1usize;
        for j in 0..n {
            let (s, c) = (dataset.0[j], count[j]);
            first[j] = s / chunk[j];
            let span = (s + (c - 1) * dataset.1[j]) / chunk[j] - first[j] + 1;
            est = est.saturating_mul(usize::try_from(span.min(c)).unwrap_or(usize::MAX));
        }
        if est == 1 {
            // Inside one chunk (the common row of many-row calls): the piece is the row, its
            // chunk found above (no second pass of divisions through `for_each_piece`).
            self.pieces.push(PieceKey { chunk: grid.linear_index(&first[..n]), row: i, at: before });
            let parts = [&dataset.0[..n], &array.0[..n], &count[..n]];
            match n {
                1 => push_coords::<1>(&mut self.coords, parts),
                2 => push_coords::<2>(&mut self.coords, parts),
                3 => push_coords::<3>(&mut self.coords, parts),
                _ => push_coords::<0>(&mut self.coords, parts),
            }
            return 1;
        }
        if est > 1 {
            let est = est.min(1 << 24);
            self.pieces.reserve(est);
            self.coords.reserve(est.saturating_mul(3 * n));
        }
        grid.for_each_piece(dataset.0, count, dataset.1, |p| {
            let at = self.pieces.len();
            self.pieces.push(PieceKey { chunk: grid.linear_index(p.chunk_coord), row: i, at });
            self.coords.extend_from_slice(p.src_start);
            for j in 0..n {
                self.coords.push(array.0[j] + p.row_offset[j] * array.1[j]);
            }
            self.coords.extend_from_slice(p.count);
        });
        self.pieces.len() - before
    }

    /// Drop the pieces of the rows for which `keep(row)` is false (before [`Plan::finish`];
    /// their coordinates stay stored, unused).
    pub fn retain_rows(&mut self, mut keep: impl FnMut(usize) -> bool) {
        self.pieces.retain(|p| keep(p.row));
    }

    /// Append the pieces of `other`, a plan of rows after this plan's (neither finished):
    /// what adding its rows here would have done.
    pub fn append(&mut self, other: &Plan) {
        debug_assert!(self.groups.is_empty() && other.groups.is_empty() && self.ndim == other.ndim);
        let w = 3 * self.ndim;
        let base = self.coords.len().checked_div(w).unwrap_or(self.pieces.len());
        self.coords.extend_from_slice(&other.coords);
        self.pieces.extend(other.pieces.iter().map(|p| PieceKey { at: p.at + base, ..*p }));
    }

    /// Plan the given rows at once (see [`Plan::add_row`]).
    pub fn build<'r>(grid: &ChunkGrid, rows: impl IntoIterator<Item = (usize, &'r Row)>) -> Plan {
        let mut plan = Plan::new(grid.ndim());
        for (i, r) in rows {
            plan.add_row(grid, i, r);
        }
        plan.finish();
        plan
    }

    /// (dataset start, array start, count) of a piece, `ndim` values each.
    pub fn piece(&self, p: &PieceKey) -> (&[u64], &[u64], &[u64]) {
        let n = self.ndim;
        let b = p.at * 3 * n;
        (&self.coords[b..b + n], &self.coords[b + n..b + 2 * n], &self.coords[b + 2 * n..b + 3 * n])
    }

    /// The two strided blocks a piece copies between: in a chunk buffer whose element at
    /// dataset coordinates `origin` is at byte 0 with byte strides `chunk_strides`, and in the
    /// caller's array `array`. `steps` are the row's step tables of the dataset and the array
    /// (`None` = all 1; row `p.row`, `ndim` columns); an axis where the piece has one element
    /// never steps (`geometry::axis_stride`). The one chunk-intersection primitive of reads
    /// (chunk -> array) and writes (array -> chunk). Written into `b`, reused from piece to
    /// piece: only its offsets and first `ndim` entries are written (a fresh [`PieceBlock`] is
    /// ~800 bytes to zero, per piece).
    pub fn block(&self, p: &PieceKey, origin: &[u64], chunk_strides: &[isize], array: &ArrayLayout, steps: (Option<&[u64]>, Option<&[u64]>), b: &mut PieceBlock) {
        let n = self.ndim;
        let (s, a, c) = self.piece(p);
        let step = |t: Option<&[u64]>, j: usize| t.map_or(1, |t| t[p.row * n + j]);
        b.chunk_off = 0;
        b.array_off = array.byte_offset(a);
        for j in 0..n {
            b.chunk_off += (s[j] - origin[j]) as usize * chunk_strides[j] as usize;
            b.chunk_strides[j] = axis_stride(c[j], chunk_strides[j], step(steps.0, j));
            b.array_strides[j] = axis_stride(c[j], array.strides[j] as isize, step(steps.1, j));
            b.counts[j] = c[j] as usize;
        }
    }

    /// Number of elements of a piece.
    pub fn piece_elements(&self, p: &PieceKey) -> u64 {
        self.piece(p).2.iter().product()
    }
}

/// Append the three slices of `parts` to `out`, as fixed-size copies when `N` > 0 (then each
/// has `N` values; a copy of a run-time length called `memmove`, ~15% of planning 262,144
/// one-chunk rows with the sort's copies).
#[inline(always)]
fn push_coords<const N: usize>(out: &mut Vec<u64>, parts: [&[u64]; 3]) {
    if let (true, Ok(a), Ok(b), Ok(c)) = (N > 0, <[u64; N]>::try_from(parts[0]), <[u64; N]>::try_from(parts[1]), <[u64; N]>::try_from(parts[2])) {
        out.extend_from_slice(&a);
        out.extend_from_slice(&b);
        out.extend_from_slice(&c);
        return;
    }
    parts.iter().for_each(|p| out.extend_from_slice(p));
}

/// A piece as two strided blocks (see [`Plan::block`]); byte offsets and strides, the first
/// `ndim` entries of each array used.
#[derive(Debug, Clone, Copy)]
pub struct PieceBlock {
    pub chunk_off: usize,
    pub chunk_strides: [isize; MAX_RANK],
    pub array_off: usize,
    pub array_strides: [isize; MAX_RANK],
    pub counts: [usize; MAX_RANK],
}

impl PieceBlock {
    /// All offsets, strides and counts 0.
    pub fn new() -> PieceBlock {
        PieceBlock { chunk_off: 0, chunk_strides: [0; MAX_RANK], array_off: 0, array_strides: [0; MAX_RANK], counts: [0; MAX_RANK] }
    }
}

impl Default for PieceBlock {
    fn default() -> Self {
        Self::new()
    }
}

/// Append the destination box of a row (its destination `start`, `count` and `step` per
/// axis, every count >= 1) to `out`: per axis the first index written, then per axis the
/// last one (inclusive), `2 * ndim` values.
pub fn push_dst_box(start: &[u64], count: &[u64], step: &[u64], out: &mut Vec<u64>) {
    out.extend_from_slice(start);
    out.extend(start.iter().zip(count).zip(step).map(|((&s, &c), &t)| s + (c - 1) * t));
}

/// Which rows have a destination box (from [`push_dst_box`], `2 * ndim` values per row in
/// `boxes`) intersecting another row's.
///
/// Boxes are compared, not elements: two stepped rows interleaving without sharing an element
/// count as overlapping (conservative: they then run in row order, which is always correct).
/// Boxes are bucketed on a grid over the destination's two widest axes, with cells as large
/// as the largest box on that axis, so each box lands in at most 4 cells and only boxes
/// sharing a cell are compared (cells found by sorting (cell, box) pairs: no hashing, one
/// allocation). When the comparisons would exceed a budget (pathological
/// layouts) every row is reported as overlapping. Boxes that follow each other along one
/// axis (each past the previous one's end, or each before it) are found disjoint in one
/// pass, without buckets.
pub fn overlapping_rows(boxes: &[u64], dst_shape: &[u64]) -> Vec<bool> {
    let n = dst_shape.len();
    let m = if n == 0 { 0 } else { boxes.len() / (2 * n) };
    let mut out = vec![false; m];
    if m < 2 {
        return out;
    }
    let lo = |k: usize, j: usize| boxes[2 * n * k + j];
    let hi = |k: usize, j: usize| boxes[2 * n * k + n + j];
    // Boxes that follow each other along one axis, each starting past the previous one's
    // end (or each ending before it): their intervals on that axis are pairwise disjoint
    // (hi(k) < lo(k + 1) <= hi(k + 1) < lo(k + 2) ...), so no two boxes meet. One pass, no
    // buckets (rows written one after another, the usual gather: the bucketing sorted a
    // (cell, box) table as large as the plan, ~4% of a read of 262,144 one-chunk rows).
    let follow = |j: usize| (1..m).all(|k| lo(k, j) > hi(k - 1, j)) || (1..m).all(|k| hi(k, j) < lo(k - 1, j));
    if (0..n).any(follow) {
        return out;
    }
    // The two axes with the largest destination extent.
    let mut axes: Vec<usize> = (0..n).collect();
    axes.sort_by_key(|&j| std::cmp::Reverse(dst_shape[j]));
    axes.truncate(2);
    let cell: Vec<u64> = axes.iter().map(|&j| (0..m).map(|k| hi(k, j) - lo(k, j) + 1).max().unwrap_or(1)).collect();
    // (cell on axis a0, cell on axis a1, box): sorted, boxes sharing a cell are adjacent.
    let mut cells: Vec<(u64, u64, u32)> = Vec::with_capacity(m);
    for k in 0..m {
        let r = |a: usize| -> (u64, u64) {
            match axes.get(a) {
                Some(&j) => (lo(k, j) / cell[a], hi(k, j) / cell[a]),
                None => (0, 0),
            }
        };
        let (a0, a1) = r(0);
        let (b0, b1) = r(1);
        for x in a0..=a1 {
            for y in b0..=b1 {
                cells.push((x, y, k as u32));
            }
        }
    }
    cells.sort_unstable();
    let budget = 64 * m as u64 + 1_000_000;
    let mut work = 0u64;
    let intersects = |a: usize, b: usize| (0..n).all(|j| lo(a, j) <= hi(b, j) && lo(b, j) <= hi(a, j));
    let mut i = 0;
    while i < cells.len() {
        let (x, y, _) = cells[i];
        let mut e = i + 1;
        while e < cells.len() && cells[e].0 == x && cells[e].1 == y {
            e += 1;
        }
        let c = (e - i) as u64;
        work += c * (c - 1) / 2;
        if work > budget {
            return vec![true; m];
        }
        for p in i..e {
            let a = cells[p].2 as usize;
            for q in &cells[p + 1..e] {
                let b = q.2 as usize;
                if intersects(a, b) {
                    out[a] = true;
                    out[b] = true;
                }
            }
        }
        i = e;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn row(s: &[u64], d: &[u64], c: &[u64], ss: &[u64], ds: &[u64]) -> Row {
        let mut r = Row { ndim: s.len(), src_start: [0; MAX_RANK], dst_start: [0; MAX_RANK], count: [0; MAX_RANK], src_step: [1; MAX_RANK], dst_step: [1; MAX_RANK] };
        let n = s.len();
        r.src_start[..n].copy_from_slice(s);
        r.dst_start[..n].copy_from_slice(d);
        r.count[..n].copy_from_slice(c);
        r.src_step[..n].copy_from_slice(ss);
        r.dst_step[..n].copy_from_slice(ds);
        r
    }

    fn boxes(rows: &[Row]) -> Vec<u64> {
        let mut v = vec![];
        rows.iter().for_each(|r| push_dst_box(&r.dst_start[..r.ndim], &r.count[..r.ndim], &r.dst_step[..r.ndim], &mut v));
        v
    }

    #[test]
    fn groups_by_chunk_in_row_order() {
        let g = ChunkGrid::new(&[10, 10], &[5, 5]).unwrap();
        // row 0 spans chunks 0,1; row 1 inside chunk 0; row 2 inside chunk 3
        let rows = [row(&[0, 3], &[0, 0], &[2, 4], &[1, 1], &[1, 1]), row(&[1, 1], &[2, 0], &[1, 1], &[1, 1], &[1, 1]), row(&[7, 7], &[3, 0], &[1, 1], &[1, 1], &[1, 1])];
        let p = Plan::build(&g, rows.iter().enumerate());
        let keys: Vec<(u64, usize)> = p.pieces.iter().map(|k| (k.chunk, k.row)).collect();
        assert_eq!(keys, vec![(0, 0), (0, 1), (1, 0), (3, 2)]);
        assert_eq!(p.groups.iter().map(|g| (g.0, g.1.len())).collect::<Vec<_>>(), vec![(0, 2), (1, 1), (3, 1)]);
        let (s, d, c) = p.piece(&p.pieces[2]);
        assert_eq!((s, d, c), (&[0u64, 5][..], &[0u64, 2][..], &[2u64, 2][..]));
    }

    #[test]
    fn overlap_by_hand() {
        let a = row(&[0], &[0], &[4], &[1], &[1]);
        let b = row(&[0], &[3], &[2], &[1], &[1]); // dst 3..4: overlaps a
        let c = row(&[0], &[10], &[2], &[1], &[1]);
        assert_eq!(overlapping_rows(&boxes(&[a, b, c]), &[20]), vec![true, true, false]);
        // 2-D tiles side by side: no overlap
        let t: Vec<Row> = (0..4).flat_map(|i| (0..4).map(move |j| row(&[0, 0], &[i * 3, j * 3], &[3, 3], &[1, 1], &[1, 1]))).collect();
        assert!(overlapping_rows(&boxes(&t), &[12, 12]).iter().all(|&x| !x));
    }

    #[test]
    fn recycled_plan_of_another_rank_plans_like_a_fresh_one() {
        let g3 = ChunkGrid::new(&[9, 9, 9], &[2, 3, 4]).unwrap();
        let g1 = ChunkGrid::new(&[100], &[7]).unwrap();
        let r3 = [row(&[8, 0, 1], &[0, 0, 0], &[1, 9, 8], &[1, 1, 1], &[1, 1, 1]), row(&[0, 0, 0], &[1, 0, 0], &[3, 3, 3], &[1, 2, 3], &[1, 1, 1])];
        let r1 = [row(&[90], &[0], &[10], &[1], &[1]), row(&[3], &[10], &[40], &[2], &[1]), row(&[0], &[50], &[1], &[1], &[1])];
        for _ in 0..2 {
            for (g, rows) in [(&g3, &r3[..]), (&g1, &r1[..]), (&g3, &r3[..])] {
                let mut p = Plan::recycled(g.ndim(), 1);
                for (i, r) in rows.iter().enumerate() {
                    p.add_row(g, i, r);
                }
                p.finish();
                let fresh = Plan::build(g, rows.iter().enumerate());
                assert_eq!(listed(&p), listed(&fresh));
                assert_eq!(p.groups, fresh.groups);
                p.recycle();
            }
        }
    }

    #[test]
    fn overlap_of_boxes_following_each_other_along_an_axis() {
        // Rows written one after another on axis 0 (increasing, then decreasing): none overlap.
        let up: Vec<Row> = (0..6).map(|i| row(&[0, 0], &[i * 2, 5], &[2, 3], &[1, 1], &[1, 1])).collect();
        assert!(overlapping_rows(&boxes(&up), &[20, 20]).iter().all(|&x| !x));
        let down: Vec<Row> = up.iter().rev().copied().collect();
        assert!(overlapping_rows(&boxes(&down), &[20, 20]).iter().all(|&x| !x));
        // Following each other on axis 1 only (axis 0 all the same).
        let side: Vec<Row> = (0..6).map(|i| row(&[0, 0], &[3, i * 3], &[4, 3], &[1, 1], &[1, 1])).collect();
        assert!(overlapping_rows(&boxes(&side), &[20, 20]).iter().all(|&x| !x));
        // One row starting on the previous one's last element: not following, those two overlap.
        let mut touch = up.clone();
        touch[3].dst_start[0] = 5;
        assert_eq!(overlapping_rows(&boxes(&touch), &[20, 20]), vec![false, false, true, true, false, false]);
        // Increasing on axis 0 with a step: boxes (not elements) compared, 0..=4 and 4..=8 meet.
        let stepped = [row(&[0], &[0], &[3], &[1], &[2]), row(&[0], &[4], &[3], &[1], &[2])];
        assert_eq!(overlapping_rows(&boxes(&stepped), &[20]), vec![true, true]);
    }

    /// (chunk, row, dataset start, array start, count) of a piece.
    type Listed = (u64, usize, Vec<u64>, Vec<u64>, Vec<u64>);

    /// Every piece in plan order.
    fn listed(p: &Plan) -> Vec<Listed> {
        p.pieces
            .iter()
            .map(|k| {
                let (s, d, c) = p.piece(k);
                (k.chunk, k.row, s.to_vec(), d.to_vec(), c.to_vec())
            })
            .collect()
    }

    proptest! {
        /// The counting sort (dense chunk indices), the comparison sort (sparse ones, or rows
        /// dropped by `retain_rows`) and a reference sort of the unsorted pieces give the same
        /// pieces, groups and coordinates, the coordinates stored in plan order.
        #[test]
        fn append_of_two_halves_equals_one_plan(
            rows in proptest::collection::vec((0u64..40, 0u64..40, 1u64..9, 1u64..9, 1u64..4), 1..24),
            cut in 0usize..24, sparse in any::<bool>(),
        ) {
            // Rows planned in two plans (as two threads do) and joined give the plan of all of
            // them: the same pieces, groups and coordinates once finished.
            let (g, scale) = if sparse { (ChunkGrid::new(&[1 << 20, 1 << 20], &[1, 7]).unwrap(), 25_000) } else { (ChunkGrid::new(&[60, 60], &[4, 7]).unwrap(), 1) };
            let rs: Vec<Row> = rows.iter().enumerate().map(|(i, &(a, b, c0, c1, st))| row(&[a * scale, b], &[i as u64 * 10, 0], &[c0, c1], &[1, st], &[1, 1])).collect();
            let cut = cut.min(rs.len());
            let whole = Plan::build(&g, rs.iter().enumerate());
            let (mut a, mut b) = (Plan::recycled(2, 0), Plan::recycled(2, 0));
            for (i, r) in rs.iter().enumerate() {
                if i < cut { a.add_row(&g, i, r) } else { b.add_row(&g, i, r) };
            }
            a.append(&b);
            a.finish();
            prop_assert_eq!(listed(&a), listed(&whole));
            prop_assert_eq!(&a.groups, &whole.groups);
            a.recycle();
            b.recycle();
        }

        #[test]
        fn finish_orders_pieces_and_coordinates_by_chunk_then_row(
            rows in proptest::collection::vec((0u64..40, 0u64..40, 1u64..9, 1u64..9, 1u64..4), 1..24),
            sparse in any::<bool>(), drop_odd in any::<bool>(),
        ) {
            // sparse: a grid of 10^6 x 10^6 chunks of 1 x 7, rows far apart (span >> pieces)
            let (g, scale) = if sparse { (ChunkGrid::new(&[1 << 20, 1 << 20], &[1, 7]).unwrap(), 25_000) } else { (ChunkGrid::new(&[60, 60], &[4, 7]).unwrap(), 1) };
            let rs: Vec<Row> = rows.iter().enumerate().map(|(i, &(a, b, c0, c1, st))| row(&[a * scale, b], &[i as u64 * 10, 0], &[c0, c1], &[1, st], &[1, 1])).collect();
            // Recycled: every case after the first reuses the previous case's buffers (and
            // its spare sort buffers), which must leave nothing behind.
            let mut p = Plan::recycled(2, 0);
            for (i, r) in rs.iter().enumerate() {
                p.add_row(&g, i, r);
            }
            if drop_odd {
                p.retain_rows(|r| r % 2 == 0);
            }
            let mut want = listed(&p);
            want.sort_by_key(|x| (x.0, x.1));
            p.finish();
            prop_assert_eq!(listed(&p), want);
            prop_assert!(p.pieces.iter().enumerate().all(|(k, q)| q.at == k));
            let mut k = 0;
            for (c, r) in &p.groups {
                prop_assert_eq!(r.start, k);
                prop_assert!(r.end > r.start && p.pieces[r.clone()].iter().all(|q| q.chunk == *c));
                k = r.end;
            }
            prop_assert_eq!(k, p.pieces.len());
            p.recycle();
        }

        /// Boxes mostly following each other on axis 0 (sorted starts, random lengths: some
        /// touch or overlap their neighbour), against the brute-force pairwise box test.
        #[test]
        fn overlap_of_sorted_boxes_matches_bruteforce(rows in proptest::collection::vec((0u64..6, 1u64..4, 0u64..12, 1u64..4), 0..12), down in any::<bool>()) {
            let mut at = 0;
            let mut rs: Vec<Row> = rows.iter().map(|&(gap, c0, d1, c1)| {
                at = (at + gap).saturating_sub(2); // gap 0 or 1: overlaps the previous box
                let r = row(&[0, 0], &[at, d1], &[c0, c1], &[1, 1], &[1, 1]);
                at += c0;
                r
            }).collect();
            if down {
                rs.reverse();
            }
            let got = overlapping_rows(&boxes(&rs), &[60, 30]);
            let bx = |r: &Row| -> Vec<(u64, u64)> { (0..2).map(|j| (r.dst_start[j], r.dst_start[j] + (r.count[j] - 1) * r.dst_step[j])).collect() };
            for a in 0..rs.len() {
                let ba = bx(&rs[a]);
                let want = (0..rs.len()).any(|b| b != a && (0..2).all(|j| ba[j].0 <= bx(&rs[b])[j].1 && bx(&rs[b])[j].0 <= ba[j].1));
                prop_assert_eq!(got[a], want);
            }
        }

        /// `Plan::add`'s pieces (rows inside one chunk take a shortcut) are the grid's pieces
        /// of the row, with array starts at the row's destination offsets.
        #[test]
        fn add_plans_the_grids_pieces(s0 in 0u64..30, s1 in 0u64..30, c0 in 1u64..6, c1 in 1u64..6, st in 1u64..4, d0 in 0u64..9, dt in 1u64..3) {
            let g = ChunkGrid::new(&[60, 60], &[4, 7]).unwrap();
            let r = row(&[s0, s1], &[d0, 2], &[c0, c1], &[1, st], &[dt, 1]);
            let mut p = Plan::new(2);
            let added = p.add_row(&g, 3, &r);
            let mut want = vec![];
            g.for_each_piece(&[s0, s1], &[c0, c1], &[1, st], |q| {
                let a = vec![d0 + q.row_offset[0] * dt, 2 + q.row_offset[1]];
                want.push((g.linear_index(q.chunk_coord), 3usize, q.src_start.to_vec(), a, q.count.to_vec()));
            });
            prop_assert_eq!(added, want.len());
            prop_assert_eq!(listed(&p), want);
        }

        /// Against the brute-force pairwise box test.
        #[test]
        fn overlap_matches_bruteforce(rows in proptest::collection::vec((0u64..12, 1u64..4, 1u64..3, 0u64..12, 1u64..4), 0..12)) {
            let rs: Vec<Row> = rows.iter().map(|&(d0, c0, s0, d1, c1)| row(&[0, 0], &[d0, d1], &[c0, c1], &[1, 1], &[s0, 1])).collect();
            let got = overlapping_rows(&boxes(&rs), &[30, 30]);
            let bx = |r: &Row| -> Vec<(u64, u64)> { (0..2).map(|j| (r.dst_start[j], r.dst_start[j] + (r.count[j] - 1) * r.dst_step[j])).collect() };
            for a in 0..rs.len() {
                let ba = bx(&rs[a]);
                let want = (0..rs.len()).any(|b| {
                    let bb = bx(&rs[b]);
                    b != a && (0..2).all(|j| ba[j].0 <= bb[j].1 && bb[j].0 <= ba[j].1)
                });
                prop_assert_eq!(got[a], want);
            }
        }
    }
}
