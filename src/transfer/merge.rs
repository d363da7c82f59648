//! Chunk assembly for writes: the caller's source array ([`SrcArray`]), the pieces of rows
//! cut by the chunk grid ([`PieceRef`], grouped by [`chunk_groups`]), merging them into a
//! chunk buffer ([`MergeCtx`]) and the part-way failure message ([`report`]). Shared by the
//! `H5Dwrite` path ([`super::write`]) and the raw chunk writer ([`super::rawwrite`]), which
//! import it and not each other.

use crate::dtype::Dtype;
use crate::engine::copy::copy_strided_runs;
use crate::error::{Error, Result};
use crate::geometry::{row_named, ArrayLayout, Row, SliceTable, MAX_RANK};

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

/// One piece of a row inside one chunk: sort key (chunk linear index, then order of
/// creation, which is row order), the row and where the geometry lives in `geo`.
#[derive(Clone, Copy)]
pub(super) struct PieceRef {
    pub chunk: u64,
    pub seq: u32,
    pub row: u32,
}

/// Index ranges of `pieces` (sorted by chunk) that share a chunk.
pub(super) fn chunk_groups(pieces: &[PieceRef]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut a = 0;
    while a < pieces.len() {
        let mut b = a + 1;
        while b < pieces.len() && pieces[b].chunk == pieces[a].chunk {
            b += 1;
        }
        out.push(a..b);
        a = b;
    }
    out
}

/// What merging row pieces into a chunk buffer needs (shared, read-only: usable from worker
/// threads).
pub(super) struct MergeCtx<'a> {
    pub table: &'a SliceTable<'a>,
    pub src: &'a SrcArray<'a>,
    pub dshape: &'a [u64],
    pub clip: bool,
    pub geo: &'a [u64],
    pub n: usize,
}

impl MergeCtx<'_> {
    fn row_of(&self, p: &PieceRef, cached: &mut Option<(usize, Row)>) -> Result<Row> {
        let i = p.row as usize;
        if let Some((ci, r)) = cached {
            if *ci == i {
                return Ok(*r);
            }
        }
        let r = row_named(self.table, i, &self.src.layout.shape, self.dshape, self.clip, NAMES)?.ok_or_else(|| err!(InvalidArgument, "internal: row {i} vanished"))?;
        *cached = Some((i, r));
        Ok(r)
    }

    /// Whether the union of the pieces of `group` covers every element of the chunk region
    /// `origin` + `extent` (clipped to the dataset). `covered` is scratch.
    pub(super) fn covers(&self, group: &[PieceRef], origin: &[u64], extent: &[u64], covered: &mut Vec<u8>) -> Result<bool> {
        let (n, geo) = (self.n, self.geo);
        let elems: u64 = extent.iter().product();
        let total: u64 = group.iter().map(|p| geo_count(geo, p.seq, n).iter().product::<u64>()).sum();
        if total < elems {
            return Ok(false);
        }
        if group.iter().any(|p| geo_count(geo, p.seq, n) == extent) {
            return Ok(true);
        }
        covered.clear();
        covered.resize(elems as usize, 0);
        let mut ncov = 0u64;
        let mut cached = None;
        for p in group {
            let r = self.row_of(p, &mut cached)?;
            let (k0, pc) = (geo_k0(geo, p.seq, n), geo_count(geo, p.seq, n));
            for_each_index(pc, |t| {
                let mut lin = 0u64;
                for j in 0..n {
                    let pos = r.dst_start[j] + (k0[j] + t[j]) * r.dst_step[j] - origin[j];
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
    pub(super) fn merge(&self, group: &[PieceRef], origin: &[u64], dense: &[isize], buf: &mut [u8]) -> Result<()> {
        let n = self.n;
        let src = self.src;
        let (mut counts, mut ss, mut cs) = ([0usize; MAX_RANK], [0isize; MAX_RANK], [0isize; MAX_RANK]);
        let mut cached = None;
        for p in group {
            let r = self.row_of(p, &mut cached)?;
            let (k0, pc) = (geo_k0(self.geo, p.seq, n), geo_count(self.geo, p.seq, n));
            let mut sidx = [0u64; MAX_RANK];
            let mut coff = 0usize;
            for j in 0..n {
                sidx[j] = r.src_start[j] + k0[j] * r.src_step[j];
                let pos = r.dst_start[j] + k0[j] * r.dst_step[j] - origin[j];
                coff += pos as usize * dense[j] as usize;
                counts[j] = pc[j] as usize;
                // One element on this axis: never stepped along (the steps may be huge).
                let one = pc[j] <= 1;
                ss[j] = if one { 0 } else { src.layout.strides[j] as isize * r.src_step[j] as isize };
                cs[j] = if one { 0 } else { dense[j] * r.dst_step[j] as isize };
            }
            let so = src.layout.byte_offset(&sidx[..n]);
            copy_strided_runs(src.buf, so, &ss[..n], buf, coff, &cs[..n], &counts[..n], src.layout.itemsize)?;
        }
        Ok(())
    }
}

fn geo_k0(geo: &[u64], seq: u32, n: usize) -> &[u64] {
    let b = seq as usize * 2 * n;
    &geo[b..b + n]
}

fn geo_count(geo: &[u64], seq: u32, n: usize) -> &[u64] {
    let b = seq as usize * 2 * n + n;
    &geo[b..b + n]
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
