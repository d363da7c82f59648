//! Chunk-grid geometry: which chunks of a chunked dataset a row's source selection touches,
//! and which part of the row falls into each. Pure, safe Rust; shared by the read planner
//! and the chunk-aware writer.
//!
//! A row selects, on every axis `j`, the elements `s_j + k*step_j` for `k` in `0..c_j`
//! (starts, counts and steps in elements). The dataset is tiled by chunks of `chunk_j`
//! elements per axis, chunk `q_j` covering `[q_j*chunk_j, (q_j+1)*chunk_j)` (edge chunks are
//! clipped to the dataset extent). A [`Piece`] is the intersection of the row with one chunk:
//! the chunk's coordinates on the grid, the row-local index of its first element on every
//! axis (`k0`), how many elements it holds per axis (`count`) and the dataset coordinate of
//! its first element (`src_start`; consecutive elements are `step` apart as in the row).

use std::ops::ControlFlow;

use crate::error::Result;
use crate::geometry::MAX_RANK;

/// One axis of a row cut by one chunk: chunk coordinate `chunk` on that axis, row-local first
/// index `k0` and `n` elements (all in elements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AxisPiece {
    pub chunk: u64,
    pub k0: u64,
    pub n: u64,
}

/// Split `count` elements starting at `start`, `step` apart, by chunks of `chunk` elements.
/// Calls `f` once per chunk touched, in increasing order. O(chunks touched): a step larger
/// than the chunk skips the chunks in between. `step` and `chunk` must be >= 1.
pub fn axis_pieces(start: u64, count: u64, step: u64, chunk: u64, mut f: impl FnMut(AxisPiece)) {
    debug_assert!(step >= 1 && chunk >= 1);
    let mut k = 0u64;
    while k < count {
        let p = start + k * step;
        let q = p / chunk;
        let end = (q + 1).saturating_mul(chunk); // first element of the next chunk
                                                 // first k with start + k*step >= end
        let k_next = ((end - start).div_ceil(step)).min(count);
        f(AxisPiece { chunk: q, k0: k, n: k_next - k });
        k = k_next;
    }
}

/// The intersection of a row with one chunk (see the module docs). Slices have `ndim` entries.
#[derive(Debug, Clone, Copy)]
pub struct Piece<'a> {
    /// Coordinates of the chunk on the chunk grid.
    pub chunk_coord: &'a [u64],
    /// Row-local index (k) of the piece's first element on every axis.
    pub row_offset: &'a [u64],
    /// Elements of the piece per axis.
    pub count: &'a [u64],
    /// Dataset coordinates of the piece's first element.
    pub src_start: &'a [u64],
}

/// The chunk grid of a dataset: its extents and chunk shape (elements per axis).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkGrid {
    shape: Vec<u64>,
    chunk: Vec<u64>,
    per_axis: Vec<u64>,
}

