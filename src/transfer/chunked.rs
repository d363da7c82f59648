//! The chunk planner's execution: read every chunk a call needs exactly once and scatter all
//! row pieces from it, decoding compressed chunks ourselves on worker threads.
//!
//! Per call (chunked datasets, `VH5_PLANNER` = `auto` or `chunks`):
//! 0. when every chunk the rows touch is in the dataset's decoded-chunk cache, the rows are
//!    copied from it in row order with no plan (`cached_gather`) and the call ends.
//! 1. validate rows, compute each row's destination box and find rows whose boxes overlap
//!    ([`crate::plan::overlapping_rows`]); those run last, one `H5Dread` per row in row order, so the
//!    later row wins exactly as in the baseline. Every other row is cut into pieces by chunk
//!    ([`Plan`]); pieces of such rows never share a destination element, so chunks can be
//!    scattered in any order and on any thread.
//! 2. decide per chunk: read it whole, or read its pieces with their own `H5Dread` (the rule
//!    is in [`decide()`](fn@crate::plan::decide)). In `auto` mode, when no chunk is worth reading whole the call falls
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
//!    `read_pipeline::QUEUE_PER_WORKER` per worker) and, when the queue is full, decodes that chunk itself
//!    instead of waiting, so it never blocks on the workers while holding the libhdf5 lock
//!    (at the end it helps drain the queue; the join waits for at most one chunk per worker).
//!    Chunk buffers are recycled between fetches. Small chunks the dataset's chunk index
//!    locates are not fetched by the calling thread: it hands out spans of consecutive chunk
//!    groups, and whoever takes one reads, decodes and scatters them (`chunk_span`:
//!    one `pread` per run of chunks adjacent in the file, no lock). A chunk vh5 fails to decode is corrupt
//!    (vh5 only fetches raw the pipelines it decodes): the call fails with `Hdf5` naming the
//!    chunk and the reason, and the chunk is never handed to libhdf5 (libhdf5 1.10 crashes
//!    on a fletcher32 chunk shorter than 4 bytes and pads a short zlib stream with
//!    uninitialised memory). So is a chunk whose stored size (a number in the file's chunk
//!    index) exceeds the file.
//! 4. datasets whose whole pipeline vh5 decodes ("checked" reads) take this path in every
//!    planner mode, every chunk read whole (see `read_chunked`).
//!
//! Memory: the buffers of finished plans are kept for later calls, up to
//! [`crate::plan::pieces::RECYCLE_BUDGET_BYTES`] (64 MiB) for the whole process
//! ([`Plan::recycled`]: no page faults planning the next call). The extra memory of a call is bounded by its chunks, not their number: smaller
//! chunks travel in batches (`BATCH_BYTES`, or one chunk when larger), `read_pipeline::QUEUE_PER_WORKER`
//! batches queued per worker and up to (4 W + 2) batches of buffers recycled (W workers), so a call holds at most
//! (9 W + 3) batches plus one chunk-sized decoder spare per decoding thread (README: 258 MiB bound, 157 MiB measured,
//! for 7.6 MiB chunks at 4 threads); chunks of at least
//! `BIG_CHUNK_BYTES` are never queued, at most one or two buffers are recycled, and at
//! most threads / 2 threads (at least one) decode at once, each holding at most two
//! chunk-sized buffers, so a call holds at most (threads + 1) x the decoded chunk size
//! (+ O(rows)); measured in tests/python/test_py_chunk_memory.py. Chunks whose decoded size
//! exceeds [`super::options::max_chunk_bytes`]
//! (`VH5_MAX_CHUNK_BYTES`, 1 GiB by default) are never read whole: their pieces go through
//! libhdf5 (`H5Dread`). Every chunk-sized buffer is reserved fallibly (`NoMemory` naming the
//! chunk and the bytes, never an abort), and inflate output is bounded by the chunk size.

use std::sync::atomic::{AtomicUsize, Ordering};

use hdf5_sys::h5i::hid_t;

