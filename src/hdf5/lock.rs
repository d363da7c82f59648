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

/// Run `f` with the libhdf5 lock released, then take it back before returning (also when
/// `f` unwinds). A vh5 operation calls this before it waits on, or works alongside, its own
/// worker threads, so that other threads' libhdf5 calls are never blocked by a thread that is
/// itself waiting (issue #8: "the libhdf5 lock is never held while waiting on our worker
/// threads"). Inside `f`, code that needs libhdf5 takes the lock afresh with [`lock`].
///
/// Releases ONE level of the reentrant lock: when the calling thread holds it more than once
/// (a nested operation, or a `hdf5-metno` caller that already holds `hdf5_sys::LOCK`), it
/// stays held and `f` simply runs under it — correct, only less concurrent.
///
/// While the lock is released other threads may run any libhdf5 call, including closing the
/// ids this operation uses (a caller error): every later libhdf5 call of the operation is
/// checked and then fails with a status, never undefined behaviour, because libhdf5 1.10 does
/// not reuse id numbers.
///
/// # Safety
/// `f` must not call libhdf5 on the strength of `held` or of any other [`H5Lock`] taken
/// before this call (such calls would run without the lock); it must take a fresh one.
pub unsafe fn released<R>(held: &H5Lock, f: impl FnOnce() -> R) -> R {
    struct Relock;
    impl Drop for Relock {
        fn drop(&mut self) {
            // Take one level back; its guard is forgotten because `held`'s guard (still
            // alive) releases that level when dropped.
            std::mem::forget(hdf5_sys::LOCK.lock());
        }
    }
    let _ = held;
    // SAFETY: `held` proves this thread holds the lock at least once; we give back exactly one
    // level here and take exactly one back in `Relock::drop`, so the guard inside `held`
    // releases a level this thread owns, as parking_lot's `ReentrantMutexGuard::unlocked` does.
    unsafe { hdf5_sys::LOCK.force_unlock() };
    let _relock = Relock;
    f()
}

/// Hand the libhdf5 lock to a thread waiting for it, if any (a fair unlock), and take it
/// back: called between the steps of a long operation (the planner's chunk fetches) so that
/// other threads' libhdf5 calls interleave with it instead of waiting for the whole call.
/// Nearly free when nobody waits. Like [`released`], gives back one level only.
///
/// # Safety
/// As for [`released`]: libhdf5 state the caller set up before this call (selections, error
/// handlers of other threads) may have been used by other threads when it returns; the
/// caller's own ids stay valid unless another thread closes them (a caller error, reported).
pub unsafe fn bump(held: &H5Lock) {
    let _ = held;
    // SAFETY: `held` proves this thread holds the lock; one level is given back fairly and
    // taken back at once (its guard forgotten: `held`'s guard releases that level later).
    unsafe { hdf5_sys::LOCK.force_unlock_fair() };
    std::mem::forget(hdf5_sys::LOCK.lock());
}

/// The libhdf5 lock held by the thread that is about to `fork()` (the fork handlers of
/// `crate::ffi::fork`): no libhdf5 call may be made on the strength of it (it is no
/// [`H5Lock`]); dropping it releases the lock, in the parent and in the child alike (the
/// child's only thread is the one that took it).
pub struct ForkHold {
    _guard: ReentrantMutexGuard<'static, ()>,
}

/// Take the libhdf5 lock for a fork, waiting at most `timeout`: `None` when another thread
/// kept it that long (the caller backs off and retries, so that a thread holding the lock
/// while it waits for something the forking thread blocks cannot deadlock it).
pub fn hold_for_fork(timeout: std::time::Duration) -> Option<ForkHold> {
    hdf5_sys::LOCK.try_lock_for(timeout).map(|g| ForkHold { _guard: g })
}

/// Whether the calling thread holds the libhdf5 lock (tests and debug assertions).
pub fn held_by_current_thread() -> bool {
    hdf5_sys::LOCK.is_owned_by_current_thread()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::mpsc::{channel, Receiver};
    use std::thread::JoinHandle;
    use std::time::Duration;

    /// A thread that takes the lock once and reports when it got it.
    fn contender() -> (JoinHandle<()>, Receiver<()>) {
        let (tx, rx) = channel();
        let t = std::thread::spawn(move || {
            let _l = lock();
            tx.send(()).unwrap();
        });
        (t, rx)
    }

    /// While `held` is dropped only at the end: another thread cannot take the lock before.
    fn assert_exclusive_until_dropped(held: H5Lock) {
        let (t, rx) = contender();
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err(), "another thread took the lock we hold");
        drop(held);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        t.join().unwrap();
    }

    #[test]
    fn lock_is_reentrant_and_exclusive() {
        let a = lock();
        let b = lock(); // same thread: must not deadlock
        drop(b);
        assert_exclusive_until_dropped(a);
    }

    #[test]
    fn released_lets_other_threads_in_and_takes_the_lock_back() {
        let a = lock();
        // SAFETY: the closure calls no libhdf5 function.
        let v = unsafe {
            released(&a, || {
                assert!(!held_by_current_thread());
                // The other thread gets the lock while we are inside `released`.
                let (t, rx) = contender();
                rx.recv_timeout(Duration::from_secs(10)).unwrap();
                t.join().unwrap();
                7
            })
        };
        assert_eq!(v, 7);
        assert!(held_by_current_thread());
        assert_exclusive_until_dropped(a);
        assert!(!held_by_current_thread());
    }

    #[test]
    fn released_relocks_on_unwind_and_keeps_outer_levels() {
        let a = lock();
        let b = lock(); // nested: `released` gives back one level only
                        // SAFETY: the closures call no libhdf5 function.
        unsafe { released(&b, || assert!(held_by_current_thread())) };
        drop(b);
        // SAFETY: the closure calls no libhdf5 function.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { released(&a, || panic!("boom")) }));
        assert!(r.is_err());
        assert!(held_by_current_thread(), "lock taken back during unwinding");
        drop(a);
        assert!(!held_by_current_thread());
    }
}
