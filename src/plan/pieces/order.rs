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

/// [`Plan::finish_on`] with 2 or more threads places the pieces of at least this many on two
/// threads (below it a thread costs more than half the sort: ~20-50 us against ~10-40 ns per
/// piece).
pub const PARALLEL_SORT_PIECES: usize = 32 << 10;

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
        self.finish_on(1);
    }

    /// [`Plan::finish`], the counting sort's placement of at least [`PARALLEL_SORT_PIECES`]
    /// pieces split between two threads when `threads` >= 2 (the calling thread and one
    /// scoped thread; when the system refuses the thread, the calling thread places all).
    /// The result is the same whatever `threads`.
    pub fn finish_on(&mut self, threads: usize) {
        self.order_pieces(threads >= 2 && self.pieces.len() >= PARALLEL_SORT_PIECES);
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
    fn order_pieces(&mut self, two: bool) {
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
            self.counting_sort(lo, span as usize, two);
        } else {
            // (chunk, row) is unique (a row has one piece per chunk), so an unstable sort on
            // it orders as a stable sort by chunk would, faster.
            self.pieces.sort_unstable_by_key(|p| (p.chunk, p.row));
            self.permute_coords();
        }
    }

    /// Stable counting sort of the pieces by chunk index (all in `lo .. lo + span`), their
    /// coordinates moved along ([`Plan::finish`]).
    fn counting_sort(&mut self, lo: u64, span: usize, two: bool) {
        // Coordinates moved as fixed-size arrays for 1-4 axes (a copy of a run-time length
        // called `memmove`: 15% of planning 262,144 one-chunk rows).
        match self.ndim {
            1 => self.counting_sort_w::<3>(lo, span, two),
            2 => self.counting_sort_w::<6>(lo, span, two),
            3 => self.counting_sort_w::<9>(lo, span, two),
            4 => self.counting_sort_w::<12>(lo, span, two),
            _ => self.counting_sort_w::<0>(lo, span, two),
        }
    }

    /// [`Plan::counting_sort`] with `W` = 3 x ndim coordinates per piece (0: any); `two`:
    /// placed on two threads.
    fn counting_sort_w<const W: usize>(&mut self, lo: u64, span: usize, two: bool) {
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
        let input = (&self.pieces[..], &self.coords[..]);
        if two {
            // Split at the first chunk whose pieces start past the middle: the two threads
            // write disjoint halves of the output (each reads every piece, places its own).
            let cut = next[..span].partition_point(|&k| k < pieces.len() / 2);
            let at = next[cut];
            let ((p0, p1), (c0, c1)) = (pieces.split_at_mut(at), coords.split_at_mut(at * w));
            let (n0, n1) = next.split_at_mut(cut);
            let hi = Chunks { lo: lo + cut as u64, end: lo + span as u64, base: at };
            // The second half's work, taken by the scoped thread (or by this one when the
            // system refuses the thread).
            let job = std::sync::Mutex::new(Some((n1, p1, c1)));
            let run = || {
                if let Some((n, p, c)) = job.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    place::<W>(input, w, hi, n, (p, c));
                }
            };
            std::thread::scope(|sc| {
                let other = std::thread::Builder::new().name("vh5-plan".into()).spawn_scoped(sc, run);
                place::<W>(input, w, Chunks { lo, end: lo + cut as u64, base: 0 }, n0, (p0, c0));
                match other {
                    Ok(t) => t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)),
                    Err(_) => run(),
                }
            });
        } else {
            place::<W>(input, w, Chunks { lo, end: lo + span as u64, base: 0 }, &mut next, (&mut pieces, &mut coords));
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

/// The chunks `lo .. end` of a counting sort, whose pieces go to output slots from `base` on.
#[derive(Clone, Copy)]
struct Chunks {
    lo: u64,
    end: u64,
    base: usize,
}

/// Place the pieces of `input` (pieces, coordinates of `w` values each) whose chunk is in
/// `range` into `out` (its slice of the sorted pieces and coordinates, from slot
/// `range.base`), in input order: `next[c - range.lo]` is the next slot of chunk `c`.
fn place<const W: usize>(input: (&[PieceKey], &[u64]), w: usize, range: Chunks, next: &mut [usize], out: (&mut [PieceKey], &mut [u64])) {
    let (pieces, coords) = out;
    for p in input.0 {
        if p.chunk < range.lo || p.chunk >= range.end {
            continue;
        }
        let slot = &mut next[(p.chunk - range.lo) as usize];
        let k = *slot;
        *slot += 1;
        let j = k - range.base;
        pieces[j] = PieceKey { at: k, ..*p };
        copy_coords::<W>(&mut coords[j * w..(j + 1) * w], &input.1[p.at * w..(p.at + 1) * w]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::Plan;
    use crate::plan::ChunkGrid;
    use proptest::prelude::*;

    /// (chunk, row, dataset start, array start, count) of a piece.
    type Listed = (u64, usize, Vec<u64>, Vec<u64>, Vec<u64>);

    /// A plan above [`PARALLEL_SORT_PIECES`] (one-chunk rows in a pseudo-random order, as the
    /// benchmark's one-row-per-chunk tables): `finish_on(2)` orders it as `finish` does.
    #[test]
    fn finish_on_two_threads_matches_one() {
        let m = super::PARALLEL_SORT_PIECES as u64 + 1000;
        let g = ChunkGrid::new(&[4 * m, 6], &[4, 3]).unwrap();
        let mut one = Plan::new(2);
        for i in 0..m {
            // A pseudo-random chunk row per row (some chunks get several rows, some none).
            let c = (i * 40_503) % m;
            let ones = [1u64, 1];
            one.add(&g, i as usize, &[2, 1 + (i % 2)], (&[4 * c + (i % 3), i % 4], &ones), (&[2 * i, 0], &ones));
        }
        let mut two = one.clone();
        one.finish();
        two.finish_on(2);
        assert_eq!(one.pieces, two.pieces);
        assert_eq!(one.groups, two.groups);
        assert!(one.pieces.iter().all(|p| one.piece(p) == two.piece(p)));
    }

    proptest! {
        /// Rows of every rank 1-5 (the fixed-size copies of `Plan::add` and of the counting
        /// sort for 1-4 axes, the general ones for 5), most inside one chunk, some over
        /// several, in random order: the finished plan holds the grid's pieces of every row,
        /// ordered as a stable sort by chunk (a reference sort of the pieces computed one row
        /// at a time), coordinates in plan order, whether the counting sort places them on one
        /// thread or on two (`two`). Plans are recycled from case to case.
        #[test]
        fn finish_matches_a_reference_sort_at_every_rank(
            ndim in 1usize..=5,
            rows in proptest::collection::vec((proptest::collection::vec(0u64..12, 5), proptest::collection::vec(1u64..4, 5), 0u8..4), 1..120),
            two in any::<bool>(),
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
            // The placement on two threads (forced whatever the size) when `two`.
            p.order_pieces(two);
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
