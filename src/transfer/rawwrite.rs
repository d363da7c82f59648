//! Raw chunk writes for filtered chunked datasets: vh5 runs the filter pipeline itself, on
//! worker threads outside the libhdf5 lock, and stores each chunk with `H5Dwrite_chunk`.
//!
//! Used by [`super::write`] when (checked by [`raw_plan`]) the dataset's whole pipeline is made
//! of filters vh5 encodes AND decodes (deflate at the dataset's level, shuffle, fletcher32:
//! [`crate::codec`]) and the file type's bytes are the memory type's,
//! possibly byte-swapped (no libhdf5 type conversion). Any other pipeline (szip, nbit,
//! scaleoffset, plugins), an unfiltered dataset, or a conversion goes through `H5Dwrite`.
//!
//! Per touched chunk (pieces grouped by chunk: [`crate::plan::Plan::groups`]), the calling thread,
//! holding the lock, prepares a job: an interior chunk the rows cover entirely, and any
//! unallocated chunk, starts as libhdf5 starts a new chunk: the fill value throughout (also
//! outside the extent of an edge chunk, where a later resize shows it), zeros under fill time
//! never; a chunk covered in part, or a stored edge chunk (its bytes outside the extent are
//! kept, as libhdf5 keeps them), is fetched raw (`H5Dread_chunk`, after one `H5Dflush` so
//! cached chunks are on disk); a chunk the index query cannot place is read through
//! `H5Dread` of its region. Workers ([`super::options::num_threads`]; 1 = everything on the calling
//! thread) decode a raw chunk, byte-swap to memory order if needed, merge the row pieces in
//! row order, swap back, encode; the calling thread stores the result with filter mask 0.
//! Results are what libhdf5 would store (any zlib stream inflates to the same bytes).
//! Datasets created with `H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS`: partial edge chunks (those
//! reaching past the current extent) are decoded and stored without the pipeline (mask 0,
//! the whole chunk's bytes), exactly as libhdf5 stores and reads them.
//!
//! Other writes of the same dataset (other threads' calls, through any dataset or file id)
//! may store a chunk between its prepare and its store: before storing, the calling thread
//! asks `write_stamps` whether the chunk was stored by another write since it was
//! prepared; if so the result is dropped and the chunk prepared and merged again from its
//! current bytes (on the workers at most `REQUEUES` times, then on the calling thread with
//! the lock held), so that no other write's elements are overwritten by older bytes.

use std::sync::{mpsc, Mutex};

use hdf5_sys::h5i::hid_t;

use super::merge::{ranges, report, MergeCtx, SrcArray};
use super::options::{max_workers, num_threads};
use super::pipeline::{spawn_workers, ChunkOutcome};
use super::stats::WriteStats;
use super::write_stamps::{chunk_key, DatasetId, RawWriteSession};
use crate::codec::{swap_bytes, Decoder, Encoder, Filter};
use crate::dtype::{ByteOrder, Dtype};
use crate::engine::copy::copy_strided_runs;
use crate::engine::copy::dense_strides;
use crate::error::{Error, Result};
use crate::geometry::MAX_RANK;
use crate::hdf5::chunk::vh5_pipeline;
use crate::hdf5::chunk::{chunk_layout, chunk_state, fill_element, flush_dataset, read_raw_chunk, types_equal, ChunkState};
use crate::hdf5::dataset::HyperslabReader;
use crate::hdf5::handle::Handle;
use crate::hdf5::lock::{lock, released, H5Lock};
use crate::hdf5::meta::classify_dataset;
use crate::plan::grid::ChunkGrid;

/// How to store chunks raw: the pipeline both ways and the byte swap between memory and file.
pub struct RawPlan {
    /// The pipeline, run backwards to decode and forwards to encode.
    filters: Vec<Filter>,
    /// `Some(unit)`: the file stores the other byte order; reverse every `unit`-byte word.
    swap: Option<usize>,
    /// `H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS`: partial edge chunks (against the current
    /// extent) are stored and read without the pipeline, with filter mask 0, as libhdf5 does
    /// (`H5D__chunk_flush_entry`, `H5D__chunk_lock`).
    dont_filter_partial: bool,
    /// The element new chunks start from (memory order), `None` = zeros: the fill value,
    /// or zeros under fill time never (see [`Shared::fresh`]).
    fill: Option<Vec<u8>>,
}

