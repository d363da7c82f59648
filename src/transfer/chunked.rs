//! The chunk planner's execution: read every chunk a call needs exactly once and scatter all
//! row pieces from it, decoding compressed chunks ourselves on worker threads.
//!
//! Per call (chunked datasets, `VH5_PLANNER` = `auto` or `chunks`):
//! 1. validate rows, compute each row's destination box and find rows whose boxes overlap
//!    ([`plan::overlapping_rows`]); those run last, one `H5Dread` per row in row order, so the
//!    later row wins exactly as in the baseline. Every other row is cut into pieces by chunk
//!    ([`Plan`]); pieces of such rows never share a destination element, so chunks can be
//!    scattered in any order and on any thread.
//! 2. decide per chunk: read it whole, or read its pieces with their own `H5Dread` (the rule
//!    is in [`decide`]). In `auto` mode, when no chunk is worth reading whole the call falls
//!    back to the row path (one `H5Dread` per row).
//! 3. the calling thread (holding the libhdf5 lock) fetches whole chunks in C order of the
//!    grid: raw (`H5Dget_chunk_storage_size` + `H5Dread_chunk`) when vh5 can decode the
//!    filter pipeline and the file type's bytes are the memory type's (possibly byte-swapped);
//!    otherwise, and for unallocated chunks (fill value), through libhdf5 (`H5Dread` of the
//!    chunk's region: filters, conversion and fill value by libhdf5). Fetched chunks are
//!    decoded ([`Decoder`]: inflate, unshuffle, fletcher32, byte swap) and their pieces
//!    scattered by `threads - 1` worker threads (see [`super::options::num_threads`]; in
//!    `auto` mode only for filtered chunks, unfiltered ones are scattered by the calling
//!    thread) outside any lock, pipelined with the fetches: the calling thread queues each chunk (at most
//!    [`QUEUE_PER_WORKER`] per worker) and, when the queue is full, decodes that chunk itself
//!    instead of waiting, so it never blocks on the workers while holding the libhdf5 lock
//!    (at the end it helps drain the queue; the join waits for at most one chunk per worker).
//!    Chunk buffers are recycled between fetches. A chunk vh5 fails to decode is corrupt
//!    (vh5 only fetches raw the pipelines it decodes): the call fails with `Hdf5` naming the
//!    chunk and the reason, and the chunk is never handed to libhdf5 (libhdf5 1.10 crashes
//!    on a fletcher32 chunk shorter than 4 bytes and pads a short zlib stream with
//!    uninitialised memory). So is a chunk whose stored size (a number in the file's chunk
//!    index) exceeds the file.
//! 4. datasets whose whole pipeline vh5 decodes ("checked" reads) take this path in every
//!    planner mode, every chunk read whole (see [`read_chunked`]).
//!
//! Memory: the extra memory of a call is bounded by its chunks, not their number: small
//! chunks are queued ([`QUEUE_PER_WORKER`] per worker) and recycled; chunks of at least
//! [`BIG_CHUNK_BYTES`] are never queued, at most one or two buffers are recycled, and at
//! most threads / 2 threads (at least one) decode at once, each holding at most two
//! chunk-sized buffers, so a call holds at most (threads + 1) x the decoded chunk size
//! (+ O(rows)); measured in tests/python/test_py_chunk_memory.py. Chunks whose decoded size
//! exceeds [`super::options::max_chunk_bytes`]
//! (`VH5_MAX_CHUNK_BYTES`, 1 GiB by default) are never read whole: their pieces go through
//! libhdf5 (`H5Dread`). Every chunk-sized buffer is reserved fallibly (`NoMemory` naming the
//! chunk and the bytes, never an abort), and inflate output is bounded by the chunk size.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use hdf5_sys::h5i::hid_t;

use crate::plan::grid::ChunkGrid;
use super::checks::vh5_pipeline;
use crate::codec::{swap_bytes, Decoder, Filter};
use crate::engine::copy::dense_strides;
use crate::geometry::{axis_step, row, SliceTable, MAX_RANK};
use super::options::{max_chunk_bytes, max_workers, num_threads, PlannerMode};
use crate::plan::pieces::{overlapping_rows, push_dst_box, Plan};
use super::rows::{read_row, Ctx, RawKind};
use super::stats::ReadStats;
use crate::error::{Error, Result};
use crate::error::ErrorKind;
use crate::hdf5::chunk::{chunk_state, file_size, flush_dataset, opened_read_write, read_raw_chunk, ChunkState, FilterSpec};
use crate::hdf5::dataset::HyperslabReader;
use crate::hdf5::lock::{bump, lock, released, H5Lock};
use crate::hdf5::chunk_cache::{CacheKey, ChunkCache};

