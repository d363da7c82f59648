//! The chunk read pipeline of [`super::chunked`] (its module docs describe it): the calling
//! thread fetches whole chunks under the libhdf5 lock, or hands out spans of indexed chunks
//! ([`super::chunk_span`]); worker threads and the calling thread decode and scatter them
//! outside the lock; queues, recycled buffers and the memory bound of big chunks ([`Crew`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use super::chunk_job::{piece_row, Fetcher, Job, Shared};
use super::chunk_span::{process_span, SpanScratch, PREFETCH_AHEAD};
use super::options::max_workers;
use super::pipeline::{spawn_workers, ChunkOutcome};
use super::rows::read_row;
use crate::codec::Decoder;
use crate::error::{Error, Result};
use crate::hdf5::dataset::HyperslabReader;
use crate::hdf5::lock::{bump, lock, released, H5Lock};

/// Fetched batches queued per worker thread before the calling thread decodes one itself.
pub(super) const QUEUE_PER_WORKER: usize = 4;
/// Small chunks travel to the workers in batches of about this many decoded bytes (at most
/// [`BATCH_MAX_CHUNKS`]): handing one 2 KB chunk to another thread (a channel send and a
/// wake-up) cost about as much as inflating it (perf: ~20% of a whole read of 15,625 16x16
/// float64 gzip chunks in the scheduler and the channel's mutex).
pub(super) const BATCH_BYTES: usize = 128 << 10;
pub(super) const BATCH_MAX_CHUNKS: usize = 256;
/// What a worker is handed: fetched chunks, or a span of indexed chunk groups it reads itself
/// (`chunk_span`).
enum Work {
    Jobs(Vec<Job>),
    Span(std::ops::Range<usize>),
}
/// Worker threads, queued jobs and recycled buffers of one call.
#[derive(Debug, Clone, Copy)]
pub(super) struct Crew {
    nworkers: usize,
    /// Batches queued.
    queue: usize,
    pool_max: usize,
    /// Chunks per batch (1 for big chunks).
    batch: usize,
}

impl Crew {
    /// The crew for `nwhole` whole chunks and `threads` threads; `worth`: decoding dominates
    /// (else no workers); `big`: chunks of at least [`BIG_CHUNK_BYTES`] (memory bound).
    pub(super) fn size(threads: usize, nwhole: usize, worth: bool, big: bool, batch: usize) -> Crew {
        // The calling thread fetches and also decodes (see the module docs): `threads - 1` workers.
        let mut nworkers = if threads > 1 && nwhole >= 2 && worth { (threads - 1).min(nwhole - 1).min(max_workers()) } else { 0 };
        // Queued jobs and recycled buffers (chunk-sized once used).
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
        Crew { nworkers, queue, pool_max, batch: if big { 1 } else { batch } }
    }
}

