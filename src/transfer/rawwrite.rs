//! Raw chunk writes for filtered chunked datasets: vh5 runs the filter pipeline itself, on
//! worker threads outside the libhdf5 lock, and stores each chunk with `H5Dwrite_chunk`.
//!
//! Used by [`super::write`] when (checked by [`raw_plan`]) the dataset's whole pipeline is made
//! of filters vh5 encodes AND decodes (deflate at the dataset's level, shuffle, fletcher32:
//! [`crate::codec::encode`], [`crate::codec::decode`]) and the file type's bytes are the memory type's,
//! possibly byte-swapped (no libhdf5 type conversion). Any other pipeline (szip, nbit,
//! scaleoffset, plugins), an unfiltered dataset, or a conversion goes through `H5Dwrite`.
//!
//! Per touched chunk (pieces grouped by [`super::merge::chunk_groups`]), the calling thread,
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

use std::sync::{mpsc, Mutex};

use hdf5_sys::h5i::hid_t;

use crate::plan::grid::ChunkGrid;
use crate::engine::copy::copy_strided_runs;
use crate::codec::encode::{encode_pipeline, EncodeFilter, Encoder};
use crate::codec::decode::{pipeline, swap_bytes, Decoder, Filter};
use crate::geometry::MAX_RANK;
use super::options::{max_workers, num_threads};
use super::merge::{ranges, report, MergeCtx, SrcArray};
use super::stats::WriteStats;
use crate::engine::copy::dense_strides;
use crate::dtype::{ByteOrder, Dtype};
use crate::error::{Error, Result};
use crate::hdf5::chunk::{chunk_layout, chunk_state, fill_element, flush_dataset, read_raw_chunk, types_equal, ChunkState};
use crate::hdf5::dataset::HyperslabReader;
use crate::hdf5::handle::Handle;
use crate::hdf5::lock::{lock, released, H5Lock};
use crate::hdf5::types::classify;
use crate::hdf5::write::write_raw_chunk;

/// How to store chunks raw: the pipeline both ways and the byte swap between memory and file.
pub struct RawPlan {
    encode: Vec<EncodeFilter>,
    decode: Vec<Filter>,
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
    let specs: Vec<(i32, &[u32])> = layout.filters.iter().map(|f| (f.id, f.cd_values.as_slice())).collect();
    let (Some(encode), Some(decode)) = (encode_pipeline(&specs), pipeline(&specs)) else { return Ok(None) };
    // SAFETY: dset is an open dataset (checked by the caller); lock held.
    let ftype = Handle::new(l, unsafe { hdf5_sys::h5d::H5Dget_type(dset) }, "H5Dget_type")?;
    let finfo = classify(l, ftype.id())?;
    let itemsize = src.layout.itemsize;
    if finfo.file_itemsize != itemsize || finfo.mem_itemsize != itemsize {
        return Ok(None);
    }
    let swap = if types_equal(l, ftype.id(), mem_type) {
        None
    } else {
        let native = if cfg!(target_endian = "little") { ByteOrder::Little } else { ByteOrder::Big };
        match finfo.dtype {
            Some(d) if d == src.dtype && itemsize == 1 && matches!(d, Dtype::Int8 | Dtype::UInt8 | Dtype::Bool) => None,
            Some(d) if d == src.dtype && finfo.byte_order.is_some() && finfo.byte_order != Some(native) => match d {
                Dtype::Int16 | Dtype::Int32 | Dtype::Int64 | Dtype::UInt16 | Dtype::UInt32 | Dtype::UInt64 | Dtype::Float16 | Dtype::Float32 | Dtype::Float64 => Some(itemsize),
                Dtype::Complex64 | Dtype::Complex128 => Some(itemsize / 2),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        }
    };
    let fill = if layout.fill_never { None } else { Some(fill_element(l, dset, mem_type, itemsize)?).filter(|f| f.iter().any(|&b| b != 0)) };
    Ok(Some(RawPlan { encode, decode, swap, dont_filter_partial: layout.dont_filter_partial, fill }))
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
}

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