/// Whether (and how) chunks of `dset` can be written raw for a source of `src`'s dtype in
/// memory type `mem_type`; `None` = through `H5Dwrite` (see the module docs).
pub fn raw_plan(l: &H5Lock, dset: hid_t, mem_type: hid_t, src: &SrcArray) -> Result<Option<RawPlan>> {
    let layout = chunk_layout(l, dset)?;
    if layout.chunk.is_none() || layout.filters.is_empty() {
        return Ok(None);
    }
    let Some(filters) = vh5_pipeline(&layout.filters) else { return Ok(None) };
    let Some(swap) = file_byte_swap(l, dset, mem_type, src)? else { return Ok(None) };
    let itemsize = src.layout.itemsize;
    let fill = if layout.fill_never { None } else { Some(fill_element(l, dset, mem_type, itemsize)?).filter(|f| f.iter().any(|&b| b != 0)) };
    Ok(Some(RawPlan { filters, swap, dont_filter_partial: layout.dont_filter_partial, fill }))
}

/// Whether `dset`'s file type stores the bytes of memory type `mem_type` (source `src`), up
/// to a byte swap: `Some(None)` the same bytes, `Some(Some(unit))` every `unit`-byte word
/// reversed, `None` a conversion by libhdf5 is needed. Lock held.
pub fn file_byte_swap(l: &H5Lock, dset: hid_t, mem_type: hid_t, src: &SrcArray) -> Result<Option<Option<usize>>> {
    // SAFETY: dset is an open dataset (checked by the caller); lock held.
    let ftype = Handle::new(l, unsafe { hdf5_sys::h5d::H5Dget_type(dset) }, "H5Dget_type")?;
    let finfo = classify_dataset(l, dset, ftype.id())?;
    let itemsize = src.layout.itemsize;
    if finfo.file_itemsize != itemsize || finfo.mem_itemsize != itemsize {
        return Ok(None);
    }
    if types_equal(l, ftype.id(), mem_type) {
        return Ok(Some(None));
    }
    let native = if cfg!(target_endian = "little") { ByteOrder::Little } else { ByteOrder::Big };
    Ok(match finfo.dtype {
        Some(d) if d == src.dtype && itemsize == 1 && matches!(d, Dtype::Int8 | Dtype::UInt8 | Dtype::Bool) => Some(None),
        Some(d) if d == src.dtype && finfo.byte_order.is_some() && finfo.byte_order != Some(native) => match d {
            Dtype::Int16 | Dtype::Int32 | Dtype::Int64 | Dtype::UInt16 | Dtype::UInt32 | Dtype::UInt64 | Dtype::Float16 | Dtype::Float32 | Dtype::Float64 => Some(Some(itemsize)),
            Dtype::Complex64 | Dtype::Complex128 => Some(Some(itemsize / 2)),
            _ => None,
        },
        _ => None,
    })
}

/// Where a job's starting bytes come from.
enum Start {
    /// Rows cover the chunk: start from zeros.
    Fresh,
    /// Stored bytes of the chunk and their filter mask, to decode.
    Raw(Vec<u8>, u32),
    /// The chunk in memory order over the full chunk shape (from `H5Dread`).
    Mem(Vec<u8>),
}

struct Job {
    group: usize,
    start: Start,
    ticket: Ticket,
}

/// What a job's result depends on: whether it merged into the chunk's earlier bytes (or its
/// absence), and the write clock when those were read ([`RawWriteSession::now`]).
#[derive(Debug, Clone, Copy)]
struct Ticket {
    reads_old: bool,
    seen: u64,
    /// The chunk's stored size and filter mask when it was fetched raw (see
    /// [`super::masked`]); `None`: looked up when stored.
    old: Option<(u64, u32)>,
}

/// Times a chunk found stale (stored by another write after it was prepared) is prepared
/// again and handed to the workers; after that it is merged on the calling thread with the
/// lock held, where no other write can interleave.
const REQUEUES: u8 = 2;

/// Per-worker state.
#[derive(Default)]
struct Worker {
    dec: Decoder,
    enc: Encoder,
}

/// Everything a job needs besides its start bytes (shared by the workers).
struct Shared<'a> {
    plan: &'a RawPlan,
    ctx: &'a MergeCtx<'a>,
    grid: &'a ChunkGrid,
    /// Bytes of a whole (unclipped) chunk in memory.
    chunk_bytes: usize,
    dense: [isize; MAX_RANK],
}

