//! C ABI: the number of threads vh5 uses to decode and scatter chunks.

use super::{guard, vh5_status};
use crate::transfer::options;

/// Set how many threads `vh5_read_many_slices` may use to decompress and scatter chunks
/// (process-wide; takes effect on the next call). `n` = 1: everything runs on the calling
/// thread, no extra threads; `n` > 1: up to `n` worker threads per call, started and joined
/// inside the call (vh5 keeps no thread between calls; a call starts at most one worker per
/// chunk it reads whole, and if the system refuses to start a thread it goes on with the
/// workers it has); `n` = 0: back to the default, which is env `VH5_THREADS` (read once; an
/// integer in [1, VH5_MAX_THREADS]) when set, else the number of cores available
/// (`std::thread::available_parallelism`). An invalid `VH5_THREADS` (or `VH5_PLANNER`,
/// `VH5_MAX_CHUNK_BYTES`) value makes every read and write fail with
/// `VH5_ERR_INVALID_ARGUMENT` naming the variable, never silently ignored.
///
/// Worker threads never call libhdf5, and a call holds vh5's libhdf5 lock only while it
/// fetches or stores chunks, handing it to waiting threads between chunks: vh5 calls from
/// other threads (and other libhdf5 users of the same lock) interleave with a long call
/// instead of waiting for its end. The division of work: docs/ARCHITECTURE.md.
///
/// Returns `VH5_OK`; `VH5_ERR_INVALID_ARGUMENT` when `n` > VH5_MAX_THREADS (the setting is
/// then unchanged). Thread-safe.
#[no_mangle]
pub extern "C" fn vh5_set_num_threads(n: u32) -> vh5_status {
    guard(|| options::set_num_threads(n))
}

/// Largest value `vh5_set_num_threads` and env `VH5_THREADS` accept.
pub const VH5_MAX_THREADS: u32 = 1024;
const _: () = assert!(VH5_MAX_THREADS == options::MAX_THREADS);

/// The number of threads `vh5_read_many_slices` may use now (>= 1): the value set with
/// `vh5_set_num_threads`, else `VH5_THREADS`, else the cores available. Thread-safe.
#[no_mangle]
pub extern "C" fn vh5_get_num_threads() -> u32 {
    // Counted in flight: the first call reads env `VH5_THREADS` into a `OnceLock`, which a
    // fork must not copy half-filled.
    let _in_flight = super::fork::enter();
    options::num_threads().min(u32::MAX as usize) as u32
}
