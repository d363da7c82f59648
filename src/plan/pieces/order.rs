//! [`Plan::finish`]: the pieces grouped by chunk, their coordinates stored in plan order.
//!
//! Pieces added in row order over a dense span of chunk indices (every many-row read) are
//! placed by a stable counting sort on the chunk index, in one pass. (Two passes through
//! buckets of consecutive chunk indices, each writing sequentially or inside a cache-sized
//! bucket, were no faster at 262,144 one-chunk rows in random order, 1.4x slower in 2-D:
//! docs/BENCHMARKS.md, session 17.)

use super::{PieceKey, Plan};

/// [`Plan::finish`] sorts by counting when the pieces' chunk indices span at most this many
/// times their number (the count table then costs no more than the pieces themselves).
pub const COUNTING_SPAN: u64 = 4;

/// `dst.copy_from_slice(src)`, as a fixed-size copy when `W` > 0 (then both have `W` values).
#[inline(always)]
pub(super) fn copy_coords<const W: usize>(dst: &mut [u64], src: &[u64]) {
    match (<&mut [u64; W]>::try_from(&mut *dst), <&[u64; W]>::try_from(src)) {
        (Ok(d), Ok(s)) if W > 0 => *d = *s,
        _ => dst.copy_from_slice(src),
    }
}

impl Plan {
    /// Group the pieces by chunk (C order of the grid), keeping row order inside a chunk, and
    /// store their coordinates in that order (the scatter then reads them front to back, not
    /// in the caller's row order). Pieces added in row order (every caller) over a span of
    /// chunk indices at most [`COUNTING_SPAN`] x their number are placed by a counting sort,
    /// O(pieces + span); others are sorted. Extra memory: one more copy of the coordinates.
    pub fn finish(&mut self) {
        self.order_pieces();
        self.groups.clear();
        let mut k = 0;
        while k < self.pieces.len() {
            let c = self.pieces[k].chunk;
            let start = k;
            while k < self.pieces.len() && self.pieces[k].chunk == c {
                k += 1;
            }
            self.groups.push((c, start..k));
        }
    }

    /// Order the pieces by (chunk, row) and their coordinates with them ([`Plan::finish`]).
    fn order_pieces(&mut self) {
        if self.pieces.is_sorted_by_key(|p| (p.chunk, p.row)) {
            // Already in order (a row over many chunks: its pieces come in C order of the
            // grid): no sort, and no copy of the coordinates unless rows were dropped.
            self.permute_coords();
            return;
        }
        let n = self.pieces.len();
        // Chunk range and row order in one pass.
        let (lo, hi, _, in_row_order) = self.pieces.iter().fold((u64::MAX, 0, 0, true), |(lo, hi, row, ok), p| (lo.min(p.chunk), hi.max(p.chunk), p.row, ok && p.row >= row));
        let span = hi.wrapping_sub(lo).wrapping_add(1);
        if n > 1 && in_row_order && span <= (n as u64).saturating_mul(COUNTING_SPAN) {
            self.counting_sort(lo, span as usize);
        } else {
            // (chunk, row) is unique (a row has one piece per chunk), so an unstable sort on
            // it orders as a stable sort by chunk would, faster.
            self.pieces.sort_unstable_by_key(|p| (p.chunk, p.row));
            self.permute_coords();
        }
    }

    /// Stable counting sort of the pieces by chunk index (all in `lo .. lo + span`), their
    /// coordinates moved along ([`Plan::finish`]).
    fn counting_sort(&mut self, lo: u64, span: usize) {
        // Coordinates moved as fixed-size arrays for 1-4 axes (a copy of a run-time length
        // called `memmove`: 15% of planning 262,144 one-chunk rows).
        match self.ndim {
            1 => self.counting_sort_w::<3>(lo, span),
            2 => self.counting_sort_w::<6>(lo, span),
            3 => self.counting_sort_w::<9>(lo, span),
            4 => self.counting_sort_w::<12>(lo, span),
            _ => self.counting_sort_w::<0>(lo, span),
        }
    }