/// Estimated fixed cost of fetching one whole chunk raw (chunk lookup + `H5Dread_chunk`), ns.
pub(crate) const CHUNK_FETCH_NS: u64 = 4_000;
/// Estimated fixed cost of one `H5Dread` of a small hyperslab, ns.
pub(crate) const HDF5_READ_NS: u64 = 2_000;
/// Estimated extra cost of the first `H5Dread` into a chunk (libhdf5 looks it up and brings
/// it into its chunk cache), ns: one-row-per-chunk tables of unfiltered 128-byte chunks cost
/// 3-4x more per chunk through libhdf5 (`VH5_PLANNER=rows`) than fetched raw (`chunks`).
pub(crate) const HDF5_CHUNK_NS: u64 = 8_000;
/// Estimated bytes moved per ns (read from the page cache + copy).
pub(crate) const BYTES_PER_NS: u64 = 4;
/// Estimated cost of a stepped selection libhdf5 reads (a file-side step given to
/// `H5Dread`): per contiguous run, ns, plus per byte selected, ns. Calibrated on libhdf5
/// 1.10.8 with one-row reads of a 10000x2000 float64 dataset in 1000x1000 chunks
/// (`VH5_PLANNER=rows`, `VH5_CHUNK_CACHE_BYTES=0`, CPU time): step 2 on axis 0 over
/// 5000x2000 (10,000 runs of 8 KB) 755 ms, over 500x2000 (1,000 runs) 57 ms, over 5000x10
/// (5,000 runs of 80 B) 34 ms: ~6 us per run + ~8 ns per byte, against ~0.4 ns per byte
/// for a whole-chunk read (20 chunks of 8 MB: 65 ms).
pub(crate) const STEP_RUN_NS: u64 = 6_000;
pub(crate) const STEP_BYTE_NS: u64 = 8;
/// Fetched batches queued per worker thread before the calling thread decodes one itself.
const QUEUE_PER_WORKER: usize = 4;
/// Small chunks travel to the workers in batches of about this many decoded bytes (at most
/// [`BATCH_MAX_CHUNKS`]): handing one 2 KB chunk to another thread (a channel send and a
/// wake-up) cost about as much as inflating it (perf: ~20% of a whole read of 15,625 16x16
/// float64 gzip chunks in the scheduler and the channel's mutex).
const BATCH_BYTES: usize = 128 << 10;
const BATCH_MAX_CHUNKS: usize = 256;
/// Chunks whose decoded size reaches this many bytes are "big": never queued (a job is
/// handed only to an idle worker), at most one or two buffers recycled, and the number of
/// threads decoding at once capped so that the extra memory of a call stays within
/// (threads + 1) x chunk size (see [`read_chunked`]).
pub(crate) const BIG_CHUNK_BYTES: usize = 8 << 20;

/// Whether to read a chunk whole (true) or read its pieces through libhdf5 (false).
///
/// - `chunks` mode: always whole.
/// - filtered chunks (`auto`): whole, except in small calls (at most 4 chunks, one piece
///   each), where libhdf5's own chunk cache may already hold the decoded chunk (repeated small
///   calls) and a whole read could not do better than libhdf5 on a cold chunk anyway;
/// - unfiltered chunks (`auto`): whole when `CHUNK_FETCH_NS + chunk_bytes / BYTES_PER_NS`
///   <= `HDF5_CHUNK_NS + pieces * HDF5_READ_NS + step_ns + piece_bytes / BYTES_PER_NS`, i.e. when the
///   chunk's extra bytes cost less than the per-read overhead of its pieces (a few tiny rows
///   in a large chunk read their pieces; many rows in a chunk read it once) and than
///   libhdf5's cost of stepping: `step_ns` = [`STEP_RUN_NS`] per contiguous run +
///   [`STEP_BYTE_NS`] per byte of the pieces that have a file-side step (libhdf5 walks a
///   stepped selection run by run, ~20x slower per byte than a whole-chunk read; vh5 steps
///   in its copy engine over the chunk in memory).
///
/// `groups`: per chunk (pieces, bytes of the pieces, `step_ns`).
pub fn decide(mode: PlannerMode, filtered: bool, chunk_bytes: u64, groups: &[(usize, u64, u64)]) -> Vec<bool> {
    match mode {
        PlannerMode::Chunks => vec![true; groups.len()],
        PlannerMode::Rows => vec![false; groups.len()],
        PlannerMode::Auto if filtered => {
            let small = groups.len() <= 4 && groups.iter().all(|g| g.0 == 1);
            vec![!small; groups.len()]
        }
        PlannerMode::Auto => groups
            .iter()
            .map(|&(pieces, bytes, step_ns)| {
                CHUNK_FETCH_NS + chunk_bytes / BYTES_PER_NS <= (HDF5_CHUNK_NS + pieces as u64 * HDF5_READ_NS).saturating_add(step_ns).saturating_add(bytes / BYTES_PER_NS)
            })
            .collect(),
    }
}

/// A fetched chunk on its way to a worker.
struct Job {
    group: usize,
    buf: Vec<u8>,
    /// `Some(mask)`: stored bytes to decode; `None`: already in the memory type, laid out
    /// densely over the chunk's extent clipped to the dataset.
    raw_mask: Option<u32>,
    /// Decoded bytes served by the dataset's chunk cache (nothing fetched: `buf` is empty).
    hit: Option<Arc<Vec<u8>>>,
    /// Where the decoded bytes go once decoded (a cache miss to fill).
    key: Option<CacheKey>,
}

/// Everything a worker needs, shared read-only.
struct Shared<'a> {
    plan: &'a Plan,
    grid: &'a ChunkGrid,
    table: &'a SliceTable<'a>,
    ctx: &'a Ctx<'a>,
    filters: &'a [Filter],
    raw: Option<RawKind>,
    /// Decoded size of a whole chunk in the file type, bytes (what the filters must produce).
    stored_bytes: usize,
    /// Set when the file type's bytes are not the memory type's: libhdf5 converts each
    /// chunk vh5 decoded (`H5Tconvert`).
    convert: Option<Convert>,
    /// `H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS`: partial edge chunks are stored unfiltered.
    dont_filter_partial: bool,
    /// The dataset's decoded-chunk cache, when this call may use it (raw fetches in the
    /// memory form, see [`read_chunked`]).
    cache: Option<&'a ChunkCache>,
}

/// A libhdf5 type conversion applied to decoded chunks (file type -> memory type).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Convert {
    pub ftype: hid_t,
    pub mtype: hid_t,
    pub file_itemsize: usize,
}

