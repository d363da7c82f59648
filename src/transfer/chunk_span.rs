//! Spans of indexed chunks: runs of consecutive chunk groups of a planned read whose stored
//! bytes the dataset's chunk index locates, handed to a worker as one job. The worker looks
//! each chunk up in the decoded-chunk cache, reads the stored bytes of the others with one
//! positioned read per run of chunks adjacent in the file ([`RUN_GAP_BYTES`],
//! [`RUN_MAX_BYTES`]), and decodes and scatters every chunk, all outside the libhdf5 lock.
//! Nothing is done per chunk on the calling thread but one index lookup (whole reads of
//! 262,144 raw 128-byte chunks spent ~40% of their time in per-chunk hand-offs and ~25% in
//! one `pread` system call per chunk). Driven by [`super::chunked`], only for chunks small
//! enough to travel in batches (the memory bound of big chunks is kept by the one-chunk jobs
//! of [`super::chunk_job`]).

use std::ops::Range;
use std::sync::atomic::Ordering;

use super::chunk_job::{Fetcher, Shared};
use super::rows::RawKind;
use crate::codec::Decoder;
use crate::error::{Error, Result};
use crate::geometry::MAX_RANK;
use crate::hdf5::chunk_cache::{trim_to_box, CacheKey};
use crate::hdf5::chunk_index::{ChunkIndex, Entry};

/// Chunks closer than this in the file are read with one `pread`, the bytes between them
/// read and dropped (a system call costs about as much as copying a few KiB from the page
/// cache; a version-1 B-tree node written between two chunks is ~1-2 KiB).
pub(super) const RUN_GAP_BYTES: u64 = 4 << 10;
/// One `pread` reads at most this many bytes (the run buffer of a worker stays this small
/// whatever the span's chunks hold, unless one chunk alone is larger).
pub(super) const RUN_MAX_BYTES: u64 = 1 << 20;

/// The destinations of the chunk this many chunks ahead are prefetched before a chunk is
/// scattered ([`Shared::prefetch_dst`]).
pub(super) const PREFETCH_AHEAD: usize = 8;

/// Decoded chunks waiting to be kept in the dataset's cache, with their keys.
type Kept = Vec<(CacheKey, Vec<u8>)>;

/// A worker's reusable buffers for spans: the bytes of one run of chunks, and one chunk
/// being decoded.
#[derive(Default)]
pub(super) struct SpanScratch {
    run: Vec<u8>,
    chunk: Vec<u8>,
    /// (chunk group, entry) of the span's chunks to read, in group order.
    todo: Vec<(usize, Entry)>,
    /// (chunk group, decoded bytes) of the span's chunks the cache holds, in group order.
    hits: Vec<(usize, std::sync::Arc<Vec<u8>>)>,
    /// The span's decoded chunks to keep in the cache (inserted under one lock at its end).
    keep: Kept,
}

/// Read, decode and scatter the chunk groups `groups` of `sh.plan` (each read whole and
/// present in `ix`). Errors name the chunk (`Hdf5` for a damaged index entry or a corrupt
/// chunk, `NoMemory`) and come with its group (the first failing one in group order).
pub(super) fn process_span(
    sh: &Shared,
    fetcher: &Fetcher,
    ix: &ChunkIndex,
    groups: Range<usize>,
    dec: &mut Decoder,
    s: &mut SpanScratch,
) -> std::result::Result<(), (usize, Error)> {
    let n = sh.grid.ndim();
    let mut origin = [0u64; MAX_RANK];
    s.todo.clear();
    let entry = |g: usize| (g, ix.get(sh.plan.groups[g].0).expect("span chunks are indexed"));
    match fetcher.cache.filter(|_| fetcher.probe) {
        Some(c) => {
            // Every lookup of the span under one lock; the hits are scattered after it.
            let (form, first) = (fetcher.form, groups.start);
            let keys = groups.clone().map(|g| CacheKey { chunk: sh.plan.groups[g].0, form: form.0, unit: form.1 });
            // An entry holds the chunk's box inside the dataset (`chunk_cache`): one of
            // another length is treated as a miss.
            let mut hits = std::mem::take(&mut s.hits);
            let mut stale = Vec::new();
            let fits = |g: usize, b: &[u8]| b.len() as u64 == sh.entry_bytes(sh.plan.groups[g].0);
            c.get_each(keys, |i, b| if fits(first + i, &b) { hits.push((first + i, b)) } else { stale.push(first + i) }, |i| s.todo.push(entry(first + i)));
            if !stale.is_empty() {
                s.todo.extend(stale.into_iter().map(entry));
                s.todo.sort_unstable_by_key(|t| t.0);
            }
            fetcher.hits.fetch_add(hits.len(), Ordering::Relaxed);
            fetcher.misses.fetch_add(s.todo.len(), Ordering::Relaxed);
            let mut boxed = [0u64; MAX_RANK];
            let scattered = hits.drain(..).try_for_each(|(g, hit)| {
                let linear = sh.plan.groups[g].0;
                sh.grid.linear_origin(linear, &mut origin[..n]);
                sh.grid.linear_extent(linear, &mut boxed[..n]);
                sh.scatter(g, &hit, &origin[..n], &boxed[..n]).map_err(|e| (g, e))
            });
            s.hits = hits;
            scattered?;
        }
        None => {
            if fetcher.cache.is_some() {
                fetcher.misses.fetch_add(groups.len(), Ordering::Relaxed);
            }
            s.todo.extend(groups.map(entry));
        }
    }
    let todo = std::mem::take(&mut s.todo);
    let r = read_runs(sh, fetcher.form, ix, &todo, dec, s);
    s.todo = todo;
    if let Some(c) = sh.cache.filter(|_| !s.keep.is_empty()) {
        drop(c.insert_each(s.keep.drain(..)));
    }
    r
}