    /// Decode, merge, encode one chunk: the bytes to store with filter mask 0, or
    /// `Ok(Err(reason))` when vh5 could not decode the stored bytes (the caller then lets
    /// libhdf5 read the chunk).
    fn run(&self, w: &mut Worker, job: Job) -> Result<std::result::Result<Vec<u8>, String>> {
        let n = self.ctx.n;
        let (chunk, group) = self.ctx.group(job.group);
        let mut origin = [0u64; MAX_RANK];
        let mut coord = [0u64; MAX_RANK];
        self.grid.chunk_coord(chunk, &mut coord[..n]);
        self.grid.chunk_origin(&coord[..n], &mut origin[..n]);
        let unfiltered = self.plan.dont_filter_partial && crate::hdf5::chunk::is_partial_edge(&origin[..n], self.grid.chunk(), self.grid.shape());
        let (decode, encode): (&[Filter], &[EncodeFilter]) = if unfiltered { (&[], &[]) } else { (&self.plan.decode, &self.plan.encode) };
        let mut buf = match job.start {
            Start::Fresh => self.fresh(&coord[..n])?,
            Start::Mem(b) => b,
            Start::Raw(mut b, mask) => {
                // Not decodable by vh5: libhdf5 reads it (or fails). Decodable but to the wrong
                // size (a bomb, a short stream): corrupt for certain — never merged and
                // rewritten from libhdf5's cut or uninitialised-padded version of it.
                if let Err(e) = w.dec.decode_checked(decode, mask, &mut b, self.chunk_bytes) {
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
        w.enc.encode(encode, &mut buf).map_err(|m| err!(Hdf5, "chunk {:?}: {m}", &coord[..n]))?;
        Ok(Ok(buf))
    }
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
    let n = ctx.n;
    let itemsize = ctx.src.layout.itemsize;
    let ngroups = ctx.plan.groups.len();
    let chunk_elems: u64 = grid.chunk().iter().product();
    let chunk_bytes = usize::try_from(chunk_elems as u128 * itemsize as u128).map_err(|_| err!(Unsupported, "chunk of {chunk_elems} elements does not fit in memory"))?;
    let mut dense = [0isize; MAX_RANK];
    dense_strides(grid.chunk(), itemsize, &mut dense);
    let shared = Shared { plan, ctx, grid, chunk_bytes, dense };
    let mut written_per_row = vec![0u32; ctx.table.nslices];
    let mut flushed = false;
    // File size after the flush (chunks cached by earlier writes are then allocated).
    let mut fsize = u64::MAX;
    let mut covered = Vec::new();
    let mut clipped = Vec::new();
    let what = |gi: usize| {
        let (chunk, group) = ctx.group(gi);
        let (mut coord, mut origin, mut extent) = ([0u64; MAX_RANK], [0u64; MAX_RANK], [0u64; MAX_RANK]);
        grid.chunk_coord(chunk, &mut coord[..n]);
        grid.chunk_origin(&coord[..n], &mut origin[..n]);
        grid.chunk_extent(&coord[..n], &mut extent[..n]);
        let mut rows: Vec<usize> = group.iter().map(|p| p.row).collect();
        rows.dedup();
        format!("chunk {:?} (dataset elements {:?} + {:?}, rows {})", &coord[..n], &origin[..n], &extent[..n], ranges(&rows))
    };
    // Prepare the job of group `gi` (calling thread, lock held).
    let mut prepare = |gi: usize, stats: &mut WriteStats, force_mem: bool| -> Result<Job> {
        let (chunk, group) = ctx.group(gi);
        let (mut coord, mut origin, mut extent) = ([0u64; MAX_RANK], [0u64; MAX_RANK], [0u64; MAX_RANK]);
        grid.chunk_coord(chunk, &mut coord[..n]);
        grid.chunk_origin(&coord[..n], &mut origin[..n]);
        grid.chunk_extent(&coord[..n], &mut extent[..n]);
        if !force_mem {
            let covers = ctx.covers(group, &origin[..n], &extent[..n], &mut covered)?;
            // An edge chunk's bytes outside the extent are kept by libhdf5 (it never counts an
            // edge chunk as overwritten entirely): a stored one is read first like a partly
            // covered chunk, an unallocated one starts from the fill value (`Start::Fresh`).
            let edge = extent[..n] != grid.chunk()[..n];
            if covers && !edge {
                return Ok(Job { group: gi, start: Start::Fresh });
            }
            if !flushed {
                flush_dataset(l, dset)?;
                flushed = true;
                fsize = crate::hdf5::chunk::file_size(l, dset)?;
            }
            let state = chunk_state(l, dset, &origin[..n]);
            if !covers || matches!(state, ChunkState::Stored { .. }) {
                stats.chunks_read += 1;
            }
            match state {
                // A stored size past the end of the file (a number from the chunk index) is
                // never trusted for an allocation: libhdf5 reads that chunk (and fails with
                // its reason).
                ChunkState::Stored { size, .. } if size <= fsize => {
                    let mut b = Vec::new();
                    // None: no file address after all (only in libhdf5's chunk cache).
                    if let Some(mask) = read_raw_chunk(l, dset, &origin[..n], size, &mut b)? {
                        return Ok(Job { group: gi, start: Start::Raw(b, mask) });
                    }
                }
                // What libhdf5 starts a new chunk from (H5D__chunk_lock).
                ChunkState::Unallocated => return Ok(Job { group: gi, start: Start::Fresh }),
                _ if covers => return Ok(Job { group: gi, start: Start::Fresh }),
                _ => {}
            }
        }
        // Unknown to the chunk index query, or undecodable by vh5: libhdf5 gives the data
        // (or the fill value) in memory order.
        let elems: u64 = extent[..n].iter().product();
        // Zeroed for every chunk: with fill time never libhdf5 leaves an unallocated chunk's
        // region untouched (and would store zeros there itself), never the previous chunk's bytes.
        clipped.clear();
        crate::mem::resize_zeroed(&mut clipped, elems as usize * itemsize, || format!("chunk {:?}", &coord[..n]))?;
        reader.read(&origin[..n], None, &extent[..n], &mut clipped)?;
        let mut b = shared.fresh(&coord[..n])?;
        let mut cdense = [0isize; MAX_RANK];
        dense_strides(&extent[..n], itemsize, &mut cdense);
        let counts: Vec<usize> = extent[..n].iter().map(|&e| e as usize).collect();
        copy_strided_runs(&clipped, 0, &cdense[..n], &mut b, 0, &dense[..n], &counts, itemsize)?;
        Ok(Job { group: gi, start: Start::Mem(b) })
    };
    let store = |gi: usize, bytes: &[u8], stats: &mut WriteStats, written: &mut [u32]| -> Result<()> {
        let (chunk, group) = ctx.group(gi);
        let (mut coord, mut origin) = ([0u64; MAX_RANK], [0u64; MAX_RANK]);
        grid.chunk_coord(chunk, &mut coord[..n]);
        grid.chunk_origin(&coord[..n], &mut origin[..n]);
        write_raw_chunk(l, dset, &origin[..n], 0, bytes)?;
        stats.chunks_written += 1;
        stats.hdf5_writes += 1;
        stats.raw_chunks += 1;
        for p in group {
            written[p.row] += 1;
        }
        Ok(())
    };
    // Store a worker's result; a chunk vh5 could not decode is read again through libhdf5
    // (which either decodes it or fails with its own error stack) and redone here.
    let finish = |gi: usize,
                  res: std::result::Result<Vec<u8>, String>,
                  prepare: &mut dyn FnMut(usize, &mut WriteStats, bool) -> Result<Job>,
                  w: &mut Worker,
                  stats: &mut WriteStats,
                  written: &mut [u32]|
     -> Result<()> {
        let bytes = match res {
            Ok(b) => b,
            Err(why) => {
                let job = prepare(gi, stats, true).map_err(|e| Error::new(e.kind, format!("vh5 could not decode the stored chunk ({why}) and libhdf5 could not read it: {}", e.message)))?;
                match shared.run(w, job)? {
                    Ok(b) => b,
                    Err(m) => bail!(Hdf5, "internal: chunk read through libhdf5 still undecodable: {m}"),
                }
            }
        };
        store(gi, &bytes, stats, written)
    };
    let threads = num_threads().min(ngroups).min(max_workers());
    if threads <= 1 {
        let mut w = Worker::default();
        for gi in 0..ngroups {
            let r = prepare(gi, stats, false)
                .and_then(|job| shared.run(&mut w, job))
                .and_then(|res| finish(gi, res, &mut prepare, &mut w, stats, &mut written_per_row));
            if let Err(e) = r {
                return Err(report(e, &what(gi), &written_per_row, pieces_per_row));
            }
        }
        return Ok(());
    }
    // Worker threads: jobs in, stored bytes out; at most 2 jobs in flight per thread.
    let (job_tx, job_rx) = mpsc::channel::<Job>();
    let job_rx = Mutex::new(job_rx);
    // The lock is held while preparing and storing chunks, never while waiting for a worker's
    // result or joining the workers.
    let run = || std::thread::scope(|sc| -> Result<()> {
        let (res_tx, res_rx) = mpsc::channel::<(usize, Result<std::result::Result<Vec<u8>, String>>)>();
        // Workers the system lets us start (none: the calling thread encodes every chunk).
        let mut live = 0usize;
        for _ in 0..threads {
            let (job_rx, res_tx, shared) = (&job_rx, res_tx.clone(), &shared);
            let started = std::thread::Builder::new().name("vh5-encode".into()).spawn_scoped(sc, move || {
                let mut w = Worker::default();
                loop {
                    let job = match job_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok(job) = job else { return };
                    let gi = job.group;
                    if res_tx.send((gi, shared.run(&mut w, job))).is_err() {
                        return;
                    }
                }
            });
            if started.is_err() {
                break;
            }
            live += 1;
        }
        drop(res_tx);
        let fl = lock();
        let mut main_worker = Worker::default();
        let mut in_flight = 0usize;
        let mut next = 0usize;
        let mut outcome: Result<()> = Ok(());
        while next < ngroups || in_flight > 0 {
            if outcome.is_ok() && next < ngroups && in_flight < 2 * live {
                match prepare(next, stats, false) {
                    Ok(job) => {
                        let _ = job_tx.send(job);
                        in_flight += 1;
                    }
                    Err(e) => outcome = Err(report(e, &what(next), &written_per_row, pieces_per_row)),
                }
                next += 1;
                continue;
            }
            if live == 0 && outcome.is_ok() && next < ngroups {
                // No worker could be started: encode here, with the lock released meanwhile.
                let gi = next;
                match prepare(gi, stats, false) {
                    Ok(job) => {
                        // SAFETY: `Shared::run` decodes, merges and encodes in memory only.
                        let res = unsafe { released(&fl, || shared.run(&mut main_worker, job)) };
                        if let Err(e) = res.and_then(|r| finish(gi, r, &mut prepare, &mut main_worker, stats, &mut written_per_row)) {
                            outcome = Err(report(e, &what(gi), &written_per_row, pieces_per_row));
                        }
                    }
                    Err(e) => outcome = Err(report(e, &what(next), &written_per_row, pieces_per_row)),
                }
                next += 1;
                continue;
            }
            if in_flight == 0 {
                break;
            }
            // SAFETY: waiting on a channel calls no libhdf5 function.
            let Ok((gi, res)) = (unsafe { released(&fl, || res_rx.recv()) }) else { break };
            in_flight -= 1;
            if outcome.is_err() {
                continue;
            }
            if let Err(e) = res.and_then(|r| finish(gi, r, &mut prepare, &mut main_worker, stats, &mut written_per_row)) {
                outcome = Err(report(e, &what(gi), &written_per_row, pieces_per_row));
            }
        }
        drop(job_tx);
        drop(fl);
        outcome
    });
    // SAFETY: inside `run`, libhdf5 is only called while the fresh lock `fl` is held (the
    // `prepare`/`store`/`finish` closures run only then).
    unsafe { released(l, run) }
}