impl Shared<'_> {
    /// A new chunk's bytes (memory order) before any row is merged: what libhdf5 starts a
    /// chunk from that is not in the file (`H5D__chunk_lock`): the fill value throughout,
    /// also outside the extent in edge chunks (fill times alloc, and ifset with a fill value
    /// defined: libhdf5's default zeros count), zeros under fill time never.
    fn fresh(&self, coord: &[u64]) -> Result<Vec<u8>> {
        let mut b = Vec::new();
        crate::mem::resize_zeroed(&mut b, self.chunk_bytes, || format!("chunk {coord:?}"))?;
        if let Some(f) = &self.plan.fill {
            crate::hdf5::chunk::fill_with(&mut b, f);
        }
        Ok(b)
    }

    /// Decode, merge, encode one chunk: `Done(bytes to store with filter mask 0)`, or
    /// `RetryThroughLibhdf5` when vh5 could not decode the stored bytes.
    fn run(&self, w: &mut Worker, job: Job) -> ChunkOutcome<Vec<u8>> {
        match self.try_run(w, job) {
            Ok(Ok(b)) => ChunkOutcome::Done(b),
            Ok(Err(why)) => ChunkOutcome::RetryThroughLibhdf5(why),
            Err(e) => ChunkOutcome::Fail(e),
        }
    }

    fn try_run(&self, w: &mut Worker, job: Job) -> Result<std::result::Result<Vec<u8>, String>> {
        let n = self.ctx.n;
        let (chunk, group) = self.ctx.group(job.group);
        let mut origin = [0u64; MAX_RANK];
        let mut coord = [0u64; MAX_RANK];
        self.grid.chunk_coord(chunk, &mut coord[..n]);
        self.grid.chunk_origin(&coord[..n], &mut origin[..n]);
        let unfiltered = self.plan.dont_filter_partial && crate::hdf5::chunk::is_partial_edge(&origin[..n], self.grid.chunk(), self.grid.shape());
        let filters: &[Filter] = if unfiltered { &[] } else { &self.plan.filters };
        let mut buf = match job.start {
            Start::Fresh => self.fresh(&coord[..n])?,
            Start::Mem(b) => b,
            Start::Raw(mut b, mask) => {
                // Not decodable by vh5: libhdf5 reads it (or fails). Decodable but to the wrong
                // size (a bomb, a short stream): corrupt for certain — never merged and
                // rewritten from libhdf5's cut or uninitialised-padded version of it.
                if let Err(e) = w.dec.decode_checked(filters, mask, &mut b, self.chunk_bytes) {
                    return match e.kind {
                        crate::error::ErrorKind::Malformed => Ok(Err(e.message)),
                        _ => Err(Error::new(e.kind, format!("chunk {:?}: {}: the chunk is corrupted", &coord[..n], e.message))),
                    };
                }
                if b.len() != self.chunk_bytes {
                    bail!(Hdf5, "chunk {:?}: its filters decode to {} bytes, the chunk holds {}: the chunk is corrupted", &coord[..n], b.len(), self.chunk_bytes);
                }
                if let Some(u) = self.plan.swap {
                    swap_bytes(&mut b, u);
                }
                b
            }
        };
        self.ctx.merge(group, &origin[..n], &self.dense[..n], &mut buf)?;
        if let Some(u) = self.plan.swap {
            swap_bytes(&mut buf, u);
        }
        w.enc.encode(filters, &mut buf).map_err(|m| err!(Hdf5, "chunk {:?}: {m}", &coord[..n]))?;
        Ok(Ok(buf))
    }
}

/// Chunks of at least this many bytes repay handing their merge and encoding to workers
/// when the pipeline has no deflate (see [`write_workers`]).
const CHEAP_PIPELINE_WORKER_BYTES: usize = 32 << 10;

