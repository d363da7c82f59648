//! Process-wide knobs of the read path: the number of decoding threads and (for tests and
//! benchmarks) the read strategy.
//!
//! - Threads: `vh5_set_num_threads(n)` / [`set_num_threads`]; when never set (or set to 0),
//!   env `VH5_THREADS` (read once), else `std::thread::available_parallelism()`. 1 = no extra
//!   threads: everything runs on the calling thread.
//! - Strategy: [`set_planner`] (`vh5_set_planner`); when never set (or set back to the
//!   default), env `VH5_PLANNER` = `auto` (default), `chunks` (always read whole chunks once
//!   and scatter), `rows` (the baseline: one `H5Dread` per row). Results are identical in
//!   every mode; only speed differs. Exception: datasets whose filter pipeline vh5 decodes
//!   itself (deflate, shuffle, fletcher32 only) are always read chunk by chunk through vh5's
//!   checked decoder (a corrupt chunk is refused the same way in every mode).
//!
//! - Whole-chunk memory limit: env `VH5_MAX_CHUNK_BYTES` (bytes, read once; default
//!   [`DEFAULT_MAX_CHUNK_BYTES`] = 1 GiB). The planner never reads a chunk whose decoded size
//!   exceeds it into a buffer of its own: such chunks are read piece by piece through libhdf5
//!   (`H5Dread` of each row piece; libhdf5 then manages the chunk's memory itself), exactly
//!   as with `VH5_PLANNER=rows`. Results are identical; only speed and memory differ.
//!
//! - Decoded-chunk cache: env `VH5_CHUNK_CACHE_BYTES` (bytes per open dataset, read once;
//!   default [`crate::hdf5::chunk_cache::DEFAULT_CACHE_BYTES`] = 16 MiB; 0 = no cache), see
//!   [`chunk_cache_bytes`] and `hdf5::chunk_cache`.
//!
//! - Chunk index (stored chunk bytes read with `pread` outside the libhdf5 lock, files open
//!   read-only): env `VH5_CHUNK_INDEX` = `0` / `off`, `1` / `on`, `always`, `require` (read
//!   once; unset: on, for calls reading at least 16 chunks whole: from `H5Dchunk_iter` with
//!   libhdf5 >= 1.14, from vh5's own B-tree walk with 1.10), see `hdf5::chunk_index`.
//!
//! Environment values are read once per process (the first call that needs them). A value
//! that is set but invalid (`VH5_THREADS=abc`, `VH5_THREADS=0`, more than [`MAX_THREADS`],
//! `VH5_PLANNER=xyz`, `VH5_MAX_CHUNK_BYTES=-1` or `0`, `VH5_CHUNK_INDEX=yes`) is never silently ignored: every read
//! and write then fails with `InvalidArgument` naming the variable and its value
//! ([`check_env`]). An empty value counts as unset.
//!
//! All three can be overridden for the current thread only ([`with_overrides`],
//! [`with_max_chunk_bytes`]), which the test suite uses to run the same cases in every mode
//! concurrently.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use crate::hdf5::chunk_index::IndexMode;

pub use crate::plan::PlannerMode;

static THREADS: AtomicU32 = AtomicU32::new(0);

/// The strategy set with [`set_planner`]: 0 = none (env `VH5_PLANNER`, else `auto`), else
/// [`PlannerMode::code`].
static PLANNER: AtomicU32 = AtomicU32::new(0);

/// Most threads a call may use (`vh5_set_num_threads`, `VH5_THREADS`): far above any core
/// count, low enough that a typo cannot ask for millions of thread stacks. A call starts at
/// most one worker per chunk it reads whole, and when the system refuses to start a thread
/// it goes on with the workers it has (at worst none: everything on the calling thread).
pub const MAX_THREADS: u32 = 1024;

/// The environment knobs as read once: `Ok(None)` = unset or empty; `Err` = the message
/// naming the variable and the invalid value.
struct Env {
    threads: std::result::Result<Option<usize>, String>,
    planner: std::result::Result<Option<PlannerMode>, String>,
    max_chunk: std::result::Result<Option<u64>, String>,
    cache: std::result::Result<Option<u64>, String>,
    chunk_index: std::result::Result<(), String>,
}

fn env_var(name: &str) -> Option<String> {
    std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()).filter(|v| !v.trim().is_empty())
}