use super::cached_gather::{gather_cached, Gathered};
pub(crate) use super::chunk_job::Convert;
use super::chunk_job::{Fetcher, Shared};
use super::options::{max_chunk_bytes, num_threads, PlannerMode};
use super::read_pipeline::{run_pipeline, Crew, BATCH_BYTES, BATCH_MAX_CHUNKS};
use super::rows::{read_row, Ctx, RawKind};
use super::stats::ReadStats;
use crate::codec::{Decoder, Filter};
use crate::error::Result;
use crate::geometry::{row, row_counts, row_steps, validated_row_counts, SliceTable, MAX_RANK};
use crate::hdf5::chunk::vh5_pipeline;
use crate::hdf5::chunk::{file_size, flush_dataset, opened_read_write, FilterSpec};
use crate::hdf5::chunk_cache::{entry_bytes, ChunkCache};
use crate::hdf5::chunk_index::IndexSlot;
use crate::hdf5::dataset::HyperslabReader;
use crate::hdf5::lock::H5Lock;
use crate::plan::decide;
use crate::plan::decide::{always_whole_unfiltered, scatter_workers, whole_unfiltered, STEP_BYTE_NS, STEP_RUN_NS};
use crate::plan::grid::ChunkGrid;
use crate::plan::pieces::{overlapping_rows, push_dst_box, Plan};