    /// [`Plan::counting_sort`] with `W` = 3 x ndim coordinates per piece (0: any).
    fn counting_sort_w<const W: usize>(&mut self, lo: u64, span: usize) {
        // (The table is kept with the plan: 2 MB of fresh pages per call at 262,144 chunks.)
        let mut next = std::mem::take(&mut self.counts);
        next.clear();
        next.resize(span + 1, 0);
        for p in &self.pieces {
            next[(p.chunk - lo) as usize + 1] += 1;
        }
        for i in 1..=span {
            next[i] += next[i - 1];
        }
        let w = 3 * self.ndim;
        debug_assert!(W == 0 || W == w);
        let (mut pieces, mut coords) = std::mem::take(&mut self.spare);
        // (Not cleared: every slot is written below, each once.)
        pieces.resize(self.pieces.len(), PieceKey { chunk: 0, row: 0, at: 0 });
        coords.resize(self.pieces.len() * w, 0);
        for p in &self.pieces {
            let slot = &mut next[(p.chunk - lo) as usize];
            let k = *slot;
            *slot += 1;
            pieces[k] = PieceKey { at: k, ..*p };
            copy_coords::<W>(&mut coords[k * w..(k + 1) * w], &self.coords[p.at * w..(p.at + 1) * w]);
        }
        self.spare = (std::mem::replace(&mut self.pieces, pieces), std::mem::replace(&mut self.coords, coords));
        self.counts = next;
    }

    /// Store the coordinates in the pieces' order (after a sort).
    fn permute_coords(&mut self) {
        let w = 3 * self.ndim;
        if self.pieces.iter().enumerate().all(|(k, p)| p.at == k) && self.coords.len() == self.pieces.len() * w {
            return;
        }
        let mut coords = std::mem::take(&mut self.spare.1);
        coords.clear();
        coords.reserve(self.pieces.len() * w);
        for (k, p) in self.pieces.iter_mut().enumerate() {
            coords.extend_from_slice(&self.coords[p.at * w..(p.at + 1) * w]);
            p.at = k;
        }
        self.spare.1 = std::mem::replace(&mut self.coords, coords);
    }
}

#[cfg(test)]
mod tests {
    use super::super::Plan;
    use crate::plan::ChunkGrid;
    use proptest::prelude::*;

    /// (chunk, row, dataset start, array start, count) of a piece.
    type Listed = (u64, usize, Vec<u64>, Vec<u64>, Vec<u64>);

    proptest! {
        /// Rows of every rank 1-5 (the fixed-size copies of `Plan::add` and of the counting
        /// sort for 1-4 axes, the general ones for 5), most inside one chunk, some over
        /// several, in random order: the finished plan holds the grid's pieces of every row,
        /// ordered as a stable sort by chunk (a reference sort of the pieces computed one row
        /// at a time), coordinates in plan order. Plans are recycled from case to case.
        #[test]
        fn finish_matches_a_reference_sort_at_every_rank(
            ndim in 1usize..=5,
            rows in proptest::collection::vec((proptest::collection::vec(0u64..12, 5), proptest::collection::vec(1u64..4, 5), 0u8..4), 1..120),
        ) {
            // 4 or 2 chunks per axis: the chunk indices span at most 4x the rows (counting
            // sort) for most cases of every rank.
            let side = if ndim >= 4 { 6 } else { 12 };
            let (shape, chunk) = (vec![side; ndim], vec![3u64; ndim]);
            let g = ChunkGrid::new(&shape, &chunk).unwrap();
            let mut p = Plan::recycled(ndim, rows.len());
            let mut want: Vec<Listed> = vec![];
            for (i, (s, c, wide)) in rows.iter().enumerate() {
                let s: Vec<u64> = s.iter().map(|&x| x % side).collect();
                // Mostly one element per axis (inside one chunk); `wide` 0: up to 3.
                let count: Vec<u64> = (0..ndim).map(|j| if *wide == 0 { c[j].min(side - s[j]) } else { 1 }).collect();
                let dst: Vec<u64> = (0..ndim).map(|j| if j == 0 { 3 * i as u64 } else { 0 }).collect();
                let ones = vec![1u64; ndim];
                p.add(&g, i, &count, (&s[..ndim], &ones), (&dst, &ones));
                g.for_each_piece(&s[..ndim], &count, &ones, |q| {
                    let a: Vec<u64> = (0..ndim).map(|j| dst[j] + q.row_offset[j]).collect();
                    want.push((g.linear_index(q.chunk_coord), i, q.src_start.to_vec(), a, q.count.to_vec()));
                });
            }
            want.sort_by_key(|x| (x.0, x.1));
            p.finish();
            let got: Vec<Listed> = p.pieces.iter().map(|k| {
                let (s, d, c) = p.piece(k);
                (k.chunk, k.row, s.to_vec(), d.to_vec(), c.to_vec())
            }).collect();
            prop_assert_eq!(got, want);
            prop_assert!(p.pieces.iter().enumerate().all(|(k, q)| q.at == k));
            p.recycle();
        }
    }
}
