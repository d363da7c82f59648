//! Chunk assembly for writes: the caller's source array ([`SrcArray`]), the pieces of rows
//! cut by the chunk grid (the one planner, [`crate::plan::Plan`]), merging them into a
//! chunk buffer ([`MergeCtx`]) and the part-way failure message ([`report`]). Shared by the
//! `H5Dwrite` path ([`super::write`]) and the raw chunk writer ([`super::rawwrite`]), which
//! import it and not each other.

use crate::dtype::Dtype;
use crate::engine::copy::copy_strided_runs;
use crate::error::{Error, Result};
use crate::geometry::{axis_step, ArrayLayout, SliceTable, MAX_RANK};
use crate::plan::{PieceBlock, PieceKey, Plan};

/// A caller-owned source: its whole buffer, the layout of the array inside it, the dtype.
pub struct SrcArray<'a> {
    pub buf: &'a [u8],
    pub layout: ArrayLayout,
    pub dtype: Dtype,
}

pub(super) const NAMES: [&str; 2] = ["source array", "dataset"];

/// Row ranges as text: "0-3, 7, 9-12" (or "none").
pub(super) fn ranges(rows: &[usize]) -> String {
    if rows.is_empty() {
        return "none".into();
    }
    let mut out = String::new();
    let mut i = 0;
    while i < rows.len() {
        let mut j = i;
        while j + 1 < rows.len() && rows[j + 1] == rows[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push_str(", ");
        }
        if j == i {
            out.push_str(&rows[i].to_string());
        } else {
            out.push_str(&format!("{}-{}", rows[i], rows[j]));
        }
        i = j + 1;
    }
    out
}

/// Wrap a libhdf5 failure with what had been written (libhdf5 errors keep their kind).
pub(super) fn failed(e: Error, what: &str, done: &[usize], partial: &[usize]) -> Error {
    Error::new(
        e.kind,
        format!(
            "write failed part-way at {what}; rows written completely before the failure: {}; rows written in part: {}; no other row was written. Cause: {}",
            ranges(done),
            ranges(partial),
            e.message
        ),
    )
}

/// What merging row pieces into a chunk buffer needs (shared, read-only: usable from worker
/// threads): the table, the source array and the write's [`Plan`] (pieces grouped by chunk).
pub(super) struct MergeCtx<'a> {
    pub table: &'a SliceTable<'a>,
    pub src: &'a SrcArray<'a>,
    pub plan: &'a Plan,
    pub n: usize,
}

impl MergeCtx<'_> {
    /// Chunk group `gi`: its chunk's linear index on the grid and its pieces (row order).
    pub(super) fn group(&self, gi: usize) -> (u64, &[PieceKey]) {
        let (chunk, range) = &self.plan.groups[gi];
        (*chunk, &self.plan.pieces[range.clone()])
    }

    /// Whether the union of the pieces of `group` covers every element of the chunk region
    /// `origin` + `extent` (clipped to the dataset). `covered` is scratch.
    pub(super) fn covers(&self, group: &[PieceKey], origin: &[u64], extent: &[u64], covered: &mut Vec<u8>) -> Result<bool> {
        let n = self.n;
        let elems: u64 = extent.iter().product();
        let total: u64 = group.iter().map(|p| self.plan.piece_elements(p)).sum();
        if total < elems {
            return Ok(false);
        }
        if group.iter().any(|p| self.plan.piece(p).2 == extent) {
            return Ok(true);
        }
        covered.clear();
        covered.resize(elems as usize, 0);
        let mut ncov = 0u64;
        for p in group {
            let (start, _, pc) = self.plan.piece(p);
            let mut step = [1u64; MAX_RANK];
            for j in 0..n {
                step[j] = axis_step(pc[j], self.table.dst_step.map_or(1, |t| t[p.row * n + j]));
            }
            for_each_index(pc, |t| {
                let mut lin = 0u64;
                for j in 0..n {
                    let pos = start[j] + t[j] * step[j] - origin[j];
                    lin = lin * extent[j] + pos;
                }
                let c = &mut covered[lin as usize];
                ncov += (*c == 0) as u64;
                *c = 1;
            });
        }
        Ok(ncov == elems)
    }

    /// Copy the pieces of `group`, in row order, from the source array into `buf`, a chunk
    /// buffer whose element at dataset coordinates `origin` is at byte 0, with byte strides
    /// `dense`.
    pub(super) fn merge(&self, group: &[PieceKey], origin: &[u64], dense: &[isize], buf: &mut [u8]) -> Result<()> {
        let n = self.n;
        let src = self.src;
        let mut b = PieceBlock::new();
        for p in group {
            // The dataset is the row's destination side, the array its source side.
            self.plan.block(p, origin, dense, &src.layout, (self.table.dst_step, self.table.src_step), &mut b);
            copy_strided_runs(src.buf, b.array_off, &b.array_strides[..n], buf, b.chunk_off, &b.chunk_strides[..n], &b.counts[..n], src.layout.itemsize)?;
        }
        Ok(())
    }
}

/// The failure message for a chunked write: rows complete / in part from the piece counts.
pub(super) fn report(e: Error, what: &str, written: &[u32], total: &[u32]) -> Error {
    let done: Vec<usize> = (0..total.len()).filter(|&i| total[i] > 0 && written[i] == total[i]).collect();
    let partial: Vec<usize> = (0..total.len()).filter(|&i| written[i] > 0 && written[i] < total[i]).collect();
    failed(e, what, &done, &partial)
}

/// Call `f` with every index `t` (C order) of a block of `count` elements per axis.
fn for_each_index(count: &[u64], mut f: impl FnMut(&[u64])) {
    let n = count.len();
    if count.contains(&0) {
        return;
    }
    let mut t = [0u64; MAX_RANK];
    loop {
        f(&t[..n]);
        let mut j = n;
        loop {
            if j == 0 {
                return;
            }
            j -= 1;
            t[j] += 1;
            if t[j] < count[j] {
                break;
            }
            t[j] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ranges() {
        assert_eq!(ranges(&[]), "none");
        assert_eq!(ranges(&[0, 1, 2, 3, 7, 9, 10, 11, 12]), "0-3, 7, 9-12");
        assert_eq!(ranges(&[5]), "5");
    }

    #[test]
    fn index_odometer() {
        let mut v = vec![];
        for_each_index(&[2, 3], |t| v.push((t[0], t[1])));
        assert_eq!(v, vec![(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]);
        let mut k = 0;
        for_each_index(&[], |_| k += 1);
        assert_eq!(k, 1);
        for_each_index(&[2, 0], |_| k += 1);
        assert_eq!(k, 1);
    }
}