/// Read the chunks of `todo` run by run (chunks adjacent in the file in one `pread`) and
/// decode and scatter each.
fn read_runs(sh: &Shared, form: (u8, usize), ix: &ChunkIndex, todo: &[(usize, Entry)], dec: &mut Decoder, s: &mut SpanScratch) -> std::result::Result<(), (usize, Error)> {
    for &(g, _) in todo.iter().take(PREFETCH_AHEAD) {
        sh.prefetch_dst(g);
    }
    let mut i = 0;
    while i < todo.len() {
        let (g0, e0) = todo[i];
        ix.check(&e0).map_err(|e| (g0, at_chunk(sh, g0, e)))?;
        let j = run_end(todo, i, |e| ix.check(e).is_ok());
        let (start, end) = (e0.offset, todo[j - 1].1.offset + todo[j - 1].1.size);
        ix.read_at(start, end - start, &mut s.run).map_err(|e| (g0, at_chunk(sh, g0, e)))?;
        for (t, &(g, e)) in todo.iter().enumerate().take(j).skip(i) {
            if let Some(&(ahead, _)) = todo.get(t + PREFETCH_AHEAD) {
                sh.prefetch_dst(ahead);
            }
            let off = (e.offset - start) as usize;
            let stored = &s.run[off..off + e.size as usize];
            chunk_from_stored(sh, form, g, stored, e.mask, dec, (&mut s.chunk, &mut s.keep)).map_err(|x| (g, x))?;
        }
        i = j;
    }
    Ok(())
}

/// The end (exclusive) of the run of chunks starting at `todo[i]` (whose entry is inside the
/// file): the next chunk joins while it starts at most [`RUN_GAP_BYTES`] after the run ends
/// (never before it: entries out of file order start a new run), the run stays within
/// [`RUN_MAX_BYTES`] and its entry is inside the file (`ok`).
fn run_end(todo: &[(usize, Entry)], i: usize, ok: impl Fn(&Entry) -> bool) -> usize {
    let start = todo[i].1.offset;
    let mut end = start + todo[i].1.size;
    let mut j = i + 1;
    while let Some(&(_, e)) = todo.get(j) {
        let next_end = e.offset.saturating_add(e.size);
        if e.offset < end || e.offset - end > RUN_GAP_BYTES || next_end - start > RUN_MAX_BYTES || !ok(&e) {
            break;
        }
        end = next_end;
        j += 1;
    }
    j
}

