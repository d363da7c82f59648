//! The process-wide reentrant lock that serialises every libhdf5 call vh5 makes.
//!
//! libhdf5 1.10 built thread-safe has one global lock of its own, but a *sequence* of calls
//! (select a hyperslab on a dataspace, then read with it; silence error printing, call, restore)
//! is only consistent if no other thread interleaves. vh5 therefore takes one lock for a whole
//! operation. It is the `hdf5_sys::LOCK` reentrant mutex of the `hdf5-metno-sys` crate, so Rust
//! code in the same process using the `hdf5-metno` crate shares it with us. The lock is
//! reentrant: a function holding it may call another that takes it again on the same thread.
//!
//! Taking the lock also makes sure `H5open()` ran once, which initialises the `H5T_NATIVE_*`
//! and `H5P_CLS_*` globals that `hdf5-sys` reads.

use std::sync::Once;

use parking_lot::ReentrantMutexGuard;

/// Proof that the calling thread holds the libhdf5 lock. Every function of [`crate::hdf5`]
/// that calls libhdf5 either takes one by reference or takes the lock itself.
pub struct H5Lock {
    _guard: ReentrantMutexGuard<'static, ()>,
}

static INIT: Once = Once::new();

/// Take the process-wide libhdf5 lock (blocking). Reentrant on the same thread.
pub fn lock() -> H5Lock {
    let guard = hdf5_sys::LOCK.lock();
    INIT.call_once(|| {
        // SAFETY: H5open only initialises the library; we hold the lock.
        unsafe {
            hdf5_sys::h5::H5open();
        }
    });
    H5Lock { _guard: guard }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_is_reentrant_and_exclusive() {
        let a = lock();
        let b = lock(); // same thread: must not deadlock
        drop(b);
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let _l = lock();
            tx.send(()).unwrap();
        });
        // The other thread cannot take the lock while we hold it.
        assert!(rx.recv_timeout(std::time::Duration::from_millis(100)).is_err());
        drop(a);
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        t.join().unwrap();
    }
}
