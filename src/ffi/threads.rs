//! C ABI: the number of threads vh5 uses to decode and scatter chunks.

use super::{guard, vh5_status};
use crate::slices::options;

/// Set how many threads `vh5_read_many_slices` may use to decompress and scatter chunks
/// (process-wide; takes effect on the next call). `n` = 1: everything runs on the calling
/// thread, no extra threads; `n` > 1: up to `n` worker threads per call, started and joined
/// inside the call (vh5 keeps no thread between calls); `n` = 0: back to the default, which
/// is env `VH5_THREADS` (read once) when set to a positive integer, else the number of cores
/// available (`std::thread::available_parallelism`).
///
/// Worker threads never call libhdf5: the calling thread reads the stored chunk bytes under
/// vh5's libhdf5 lock and the workers inflate / unshuffle / checksum / byte-swap and copy them
/// into the destination, outside the lock. The same holds for `vh5_write_many_slices` of
/// filtered datasets (workers merge and compress, the calling thread stores). The calling
/// thread holds the lock only while it fetches or stores chunks: never while it decodes a
/// chunk itself or waits for the workers, and between two chunk fetches it hands the lock to
/// any thread waiting for it, so vh5 calls from other threads (and other libhdf5 users of the
/// same lock) interleave with a long call instead of waiting for its end.
///
/// Returns `VH5_OK` (always). Thread-safe.
#[no_mangle]
pub extern "C" fn vh5_set_num_threads(n: u32) -> vh5_status {
    guard(|| {
        options::set_num_threads(n);
        Ok(())
    })
}

/// The number of threads `vh5_read_many_slices` may use now (>= 1): the value set with
/// `vh5_set_num_threads`, else `VH5_THREADS`, else the cores available. Thread-safe.
#[no_mangle]
pub extern "C" fn vh5_get_num_threads() -> u32 {
    options::num_threads().min(u32::MAX as usize) as u32
}