impl ChunkGrid {
    /// A grid for a dataset of `shape` tiled by `chunk` (same length, every chunk extent >= 1,
    /// at most [`MAX_RANK`] axes). Errors: `InvalidArgument` naming the axis.
    pub fn new(shape: &[u64], chunk: &[u64]) -> Result<Self> {
        if shape.len() != chunk.len() {
            bail!(InvalidArgument, "chunk shape has {} axes, dataset {}", chunk.len(), shape.len());
        }
        if shape.len() > MAX_RANK {
            bail!(Unsupported, "{} axes: at most {MAX_RANK} are supported", shape.len());
        }
        if let Some(j) = chunk.iter().position(|&c| c == 0) {
            bail!(InvalidArgument, "chunk extent 0 on axis {j}");
        }
        let per_axis = shape.iter().zip(chunk).map(|(&s, &c)| s.div_ceil(c)).collect();
        Ok(ChunkGrid { shape: shape.to_vec(), chunk: chunk.to_vec(), per_axis })
    }

    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// Dataset extents (elements).
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }
    /// Chunk extents (elements).
    pub fn chunk(&self) -> &[u64] {
        &self.chunk
    }
    /// Number of chunks along each axis (edge chunks included).
    pub fn chunks_per_axis(&self) -> &[u64] {
        &self.per_axis
    }
    /// Total number of chunks, `None` on overflow.
    pub fn nchunks(&self) -> Option<u64> {
        self.per_axis.iter().try_fold(1u64, |a, &b| a.checked_mul(b))
    }
    /// C-order linear index of the chunk at `coord` on the grid.
    pub fn linear_index(&self, coord: &[u64]) -> u64 {
        coord.iter().zip(&self.per_axis).fold(0u64, |acc, (&q, &n)| acc * n + q)
    }
    /// Inverse of [`ChunkGrid::linear_index`]: writes the grid coordinates into `out`.
    pub fn chunk_coord(&self, mut linear: u64, out: &mut [u64]) {
        for j in (0..self.ndim()).rev() {
            out[j] = linear % self.per_axis[j];
            linear /= self.per_axis[j];
        }
    }
    /// Dataset coordinates of the first element of the chunk with C-order linear index
    /// `linear` (into `out`): [`ChunkGrid::chunk_coord`] then [`ChunkGrid::chunk_origin`].
    pub fn linear_origin(&self, linear: u64, out: &mut [u64]) {
        self.chunk_coord(linear, out);
        for (o, c) in out.iter_mut().zip(&self.chunk) {
            *o *= c;
        }
    }
    /// Dataset coordinates of the first element of the chunk at `coord` (into `out`).
    pub fn chunk_origin(&self, coord: &[u64], out: &mut [u64]) {
        for j in 0..self.ndim() {
            out[j] = coord[j] * self.chunk[j];
        }
    }
    /// Extents of the chunk at `coord`, clipped to the dataset (into `out`): per axis
    /// `min(chunk, shape - origin)`, the shape of its decoded-chunk cache entry
    /// (`hdf5::chunk_cache`).
    pub fn chunk_extent(&self, coord: &[u64], out: &mut [u64]) {
        for j in 0..self.ndim() {
            out[j] = self.chunk[j].min(self.shape[j] - coord[j] * self.chunk[j]);
        }
    }
    /// [`ChunkGrid::chunk_extent`] of the chunk with C-order linear index `linear`.
    pub fn linear_extent(&self, linear: u64, out: &mut [u64]) {
        let mut coord = [0u64; MAX_RANK];
        let n = self.ndim();
        self.chunk_coord(linear, &mut coord[..n]);
        self.chunk_extent(&coord[..n], out);
    }
    /// Whether the chunk of extent `extent` ([`ChunkGrid::chunk_extent`]) reaches past the
    /// dataset on some axis (a partial edge chunk).
    pub fn is_partial(&self, extent: &[u64]) -> bool {
        extent != self.chunk.as_slice()
    }

    /// Call `f` for every chunk the selection `start`/`count`/`step` (per axis, elements; the
    /// selection must lie inside the dataset and every count and step be >= 1) touches, with
    /// the part of the selection inside it. Chunks come in C order of their grid coordinates.
    pub fn for_each_piece(&self, start: &[u64], count: &[u64], step: &[u64], mut f: impl FnMut(&Piece)) {
        let _: ControlFlow<()> = self.try_for_each_piece(start, count, step, |p| {
            f(p);
            ControlFlow::Continue(())
        });
    }

    /// [`ChunkGrid::for_each_piece`] that stops at the first piece for which `f` returns
    /// `Break`, returning it (`Continue` when every piece was visited).
    pub fn try_for_each_piece<B>(&self, start: &[u64], count: &[u64], step: &[u64], mut f: impl FnMut(&Piece) -> ControlFlow<B>) -> ControlFlow<B> {
        let n = self.ndim();
        debug_assert!(start.len() == n && count.len() == n && step.len() == n);
        if n == 0 {
            return f(&Piece { chunk_coord: &[], row_offset: &[], count: &[], src_start: &[] });
        }
        // A selection inside one chunk (the common row of many-row calls): one piece, no
        // per-axis lists (their allocations were a third of the planning of 65,536 one-chunk
        // rows, callgrind).
        // (Only the chunk coordinates are built: a row offset of zeros and the row's own
        // counts and start need no arrays, whose zeroing was ~10% of a cached gather.)
        const ZEROS: [u64; MAX_RANK] = [0; MAX_RANK];
        let mut cc = [0u64; MAX_RANK];
        let mut one = true;
        for j in 0..n {
            let q = start[j] / self.chunk[j];
            one &= (start[j] + (count[j] - 1) * step[j]) / self.chunk[j] == q;
            cc[j] = q;
        }
        if one {
            return f(&Piece { chunk_coord: &cc[..n], row_offset: &ZEROS[..n], count, src_start: start });
        }
        let (mut ro, mut ct) = ([0u64; MAX_RANK], [0u64; MAX_RANK]);
        // Per-axis pieces, then their Cartesian product (odometer over the axes).
        let mut axes: [Vec<AxisPiece>; MAX_RANK] = Default::default();
        for j in 0..n {
            axis_pieces(start[j], count[j], step[j], self.chunk[j], |p| axes[j].push(p));
        }
        let mut idx = [0usize; MAX_RANK];
        let mut ss = [0u64; MAX_RANK];
        loop {
            for j in 0..n {
                let p = axes[j][idx[j]];
                cc[j] = p.chunk;
                ro[j] = p.k0;
                ct[j] = p.n;
                ss[j] = start[j] + p.k0 * step[j];
            }
            f(&Piece { chunk_coord: &cc[..n], row_offset: &ro[..n], count: &ct[..n], src_start: &ss[..n] })?;
            // advance the odometer, last axis fastest
            let mut j = n;
            loop {
                if j == 0 {
                    return ControlFlow::Continue(());
                }
                j -= 1;
                idx[j] += 1;
                if idx[j] < axes[j].len() {
                    break;
                }
                idx[j] = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[test]
    fn axis_pieces_by_hand() {
        let mut v = vec![];
        // elements 3,5,7,9,11,13 with chunks of 4: [3] in 0, [5,7] in 1, [9,11] in 2, [13] in 3
        axis_pieces(3, 6, 2, 4, |p| v.push(p));
        assert_eq!(v, vec![AxisPiece { chunk: 0, k0: 0, n: 1 }, AxisPiece { chunk: 1, k0: 1, n: 2 }, AxisPiece { chunk: 2, k0: 3, n: 2 }, AxisPiece { chunk: 3, k0: 5, n: 1 },]);
        v.clear();
        // a step larger than the chunk skips chunks: 0, 10, 20 with chunks of 3 -> chunks 0, 3, 6
        axis_pieces(0, 3, 10, 3, |p| v.push(p));
        assert_eq!(v.iter().map(|p| p.chunk).collect::<Vec<_>>(), vec![0, 3, 6]);
        v.clear();
        axis_pieces(7, 0, 1, 4, |p| v.push(p));
        assert!(v.is_empty());
    }

    #[test]
    fn edge_chunk_boxes_clip_to_the_extent() {
        // (3, 74, 3944) in (900, 3, 3) chunks: every chunk is partial on axis 0.
        let g = ChunkGrid::new(&[3, 74, 3944], &[900, 3, 3]).unwrap();
        let mut e = [0u64; 3];
        g.linear_extent(0, &mut e);
        assert_eq!((e, g.is_partial(&e)), ([3, 3, 3], true));
        // The last chunk: 74 = 24 * 3 + 2, 3944 = 1314 * 3 + 2.
        g.linear_extent(g.nchunks().unwrap() - 1, &mut e);
        assert_eq!(e, [3, 2, 2]);
        let g = ChunkGrid::new(&[10, 7], &[4, 3]).unwrap();
        let mut e = [0u64; 2];
        for linear in 0..9 {
            let mut c = [0u64; 2];
            g.chunk_coord(linear, &mut c);
            let mut want = [0u64; 2];
            g.chunk_extent(&c, &mut want);
            g.linear_extent(linear, &mut e);
            assert_eq!(e, want);
            assert_eq!(g.is_partial(&e), c[0] == 2 || c[1] == 2, "chunk {c:?}");
        }
    }

    #[test]
    fn grid_indices() {
        let g = ChunkGrid::new(&[10, 7], &[4, 3]).unwrap();
        assert_eq!(g.chunks_per_axis(), &[3, 3]);
        assert_eq!(g.nchunks(), Some(9));
        assert_eq!(g.linear_index(&[2, 1]), 7);
        let mut c = [0u64; 2];
        g.chunk_coord(7, &mut c);
        assert_eq!(c, [2, 1]);
        let mut e = [0u64; 2];
        g.chunk_extent(&[2, 2], &mut e);
        assert_eq!(e, [2, 1]); // edge chunk: rows 8..10, cols 6..7
        g.chunk_origin(&[2, 2], &mut e);
        assert_eq!(e, [8, 6]);
        assert!(ChunkGrid::new(&[4], &[0]).is_err());
        assert!(ChunkGrid::new(&[4], &[1, 1]).is_err());
    }

    #[test]
    fn one_chunk_selection_is_one_piece() {
        // The fast path (no per-axis lists): a stepped 2x2 selection inside chunk (1, 2).
        let g = ChunkGrid::new(&[16, 16], &[4, 4]).unwrap();
        let mut v = vec![];
        g.for_each_piece(&[4, 9], &[2, 2], &[2, 1], |p| v.push((p.chunk_coord.to_vec(), p.row_offset.to_vec(), p.count.to_vec(), p.src_start.to_vec())));
        assert_eq!(v, vec![(vec![1, 2], vec![0, 0], vec![2, 2], vec![4, 9])]);
        // One element past the chunk on axis 1: two pieces (the general path).
        v.clear();
        g.for_each_piece(&[4, 10], &[2, 3], &[2, 1], |p| v.push((p.chunk_coord.to_vec(), p.row_offset.to_vec(), p.count.to_vec(), p.src_start.to_vec())));
        assert_eq!(v, vec![(vec![1, 2], vec![0, 0], vec![2, 2], vec![4, 10]), (vec![1, 3], vec![0, 2], vec![2, 1], vec![4, 12])]);
    }

    proptest! {
        /// Every element of the row lands in exactly one piece, in the chunk that contains it,
        /// at the right row-local index.
        #[test]
        fn pieces_partition_the_row(
            dims in prop::collection::vec((1u64..20, 1u64..6, 0u64..20, 1u64..6, 1u64..4), 1..4)
        ) {
            let shape: Vec<u64> = dims.iter().map(|d| d.0).collect();
            let chunk: Vec<u64> = dims.iter().map(|d| d.1).collect();
            let step: Vec<u64> = dims.iter().map(|d| d.4).collect();
            let start: Vec<u64> = dims.iter().map(|d| d.2 % d.0).collect();
            let count: Vec<u64> = dims.iter().zip(&start).map(|(d, &s)| (d.3).min((d.0 - 1 - s) / d.4 + 1)).collect();
            let g = ChunkGrid::new(&shape, &chunk).unwrap();
            let n = shape.len();
            // expected: row-local index -> chunk coords
            let mut want = BTreeMap::new();
            let total: u64 = count.iter().product();
            for lin in 0..total {
                let mut k = vec![0u64; n];
                let mut r = lin;
                for j in (0..n).rev() { k[j] = r % count[j]; r /= count[j]; }
                let q: Vec<u64> = (0..n).map(|j| (start[j] + k[j] * step[j]) / chunk[j]).collect();
                want.insert(k, q);
            }
            let mut pieces = vec![];
            g.for_each_piece(&start, &count, &step, |p| {
                pieces.push((p.chunk_coord.to_vec(), p.row_offset.to_vec(), p.count.to_vec(), p.src_start.to_vec()))
            });
            let mut got = BTreeMap::new();
            for (cc, ro, ct, ss) in pieces {
                for j in 0..n {
                    prop_assert_eq!(ss[j], start[j] + ro[j] * step[j]);
                }
                let pc: u64 = ct.iter().product();
                for lin in 0..pc {
                    let mut off = vec![0u64; n];
                    let mut r = lin;
                    for j in (0..n).rev() { off[j] = r % ct[j]; r /= ct[j]; }
                    let k: Vec<u64> = (0..n).map(|j| ro[j] + off[j]).collect();
                    prop_assert!(got.insert(k, cc.clone()).is_none(), "element in two pieces");
                }
            }
            prop_assert_eq!(got, want);
        }
    }
}