impl Shared<'_> {
    fn origin_extent(&self, group: usize) -> ([u64; MAX_RANK], [u64; MAX_RANK], [u64; MAX_RANK]) {
        let n = self.grid.ndim();
        let (mut coord, mut origin, mut extent) = ([0u64; MAX_RANK], [0u64; MAX_RANK], [0u64; MAX_RANK]);
        self.grid.chunk_coord(self.plan.groups[group].0, &mut coord[..n]);
        self.grid.chunk_origin(&coord[..n], &mut origin[..n]);
        self.grid.chunk_extent(&coord[..n], &mut extent[..n]);
        (coord, origin, extent)
    }

    /// Decode a job (raw chunks) and scatter its pieces. A chunk vh5 cannot decode is
    /// corrupt (vh5 decodes every filter of the pipelines it fetches raw): `Hdf5` naming the
    /// chunk, never handed to libhdf5 (which may crash on it, or pad it with uninitialised
    /// memory); `NoMemory` when a buffer could not be allocated.
    fn process(&self, job: &mut Job, dec: &mut Decoder) -> Result<()> {
        let n = self.grid.ndim();
        let (coord, origin, extent) = self.origin_extent(job.group);
        if let Some(hit) = &job.hit {
            return self.scatter(job.group, hit, &origin[..n], self.grid.chunk());
        }
        let dims: &[u64] = if let Some(mask) = job.raw_mask {
            let stored = job.buf.len();
            let at = |m: &str| format!("chunk {:?} (dataset offset {:?}, {stored} bytes stored, filter mask {mask:#x}): {m}", &coord[..n], &origin[..n]);
            // A partial edge chunk of a dataset with H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS is
            // stored as is: libhdf5 reads it without the pipeline, whatever its stored mask.
            let unfiltered = self.dont_filter_partial && crate::hdf5::chunk::is_partial_edge(&origin[..n], self.grid.chunk(), self.ctx.src_shape);
            let filters: &[Filter] = if unfiltered { &[] } else { self.filters };
            dec.decode_checked(filters, mask, &mut job.buf, self.stored_bytes).map_err(|e| match e.kind {
                ErrorKind::NoMemory => Error::new(e.kind, at(&e.message)),
                _ if e.message.contains("corrupt") => Error::new(ErrorKind::Hdf5, at(&e.message)),
                _ => Error::new(ErrorKind::Hdf5, at(&format!("{}: the chunk is corrupted", e.message))),
            })?;

            if job.buf.len() != self.stored_bytes {
                bail!(Hdf5, "{}", at(&format!("its filters decode to {} bytes, the chunk holds {}: the chunk is corrupted", job.buf.len(), self.stored_bytes)));
            }
            if let Some(RawKind::Swap(u)) = self.raw {
                swap_bytes(&mut job.buf, u);
            }
            if let Some(c) = self.convert {
                let elems = self.stored_bytes / c.file_itemsize.max(1);
                convert_chunk(c.ftype, c.mtype, elems, c.file_itemsize, self.ctx.itemsize, &mut job.buf).map_err(|e| Error::new(e.kind, at(&e.message)))?;
            }
            self.grid.chunk()
        } else {
            &extent[..n]
        };
        self.scatter(job.group, &job.buf, &origin[..n], dims)?;
        if let (Some(c), Some(k), Some(_)) = (self.cache, job.key, job.raw_mask) {
            // Keep the decoded chunk (the job's buffer moves into the cache: no copy).
            drop(c.insert(k, std::mem::take(&mut job.buf)));
        }
        Ok(())
    }

    /// Scatter every piece of chunk group `group` from `buf` (dense C order over `dims`, the
    /// chunk's first element at dataset coordinates `origin`).
    fn scatter(&self, group: usize, buf: &[u8], origin: &[u64], dims: &[u64]) -> Result<()> {
        let n = self.grid.ndim();
        let itemsize = self.ctx.itemsize;
        let mut cstr = [0isize; MAX_RANK];
        dense_strides(dims, itemsize, &mut cstr[..n]);
        for p in &self.plan.pieces[self.plan.groups[group].1.clone()] {
            let b = self.plan.block(p, origin, &cstr[..n], self.ctx.layout, self.table.src_step, self.table.dst_step);
            // SAFETY: pieces planned here belong to rows whose destinations overlap no other
            // row's, and the pieces of one row are disjoint: no other thread writes these
            // elements (see the module docs).
            unsafe { self.ctx.dst.copy_in(buf, b.chunk_off, &b.chunk_strides[..n], b.array_off, &b.array_strides[..n], &b.counts[..n], itemsize)? };
        }
        Ok(())
    }
}

/// Whether vh5 decodes every filter of this pipeline itself (deflate, shuffle, fletcher32):
/// then every chunk a read touches is decoded by vh5's checked decoder, in every planner
/// mode, and a corrupt chunk is refused the same way everywhere (see [`read_chunked`]).
pub(crate) fn vh5_decodes(specs: &[FilterSpec]) -> bool {
    !specs.is_empty() && vh5_pipeline(specs).is_some()
}