/// Chunks whose decoded size reaches this many bytes are "big": never queued (a job is
/// handed only to an idle worker), at most one or two buffers recycled, and the number of
/// threads decoding at once capped so that the extra memory of a call stays within
/// (threads + 1) x chunk size (see `read_chunked`).
pub(crate) const BIG_CHUNK_BYTES: usize = 8 << 20;

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
    index: Option<&IndexSlot>,
    stats: &mut ReadStats,
) -> Result<Option<ReadStats>> {
    let grid = ChunkGrid::new(ctx.src_shape, chunk)?;
    let form = match raw {
        Some(RawKind::Swap(u)) => (1u8, u),
        _ => (0u8, ctx.itemsize),
    };
    let pipeline = vh5_pipeline(filter_specs);
    // The decoded-chunk cache holds chunks vh5 decodes whole (its pipeline) fetched raw in
    // their memory form (no libhdf5 conversion).
    let cache = cache.filter(|c| c.capacity() > 0 && raw.is_some() && pipeline.is_some());
    // Every chunk the rows touch already decoded in the cache: copied row by row, no plan.
    let mut validated = false;
    if let Some(c) = cache {
        match gather_cached(l, table, ctx, &grid, c, form, stats)? {
            Gathered::Done => return Ok(Some(*stats)),
            Gathered::Validated => validated = true,
            Gathered::Declined => {}
        }
    }
    let rp = plan_rows(table, ctx, &grid, validated)?;
    // Step tables whose every used step is 1 are dropped for the pieces (the scatter would
    // otherwise read them at each piece's row, in chunk order: random rows, ~27% of a read of
    // 262,144 one-chunk rows in random order given all-ones step tables). Not for rows read
    // again from the table (`read_overlapping_rows`): a clipped count depends on the step.
    let (rows_table, unit) = (table, SliceTable { src_step: table.src_step.filter(|_| rp.stepped.0), dst_step: table.dst_step.filter(|_| rp.stepped.1), ..*table });
    let table = &unit;
    let d = decide_chunks(&rp.plan, table, chunk, ctx.itemsize, convert, pipeline, mode);
    if mode == PlannerMode::Auto && d.nwhole == 0 && !d.checked {
        return Ok(None);
    }
    let stored_bytes = usize::try_from(d.stored_bytes).map_err(|_| err!(BufferTooSmall, "chunk of {} elements does not fit in memory", d.chunk_elems))?;
    stats.rows_read += rp.valid.len();
    stats.rows_skipped += table.nslices - rp.valid.len();
    stats.elements += rp.elements;

    // Raw fetches: when vh5 decodes the pipeline and either the bytes need no conversion or
    // the read is checked (then libhdf5 converts what vh5 decoded).
    let raw_ok = d.filters.is_some() && (raw.is_some() || d.checked);
    let convert = if raw.is_some() { None } else { convert };
    // (A chunk cache is only given for files opened read-only: nothing to flush.)
    if raw_ok && cache.is_none() && opened_read_write(l, dset)? {
        flush_dataset(l, dset)?;
    }
    // Stored chunk sizes come from the file's chunk index: never trust one past the file.
    let fsize = if raw_ok || d.checked { file_size(l, dset)? } else { u64::MAX };
    let filters = d.filters.clone().unwrap_or_default();
    // The dataset's chunk index (files open read-only: see `hdf5::chunk_index`), for calls
    // reading enough chunks whole to repay building it: stored bytes are then read with
    // positioned reads by whoever decodes the chunk, outside the libhdf5 lock.
    let slot = index;
    let index = match slot {
        Some(slot) if raw_ok && crate::hdf5::chunk_index::wanted(d.nwhole) => slot.get(l, dset, &grid, filter_specs.is_empty().then_some(d.stored_bytes))?,
        _ => None,
    };
    // Without an index (whose build checked every key of the file's chunk B-tree), the keys on
    // the way to every chunk the call reads are checked, where the dataset's first use did
    // not check them all (libhdf5 1.10: see `hdf5::chunk_tree`).
    if let (None, Some(slot)) = (&index, slot) {
        slot.check_keys(l, dset, &grid, rp.plan.groups.iter().map(|g| g.0))?;
    }
    // (`cache` is given only when `raw_ok`: pipeline decoded by vh5, bytes raw.) Chunks are
    // kept only when the entries of all the call's whole chunks fit (a larger read would
    // evict everything for nothing: a scan is not cached).
    debug_assert!(cache.is_none() || raw_ok);
    let keep = cache.is_some_and(|c| entries_fit(&grid, &rp.plan, &d, ctx.itemsize, c.capacity()));
    let shared = Shared {
        plan: &rp.plan,
        grid: &grid,
        table,
        ctx,
        filters: &filters,
        raw,
        stored_bytes,
        convert,
        dont_filter_partial,
        cache: cache.filter(|_| keep),
        index: index.as_deref(),
    };
    let fetcher = Fetcher {
        dset,
        raw_ok,
        checked: d.checked,
        fsize,
        itemsize: ctx.itemsize,
        fletcher: filters.contains(&Filter::Fletcher32),
        cache,
        keep,
        probe: cache.is_some_and(|c| keep || c.usage().0 > 0),
        form,
        hits: AtomicUsize::new(0),
        misses: AtomicUsize::new(0),
    };
    // Small calls (at most 4 chunks, all whole): on the calling thread, no workers.
    let small = d.nwhole <= SMALL_CALL_CHUNKS && d.whole.iter().all(|&w| w);
    let (raw_chunks, mut hdf5_reads) = match small {
        true => (read_small(l, reader, &shared, &fetcher)?, 0),
        false => {
            let big = d.chunk_bytes.max(d.stored_bytes) >= BIG_CHUNK_BYTES as u64;
            // Workers where decoding dominates (filtered chunks; `chunks` mode always, which
            // the tests use to exercise them) and for many small unfiltered chunks (per-chunk
            // bookkeeping dominates); other unfiltered chunks are one copy no larger than the
            // fetch, and handing them to another core cost more than it saved (the rule and
            // its measurements: `plan::decide::scatter_workers`).
            let worth = scatter_workers(mode, d.filtered, d.chunk_bytes.max(d.stored_bytes), d.nwhole);
            let batch = (BATCH_BYTES / (d.stored_bytes.max(d.chunk_bytes).max(1) as usize)).clamp(1, BATCH_MAX_CHUNKS);
            run_pipeline(l, reader, &shared, &fetcher, &d.whole, Crew::size(num_threads(), d.nwhole, worth, big, batch), d.filtered)?
        }
    };
    hdf5_reads += read_overlapping_rows(l, reader, (&shared, rows_table), &fetcher, &rp, d.checked && !d.too_big, stats)?;
    // (After the overlapping rows: their fetches look in the cache too.)
    stats.cache_hits += fetcher.hits.load(Ordering::Relaxed);
    stats.cache_misses += fetcher.misses.load(Ordering::Relaxed);
    stats.chunks_read += d.nwhole;
    stats.raw_chunks += raw_chunks;
    stats.hdf5_reads += hdf5_reads;
    let RowPlan { mut plan, valid, .. } = rp;
    plan.keep_rows(valid);
    plan.recycle();
    Ok(Some(*stats))
}