/// Whether workers encode the chunks of a raw write: always when the pipeline deflates;
/// otherwise (shuffle, fletcher32: a pass or two over the bytes) only for chunks of at least
/// [`CHEAP_PIPELINE_WORKER_BYTES`]. Overwriting every chunk of a 2048x2048 float32 dataset
/// with shuffle + fletcher32, best of 10 calls, 2 threads against 1: 16x16 chunks (1 KiB)
/// 9.7 against 2.2 ms, 32x32 50.9 / 17.6, 64x64 14.4 / 12.8, 128x128 10.8 / 12.1, 512x512
/// 9.6 / 14.8 ms (each job's hand-off to a worker and back cost more than its encoding); with
/// deflate, 16x16 chunks: 24.4 against 27.9 ms.
/// `VH5_PLANNER=chunks` always hands them to workers (what the tests use to exercise them).
fn write_workers(filters: &[Filter], chunk_bytes: usize) -> bool {
    super::options::planner_mode() == crate::plan::PlannerMode::Chunks || filters.iter().any(|f| matches!(f, Filter::Deflate(_))) || chunk_bytes >= CHEAP_PIPELINE_WORKER_BYTES
}

/// Write every chunk of `ctx.plan` raw (see the module docs).
#[allow(clippy::too_many_arguments)]
pub(super) fn write_chunks_raw(
    l: &H5Lock,
    dset: hid_t,
    plan: &RawPlan,
    grid: &ChunkGrid,
    ctx: &MergeCtx,
    pieces_per_row: &[u32],
    reader: &mut HyperslabReader,
    stats: &mut WriteStats,
) -> Result<()> {
    let itemsize = ctx.src.layout.itemsize;
    let ngroups = ctx.plan.groups.len();
    let chunk_elems: u64 = grid.chunk().iter().product();
    let chunk_bytes = usize::try_from(chunk_elems as u128 * itemsize as u128).map_err(|_| err!(Unsupported, "chunk of {chunk_elems} elements does not fit in memory"))?;
    let mut dense = [0isize; MAX_RANK];
    dense_strides(grid.chunk(), itemsize, &mut dense[..ctx.n]);
    let shared = Shared { plan, ctx, grid, chunk_bytes, dense };
    let (fileno, token) = crate::hdf5::write::dataset_identity(l, dset)?;
    let mut w = RawWriter {
        l,
        dset,
        session: RawWriteSession::begin(DatasetId { fileno, token }),
        shared: &shared,
        reader,
        written_per_row: vec![0u32; ctx.table.nslices],
        pieces_per_row,
        flushed: None,
        fsize: u64::MAX,
        covered: Vec::new(),
        clipped: Vec::new(),
        last_stored: None,
    };
    let threads = match write_workers(&plan.filters, chunk_bytes) {
        true => num_threads().min(ngroups).min(max_workers()),
        false => 1,
    };
    let res = if threads <= 1 {
        w.run_serial(stats)
    } else {
        // SAFETY: inside, libhdf5 is only called while the fresh lock `fl` is held (prepare,
        // store and finish run only then).
        unsafe { released(l, || w.run_threaded(threads, stats)) }
    };
    if let Some(o) = w.last_stored {
        // libhdf5 cached the last stored chunk's index entry with its old filter mask.
        super::masked::forget_last_lookup(l, dset, &o[..ctx.n], grid.chunk());
    }
    res
}

/// The calling thread's side of a raw write: prepares jobs and stores results under the lock.
struct RawWriter<'a, 'r> {
    l: &'a H5Lock,
    dset: hid_t,
    /// This write's registration for lost-update checks (deregistered when dropped).
    session: RawWriteSession,
    shared: &'a Shared<'a>,
    reader: &'a mut HyperslabReader<'r>,
    written_per_row: Vec<u32>,
    pieces_per_row: &'a [u32],
    /// The write clock when the dataset was last flushed (chunks cached by earlier writes
    /// are then in the file); flushed again after a write through libhdf5 of the dataset.
    flushed: Option<u64>,
    /// File size after the flush.
    fsize: u64,
    covered: Vec<u8>,
    clipped: Vec<u8>,
    /// The first element of the chunk stored last (see [`super::masked::forget_last_lookup`]).
    last_stored: Option<[u64; MAX_RANK]>,
}

impl RawWriter<'_, '_> {
    /// Chunk group `gi` for messages: coordinates, dataset region and rows.
    fn what(&self, gi: usize) -> String {
        let (n, grid) = (self.shared.ctx.n, self.shared.grid);
        let (chunk, group) = self.shared.ctx.group(gi);
        let (coord, origin, extent) = chunk_box(grid, chunk, n);
        let mut rows: Vec<usize> = group.iter().map(|p| p.row).collect();
        rows.dedup();
        format!("chunk {:?} (dataset elements {:?} + {:?}, rows {})", &coord[..n], &origin[..n], &extent[..n], ranges(&rows))
    }