/// Read a chunked dataset with the planner. Returns `Ok(None)` (nothing done) when `auto`
/// finds no chunk worth reading whole: the caller then runs the row path.
///
/// When vh5 decodes the whole filter pipeline ([`vh5_decodes`], "checked" reads) every chunk
/// is read whole and decoded by vh5 whatever `mode` says (libhdf5 1.10's own decoder pads a
/// short zlib stream with uninitialised memory and crashes on a fletcher32 chunk shorter
/// than 4 bytes), converted by libhdf5 (`convert`) when its bytes are not the memory
/// type's; rows whose destinations overlap run in row order through the same decoder. Only
/// chunks above [`max_chunk_bytes`] still go through `H5Dread` piece by piece, after their
/// stored size was checked against the file and against fletcher32's 4-byte checksum.
#[allow(clippy::too_many_arguments)]
pub(crate) fn read_chunked(
    l: &H5Lock,
    dset: hid_t,
    reader: &mut HyperslabReader,
    table: &SliceTable,
    ctx: &Ctx,
    chunk: &[u64],
    filter_specs: &[FilterSpec],
    dont_filter_partial: bool,
    raw: Option<RawKind>,
    convert: Option<Convert>,
    mode: PlannerMode,
    cache: Option<&ChunkCache>,
    stats: &mut ReadStats,
) -> Result<Option<ReadStats>> {
    let n = ctx.src_shape.len();
    let grid = ChunkGrid::new(ctx.src_shape, chunk)?;
    let itemsize = ctx.itemsize;
    // One pass over the rows: destination boxes and pieces of the rows that copy something.
    // Sized once for the common case (one piece per row): growing them by doubling moved
    // and page-faulted fresh memory on every call (test1.nc: 10,000 rows of 1x4x4).
    let mut boxes = Vec::with_capacity(table.nslices.min(1 << 20) * 2 * n);
    let mut valid: Vec<usize> = Vec::with_capacity(table.nslices.min(1 << 20));
    let mut plan = Plan::with_capacity(n, table.nslices.min(1 << 20));
    let mut elements = 0u64;
    for i in 0..table.nslices {
        if let Some(r) = row(table, i, ctx.src_shape, ctx.dst_shape, ctx.clip)? {
            push_dst_box(&r, &mut boxes);
            valid.push(i);
            elements += r.elements();
            plan.add_row(&grid, i, &r);
        }
    }
    let rows_read = valid.len();
    let rows_skipped = table.nslices - rows_read;
    // Rows whose destination overlaps another row's run last, in row order: not planned.
    let overlap = overlapping_rows(&boxes, ctx.dst_shape);
    drop(boxes);
    if overlap.iter().any(|&o| o) {
        let mut is_overlapping = vec![false; table.nslices];
        for (k, &i) in valid.iter().enumerate() {
            is_overlapping[i] = overlap[k];
        }
        plan.retain_rows(|i| !is_overlapping[i]);
    }
    plan.finish();

    let filtered = !filter_specs.is_empty();
    // Partial edge chunks stored unfiltered (H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS, not
    // flagged in their filter mask): libhdf5 reads every chunk of such datasets.
    let filters = vh5_pipeline(filter_specs);
    let checked = filtered && filters.is_some();
    let chunk_elems = chunk.iter().try_fold(1u64, |a, &b| a.checked_mul(b)).unwrap_or(u64::MAX);
    let chunk_bytes = chunk_elems.saturating_mul(itemsize as u64);
    let file_itemsize = convert.map_or(itemsize, |c| c.file_itemsize);
    let stored_bytes = chunk_elems.saturating_mul(file_itemsize as u64);
    let too_big = chunk_bytes.max(stored_bytes) > max_chunk_bytes();
    let chunk_bytes_u64 = chunk_bytes;
    let group_stats: Vec<(usize, u64, u64)> = if checked {
        Vec::new()
    } else {
        plan.groups
            .iter()
            .map(|(_, rg)| {
                let ps = &plan.pieces[rg.clone()];
                (rg.len(), ps.iter().map(|p| plan.piece_elements(p) * itemsize as u64).sum(), ps.iter().map(|p| step_cost_ns(&plan, table, p, itemsize)).sum())
            })
            .collect()
    };
    let mut whole = if checked { vec![true; plan.groups.len()] } else { decide(mode, filtered, chunk_bytes, &group_stats) };
    if too_big {
        // Too big to hold whole: every piece through libhdf5 (bounded by the rows' sizes).
        whole.iter_mut().for_each(|w| *w = false);
    }
    let nwhole = whole.iter().filter(|&&w| w).count();
    if mode == PlannerMode::Auto && nwhole == 0 && !checked {
        return Ok(None);
    }
    let stored_bytes = usize::try_from(stored_bytes).map_err(|_| err!(BufferTooSmall, "chunk of {chunk_elems} elements does not fit in memory"))?;
    stats.rows_read += rows_read;
    stats.rows_skipped += rows_skipped;
    stats.elements += elements;

    // Raw fetches: when vh5 decodes the pipeline and either the bytes need no conversion or
    // the read is checked (then libhdf5 converts what vh5 decoded).
    let raw_ok = filters.is_some() && (raw.is_some() || checked);
    let convert = if raw.is_some() { None } else { convert };
    // (A chunk cache is only given for files opened read-only: nothing to flush.)
    if raw_ok && cache.is_none() && opened_read_write(l, dset)? {
        flush_dataset(l, dset)?;
    }
    // Stored chunk sizes come from the file's chunk index: never trust one past the file.
    let fsize = if raw_ok || checked { file_size(l, dset)? } else { u64::MAX };
    let filters = filters.unwrap_or_default();
    let big = chunk_bytes_u64.max(stored_bytes as u64) >= BIG_CHUNK_BYTES as u64;
    // The decoded-chunk cache: only for bytes in the memory form (no libhdf5 conversion);
    // chunks are kept only when all the call's whole chunks fit (a larger read would evict
    // everything for nothing: a scan is not cached).
    let cache = cache.filter(|c| raw_ok && raw.is_some() && c.capacity() > 0);
    let keep = cache.is_some_and(|c| (nwhole as u64).saturating_mul(chunk_bytes_u64.max(stored_bytes as u64)) <= c.capacity());
    let form = match raw {
        Some(RawKind::Swap(u)) => (1u8, u),
        _ => (0u8, itemsize),
    };
    let shared = Shared { plan: &plan, grid: &grid, table, ctx, filters: &filters, raw, stored_bytes, convert, dont_filter_partial, cache: cache.filter(|_| keep) };
    let fetcher = Fetcher { dset, raw_ok, checked, fsize, itemsize, fletcher: filters.contains(&Filter::Fletcher32), cache, keep, form, hits: AtomicUsize::new(0), misses: AtomicUsize::new(0) };
    let threads = num_threads();
    // Workers only where decoding dominates (filtered chunks; `chunks` mode always, which the
    // tests use to exercise them): for unfiltered chunks the scatter is a copy no larger than
    // the fetch, and handing chunks to another core cost more than it saved (case 2 of
    // docs/BENCHMARKS.md: 8 ms on one thread, 10 ms with a worker taking 60% of the chunks).
    let worth = filtered || mode == PlannerMode::Chunks;
    // The calling thread fetches and also decodes (see the module docs): `threads - 1` workers.
    let mut nworkers = if threads > 1 && nwhole >= 2 && worth { (threads - 1).min(nwhole - 1).min(max_workers()) } else { 0 };
    // Queued jobs and recycled buffers (chunk-sized once used).
    let batch = (BATCH_BYTES / stored_bytes.max(chunk_bytes_u64 as usize).max(1)).clamp(1, BATCH_MAX_CHUNKS);
    let (mut queue, mut pool_max) = (QUEUE_PER_WORKER * nworkers.max(1), (QUEUE_PER_WORKER * nworkers + 2) * batch);
    if big {
        // Memory bound for big chunks: extra memory <= (threads + 1) x chunk. A decoding
        // thread holds at most two chunk-sized buffers (the chunk, and its decoder's spare:
        // inflate output, unshuffle target, conversion background); nothing is queued (a
        // chunk goes only to an idle worker) and the pool keeps what the bound leaves, at
        // least one buffer (with one decoder, a pooled buffer is taken by the next fetch
        // before decoding starts: two buffers at once). So threads / 2 decoders (at least
        // one: the calling thread).
        let decoders = (threads / 2).max(1);
        nworkers = nworkers.min(decoders - 1);
        queue = 0;
        pool_max = if decoders == 1 { 1 } else { threads + 1 - 2 * decoders };
    }
    // Small calls (at most 4 chunks, all whole): on the calling thread, no workers.
    let small = nwhole <= SMALL_CALL_CHUNKS && whole.iter().all(|&w| w);
    let (raw_chunks, mut hdf5_reads) = if small {
        (read_small(l, reader, &shared, &fetcher)?, 0)
    } else {
        run_pipeline(l, reader, &shared, &fetcher, &whole, Crew { nworkers, queue, pool_max, batch }, filtered)?
    };
    stats.cache_hits += fetcher.hits.load(Ordering::Relaxed);
    stats.cache_misses += fetcher.misses.load(Ordering::Relaxed);

    // Rows whose destinations overlap another row's: in row order.
    let mut scratch = Vec::new();
    let mut dec = Decoder::default();
    for (k, &i) in valid.iter().enumerate() {
        if !overlap[k] {
            continue;
        }
        let r = row(table, i, ctx.src_shape, ctx.dst_shape, ctx.clip)?.expect("validated row");
        if checked && !too_big {
            // Through vh5's decoder too, one row at a time (the later row wins).
            let one = Plan::build(&grid, [(i, &r)]);
            let sh = Shared { plan: &one, ..shared };
            for g in 0..one.groups.len() {
                let mut job = fetcher.fetch(l, reader, &sh, g, Vec::new())?;
                stats.chunks_read += 1;
                stats.raw_chunks += usize::from(job.raw_mask.is_some() || job.hit.is_some());
                sh.process(&mut job, &mut dec)?;
            }
            continue;
        }
        if checked {
            let one = Plan::build(&grid, [(i, &r)]);
            let sh = Shared { plan: &one, ..shared };
            for g in 0..one.groups.len() {
                fetcher.precheck(l, &sh, g)?;
            }
        }
        // SAFETY: single-threaded now (the pipeline joined every worker).
        if unsafe { read_row(reader, &r, i, ctx, &mut scratch)? } {
            stats.direct_reads += 1;
        }
        hdf5_reads += 1;
    }
    stats.chunks_read += nwhole;
    stats.raw_chunks += raw_chunks;
    stats.hdf5_reads += hdf5_reads;
    Ok(Some(*stats))
}