fn env() -> &'static Env {
    static E: OnceLock<Env> = OnceLock::new();
    E.get_or_init(|| Env {
        threads: env_var("VH5_THREADS")
            .map(|v| match v.trim().parse::<u64>() {
                Ok(n) if (1..=MAX_THREADS as u64).contains(&n) => Ok(n as usize),
                _ => Err(format!("environment variable VH5_THREADS={v:?} is not an integer in [1, {MAX_THREADS}] (unset it for one thread per core)")),
            })
            .transpose(),
        planner: env_var("VH5_PLANNER")
            .map(|v| PlannerMode::parse(&v).ok_or_else(|| format!("environment variable VH5_PLANNER={v:?} is not one of auto, chunks, rows")))
            .transpose(),
        max_chunk: env_var("VH5_MAX_CHUNK_BYTES")
            .map(|v| match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!("environment variable VH5_MAX_CHUNK_BYTES={v:?} is not a positive number of bytes (default {DEFAULT_MAX_CHUNK_BYTES})")),
            })
            .transpose(),
        cache: env_var("VH5_CHUNK_CACHE_BYTES")
            .map(|v| {
                v.trim().parse::<u64>().map_err(|_| {
                    format!(
                        "environment variable VH5_CHUNK_CACHE_BYTES={v:?} is not a number of bytes (0 = no decoded-chunk cache; default {})",
                        crate::hdf5::chunk_cache::DEFAULT_CACHE_BYTES
                    )
                })
            })
            .transpose(),
        chunk_index: match env_var("VH5_CHUNK_INDEX") {
            Some(v) if IndexMode::parse(&v).is_none() => Err(format!("environment variable VH5_CHUNK_INDEX={v:?} is not one of {} (unset it for the default)", IndexMode::VALUES)),
            _ => Ok(()),
        },
    })
}

/// Fail with `InvalidArgument` when a `VH5_*` environment variable is set to an invalid
/// value (see the module docs). Reads and writes call this first.
pub fn check_env() -> crate::error::Result<()> {
    let e = env();
    let errs = [e.threads.as_ref().err(), e.planner.as_ref().err(), e.max_chunk.as_ref().err(), e.cache.as_ref().err(), e.chunk_index.as_ref().err()];
    match errs.into_iter().flatten().next() {
        Some(m) => Err(crate::error::Error::new(crate::error::ErrorKind::InvalidArgument, m.clone())),
        None => Ok(()),
    }
}

/// Default of `VH5_MAX_CHUNK_BYTES`: 1 GiB (HDF5 allows chunks of up to 4 GiB - 1).
pub const DEFAULT_MAX_CHUNK_BYTES: u64 = 1 << 30;

thread_local! {
    static MAX_CHUNK_OVERRIDE: Cell<Option<u64>> = const { Cell::new(None) };
    static MODE_OVERRIDE: Cell<Option<PlannerMode>> = const { Cell::new(None) };
    static THREADS_OVERRIDE: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Set the number of threads reads and writes may use (0 = back to the default).
/// Process-wide. `InvalidArgument` above [`MAX_THREADS`] (nothing changed then).
pub fn set_num_threads(n: u32) -> crate::error::Result<()> {
    if n > MAX_THREADS {
        return Err(crate::error::Error::new(crate::error::ErrorKind::InvalidArgument, format!("n = {n} threads: at most {MAX_THREADS} (0 = the default)")));
    }
    THREADS.store(n, Ordering::Relaxed);
    Ok(())
}

/// Set the read strategy of every later call, process-wide: `None` = back to the default
/// (env `VH5_PLANNER`, else `auto`). Results are identical in every mode; only speed and
/// memory differ.
pub fn set_planner(mode: Option<PlannerMode>) {
    PLANNER.store(mode.map_or(0, PlannerMode::code), Ordering::Relaxed);
}

fn default_threads() -> usize {
    static D: OnceLock<usize> = OnceLock::new();
    *D.get_or_init(|| match env().threads {
        Ok(Some(n)) => n,
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS as usize),
    })
}

/// Most worker threads one call starts: twice the cores available, at least 4. More than
/// that only adds thread stacks and zlib states competing for the same cores (and under a
/// memory limit can exhaust it), whatever [`num_threads`] says.
pub fn max_workers() -> usize {
    static W: OnceLock<usize> = OnceLock::new();
    *W.get_or_init(|| (2 * std::thread::available_parallelism().map_or(1, |n| n.get())).max(4))
}