    /// The part-way failure of chunk group `gi`.
    fn report(&self, e: Error, gi: usize) -> Error {
        report(e, &self.what(gi), &self.written_per_row, self.pieces_per_row)
    }

    /// Prepare the job of group `gi` (calling thread, lock held): where its starting bytes
    /// come from (see the module docs). `force_mem`: through libhdf5 (a retry).
    fn prepare(&mut self, gi: usize, stats: &mut WriteStats, force_mem: bool) -> Result<Job> {
        let (l, dset, sh) = (self.l, self.dset, self.shared);
        let (n, grid) = (sh.ctx.n, sh.grid);
        let (chunk, group) = sh.ctx.group(gi);
        let (coord, origin, extent) = chunk_box(grid, chunk, n);
        // (Read before the chunk: a store by another write after this is seen by `finish`.)
        let ticket = Ticket { reads_old: true, seen: self.session.now(), old: None };
        if !force_mem {
            let covers = sh.ctx.covers(group, &origin[..n], &extent[..n], &mut self.covered)?;
            // An edge chunk's bytes outside the extent are kept by libhdf5 (it never counts an
            // edge chunk as overwritten entirely): a stored one is read first like a partly
            // covered chunk, an unallocated one starts from the fill value (`Start::Fresh`).
            let edge = extent[..n] != grid.chunk()[..n];
            if covers && !edge {
                return Ok(Job { group: gi, start: Start::Fresh, ticket: Ticket { reads_old: false, ..ticket } });
            }
            if self.flushed.is_none_or(|at| self.session.written_through_libhdf5_since(at)) {
                flush_dataset(l, dset)?;
                self.flushed = Some(ticket.seen);
                self.fsize = crate::hdf5::chunk::file_size(l, dset)?;
            }
            let state = chunk_state(l, dset, &origin[..n]);
            if !covers || matches!(state, ChunkState::Stored { .. }) {
                stats.chunks_read += 1;
            }
            match state {
                // A stored size past the end of the file (a number from the chunk index) is
                // never trusted for an allocation: libhdf5 reads that chunk (and fails with
                // its reason).
                ChunkState::Stored { size, .. } if size <= self.fsize => {
                    let mut b = Vec::new();
                    // None: no file address after all (only in libhdf5's chunk cache).
                    if let Some(mask) = read_raw_chunk(l, dset, &origin[..n], size, &mut b)? {
                        let ticket = Ticket { old: Some((size, mask)), ..ticket };
                        return Ok(Job { group: gi, start: Start::Raw(b, mask), ticket });
                    }
                }
                // What libhdf5 starts a new chunk from (H5D__chunk_lock).
                ChunkState::Unallocated => return Ok(Job { group: gi, start: Start::Fresh, ticket }),
                _ if covers => return Ok(Job { group: gi, start: Start::Fresh, ticket }),
                _ => {}
            }
        }
        // Unknown to the chunk index query, or undecodable by vh5: libhdf5 gives the data
        // (or the fill value) in memory order.
        let itemsize = sh.ctx.src.layout.itemsize;
        let elems: u64 = extent[..n].iter().product();
        // Zeroed for every chunk: with fill time never libhdf5 leaves an unallocated chunk's
        // region untouched (and would store zeros there itself), never the previous chunk's bytes.
        self.clipped.clear();
        crate::mem::resize_zeroed(&mut self.clipped, elems as usize * itemsize, || format!("chunk {:?}", &coord[..n]))?;
        self.reader.read(&origin[..n], None, &extent[..n], &mut self.clipped)?;
        let mut b = sh.fresh(&coord[..n])?;
        let mut cdense = [0isize; MAX_RANK];
        dense_strides(&extent[..n], itemsize, &mut cdense[..n]);
        let counts: Vec<usize> = extent[..n].iter().map(|&e| e as usize).collect();
        copy_strided_runs(&self.clipped, 0, &cdense[..n], &mut b, 0, &sh.dense[..n], &counts, itemsize)?;
        Ok(Job { group: gi, start: Start::Mem(b), ticket })
    }