/// libhdf5's extra cost of reading piece `p` when its row has a file-side step (0 when it
/// has none), ns: [`STEP_RUN_NS`] per contiguous run (its elements divided by the run
/// length: the inner count when the inner axis is unstepped, else 1) + [`STEP_BYTE_NS`]
/// per byte.
fn step_cost_ns(plan: &Plan, table: &SliceTable, p: &crate::plan::PieceKey, itemsize: usize) -> u64 {
    let n = plan.ndim;
    let Some(steps) = table.src_step else { return 0 };
    let c = plan.piece(p).2;
    let stepped = (0..n).any(|j| c[j] > 1 && steps[p.row * n + j] > 1);
    if !stepped {
        return 0;
    }
    let inner = if steps[p.row * n + n - 1] > 1 { 1 } else { c[n - 1].max(1) };
    let elems = c.iter().product::<u64>();
    (elems / inner).saturating_mul(STEP_RUN_NS).saturating_add(elems.saturating_mul(itemsize as u64).saturating_mul(STEP_BYTE_NS))
}

/// Calls with at most this many chunks, all read whole, run on the calling thread alone.
const SMALL_CALL_CHUNKS: usize = 4;

/// The whole chunks of a small call, fetched (through the dataset's chunk cache), decoded
/// and scattered one by one on the calling thread, lock held, as libhdf5's own read would.
/// Returns the chunks read raw (cache hits included: an earlier call read them raw).
fn read_small(l: &H5Lock, reader: &mut HyperslabReader, sh: &Shared, fetcher: &Fetcher) -> Result<usize> {
    let mut dec = Decoder::default();
    let mut raw_chunks = 0;
    for g in 0..sh.plan.groups.len() {
        let mut job = fetcher.fetch(l, reader, sh, g, Vec::new())?;
        raw_chunks += usize::from(job.raw_mask.is_some() || job.hit.is_some());
        sh.process(&mut job, &mut dec)?;
    }
    Ok(raw_chunks)
}

