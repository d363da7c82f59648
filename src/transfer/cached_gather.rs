//! Calls served whole by the decoded-chunk cache: rows copied in row order straight from the
//! cached chunks, with no plan (no pieces to sort, no chunk jobs, no workers).
//!
//! Repeated small reads of a small dataset (test1.nc's `tas`, 16 chunks: 10,000 random 1x4x4
//! rows per call) find every chunk cached after the first call; the planner then spent most
//! of each call cutting rows into pieces, sorting them by chunk and scattering them chunk by
//! chunk. Here each row's pieces are copied as they are cut. Rows run in row order, so a row
//! whose destination overlaps an earlier row's overwrites it, as the baseline's one
//! `H5Dread` per row does.
//!
//! Two passes: the first validates every row (the errors of the planned path, from the same
//! checks, before anything is written); the second copies row by row, looking each chunk up
//! in the cache once (each row's first chunk [`LOOKAHEAD_ROWS`] rows ahead, its bytes
//! prefetched, so that the cache misses of several rows overlap). At the first chunk the cache lacks it stops and the planner runs as
//! before, writing every row again (each destination element ends with the value of the
//! last row writing it, as in any path). Taken only when the chunk grid has at most
//! [`LOOKUP_MAX_CHUNKS`] chunks (the per-call lookup table) and, with more than one thread,
//! the call copies at most [`GATHER_MAX_BYTES`] (larger copies pay for the planner's workers).

use std::cell::RefCell;
use std::ops::ControlFlow;

use super::options::num_threads;
use super::rows::Ctx;
use super::stats::ReadStats;
use crate::engine::copy::{dense_strides, prefetch};
use crate::error::Result;
use crate::geometry::{axis_stride, row_counts, row_steps, validated_row_counts, SliceTable, MAX_RANK};
use crate::hdf5::chunk_cache::{entry_bytes, CacheKey, ChunkCache, Locked};
use crate::hdf5::lock::{released, H5Lock};
use crate::plan::grid::ChunkGrid;

/// Grids with more chunks than this never take this path (its lookup table holds one slot
/// per chunk of the grid: 32 KiB at most). Measured crossover (session 22, one row per
/// chunk in random order, every chunk cached): at 8k chunks this path is ahead of the
/// planner (wall 1.07-1.32x), at 16k the planner is (0.76-0.81x): visiting cached entries in
/// chunk order, its workers stay in cache where rows in random order here no longer do.
pub(crate) const LOOKUP_MAX_CHUNKS: u64 = 8 << 10;

/// With more than one thread, calls copying more than this many bytes go to the planner,
/// whose workers scatter cached chunks in parallel.
pub(crate) const GATHER_MAX_BYTES: u64 = 4 << 20;

/// What [`gather_cached`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gathered {
    /// Every row copied from the cache: the call is done.
    Done,
    /// Every row validated (nothing to report), but the call is left to the planner: a chunk
    /// was missing from the cache, or the copy is big enough for the planner's workers. The
    /// planner may skip validating the rows again ([`validated_row_counts`]).
    Validated,
    /// Not tried (the grid has more than [`LOOKUP_MAX_CHUNKS`] chunks): nothing checked.
    Declined,
}