    /// Store a worker's result (lock held); a chunk vh5 could not decode is read again
    /// through libhdf5 (which either decodes it or fails with its own error stack) and
    /// redone here. Returns `false`, storing nothing, when the result merged bytes that
    /// another write replaced since (see the module docs): the chunk must be done again.
    fn finish(&mut self, gi: usize, ticket: Ticket, outcome: ChunkOutcome<Vec<u8>>, w: &mut Worker, stats: &mut WriteStats) -> Result<bool> {
        let n = self.shared.ctx.n;
        let (chunk, group) = self.shared.ctx.group(gi);
        let (coord, origin, _) = chunk_box(self.shared.grid, chunk, n);
        let key = chunk_key(&coord[..n]);
        let mut known = ticket.old;
        let bytes = match outcome {
            ChunkOutcome::Done(_) if ticket.reads_old && self.session.stale(key, ticket.seen) => {
                stats.chunks_redone += 1;
                return Ok(false);
            }
            ChunkOutcome::Done(b) => b,
            ChunkOutcome::Fail(e) => return Err(e),
            ChunkOutcome::RetryThroughLibhdf5(why) => {
                known = None;
                // Prepared and merged with the lock held throughout: never stale.
                let job = self
                    .prepare(gi, stats, true)
                    .map_err(|e| Error::new(e.kind, format!("vh5 could not decode the stored chunk ({why}) and libhdf5 could not read it: {}", e.message)))?;
                match self.shared.run(w, job) {
                    ChunkOutcome::Done(b) => b,
                    ChunkOutcome::Fail(e) => return Err(e),
                    ChunkOutcome::RetryThroughLibhdf5(m) => bail!(Hdf5, "internal: chunk read through libhdf5 still undecodable: {m}"),
                }
            }
        };
        // A chunk stored under a non-zero filter mask at this very size would keep that mask
        // in the index (see `super::masked`): known from its fetch, else looked up.
        let old = match known {
            Some(o) => Some(o),
            None => super::masked::same_size_entry(self.l, self.dset, &origin[..n], bytes.len())?,
        };
        self.last_stored = Some(origin);
        super::masked::store_unmasked(self.l, self.dset, &origin[..n], &bytes, old)?;
        self.session.stored(key);
        stats.chunks_written += 1;
        stats.hdf5_writes += 1;
        stats.raw_chunks += 1;
        for p in group {
            self.written_per_row[p.row] += 1;
        }
        Ok(true)
    }

    /// Prepare, run and finish chunk group `gi` on the calling thread, lock held throughout
    /// (no other write can store the chunk meanwhile).
    fn one(&mut self, gi: usize, w: &mut Worker, stats: &mut WriteStats) -> Result<()> {
        let job = self.prepare(gi, stats, false)?;
        let ticket = job.ticket;
        let outcome = self.shared.run(w, job);
        if !self.finish(gi, ticket, outcome, w, stats)? {
            bail!(Hdf5, "internal: chunk stored by another write while the libhdf5 lock was held");
        }
        Ok(())
    }

    /// Everything on the calling thread (one thread), lock held.
    fn run_serial(&mut self, stats: &mut WriteStats) -> Result<()> {
        let mut w = Worker::default();
        for gi in 0..self.shared.ctx.plan.groups.len() {
            self.one(gi, &mut w, stats).map_err(|e| self.report(e, gi))?;
        }
        Ok(())
    }

    /// Prepare chunk group `gi`, encode it on the calling thread with the lock released
    /// (`held`, taken again to store), and store it; done again with the lock held throughout
    /// when another write stored the chunk meanwhile.
    fn encode_here(&mut self, gi: usize, held: &H5Lock, w: &mut Worker, stats: &mut WriteStats) -> Result<()> {
        let job = self.prepare(gi, stats, false)?;
        let ticket = job.ticket;
        let shared = self.shared;
        // SAFETY: `Shared::run` decodes, merges and encodes in memory only.
        let o = unsafe { released(held, || shared.run(w, job)) };
        match self.finish(gi, ticket, o, w, stats)? {
            true => Ok(()),
            false => self.one(gi, w, stats),
        }
    }