/// Worker threads, queued jobs and recycled buffers of one call.
#[derive(Debug, Clone, Copy)]
struct Crew {
    nworkers: usize,
    /// Batches queued.
    queue: usize,
    pool_max: usize,
    /// Chunks per batch (1 for big chunks).
    batch: usize,
}

/// How the calling thread gets a chunk's bytes (under the libhdf5 lock).
struct Fetcher<'a> {
    dset: hid_t,
    /// Fetch stored chunks raw (`H5Dread_chunk`) for vh5 to decode.
    raw_ok: bool,
    /// vh5 decodes the pipeline: chunks never go through libhdf5's filters.
    checked: bool,
    /// File size: a stored chunk claiming more bytes is corrupt.
    fsize: u64,
    itemsize: usize,
    /// The pipeline has fletcher32 (a stored chunk needs at least its 4-byte checksum).
    fletcher: bool,
    /// The dataset's decoded-chunk cache (looked up before every raw fetch), and whether this
    /// call keeps what it decodes there.
    cache: Option<&'a ChunkCache>,
    keep: bool,
    /// Memory form of the decoded bytes ([`CacheKey::form`], [`CacheKey::unit`]).
    form: (u8, usize),
    /// Cache hits and misses (raw fetches looked up and not found).
    hits: AtomicUsize,
    misses: AtomicUsize,
}

impl Fetcher<'_> {
    /// Fetch chunk group `g` into `buf` (recycled): raw stored bytes when allocated and
    /// [`Fetcher::raw_ok`], else libhdf5's read of its region (fill values, conversion).
    fn fetch(&self, l: &H5Lock, reader: &mut HyperslabReader, sh: &Shared, g: usize, buf: Vec<u8>) -> Result<Job> {
        let n = sh.grid.ndim();
        let (coord, origin, extent) = sh.origin_extent(g);
        let mut job = Job { group: g, buf, raw_mask: None, hit: None, key: None };
        let state = if self.raw_ok { chunk_state(l, self.dset, &origin[..n]) } else { ChunkState::Unknown };
        if let (Some(c), ChunkState::Stored { size }) = (self.cache, state) {
            let key = CacheKey { chunk: sh.plan.groups[g].0, stored: size, form: self.form.0, unit: self.form.1 };
            if let Some(hit) = c.get(&key) {
                self.hits.fetch_add(1, Ordering::Relaxed);
                job.hit = Some(hit);
                return Ok(job);
            }
            self.misses.fetch_add(1, Ordering::Relaxed);
            job.key = self.keep.then_some(key);
        }
        match state {
            ChunkState::Stored { size, .. } if size > self.fsize => {
                bail!(Hdf5, "chunk {:?} (dataset offset {:?}): its stored size {size} bytes exceeds the file ({} bytes): the chunk index is corrupted", &coord[..n], &origin[..n], self.fsize)
            }
            ChunkState::Stored { size, .. } => {
                // None: no file address after all (a never-written chunk only libhdf5's chunk
                // cache holds): read as unallocated below.
                job.raw_mask = read_raw_chunk(l, self.dset, &origin[..n], size, &mut job.buf).map_err(|e| Error::new(e.kind, format!("chunk {:?}: {}", &coord[..n], e.message)))?;
            }
            _ => {}
        }
        if job.raw_mask.is_none() {
            read_region(reader, &origin[..n], &extent[..n], self.itemsize, sh.ctx.fill, &mut job.buf)
                .map_err(|e| Error::new(e.kind, format!("chunk {:?} (dataset offset {:?}): {}", &coord[..n], &origin[..n], e.message)))?;
        }
        Ok(job)
    }

    /// Before libhdf5 decodes chunk group `g` itself (checked reads of chunks too big to hold
    /// whole): refuse a stored size past the end of the file, or too short for fletcher32's
    /// checksum (libhdf5 1.10 reads before the buffer and may crash on it).
    fn precheck(&self, l: &H5Lock, sh: &Shared, g: usize) -> Result<()> {
        if !self.checked {
            return Ok(());
        }
        let n = sh.grid.ndim();
        let (coord, origin, _) = sh.origin_extent(g);
        if let ChunkState::Stored { size, .. } = chunk_state(l, self.dset, &origin[..n]) {
            let at = format!("chunk {:?} (dataset offset {:?}, {size} bytes stored)", &coord[..n], &origin[..n]);
            if size > self.fsize {
                bail!(Hdf5, "{at}: its stored size exceeds the file ({} bytes): the chunk index is corrupted", self.fsize);
            }
            let k = sh.filters.iter().position(|f| *f == Filter::Fletcher32);
            // The filter mask only matters for such a short chunk: ask for it then (a scan of
            // the chunk index in libhdf5 1.10, but only for corrupt-looking chunks).
            if self.fletcher && size < 4 && k.is_some_and(|k| k >= 32 || crate::hdf5::chunk::chunk_filter_mask(l, self.dset, &origin[..n]).is_none_or(|m| m & (1 << k) == 0)) {
                bail!(Hdf5, "{at}: fletcher32: too short for a checksum: the chunk is corrupted");
            }
        }
        Ok(())
    }
}

