//! Writes through libhdf5 (`H5Dwrite`) into chunks stored with filter mask 0 in a pipeline
//! with an OPTIONAL filter vh5 does not run (hdf5plugin's Blosc, szip): when that filter
//! fails on the new values (Blosc cannot shrink them), libhdf5 stores the chunk without it
//! but, at an unchanged stored size, keeps mask 0 in the chunk index (the stale-mask bug of
//! `transfer::masked`): no reader can decode the chunk any more. A new user's tryout (session
//! 21) hit it on 1-5% of small random Blosc chunks: Blosc succeeds at exactly the raw size,
//! so a chunk stored raw under mask 0 is common.
//!
//! [`StaleWatch`] notes the stored size of each such chunk before the write; after libhdf5
//! wrote them ([`StaleWatch::settle`], dataset flushed), a chunk at the same size still under
//! mask 0 is decoded by vh5 as if each candidate mask had been recorded (the optional
//! filters skipped, the rest run by vh5): when the chunk's elements inside the dataset are
//! then exactly the values just written, the mask was stale, and the same stored bytes are
//! recorded again under that mask (`H5Dwrite_chunk`, one byte longer first so that libhdf5
//! updates the index entry). A legitimate chunk (the filter ran and its output happens to
//! have the old size) never decodes to the written values that way: its bytes are the
//! filter's output, not the values. Where some mask libhdf5 may mean leaves on a filter vh5
//! does not decode in a pipeline with a plugin filter (LZ4 or scaleoffset then Blosc), or with more than [`MAX_OPTIONAL`] optional filters, a
//! stale mask cannot be recognised: a write reaching a stored chunk there is refused
//! ([`StaleWatch::refuse_unchecked`]; docs/ROBUSTNESS.md).

use std::collections::HashMap;

use hdf5_sys::h5i::hid_t;

use super::masked::{forget_last_lookup, left_on};
use crate::codec::{parse_pipeline, swap_bytes, Decoder, Filter};
use crate::error::Result;
use crate::hdf5::chunk::{chunk_state, convert, flush_dataset, is_partial_edge, read_raw_chunk, vh5_pipeline, ChunkLayout, ChunkState};
use crate::hdf5::handle::Handle;
use crate::hdf5::lock::H5Lock;
use crate::hdf5::write::write_raw_chunk;

/// Most optional filters whose combinations are tried as candidate masks.
const MAX_OPTIONAL: usize = 4;
/// Bytes of written chunk boxes kept for the check before the dataset is flushed and they
/// are checked (one flush per chunk doubled the time of 1,024 small writes).
pub(crate) const PENDING_BYTES: usize = 32 << 20;

/// The chunks of one write at risk of a stale mask 0, and how to recognise one.
pub(crate) struct StaleWatch {
    /// Stored size before the write, by chunk origin.
    sizes: HashMap<Vec<u64>, u64>,
    /// Candidate masks (optional filters vh5 does not run, skipped) and the filters each
    /// leaves on, all of which vh5 decodes.
    candidates: Vec<(u32, Vec<Filter>)>,
    /// Whether some mask libhdf5 may record is not among the candidates.
    incomplete: bool,
    /// The written elements' memory type, the file type, and how the file stores the
    /// memory bytes (`rawwrite::file_byte_swap`: `None` a conversion).
    mem_type: hid_t,
    ftype: Handle,
    swap: Option<Option<usize>>,
    /// Chunks handed to libhdf5 and not checked yet: (origin, box, elements written).
    pending: Vec<(Vec<u64>, Vec<u64>, Vec<u8>)>,
    pending_bytes: usize,
}

/// A mask libhdf5 may record and the filters it leaves on (all decoded by vh5).
type Candidate = (u32, Vec<Filter>);