/// Fetch the whole chunks of `sh.plan` (`whole[g]`) in grid order on the calling thread,
/// decode and scatter them on `nworkers` workers and the calling thread (see the module
/// docs); pieces of the other chunks go through libhdf5 (`H5Dread`). Returns (chunks
/// fetched raw, `H5Dread` calls).
#[allow(clippy::too_many_arguments)]
pub(super) fn run_pipeline(l: &H5Lock, reader: &mut HyperslabReader, shared: &Shared, fetcher: &Fetcher, whole: &[bool], crew: Crew, filtered: bool) -> Result<(usize, usize)> {
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
    // Reads never retry through libhdf5: a chunk vh5 cannot decode is corrupt (module docs).
    let handle = |job: &mut Job, dec: &mut Decoder| {
        match ChunkOutcome::from(shared.process(job, dec)) {
            ChunkOutcome::Done(()) => {}
            ChunkOutcome::Fail(e) => fail(job.group, e),
            ChunkOutcome::RetryThroughLibhdf5(why) => fail(job.group, err!(Hdf5, "internal: read retry requested ({why})")),
        }
        recycle(std::mem::take(&mut job.buf));
    };
    let handle_all = |work: Work, dec: &mut Decoder, s: &mut SpanScratch| match (work, shared.index) {
        (Work::Jobs(mut jobs), _) => {
            // Destinations prefetched a few chunks ahead (`Shared::prefetch_dst`).
            jobs.iter().take(PREFETCH_AHEAD).for_each(|j| shared.prefetch_dst(j.group));
            for k in 0..jobs.len() {
                if let Some(ahead) = jobs.get(k + PREFETCH_AHEAD) {
                    shared.prefetch_dst(ahead.group);
                }
                handle(&mut jobs[k], dec);
            }
        }
        (Work::Span(groups), Some(ix)) => {
            if let Err((g, e)) = process_span(shared, fetcher, ix, groups, dec, s) {
                fail(g, e);
            }
        }
        (Work::Span(groups), None) => fail(groups.start, err!(Hdf5, "internal: a span of chunks without a chunk index")),
    };
    // Spans of indexed chunks (see `chunk_span`): small chunks only (big ones keep the
    // one-chunk jobs and their memory bound).
    let spans = shared.index.is_some() && batch > 1;
    let mut scratch = Vec::new();
    let (mut raw_chunks, mut hdf5_reads) = (0usize, 0usize);
    // The libhdf5 lock is held only while fetching: decoding a chunk on the calling thread,
    // draining the queue and joining the workers all run with it released, so no thread ever
    // waits on our workers while holding it (and other threads' vh5/libhdf5 calls interleave
    // with our decoding).
    let run = || {
        std::thread::scope(|sc| -> Result<()> {
            // Big chunks: queue 0, a rendezvous (a job goes only to a worker waiting for one).
            let (tx, rx) = mpsc::sync_channel::<Work>(queue);
            let rx = Arc::new(Mutex::new(rx));
            let (rx_ref, handle_all) = (Arc::clone(&rx), &handle_all);
            let worker = move || {
                let (mut dec, mut s) = (Decoder::default(), SpanScratch::default());
                loop {
                    let work = rx_ref.lock().unwrap_or_else(|p| p.into_inner()).recv();
                    let Ok(work) = work else { return };
                    handle_all(work, &mut dec, &mut s);
                }
            };
            // Workers the system lets us start (a refused thread is not an error: the calling
            // thread processes whatever the workers do not).
            let live = spawn_workers(sc, nworkers, "vh5-decode", worker);
            let (mut dec, mut s) = (Decoder::default(), SpanScratch::default());
            // Hand a batch to a worker; when there are none, or they are all busy and the
            // queue is full, process it here (decoding with the lock released). Returns
            // false when the workers are gone.
            let dispatch = |work: Work, l: &H5Lock, dec: &mut Decoder, s: &mut SpanScratch| -> bool {
                let work = if live == 0 {
                    work
                } else {
                    match tx.try_send(work) {
                        Ok(()) => return true,
                        Err(mpsc::TrySendError::Full(work)) => work,
                        Err(mpsc::TrySendError::Disconnected(_)) => return false,
                    }
                };
                if filtered || matches!(work, Work::Span(_)) {
                    // SAFETY: `handle` decodes and scatters in memory (a span reads the file
                    // with `pread`); a conversion (`H5Tconvert`) takes the lock itself.
                    unsafe { released(l, || handle_all(work, dec, s)) };
                } else {
                    // An unfiltered chunk is one copy: cheaper than giving the lock away.
                    handle_all(work, dec, s);
                }
                true
            };
            let result = (|| -> Result<()> {
                let fl = lock();
                let l = &fl;
                let mut jobs: Vec<Job> = Vec::with_capacity(batch);
                // The span of indexed chunk groups being gathered (`g0..g1`).
                let mut span = 0..0;
                for (g, &whole_g) in whole.iter().enumerate().take(plan.groups.len()) {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    if whole_g && spans && shared.index.is_some_and(|ix| ix.get(plan.groups[g].0).is_some()) {
                        if span.end != g {
                            if !span.is_empty() && !dispatch(Work::Span(std::mem::replace(&mut span, 0..0)), l, &mut dec, &mut s) {
                                return Ok(());
                            }
                            span = g..g;
                        }
                        span.end = g + 1;
                        raw_chunks += 1;
                        if span.len() >= batch && !dispatch(Work::Span(std::mem::replace(&mut span, 0..0)), l, &mut dec, &mut s) {
                            return Ok(());
                        }
                        continue;
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
                    if jobs.len() >= batch && !dispatch(Work::Jobs(std::mem::replace(&mut jobs, Vec::with_capacity(batch))), l, &mut dec, &mut s) {
                        return Ok(());
                    }
                }
                if !span.is_empty() && !dispatch(Work::Span(span), l, &mut dec, &mut s) {
                    return Ok(());
                }
                if !jobs.is_empty() {
                    dispatch(Work::Jobs(jobs), l, &mut dec, &mut s);
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
                    handle_all(jobs, &mut dec, &mut s);
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