/// Fetch the whole chunks of `sh.plan` (`whole[g]`) in grid order on the calling thread,
/// decode and scatter them on `nworkers` workers and the calling thread (see the module
/// docs); pieces of the other chunks go through libhdf5 (`H5Dread`). Returns (chunks
/// fetched raw, `H5Dread` calls).
#[allow(clippy::too_many_arguments)]
fn run_pipeline(l: &H5Lock, reader: &mut HyperslabReader, shared: &Shared, fetcher: &Fetcher, whole: &[bool], crew: Crew, filtered: bool) -> Result<(usize, usize)> {
    let Crew { nworkers, queue, pool_max, batch } = crew;
    let (plan, table, ctx) = (shared.plan, shared.table, shared.ctx);
    let stop = AtomicBool::new(false);
    let failed: Mutex<Option<(usize, Error)>> = Mutex::new(None);
    // Chunk buffers handed back by whoever processed a job, reused for the next fetches.
    let pool: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
    let recycle = |buf: Vec<u8>| {
        if buf.capacity() > 0 {
            let mut p = pool.lock().unwrap_or_else(|p| p.into_inner());
            if p.len() < pool_max {
                p.push(buf);
            }
        }
    };
    let fail = |g: usize, e: Error| {
        let mut f = failed.lock().unwrap_or_else(|p| p.into_inner());
        if f.as_ref().is_none_or(|(g0, _)| g < *g0) {
            *f = Some((g, e));
        }
        stop.store(true, Ordering::Relaxed);
    };
    let handle = |mut job: Job, dec: &mut Decoder| {
        if let Err(e) = shared.process(&mut job, dec) {
            fail(job.group, e);
        }
        recycle(job.buf);
    };
    let handle_all = |jobs: Vec<Job>, dec: &mut Decoder| {
        for job in jobs {
            handle(job, dec);
        }
    };
    let mut scratch = Vec::new();
    let (mut raw_chunks, mut hdf5_reads) = (0usize, 0usize);
    // The libhdf5 lock is held only while fetching: decoding a chunk on the calling thread,
    // draining the queue and joining the workers all run with it released, so no thread ever
    // waits on our workers while holding it (and other threads' vh5/libhdf5 calls interleave
    // with our decoding).
    let run = || {
        std::thread::scope(|sc| -> Result<()> {
            // Big chunks: queue 0, a rendezvous (a job goes only to a worker waiting for one).
            let (tx, rx) = mpsc::sync_channel::<Vec<Job>>(queue);
            let rx = Arc::new(Mutex::new(rx));
            // Workers the system lets us start (a refused thread is not an error: the calling
            // thread processes whatever the workers do not).
            let mut live = 0usize;
            for _ in 0..nworkers {
                let rx = Arc::clone(&rx);
                let handle_all = &handle_all;
                let started = std::thread::Builder::new().name("vh5-decode".into()).spawn_scoped(sc, move || {
                    let mut dec = Decoder::default();
                    loop {
                        let jobs = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok(jobs) = jobs else { return };
                        handle_all(jobs, &mut dec);
                    }
                });
                if started.is_err() {
                    break;
                }
                live += 1;
            }
            let mut dec = Decoder::default();
            // Hand a batch to a worker; when there are none, or they are all busy and the
            // queue is full, process it here (decoding with the lock released). Returns
            // false when the workers are gone.
            let dispatch = |jobs: Vec<Job>, l: &H5Lock, dec: &mut Decoder| -> bool {
                let jobs = if live == 0 {
                    jobs
                } else {
                    match tx.try_send(jobs) {
                        Ok(()) => return true,
                        Err(mpsc::TrySendError::Full(jobs)) => jobs,
                        Err(mpsc::TrySendError::Disconnected(_)) => return false,
                    }
                };
                if filtered {
                    // SAFETY: `handle` decodes and scatters in memory; a conversion
                    // (`H5Tconvert`) takes the lock itself.
                    unsafe { released(l, || handle_all(jobs, dec)) };
                } else {
                    // An unfiltered chunk is one copy: cheaper than giving the lock away.
                    handle_all(jobs, dec);
                }
                true
            };
            let result = (|| -> Result<()> {
                let fl = lock();
                let l = &fl;
                let mut jobs: Vec<Job> = Vec::with_capacity(batch);
                for (g, &whole_g) in whole.iter().enumerate().take(plan.groups.len()) {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if g > 0 {
                        // Let a waiting thread's libhdf5 call in between two fetches.
                        // SAFETY: nothing of ours is in flight in libhdf5 here.
                        unsafe { bump(l) };
                    }
                    if !whole_g {
                        fetcher.precheck(l, shared, g)?;
                        for p in &plan.pieces[plan.groups[g].1.clone()] {
                            let r = piece_row(plan, table, p.row, p);
                            // SAFETY: the piece's row overlaps no other row (see the module docs).
                            unsafe { read_row(reader, &r, p.row, ctx, &mut scratch)? };
                            hdf5_reads += 1;
                        }
                        continue;
                    }
                    let buf = pool.lock().unwrap_or_else(|p| p.into_inner()).pop().unwrap_or_default();
                    let job = fetcher.fetch(l, reader, shared, g, buf)?;
                    if job.raw_mask.is_some() || job.hit.is_some() {
                        raw_chunks += 1;
                    }
                    jobs.push(job);
                    if jobs.len() >= batch && !dispatch(std::mem::replace(&mut jobs, Vec::with_capacity(batch)), l, &mut dec) {
                        return Ok(());
                    }
                }
                if !jobs.is_empty() {
                    dispatch(jobs, l, &mut dec);
                }
                Ok(())
            })();
            drop(tx);
            // Help drain the queue, then the scope joins the workers (each finishes at most
            // the job it holds).
            if live > 0 {
                while let Ok(jobs) = {
                    let r = rx.lock().unwrap_or_else(|p| p.into_inner()).try_recv();
                    r
                } {
                    handle_all(jobs, &mut dec);
                }
            }
            result
        })
    };
    // SAFETY: inside `run`, libhdf5 is only called under the fresh lock `fl`.
    unsafe { released(l, run)? };
    debug_assert!(crate::hdf5::lock::held_by_current_thread());
    if let Some((_, e)) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    Ok((raw_chunks, hdf5_reads))
}