thread_local! {
    /// The calling thread's lookup table, kept between calls: per chunk of the grid, 0 when
    /// not looked up yet in this call, else 1 + its position in the call's list of chunks
    /// found (all 0 between calls); allocating up to 64 KiB of fresh slots per call cost
    /// page faults on the largest grids.
    static SLOTS: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    /// The calling thread's per-row table of each row's first chunk (linear index, [`EMPTY`]
    /// for a row that reads nothing), kept between calls for the same reason as [`SLOTS`].
    static FIRSTS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// [`FIRSTS`]' mark of a row that reads nothing.
const EMPTY: u64 = u64::MAX;

/// How many rows ahead of the one being copied [`copy_rows`] looks its first chunk up and
/// prefetches its bytes. One row per chunk in random order over a grid of thousands of
/// chunks makes every row wait on cache misses (the lookup's hash table, the entry's bytes):
/// looked up this far ahead, several rows' misses overlap (docs/BENCHMARKS.md, session 22).
const LOOKAHEAD_ROWS: usize = 8;

/// Read the rows of `table` into `ctx.dst` from the chunks `cache` holds in memory form
/// `form` ([`CacheKey::form`], [`CacheKey::unit`]). Returns [`Gathered::Done`] when every row
/// was copied, else what was checked (`stats` untouched; see the module docs); errors are
/// those of row validation (`InvalidArgument`, `OutOfBounds`, nothing written) and of the
/// copy's bounds checks. Makes no libhdf5 call: the libhdf5 lock `l` is released while rows
/// are copied (other threads' libhdf5 calls run meanwhile; the cache and its chunks are
/// shared `Arc`s of the dataset's facts, which the caller holds).
pub(crate) fn gather_cached(l: &H5Lock, table: &SliceTable, ctx: &Ctx, grid: &ChunkGrid, cache: &ChunkCache, form: (u8, usize), stats: &mut ReadStats) -> Result<Gathered> {
    let n = grid.ndim();
    let Some(nchunks) = grid.nchunks().filter(|&c| c <= LOOKUP_MAX_CHUNKS) else { return Ok(Gathered::Declined) };
    // Pass 1: validate every row (nothing written on a bad row, as in the planned path).
    // Each row's first chunk is noted on the way, for the copy's look-ahead.
    let mut firsts = FIRSTS.with(|h| std::mem::take(&mut *h.borrow_mut()));
    firsts.clear();
    let (mut count, mut coord) = ([0u64; MAX_RANK], [0u64; MAX_RANK]);
    let (mut rows, mut elements) = (0usize, 0u64);
    for i in 0..table.nslices {
        let first = if row_counts(table, i, ctx.src_shape, ctx.dst_shape, ctx.clip, ["dataset", "destination"], &mut count[..n])? {
            rows += 1;
            elements += count[..n].iter().product::<u64>();
            for (j, c) in coord[..n].iter_mut().enumerate() {
                *c = table.src_start[i * n + j] / grid.chunk()[j];
            }
            grid.linear_index(&coord[..n])
        } else {
            EMPTY
        };
        firsts.push(first);
    }
    if num_threads() > 1 && elements.saturating_mul(ctx.itemsize as u64) > GATHER_MAX_BYTES {
        FIRSTS.with(|h| *h.borrow_mut() = firsts);
        return Ok(Gathered::Validated);
    }
    let mut slots = SLOTS.with(|h| std::mem::take(&mut *h.borrow_mut()));
    slots.resize(nchunks as usize, 0);
    let mut found = Vec::new();
    // The cache is locked inside the closure, while the libhdf5 lock is released (a thread
    // holding the libhdf5 lock may wait for the cache: never the other way round).
    // SAFETY: the closure makes no libhdf5 call.
    let copied = unsafe {
        released(l, || {
            let Some(mut locked) = cache.locked() else { return Ok(None) };
            let r = copy_rows(table, ctx, grid, (&locked, form), &firsts, &mut slots, &mut found);
            // Chunks used are the most recently used, in the order of first use.
            locked.promote(found.iter().map(|&chunk| CacheKey { chunk, form: form.0, unit: form.1 }));
            r
        })
    };
    found.iter().for_each(|&c| slots[c as usize] = 0);
    SLOTS.with(|h| *h.borrow_mut() = slots);
    FIRSTS.with(|h| *h.borrow_mut() = firsts);
    let Some(distinct) = copied? else { return Ok(Gathered::Validated) };
    stats.rows_read += rows;
    stats.rows_skipped += table.nslices - rows;
    stats.elements += elements;
    stats.chunks_read += distinct;
    stats.raw_chunks += distinct;
    stats.cache_hits += distinct;
    Ok(Gathered::Done)
}

/// Why the piece walk of [`copy_rows`] stopped early.
enum Stop {
    /// A chunk the cache lacks.
    Miss,
    /// The copy's bounds check failed.
    Failed(crate::error::Error),
}

/// The chunks [`copy_rows`] found in the cache: per chunk its entry and the entry's strides
/// (C order over the chunk's box inside the dataset, see `hdf5::chunk_cache`), in the order
/// looked up; `slots` (one per chunk of the grid, see [`SLOTS`]) holds 1 + a chunk's position
/// here, `found` its linear index.
struct Found<'c, 's> {
    cache: &'s Locked<'c>,
    form: (u8, usize),
    bufs: Vec<(&'s [u8], [isize; MAX_RANK])>,
    slots: &'s mut [u32],
    found: &'s mut Vec<u64>,
}

impl<'s> Found<'_, 's> {
    /// Position in `bufs` of chunk `linear` (grid coordinates `coord`), looked up in the cache
    /// the first time; `None` when the cache lacks it (or holds an entry of another length).
    fn slot(&mut self, grid: &ChunkGrid, linear: u64, coord: &[u64], itemsize: usize) -> Option<usize> {
        let slot = self.slots.get_mut(linear as usize)?;
        if *slot == 0 {
            let n = grid.ndim();
            let mut boxed = [0u64; MAX_RANK];
            grid.chunk_extent(coord, &mut boxed[..n]);
            let want = entry_bytes(&boxed[..n], itemsize);
            let b = self.cache.peek(&CacheKey { chunk: linear, form: self.form.0, unit: self.form.1 }).filter(|b| b.len() as u64 == want)?;
            let mut cstr = [0isize; MAX_RANK];
            dense_strides(&boxed[..n], itemsize, &mut cstr[..n]);
            self.bufs.push((b, cstr));
            self.found.push(linear);
            *slot = self.bufs.len() as u32;
        }
        Some(*slot as usize - 1)
    }

    /// Look up row `i`'s first chunk (`firsts`, see [`FIRSTS`]) ahead of its copy and hint
    /// the CPU to fetch the row's first source bytes. A chunk the cache lacks is left for the
    /// row's own walk to report.
    fn look_ahead(&mut self, table: &SliceTable, grid: &ChunkGrid, firsts: &[u64], i: usize, itemsize: usize) {
        let Some(&linear) = firsts.get(i).filter(|&&c| c != EMPTY) else { return };
        let n = grid.ndim();
        let mut coord = [0u64; MAX_RANK];
        grid.chunk_coord(linear, &mut coord[..n]);
        let Some(k) = self.slot(grid, linear, &coord[..n], itemsize) else { return };
        let (buf, cstr) = &self.bufs[k];
        let mut so = 0usize;
        for j in 0..n {
            so += (table.src_start[i * n + j] - coord[j] * grid.chunk()[j]) as usize * cstr[j] as usize;
        }
        if let Some(b) = buf.get(so) {
            prefetch(b);
        }
    }
}

/// Pass 2 of [`gather_cached`]: every row (all validated) piece by piece, in row order, from
/// the cached chunks (the cache locked for the whole pass), each looked up once ([`Found`]),
/// the first chunk of row `i + LOOKAHEAD_ROWS` while row `i` is copied (`firsts`). Returns
/// how many chunks, or `None` at the first chunk the cache lacks (rows before it written: the
/// planner then writes every row again).
fn copy_rows(
    table: &SliceTable,
    ctx: &Ctx,
    grid: &ChunkGrid,
    (cache, form): (&Locked<'_>, (u8, usize)),
    firsts: &[u64],
    slots: &mut [u32],
    found: &mut Vec<u64>,
) -> Result<Option<usize>> {
    let n = grid.ndim();
    let itemsize = ctx.itemsize;
    let (mut count, mut ss, mut ds) = ([0u64; MAX_RANK], [1u64; MAX_RANK], [1u64; MAX_RANK]);
    let (mut sst, mut dst, mut cnt, mut at) = ([0isize; MAX_RANK], [0isize; MAX_RANK], [0usize; MAX_RANK], [0u64; MAX_RANK]);
    let mut f = Found { cache, form, bufs: Vec::new(), slots, found };
    for i in 0..LOOKAHEAD_ROWS.min(table.nslices) {
        f.look_ahead(table, grid, firsts, i, itemsize);
    }
    for i in 0..table.nslices {
        f.look_ahead(table, grid, firsts, i + LOOKAHEAD_ROWS, itemsize);
        if !validated_row_counts(table, i, ctx.src_shape, ctx.dst_shape, ctx.clip, &mut count[..n])? {
            continue;
        }
        row_steps(table, i, &count[..n], &mut ss[..n], &mut ds[..n]);
        let (s0, d0) = (&table.src_start[i * n..i * n + n], &table.dst_start[i * n..i * n + n]);
        let walk = grid.try_for_each_piece(s0, &count[..n], &ss[..n], |p| {
            let Some(k) = f.slot(grid, grid.linear_index(p.chunk_coord), p.chunk_coord, itemsize) else {
                return ControlFlow::Break(Stop::Miss);
            };
            let (buf, cstr) = &f.bufs[k];
            let mut so = 0usize;
            for j in 0..n {
                so += (p.src_start[j] - p.chunk_coord[j] * grid.chunk()[j]) as usize * cstr[j] as usize;
                sst[j] = axis_stride(p.count[j], cstr[j], ss[j]);
                dst[j] = axis_stride(p.count[j], ctx.layout.strides[j] as isize, ds[j]);
                cnt[j] = p.count[j] as usize;
                at[j] = d0[j] + p.row_offset[j] * ds[j];
            }
            // SAFETY: this thread alone writes the caller's buffer during the call (no worker
            // runs); `copy_in` bounds-checks both blocks.
            match unsafe { ctx.dst.copy_in(buf, so, &sst[..n], ctx.layout.byte_offset(&at[..n]), &dst[..n], &cnt[..n], itemsize) } {
                Ok(_) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(Stop::Failed(e)),
            }
        });
        match walk {
            ControlFlow::Continue(()) => {}
            ControlFlow::Break(Stop::Miss) => return Ok(None),
            ControlFlow::Break(Stop::Failed(e)) => return Err(e),
        }
    }
    Ok(Some(f.bufs.len()))
}