/// Threads a read may use (>= 1): thread override, else [`set_num_threads`], else
/// `VH5_THREADS` (when valid), else the cores available (at most [`MAX_THREADS`]).
pub fn num_threads() -> usize {
    if let Some(n) = THREADS_OVERRIDE.with(|c| c.get()) {
        return n.max(1);
    }
    match THREADS.load(Ordering::Relaxed) {
        0 => default_threads(),
        n => n as usize,
    }
}

/// The read strategy: thread override, else [`set_planner`], else env `VH5_PLANNER` (read
/// once), else `auto` (also when the value is invalid, which [`check_env`] reports).
pub fn planner_mode() -> PlannerMode {
    if let Some(m) = MODE_OVERRIDE.with(|c| c.get()) {
        return m;
    }
    if let Some(m) = PlannerMode::from_code(PLANNER.load(Ordering::Relaxed)) {
        return m;
    }
    static M: OnceLock<PlannerMode> = OnceLock::new();
    *M.get_or_init(|| env().planner.clone().ok().flatten().unwrap_or(PlannerMode::Auto))
}

/// Largest decoded chunk, in bytes, the planner reads whole into a buffer of its own: thread
/// override ([`with_max_chunk_bytes`]), else env `VH5_MAX_CHUNK_BYTES` (read once; an
/// invalid value, which [`check_env`] reports, means the default), else
/// [`DEFAULT_MAX_CHUNK_BYTES`].
pub fn max_chunk_bytes() -> u64 {
    if let Some(n) = MAX_CHUNK_OVERRIDE.with(|c| c.get()) {
        return n;
    }
    static M: OnceLock<u64> = OnceLock::new();
    *M.get_or_init(|| env().max_chunk.clone().ok().flatten().unwrap_or(DEFAULT_MAX_CHUNK_BYTES))
}

/// Bound of each open dataset's decoded-chunk cache, bytes: env `VH5_CHUNK_CACHE_BYTES` (read
/// once; an invalid value, which [`check_env`] reports, means the default), else
/// [`crate::hdf5::chunk_cache::DEFAULT_CACHE_BYTES`]. 0 = no cache. Taken when a dataset's cache
/// is created (its first read).
pub fn chunk_cache_bytes() -> u64 {
    static M: OnceLock<u64> = OnceLock::new();
    *M.get_or_init(|| env().cache.clone().ok().flatten().unwrap_or(crate::hdf5::chunk_cache::DEFAULT_CACHE_BYTES))
}

/// Run `f` with the whole-chunk memory limit set to `bytes` on the current thread only.
pub fn with_max_chunk_bytes<R>(bytes: u64, f: impl FnOnce() -> R) -> R {
    let old = MAX_CHUNK_OVERRIDE.with(|c| c.replace(Some(bytes)));
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            MAX_CHUNK_OVERRIDE.with(|c| c.set(self.0));
        }
    }
    let _r = Restore(old);
    f()
}

/// Run `f` with the strategy and/or thread count overridden on the current thread only.
pub fn with_overrides<R>(mode: Option<PlannerMode>, threads: Option<usize>, f: impl FnOnce() -> R) -> R {
    let old = (MODE_OVERRIDE.with(|c| c.replace(mode)), THREADS_OVERRIDE.with(|c| c.replace(threads)));
    struct Restore(Option<PlannerMode>, Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            MODE_OVERRIDE.with(|c| c.set(self.0));
            THREADS_OVERRIDE.with(|c| c.set(self.1));
        }
    }
    let _r = Restore(old.0, old.1);
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_are_scoped() {
        assert_eq!(PlannerMode::parse("Chunks"), Some(PlannerMode::Chunks));
        assert_eq!(PlannerMode::parse("x"), None);
        with_overrides(Some(PlannerMode::Rows), Some(3), || {
            assert_eq!(planner_mode(), PlannerMode::Rows);
            assert_eq!(num_threads(), 3);
        });
        assert!(num_threads() >= 1);
        for m in [PlannerMode::Auto, PlannerMode::Chunks, PlannerMode::Rows] {
            assert_eq!(PlannerMode::from_code(m.code()), Some(m));
            assert_eq!(PlannerMode::parse(m.name()), Some(m));
        }
        assert_eq!(PlannerMode::from_code(0), None);
        assert_eq!(PlannerMode::from_code(4), None);
        with_max_chunk_bytes(1234, || assert_eq!(max_chunk_bytes(), 1234));
        assert_ne!(max_chunk_bytes(), 1234);
    }
}