    /// Store a worker's result `(group, ticket, outcome)`, or, when it is stale (see
    /// [`RawWriter::finish`]), prepare the group again and send it to the workers (`Ok(true)`:
    /// one more job in flight) at most [`REQUEUES`] times per group (counted in `requeued`,
    /// allocated at the first stale result), then do it on the calling thread, lock held.
    fn store_or_requeue(
        &mut self,
        done: (usize, Ticket, ChunkOutcome<Vec<u8>>),
        requeued: &mut Vec<u8>,
        job_tx: &mpsc::Sender<Job>,
        w: &mut Worker,
        stats: &mut WriteStats,
    ) -> Result<bool> {
        let (gi, ticket, res) = done;
        if self.finish(gi, ticket, res, w, stats)? {
            return Ok(false);
        }
        if requeued.is_empty() {
            *requeued = vec![0; self.shared.ctx.plan.groups.len()];
        }
        if requeued[gi] >= REQUEUES {
            self.one(gi, w, stats)?;
            return Ok(false);
        }
        requeued[gi] += 1;
        let job = self.prepare(gi, stats, false)?;
        let _ = job_tx.send(job);
        Ok(true)
    }

    /// Worker threads: jobs in, outcomes out; at most 2 jobs in flight per worker. Called
    /// with the lock released: it is taken while preparing and storing chunks, never while
    /// waiting for a worker's result or joining the workers. A result found stale
    /// ([`RawWriter::finish`]) is prepared again and requeued, at most `REQUEUES` times per
    /// chunk, then done on the calling thread with the lock held.
    fn run_threaded(&mut self, threads: usize, stats: &mut WriteStats) -> Result<()> {
        let ngroups = self.shared.ctx.plan.groups.len();
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let job_rx = Mutex::new(job_rx);
        let shared = self.shared;
        std::thread::scope(|sc| -> Result<()> {
            let (res_tx, res_rx) = mpsc::channel::<(usize, Ticket, ChunkOutcome<Vec<u8>>)>();
            let job_rx = &job_rx;
            let worker = move || {
                let mut w = Worker::default();
                loop {
                    let job = match job_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = job else { return };
                    let (gi, ticket) = (job.group, job.ticket);
                    if res_tx.send((gi, ticket, shared.run(&mut w, job))).is_err() {
                        return;
                    }
                }
            };
            // Workers the system lets us start (none: the calling thread encodes every chunk).
            let live = spawn_workers(sc, threads, "vh5-encode", worker);
            let fl = lock();
            let mut main_worker = Worker::default();
            let (mut in_flight, mut next) = (0usize, 0usize);
            // Requeues per chunk group, allocated at the first stale result.
            let mut requeued: Vec<u8> = Vec::new();
            let mut outcome: Result<()> = Ok(());
            while next < ngroups || in_flight > 0 {
                if outcome.is_ok() && next < ngroups && (in_flight < 2 * live || live == 0) {
                    let gi = next;
                    next += 1;
                    let r = if live == 0 {
                        // No worker could be started: encode here, with the lock released meanwhile.
                        self.encode_here(gi, &fl, &mut main_worker, stats)
                    } else {
                        self.prepare(gi, stats, false).map(|job| {
                            let _ = job_tx.send(job);
                            in_flight += 1;
                        })
                    };
                    if let Err(e) = r {
                        outcome = Err(self.report(e, gi));
                    }
                    continue;
                }
                if in_flight == 0 {
                    break;
                }
                // SAFETY: waiting on a channel calls no libhdf5 function.
                let Ok(done) = (unsafe { released(&fl, || res_rx.recv()) }) else { break };
                in_flight -= 1;
                if outcome.is_err() {
                    continue;
                }
                let gi = done.0;
                match self.store_or_requeue(done, &mut requeued, &job_tx, &mut main_worker, stats) {
                    Ok(again) => in_flight += usize::from(again),
                    Err(e) => outcome = Err(self.report(e, gi)),
                }
            }
            drop(job_tx);
            drop(fl);
            outcome
        })
    }
}

/// Coordinates, first dataset element and extent (clipped to the dataset) of chunk `chunk`
/// (linear index on `grid`).
fn chunk_box(grid: &ChunkGrid, chunk: u64, n: usize) -> ([u64; MAX_RANK], [u64; MAX_RANK], [u64; MAX_RANK]) {
    let (mut coord, mut origin, mut extent) = ([0u64; MAX_RANK], [0u64; MAX_RANK], [0u64; MAX_RANK]);
    grid.chunk_coord(chunk, &mut coord[..n]);
    grid.chunk_origin(&coord[..n], &mut origin[..n]);
    grid.chunk_extent(&coord[..n], &mut extent[..n]);
    (coord, origin, extent)
}