/// The rows of a call as planned: the pieces of the rows that overlap no other row's
/// destination, and which rows copy something and which overlap.
struct RowPlan {
    plan: Plan,
    /// Rows that copy something, in row order.
    valid: Vec<usize>,
    /// Per entry of `valid`: its destination overlaps another row's (it runs last, in row order).
    overlap: Vec<bool>,
    elements: u64,
    /// Whether some row of `valid` has a source / destination step other than 1 on an axis
    /// copying more than one element (else its step table can be treated as absent).
    stepped: (bool, bool),
}

/// Calls of at least this many rows are planned on two threads when the call may use more
/// than one (each plans half the rows into its own buffers; the halves are then joined in row
/// order). Below it, the second thread costs more than it saves.
pub(crate) const PLAN_SPLIT_MIN_ROWS: usize = 32 << 10;

/// One pass over the rows (validating every one unless `validated`: the cached gather did):
/// destination boxes and pieces of the rows that copy something; rows whose destination
/// overlaps another row's are left out of the plan (they run last, in row order). Calls of
/// [`PLAN_SPLIT_MIN_ROWS`] rows or more plan their two halves on two threads; an error is
/// the first bad row's, as on one thread.
fn plan_rows(table: &SliceTable, ctx: &Ctx, grid: &ChunkGrid, validated: bool) -> Result<RowPlan> {
    let rows = table.nslices;
    let mut a = if num_threads() > 1 && rows >= PLAN_SPLIT_MIN_ROWS {
        let half = rows / 2;
        let (first, second) = std::thread::scope(|s| {
            let h = s.spawn(|| plan_part(table, ctx, grid, validated, half..rows));
            let first = plan_part(table, ctx, grid, validated, 0..half);
            (first, h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
        });
        let (mut a, b) = (first?, second?);
        a.join(b);
        a
    } else {
        plan_part(table, ctx, grid, validated, 0..rows)?
    };
    let overlap = overlapping_rows(&a.boxes, ctx.dst_shape);
    let mut plan = a.plan;
    plan.keep_scratch(std::mem::take(&mut a.boxes));
    if overlap.iter().any(|&o| o) {
        let mut is_overlapping = vec![false; rows];
        for (k, &i) in a.valid.iter().enumerate() {
            is_overlapping[i] = overlap[k];
        }
        plan.retain_rows(|i| !is_overlapping[i]);
    }
    plan.finish();
    Ok(RowPlan { plan, valid: a.valid, overlap, elements: a.elements, stepped: a.stepped })
}

/// The rows `rows` of a call as one thread planned them ([`plan_part`]).
struct Part {
    /// Their pieces, not finished.
    plan: Plan,
    /// Destination boxes of the rows that copy something (`push_dst_box`), in row order.
    boxes: Vec<u64>,
    valid: Vec<usize>,
    elements: u64,
    stepped: (bool, bool),
}

impl Part {
    /// Append `b`, the rows after this part's, whose buffers go back to the plan pool.
    fn join(&mut self, b: Part) {
        self.plan.append(&b.plan);
        self.boxes.extend_from_slice(&b.boxes);
        self.valid.extend_from_slice(&b.valid);
        self.elements += b.elements;
        self.stepped = (self.stepped.0 | b.stepped.0, self.stepped.1 | b.stepped.1);
        let mut p = b.plan;
        p.keep_scratch(b.boxes);
        p.keep_rows(b.valid);
        p.recycle();
    }
}

/// Validate (unless `validated`) and plan the rows `rows` into a plan from the pool.
fn plan_part(table: &SliceTable, ctx: &Ctx, grid: &ChunkGrid, validated: bool, rows: std::ops::Range<usize>) -> Result<Part> {
    let n = ctx.src_shape.len();
    let len = rows.len().min(1 << 20);
    // Room for two pieces per row: capacity never touched costs no page, but growing a
    // full plan by doubling copied it into fresh pages (test1.nc, 10,000 random 1x4x4 rows
    // in 6x32x32 chunks, ~18% of them cut in two: 40% of the call's page faults).
    let mut plan = Plan::recycled(n, len * 2);
    // Sized once for the common case (one piece per row): growing them by doubling moved
    // and page-faulted fresh memory on every call (test1.nc: 10,000 rows of 1x4x4). The
    // boxes are the plan's scratch buffer, kept with it between calls.
    let mut boxes = plan.take_scratch();
    boxes.reserve(len * 2 * n);
    let mut valid = plan.take_rows();
    valid.reserve(len);
    let mut elements = 0u64;
    let mut stepped = (false, false);
    // Rows are validated and planned straight from the tables (no `Row`: building one per
    // row zeroed and copied ~1.3 KB, a fifth of the planning of 65,536 one-chunk rows).
    let (mut count, mut ss, mut ds) = ([0u64; MAX_RANK], [1u64; MAX_RANK], [1u64; MAX_RANK]);
    for i in rows {
        let copies = match validated {
            true => validated_row_counts(table, i, ctx.src_shape, ctx.dst_shape, ctx.clip, &mut count[..n])?,
            false => row_counts(table, i, ctx.src_shape, ctx.dst_shape, ctx.clip, ["dataset", "destination"], &mut count[..n])?,
        };
        if !copies {
            continue;
        }
        let base = i * n;
        let (s0, d0) = (&table.src_start[base..base + n], &table.dst_start[base..base + n]);
        row_steps(table, i, &count[..n], &mut ss[..n], &mut ds[..n]);
        stepped.0 |= ss[..n].iter().any(|&s| s != 1);
        stepped.1 |= ds[..n].iter().any(|&s| s != 1);
        push_dst_box(d0, &count[..n], &ds[..n], &mut boxes);
        valid.push(i);
        elements += count[..n].iter().product::<u64>();
        plan.add(grid, i, &count[..n], (s0, &ss[..n]), (d0, &ds[..n]));
    }
    Ok(Part { plan, boxes, valid, elements, stepped })
}

/// What the planner decided for a call's chunks.
struct Decision {
    /// The pipeline as filters vh5 runs (`None`: some filter only libhdf5 implements).
    filters: Option<Vec<Filter>>,
    filtered: bool,
    /// vh5 decodes the whole (non-empty) pipeline: every chunk through vh5's decoder.
    checked: bool,
    chunk_elems: u64,
    /// Decoded chunk in the memory type / in the file type, bytes (saturated).
    chunk_bytes: u64,
    stored_bytes: u64,
    /// Above `max_chunk_bytes`: never read whole.
    too_big: bool,
    /// Per chunk group: read whole (else its pieces through libhdf5).
    whole: Vec<bool>,
    nwhole: usize,
}

/// Decide per chunk group of `plan`: whole or pieces (`plan::decide`, every chunk whole
/// for checked reads, none when chunks exceed [`max_chunk_bytes`]).
fn decide_chunks(plan: &Plan, table: &SliceTable, chunk: &[u64], itemsize: usize, convert: Option<Convert>, filters: Option<Vec<Filter>>, mode: PlannerMode) -> Decision {
    // (An empty pipeline is `Some(vec![])`.)
    let filtered = filters.as_ref().is_none_or(|f| !f.is_empty());
    let checked = filtered && filters.is_some();
    let chunk_elems = chunk.iter().try_fold(1u64, |a, &b| a.checked_mul(b)).unwrap_or(u64::MAX);
    let chunk_bytes = chunk_elems.saturating_mul(itemsize as u64);
    let file_itemsize = convert.map_or(itemsize, |c| c.file_itemsize);
    let stored_bytes = chunk_elems.saturating_mul(file_itemsize as u64);
    let too_big = chunk_bytes.max(stored_bytes) > max_chunk_bytes();
    let group_stats = |rg: &std::ops::Range<usize>| {
        let ps = &plan.pieces[rg.clone()];
        (rg.len(), ps.iter().map(|p| plan.piece_elements(p) * itemsize as u64).sum(), ps.iter().map(|p| step_cost_ns(plan, table, p, itemsize)).sum())
    };
    // (Small unfiltered chunks in `auto` mode: whole whatever their pieces.)
    let mut whole = if checked || (mode == PlannerMode::Auto && !filtered && always_whole_unfiltered(chunk_bytes)) {
        vec![true; plan.groups.len()]
    } else if mode == PlannerMode::Auto && !filtered {
        // Group by group, no table of every group's costs (1.5 MB of fresh pages for a
        // whole read of 65,536 chunks).
        plan.groups.iter().map(|(_, rg)| whole_unfiltered(chunk_bytes, group_stats(rg))).collect()
    } else {
        decide(mode, filtered, chunk_bytes, &plan.groups.iter().map(|(_, rg)| group_stats(rg)).collect::<Vec<_>>())
    };
    if too_big {
        // Too big to hold whole: every piece through libhdf5 (bounded by the rows' sizes).
        whole.iter_mut().for_each(|w| *w = false);
    }
    let nwhole = whole.iter().filter(|&&w| w).count();
    Decision { filters, filtered, checked, chunk_elems, chunk_bytes, stored_bytes, too_big, whole, nwhole }
}

/// Whether the cache entries of the chunks `d` reads whole (each its box inside the dataset:
/// `hdf5::chunk_cache`) fit in `cap` bytes together. Whole chunks are summed only when
/// `nwhole` entries of the largest box would not fit and the dataset has partial edge
/// chunks, stopping once past `cap`.
fn entries_fit(grid: &ChunkGrid, plan: &Plan, d: &Decision, itemsize: usize, cap: u64) -> bool {
    let bound = |bytes: u64| (d.nwhole as u64).saturating_mul(bytes) <= cap;
    if bound(d.chunk_bytes.max(d.stored_bytes)) {
        return true;
    }
    // Every entry is at most the box of the largest chunk inside the dataset.
    let n = grid.ndim();
    let mut boxed = [0u64; MAX_RANK];
    grid.chunk_extent(&[0; MAX_RANK][..n], &mut boxed[..n]); // the first chunk's box is the largest
    let largest = entry_bytes(&boxed[..n], itemsize);
    if bound(largest) {
        return true;
    }
    if grid.shape().iter().zip(grid.chunk()).all(|(&s, &c)| s % c == 0) {
        return false; // no partial edge chunk: every entry is a whole chunk
    }
    let mut sum = 0u64;
    for (&(linear, _), _) in plan.groups.iter().zip(&d.whole).filter(|(_, &w)| w) {
        grid.linear_extent(linear, &mut boxed[..n]);
        sum = sum.saturating_add(entry_bytes(&boxed[..n], itemsize));
        if sum > cap {
            return false;
        }
    }
    true
}

/// Rows whose destinations overlap another row's (rows of `table`, the call's own), in row
/// order after the pipeline (single threaded): through vh5's decoder when `through_vh5` (checked reads of chunks it may hold),
/// else one `H5Dread` per row (checked reads first refuse corrupt-looking chunks). Returns the
/// `H5Dread` calls made.
fn read_overlapping_rows(
    l: &H5Lock,
    reader: &mut HyperslabReader,
    (shared, table): (&Shared, &SliceTable),
    fetcher: &Fetcher,
    rp: &RowPlan,
    through_vh5: bool,
    stats: &mut ReadStats,
) -> Result<usize> {
    let (ctx, grid) = (shared.ctx, shared.grid);
    let mut scratch = Vec::new();
    let mut dec = Decoder::default();
    let mut hdf5_reads = 0;
    for (k, &i) in rp.valid.iter().enumerate() {
        if !rp.overlap[k] {
            continue;
        }
        let r = row(table, i, ctx.src_shape, ctx.dst_shape, ctx.clip)?.expect("validated row");
        if through_vh5 || fetcher.checked {
            let one = Plan::build(grid, [(i, &r)]);
            let sh = Shared { plan: &one, ..*shared };
            if through_vh5 {
                // Through vh5's decoder too, one row at a time (the later row wins).
                for g in 0..one.groups.len() {
                    let mut job = fetcher.fetch(l, reader, &sh, g, Vec::new())?;
                    stats.chunks_read += 1;
                    stats.raw_chunks += usize::from(job.raw_mask.is_some() || job.hit.is_some());
                    sh.process(&mut job, &mut dec)?;
                }
                continue;
            }
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
    Ok(hdf5_reads)
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