/// Convert `elems` decoded elements of `ftype` (`file_itemsize` bytes each) in `buf` into
/// `mtype` (`mem_itemsize` bytes each) with libhdf5 (`H5Tconvert`, taking the lock): the
/// conversion `H5Dread` would apply. `buf` ends up `elems * mem_itemsize` bytes long.
fn convert_chunk(ftype: hid_t, mtype: hid_t, elems: usize, file_itemsize: usize, mem_itemsize: usize, buf: &mut Vec<u8>) -> Result<()> {
    let big = elems.checked_mul(file_itemsize.max(mem_itemsize)).ok_or_else(|| err!(NoMemory, "conversion buffer of {elems} elements overflows"))?;
    crate::mem::resize_zeroed(buf, big, || "conversion buffer".to_string())?;
    let mut bkg = Vec::new();
    crate::mem::resize_zeroed(&mut bkg, elems * mem_itemsize, || "conversion background buffer".to_string())?;
    let l = lock();
    crate::hdf5::chunk::convert(&l, ftype, mtype, elems, buf, &mut bkg)?;
    buf.truncate(elems * mem_itemsize);
    Ok(())
}

/// A piece as a row of its own (for a `H5Dread` of just that piece).
fn piece_row(plan: &Plan, table: &SliceTable, i: usize, p: &crate::plan::pieces::PieceKey) -> crate::geometry::Row {
    let n = plan.ndim;
    let (s, d, c) = plan.piece(p);
    let mut r = crate::geometry::Row { ndim: n, src_start: [0; MAX_RANK], dst_start: [0; MAX_RANK], count: [0; MAX_RANK], src_step: [1; MAX_RANK], dst_step: [1; MAX_RANK] };
    r.src_start[..n].copy_from_slice(s);
    r.dst_start[..n].copy_from_slice(d);
    r.count[..n].copy_from_slice(c);
    // Steps of axes where the piece has one element are never applied and may be any
    // uint64 (a row's other pieces step along them): `axis_step`, as for rows.
    for j in 0..n {
        r.src_step[j] = axis_step(c[j], table.src_step.map_or(1, |t| t[i * n + j]));
        r.dst_step[j] = axis_step(c[j], table.dst_step.map_or(1, |t| t[i * n + j]));
    }
    r
}

/// Read the region of one chunk (clipped extent) through libhdf5 into `buf` (memory type,
/// dense C order): filters, type conversion and fill values by libhdf5. With `fill`
/// (fill time never, see [`Ctx::fill`]) `buf` is first set to that element, which is what an
/// unallocated chunk then reads as (libhdf5 leaves it untouched).
fn read_region(reader: &mut HyperslabReader, origin: &[u64], extent: &[u64], itemsize: usize, fill: Option<&[u8]>, buf: &mut Vec<u8>) -> Result<()> {
    let elems: u64 = extent.iter().product();
    let what = || format!("region of extent {extent:?}");
    let bytes = usize::try_from(elems as u128 * itemsize as u128).map_err(|_| err!(NoMemory, "{}: {elems} elements do not fit in memory", what()))?;
    buf.clear();
    crate::mem::resize_zeroed(buf, bytes, what)?;
    if let Some(f) = fill {
        crate::hdf5::chunk::fill_with(buf, f);
    }
    reader.read(origin, None, extent, buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule() {
        // 80 KB chunks: one 800-byte piece -> pieces; 30 pieces -> whole.
        assert_eq!(decide(PlannerMode::Auto, false, 80_000, &[(1, 800, 0), (30, 24_000, 0)]), vec![false, true]);
        assert_eq!(decide(PlannerMode::Auto, true, 80_000, &[(1, 800, 0)]), vec![false]);
        assert_eq!(decide(PlannerMode::Auto, true, 80_000, &[(2, 800, 0)]), vec![true]);
        assert_eq!(decide(PlannerMode::Chunks, false, 1 << 30, &[(1, 8, 0)]), vec![true]);
        // One row with step 2 on axis 0 of an 8 MB chunk (500 runs of 8 KB): whole.
        assert_eq!(decide(PlannerMode::Auto, false, 8_000_000, &[(1, 4_000_000, 500 * STEP_RUN_NS + 4_000_000 * STEP_BYTE_NS)]), vec![true]);
        // A 10x10 stepped piece in an 8 MB chunk: still its own read.
        assert_eq!(decide(PlannerMode::Auto, false, 8_000_000, &[(1, 800, 10 * STEP_RUN_NS + 800 * STEP_BYTE_NS)]), vec![false]);
        // A piece covering a whole 128-byte chunk: fetched raw (libhdf5 costs more per chunk).
        assert_eq!(decide(PlannerMode::Auto, false, 128, &[(1, 128, 0)]), vec![true]);
    }
}