/// The masks libhdf5 may record for a chunk of pipeline `layout.filters` whose optional
/// filters vh5 does not run fail (each with the filters it leaves on, all of which vh5
/// decodes), and whether some such mask is missing from them ([`StaleWatch::refuse_unchecked`]);
/// `None` when the pipeline has no such optional filter.
fn candidate_masks(layout: &ChunkLayout) -> Option<(Vec<Candidate>, bool)> {
    let optional: Vec<usize> = (0..layout.filters.len().min(32))
        .filter(|&i| {
            let f = &layout.filters[i];
            // nbit (5) and scaleoffset (6) are optional too but fail on no values (only on
            // bad parameters or memory): not a data-dependent skip.
            f.flags & 1 != 0 && !matches!(f.id, 5 | 6) && parse_pipeline(&[(f.id, f.cd_values.as_slice())]).is_none()
        })
        .collect();
    if optional.is_empty() {
        return None;
    }
    let subsets = if optional.len() > MAX_OPTIONAL { 0 } else { (1u32 << optional.len()) - 1 };
    let mut incomplete = subsets == 0;
    let plugin = layout.filters.iter().any(|f| f.id > 6);
    let candidates: Vec<Candidate> = (1..=subsets)
        .filter_map(|subset| {
            let mask = optional.iter().enumerate().filter(|&(k, _)| subset & (1 << k) != 0).fold(0u32, |m, (_, &i)| m | 1 << i);
            let left = left_on(&layout.filters, mask);
            // A mask libhdf5 may mean to record that leaves on a filter vh5 does not decode
            // (LZ4 for LZ4 + Blosc, scaleoffset for scaleoffset + Blosc), in a pipeline
            // with a plugin filter: a stale mask 0 there cannot be recognised. (libhdf5's
            // own nbit / scaleoffset before szip are left as they were.)
            incomplete |= left.is_none() && plugin;
            left.map(|f| (mask, f))
        })
        .collect();
    Some((candidates, incomplete))
}

/// Whether a write into the chunked dataset of `layout` that libhdf5 is to make through a
/// pipeline vh5 does not encode can leave a stale mask vh5 cannot check (see
/// [`StaleWatch::refuse_unchecked`]), whatever chunks are stored: for a dataset whose storage
/// the write is to allocate first (allocation time late), before anything is written.
pub(crate) fn unchecked_pipeline(layout: &ChunkLayout) -> bool {
    layout.chunk.is_some() && vh5_pipeline(&layout.filters).is_none() && candidate_masks(layout).is_some_and(|(_, incomplete)| incomplete)
}