/// Decode the stored bytes `stored` of chunk group `g` (filter mask `mask`) and scatter its
/// pieces; keep the decoded chunk (its box inside the dataset, see `hdf5::chunk_cache`) in
/// the dataset's cache when the call keeps what it decodes. Stored bytes that are the chunk as it is in memory (no filter to run, no byte
/// swap or conversion) are scattered straight from `stored`; otherwise they are copied into
/// `buf` (reused) and decoded there. `form`: the memory form of the decoded bytes (the
/// cache key's); chunks the call keeps are pushed to `keep` (inserted by the caller).
fn chunk_from_stored(sh: &Shared, form: (u8, usize), g: usize, stored: &[u8], mask: u32, dec: &mut Decoder, (buf, keep): (&mut Vec<u8>, &mut Kept)) -> Result<()> {
    let n = sh.grid.ndim();
    let chunk = sh.plan.groups[g].0;
    let (mut coord, mut origin) = ([0u64; MAX_RANK], [0u64; MAX_RANK]);
    sh.grid.chunk_coord(chunk, &mut coord[..n]);
    sh.grid.chunk_origin(&coord[..n], &mut origin[..n]);
    let filters = sh.active_filters(&origin[..n]);
    let as_is = (0..filters.len()).all(|i| i < 32 && mask & (1 << i) != 0) && matches!(sh.raw, Some(RawKind::Same)) && sh.convert.is_none();
    if as_is && sh.cache.is_none() && stored.len() == sh.stored_bytes {
        return sh.scatter(g, stored, &origin[..n], sh.grid.chunk());
    }
    // Kept interior chunks move into the cache: a fresh buffer for each. A kept partial edge
    // chunk is decoded in `buf` (reused) and only its box inside the dataset is copied out.
    let mut boxed = [0u64; MAX_RANK];
    sh.grid.chunk_extent(&coord[..n], &mut boxed[..n]);
    let whole = sh.cache.is_some() && !sh.grid.is_partial(&boxed[..n]);
    let mut owned = Vec::new();
    let b = if whole { &mut owned } else { buf };
    b.clear();
    crate::mem::reserve_total(b, stored.len(), || format!("stored bytes of chunk {:?} ({} bytes)", &coord[..n], stored.len()))?;
    b.extend_from_slice(stored);
    sh.decode(b, mask, dec, &coord[..n], &origin[..n])?;
    sh.scatter(g, b, &origin[..n], sh.grid.chunk())?;
    if sh.cache.is_some() {
        let entry = if whole { std::mem::take(b) } else { trim_to_box(b, sh.grid.chunk(), &boxed[..n], sh.ctx.itemsize)? };
        keep.push((CacheKey { chunk, form: form.0, unit: form.1 }, entry));
    }
    Ok(())
}

/// `e` with the chunk of group `g` named (as the one-chunk path names it).
fn at_chunk(sh: &Shared, g: usize, e: Error) -> Error {
    let n = sh.grid.ndim();
    let (coord, origin, _) = sh.origin_extent(g);
    Error::new(e.kind, format!("chunk {:?} (dataset offset {:?}): {}", &coord[..n], &origin[..n], e.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(offset: u64, size: u64) -> (usize, Entry) {
        (0, Entry { offset, size, mask: 0 })
    }

    #[test]
    fn runs_join_file_adjacent_chunks_within_the_gap_and_size_limits() {
        let ok = |_: &Entry| true;
        // adjacent, then a gap of RUN_GAP_BYTES (joins), then one byte more (breaks)
        let t = [at(100, 10), at(110, 10), at(120 + RUN_GAP_BYTES, 10), at(130 + 2 * RUN_GAP_BYTES + 1, 10)];
        assert_eq!(run_end(&t, 0, ok), 3);
        assert_eq!(run_end(&t, 3, ok), 4);
        // out of file order or overlapping: a new run
        assert_eq!(run_end(&[at(100, 10), at(90, 10)], 0, ok), 1);
        assert_eq!(run_end(&[at(100, 10), at(105, 10)], 0, ok), 1);
        // the same bytes twice (a damaged index): each chunk its own run
        assert_eq!(run_end(&[at(100, 10), at(100, 10)], 0, ok), 1);
        // a run never grows past RUN_MAX_BYTES (one chunk alone may be larger)
        let half = RUN_MAX_BYTES / 2;
        assert_eq!(run_end(&[at(0, half), at(half, half), at(2 * half, 1)], 0, ok), 2);
        assert_eq!(run_end(&[at(0, 2 * RUN_MAX_BYTES), at(2 * RUN_MAX_BYTES, 1)], 0, ok), 1);
        // an entry outside the file ends the run before it (its own read refuses it)
        assert_eq!(run_end(&[at(0, 8), at(8, 8), at(16, 200)], 0, |e| e.size < 100), 2);
        assert_eq!(run_end(&[at(0, 8), at(8, u64::MAX)], 0, ok), 1);
    }
}