impl StaleWatch {
    /// The watch for a write through `H5Dwrite` of the chunks whose first elements are
    /// `origins` (`n` coordinates each), or `None` when no chunk is at risk: the pipeline has
    /// no optional filter vh5 does not run, or vh5 encodes it whole (then `transfer::masked`
    /// stores every chunk itself). `dims`: the extent; `mem_type` and `swap`: the elements
    /// written and how the file stores them (`rawwrite::file_byte_swap`). Lock held.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        l: &H5Lock,
        dset: hid_t,
        layout: &ChunkLayout,
        dims: &[u64],
        origins: &[u64],
        n: usize,
        mem_type: hid_t,
        swap: Option<Option<usize>>,
    ) -> Result<Option<StaleWatch>> {
        let Some(chunk) = layout.chunk.as_deref() else { return Ok(None) };
        if layout.filters.is_empty() || vh5_pipeline(&layout.filters).is_some() || n == 0 {
            return Ok(None);
        }
        let Some((candidates, incomplete)) = candidate_masks(layout) else { return Ok(None) };
        let mut sizes = HashMap::new();
        for origin in origins.chunks_exact(n) {
            if layout.dont_filter_partial && is_partial_edge(origin, chunk, dims) {
                continue;
            }
            if let ChunkState::Stored { size } = chunk_state(l, dset, origin) {
                sizes.insert(origin.to_vec(), size);
            }
        }
        // SAFETY: an open dataset (checked by the caller); lock held.
        let ftype = Handle::new(l, unsafe { hdf5_sys::h5d::H5Dget_type(dset) }, "H5Dget_type")?;
        Ok(Some(StaleWatch { sizes, candidates, incomplete, mem_type, ftype, swap, pending: Vec::new(), pending_bytes: 0 }))
    }

    /// Number of chunks at risk: stored before the write.
    pub(crate) fn at_risk(&self) -> usize {
        self.sizes.len()
    }

    /// Refuse the write (before anything is written) when libhdf5 is to write stored chunks
    /// at risk (all but those `kept`, which vh5 stores itself) that [`StaleWatch::settle`]
    /// could not check: in a pipeline with a plugin filter, some mask the optional filters may
    /// leave leaves on a filter vh5 does not decode, or there are more than [`MAX_OPTIONAL`]
    /// optional filters. libhdf5 1.10.8 left 43 of 67 chunks unreadable with an LZ4 + Blosc
    /// pipeline (Blosc failing after LZ4, the stored size unchanged) when vh5 let it write.
    pub(crate) fn refuse_unchecked(&self, l: &H5Lock, dset: hid_t, filters: &[crate::hdf5::chunk::FilterSpec], kept: impl Fn(&[u64]) -> bool) -> Result<()> {
        let unchecked = if self.incomplete { self.sizes.keys().filter(|o| !kept(o)).count() } else { 0 };
        if unchecked > 0 {
            bail!(
                Unsupported,
                "dataset {}: {unchecked} stored chunks this write reaches are in a pipeline with optional filters vh5 does not run ([{}]): where one \
                 fails on the new values libhdf5 can keep a stale filter mask at an unchanged stored size (no reader could decode the chunk), and \
                 vh5 cannot check this pipeline for it (skipping the filter that failed leaves on a filter vh5 does not decode, or more \
                 than {MAX_OPTIONAL} optional filters; h5py's own writes can leave such chunks too); copy the data into a dataset whose \
                 pipeline has one such filter (Blosc alone, with shuffle / deflate / fletcher32 if wanted) and write there; nothing was written",
                crate::hdf5::handle::dataset_name(l, dset),
                filters.iter().map(|f| crate::hdf5::filter_support::filter_name(f.id)).collect::<Vec<_>>().join(", "),
            );
        }
        Ok(())
    }

    /// Note that libhdf5 was just handed the chunk at `origin` (shape `chunk`; `extent`: its
    /// box inside the dataset; `written`: that box's elements, dense in C order, in the memory
    /// type); chunks at risk are checked by [`StaleWatch::settle`], at the latest once
    /// [`PENDING_BYTES`] of them are noted. `itemsize`: bytes of one element in the file.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn note(&mut self, l: &H5Lock, dset: hid_t, origin: &[u64], chunk: &[u64], extent: &[u64], written: &[u8], itemsize: usize) -> Result<()> {
        if !self.sizes.contains_key(origin) {
            return Ok(());
        }
        self.pending_bytes += written.len();
        self.pending.push((origin.to_vec(), extent.to_vec(), written.to_vec()));
        if self.pending_bytes >= PENDING_BYTES {
            self.settle(l, dset, chunk, itemsize)?;
        }
        Ok(())
    }

    /// Flush the dataset and check every noted chunk: where libhdf5 left its mask stale,
    /// record the right one (see the module docs). Returns the chunks repaired. Lock held.
    pub(crate) fn settle(&mut self, l: &H5Lock, dset: hid_t, chunk: &[u64], itemsize: usize) -> Result<u64> {
        if self.pending.is_empty() {
            return Ok(0);
        }
        flush_dataset(l, dset)?;
        let mut repaired = 0;
        for (origin, extent, written) in std::mem::take(&mut self.pending) {
            if self.check(l, dset, &origin, chunk, &extent, &written, itemsize)? {
                repaired += 1;
            }
        }
        self.pending_bytes = 0;
        Ok(repaired)
    }

    /// [`StaleWatch::settle`] of one chunk (dataset flushed): whether it was repaired.
    #[allow(clippy::too_many_arguments)]
    fn check(&self, l: &H5Lock, dset: hid_t, origin: &[u64], chunk: &[u64], extent: &[u64], written: &[u8], itemsize: usize) -> Result<bool> {
        let Some(&old) = self.sizes.get(origin) else { return Ok(false) };
        // libhdf5's one-entry cache of the last lookup holds the mask it meant to record; the
        // index (what every reader sees) is what matters.
        forget_last_lookup(l, dset, origin, chunk);
        let ChunkState::Stored { size } = chunk_state(l, dset, origin) else { return Ok(false) };
        if size != old {
            return Ok(false);
        }
        let mut stored = Vec::new();
        if read_raw_chunk(l, dset, origin, size, &mut stored)? != Some(0) {
            return Ok(false);
        }
        let expected = self.file_bytes(l, written, extent.iter().product::<u64>() as usize, itemsize)?;
        let chunk_bytes = chunk.iter().product::<u64>() as usize * itemsize;
        for (mask, left) in &self.candidates {
            let mut b = stored.clone();
            if Decoder::default().decode_checked(left, 0, &mut b, chunk_bytes).is_err() || b.len() != chunk_bytes {
                continue;
            }
            if box_equals(&b, chunk, extent, &expected, itemsize) {
                let mut longer = stored.clone();
                longer.push(0);
                let what = |m: String| format!("chunk at {origin:?}: libhdf5 stored it without filters it skipped but kept filter mask 0; recording mask {mask:#x}: {m}");
                write_raw_chunk(l, dset, origin, *mask, &longer).map_err(|e| crate::error::Error::new(e.kind, what(e.message)))?;
                write_raw_chunk(l, dset, origin, *mask, &stored).map_err(|e| crate::error::Error::new(e.kind, what(e.message)))?;
                forget_last_lookup(l, dset, origin, chunk);
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl StaleWatch {
    /// `written` (`elems` elements of the memory type) as the file stores them (`itemsize`
    /// bytes each): the same bytes, byte-swapped, or converted by libhdf5 (as `H5Dwrite` did).
    fn file_bytes(&self, l: &H5Lock, written: &[u8], elems: usize, itemsize: usize) -> Result<Vec<u8>> {
        match self.swap {
            Some(None) => Ok(written.to_vec()),
            Some(Some(u)) => {
                let mut b = written.to_vec();
                swap_bytes(&mut b, u);
                Ok(b)
            }
            None => {
                let mem_size = written.len() / elems.max(1);
                let mut b = vec![0u8; elems * mem_size.max(itemsize)];
                b[..written.len()].copy_from_slice(written);
                let mut bkg = vec![0u8; elems * itemsize];
                convert(l, self.mem_type, self.ftype.id(), elems, &mut b, &mut bkg)?;
                b.truncate(elems * itemsize);
                Ok(b)
            }
        }
    }
}

/// Whether the elements of the box `extent` (from the chunk's first element) of the dense
/// C-order chunk `full` (shape `chunk`) equal `boxed` (the box dense in C order), `itemsize`
/// bytes each.
fn box_equals(full: &[u8], chunk: &[u64], extent: &[u64], boxed: &[u8], itemsize: usize) -> bool {
    let n = chunk.len();
    if n == 0 {
        return full.get(..itemsize) == boxed.get(..itemsize);
    }
    let run = extent[n - 1] as usize * itemsize;
    let rows: u64 = extent[..n - 1].iter().product();
    let mut idx = vec![0u64; n.saturating_sub(1)];
    for r in 0..rows as usize {
        let mut off = 0u64;
        for j in 0..n - 1 {
            off = off * chunk[j] + idx[j];
        }
        let at = (off * chunk[n - 1]) as usize * itemsize;
        if full.get(at..at + run) != boxed.get(r * run..(r + 1) * run) {
            return false;
        }
        for j in (0..n - 1).rev() {
            idx[j] += 1;
            if idx[j] < extent[j] {
                break;
            }
            idx[j] = 0;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::box_equals;

    #[test]
    fn box_of_a_chunk() {
        // chunk 3x4 of u8, box 2x3 at the origin
        let full: Vec<u8> = (0..12).collect();
        assert!(box_equals(&full, &[3, 4], &[2, 3], &[0, 1, 2, 4, 5, 6], 1));
        assert!(!box_equals(&full, &[3, 4], &[2, 3], &[0, 1, 2, 4, 5, 7], 1));
        assert!(box_equals(&full, &[3, 4], &[3, 4], &full, 1));
        // 2-byte items, 1-D box of 2 in a chunk of 3
        assert!(box_equals(&[1, 2, 3, 4, 5, 6], &[3], &[2], &[1, 2, 3, 4], 2));
        // 3-D: chunk 2x2x2, box 1x2x1
        let full: Vec<u8> = (0..8).collect();
        assert!(box_equals(&full, &[2, 2, 2], &[1, 2, 1], &[0, 2], 1));
        assert!(!box_equals(&full, &[2, 2, 2], &[1, 2, 1], &[0, 3], 1));
    }
}
