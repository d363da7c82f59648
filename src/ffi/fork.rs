//! `fork()` safety: a process that forks while other threads are inside vh5 calls gets a
//! child in which vh5 works.
//!
//! `fork()` copies only the calling thread. Without care, a child inherits whatever another
//! thread held at that instant — vh5's libhdf5 lock (`hdf5_sys::LOCK`), the mutexes of the
//! dataset table, the decoded-chunk caches and chunk index slots, a `OnceLock` being filled,
//! libhdf5's own state in the middle of a call — and its first vh5 call waits forever.
//! Holding only the libhdf5 lock across the fork is not enough: a call's worker threads
//! decode, scatter and take vh5's mutexes with that lock released.
//!
//! So every export counts itself in flight for its whole duration ([`enter`], taken by
//! [`super::guard`]), and `pthread_atfork` handlers (registered once, when the library is
//! loaded and again lazily on the first call) make a fork wait for a quiet moment:
//!
//! - **prepare** (forking thread): announces the fork (new calls on other threads wait at
//!   their start, before they touch anything), waits until no call is in flight — every
//!   call's workers are joined inside the call, so none exists then — and takes the libhdf5
//!   lock too (a `hdf5-metno` user of the same lock may hold it outside vh5). A fork thus
//!   waits for the calls in flight to finish; a long read delays it.
//! - **parent**: releases both and lets the waiting calls go on.
//! - **child**: releases both and forgets the calls the parent's other threads were about to
//!   start. Nothing else needs resetting: no vh5 mutex is held outside a call, and vh5 keeps
//!   no thread between calls (a call in the child starts its own workers).
//!
//! Rules that keep this free of deadlocks:
//! - a call made while the same thread is already in one (a nested export) is not counted
//!   again: the outermost call counts;
//! - a thread that holds the libhdf5 lock when it makes a call (a `hdf5-metno` user that
//!   wraps vh5 calls in its own critical section) is never held up by a pending fork: the
//!   forking thread may be waiting for a call that waits for that lock;
//! - the forking thread takes the libhdf5 lock only with a timeout, and on a timeout lets
//!   the waiting calls go, pauses and starts over (the holder may be waiting for one of them);
//! - a fork from a thread that is itself inside a vh5 call or holds the libhdf5 lock (it
//!   could wait only for itself) does not wait: such a child gets no guarantee.
//!
//! Cost per call: one atomic add and subtract on a shared counter and two reads of a flag.
//!
//! h5py does the same for its own lock (`phil`: acquired in an `os.register_at_fork`
//! "before" hook, released after the fork in parent and child); libhdf5 itself does nothing
//! about fork. In the h5py-bound Python build a vh5 call that uses libhdf5 holds `phil`, so
//! h5py's hook (run before `fork()` and thus before these handlers) already waits for it;
//! these handlers then wait for the calls that do not take `phil` (payload decoders). Lock
//! order is `phil`, then the in-flight count, then vh5's libhdf5 lock, everywhere.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::hdf5::lock;

/// Outermost calls in flight (plus, briefly, calls that are backing out for a fork).
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// A fork is pending: calls starting now wait (mirror of `State::forking`, read lock-free).
static FORKING: AtomicBool = AtomicBool::new(false);
/// Whether the handlers were registered.
static REGISTERED: AtomicBool = AtomicBool::new(false);

/// Guarded by `STATE`; the forking thread keeps `STATE` locked across the fork itself, so no
/// other thread can hold it at that instant (the child then unlocks a mutex it owns).
struct State {
    forking: bool,
}

static STATE: Mutex<State> = Mutex::new(State { forking: false });
/// Notified when `forking` or `IN_FLIGHT` may have changed.
static CHANGED: Condvar = Condvar::new();

/// How long the forking thread waits for the libhdf5 lock before it backs off and retries.
const LOCK_WAIT: Duration = Duration::from_millis(10);

thread_local! {
    /// vh5 calls the current thread is inside (nested exports count once).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// What the forking thread holds from `prepare` until `parent` / `child`.
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

struct Held {
    state: MutexGuard<'static, State>,
    _h5: lock::ForkHold,
}

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(PoisonError::into_inner)
}

fn wait(g: MutexGuard<'static, State>) -> MutexGuard<'static, State> {
    CHANGED.wait(g).unwrap_or_else(PoisonError::into_inner)
}

/// A vh5 call in flight on this thread, from [`enter`] until dropped.
pub(crate) struct InFlight(());

/// Count the calling thread's export as in flight until the returned value is dropped
/// (waiting first while a fork is pending). Every export that touches shared state calls it.
#[inline]
pub(crate) fn enter() -> InFlight {
    register();
    // One thread-local access per call edge (each is a `__tls_get_addr` call in a shared library).
    let depth = DEPTH.with(|d| d.replace(d.get() + 1));
    if depth == 0 {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        // SeqCst on both sides (here: add, then read the flag; `prepare`: set the flag, then
        // read the count): either this call sees the fork, or the fork sees this call.
        if FORKING.load(Ordering::SeqCst) {
            wait_out_fork();
        }
    }
    InFlight(())
}

impl Drop for InFlight {
    #[inline]
    fn drop(&mut self) {
        let depth = DEPTH.with(|d| {
            d.set(d.get() - 1);
            d.get()
        });
        if depth == 0 && IN_FLIGHT.fetch_sub(1, Ordering::SeqCst) == 1 && FORKING.load(Ordering::SeqCst) {
            let _g = state();
            CHANGED.notify_all();
        }
    }
}

/// A call starting while a fork is pending: step back out of the count and wait until the
/// fork is over — unless this thread holds the libhdf5 lock, which the forking thread may be
/// waiting for (through a call in flight that needs it).
#[cold]
fn wait_out_fork() {
    if lock::held_by_current_thread() {
        return;
    }
    let was = IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    let mut g = state();
    if was == 1 {
        CHANGED.notify_all();
    }
    while g.forking {
        g = wait(g);
    }
    // Counted again under `STATE`: a fork announced after this sees the call.
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
}

/// Register the fork handlers once per process (idempotent; lock-free, so a fork racing the
/// first call can never leave the child waiting on a half-done registration).
#[inline]
pub(crate) fn register() {
    if !REGISTERED.load(Ordering::Relaxed) && !REGISTERED.swap(true, Ordering::SeqCst) {
        #[cfg(unix)]
        // SAFETY: the three handlers are `extern "C" fn()` items that live for the whole
        // process and never unwind (each catches panics).
        unsafe {
            libc::pthread_atfork(Some(prepare), Some(parent), Some(child));
        }
    }
}

/// Registration when the shared library is loaded (ELF constructors), before any thread of
/// the program can call vh5; [`enter`] registers again lazily where this does not run.
#[cfg(any(target_os = "linux", target_os = "freebsd", target_os = "netbsd", target_os = "openbsd"))]
#[used]
#[link_section = ".init_array"]
static REGISTER_AT_LOAD: extern "C" fn() = {
    extern "C" fn at_load() {
        register();
    }
    at_load
};

extern "C" fn prepare() {
    let _ = std::panic::catch_unwind(prepare_fork);
}

extern "C" fn parent() {
    let _ = std::panic::catch_unwind(release);
}

extern "C" fn child() {
    let _ = std::panic::catch_unwind(|| {
        // The parent's other threads do not exist here: their calls (all finished, or backing
        // out for the fork) leave no count behind. This thread's own, if it forked from
        // inside a call, stays.
        IN_FLIGHT.store(usize::from(DEPTH.get() > 0), Ordering::SeqCst);
        release();
    });
}

/// The `prepare` handler's work: see the module notes.
fn prepare_fork() {
    if DEPTH.get() > 0 || lock::held_by_current_thread() {
        return; // it could only wait for itself
    }
    loop {
        let mut g = state();
        while g.forking {
            g = wait(g); // another thread's fork
        }
        g.forking = true;
        FORKING.store(true, Ordering::SeqCst);
        while IN_FLIGHT.load(Ordering::SeqCst) != 0 {
            g = wait(g);
        }
        drop(g); // a call finishing on a thread that holds the libhdf5 lock needs it
        if let Some(h5) = lock::hold_for_fork(LOCK_WAIT) {
            // With the libhdf5 lock held no call can be in flight: new ones wait (or hold
            // that lock themselves, which this thread now has).
            HELD.set(Some(Held { state: state(), _h5: h5 }));
            return;
        }
        // Someone outside vh5 keeps the libhdf5 lock: let the waiting calls go (the holder
        // may be waiting for one of them), pause, and start over.
        let mut g = state();
        g.forking = false;
        FORKING.store(false, Ordering::SeqCst);
        CHANGED.notify_all();
        drop(g);
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// After the fork, in the parent and in the child: release what `prepare` took.
fn release() {
    if let Some(Held { mut state, _h5 }) = HELD.take() {
        state.forking = false;
        FORKING.store(false, Ordering::SeqCst);
        drop(state);
        CHANGED.notify_all();
        // `_h5` dropped here: the libhdf5 lock is released last.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc::{channel, Sender};
    use std::sync::Arc;

    /// Tests that announce forks (without forking) run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn held() -> bool {
        HELD.with_borrow(|h| h.is_some())
    }

    fn serial() -> MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `body` on a new thread and return once it has sent on its `ready` sender: the
    /// thread, and the flag `body` receives (for it to set once it has done its part).
    fn spawn_ready(body: impl FnOnce(Sender<()>, &AtomicBool) + Send + 'static) -> (std::thread::JoinHandle<()>, Arc<AtomicBool>) {
        let flag = Arc::new(AtomicBool::new(false));
        let (ready, started) = channel();
        let f = flag.clone();
        let t = std::thread::spawn(move || body(ready, &f));
        started.recv().unwrap();
        (t, flag)
    }

    #[test]
    fn fork_waits_for_calls_in_flight_and_holds_new_ones_until_done() {
        let _s = serial();
        let (a, done) = spawn_ready(|ready, done| {
            let call = enter();
            ready.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            done.store(true, Ordering::SeqCst);
            drop(call);
        });
        prepare_fork();
        assert!(done.load(Ordering::SeqCst), "the fork went ahead while a call was in flight");
        assert!(held() && lock::held_by_current_thread());
        // A call starting now waits until the fork is over.
        let (tx, rx) = channel();
        let b = std::thread::spawn(move || {
            let _call = enter();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err(), "a call started during the fork");
        release();
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(!held() && !lock::held_by_current_thread());
        a.join().unwrap();
        b.join().unwrap();
    }

    #[test]
    fn fork_from_inside_a_call_does_not_wait_for_itself() {
        let _s = serial();
        let outer = enter();
        let inner = enter(); // nested: counted once
        drop(inner);
        prepare_fork(); // would wait forever for this thread's own call
        assert!(!held());
        release();
        drop(outer);
        assert_eq!(DEPTH.get(), 0);
    }

    #[test]
    fn fork_while_a_thread_holds_the_libhdf5_lock_and_calls_vh5_does_not_deadlock() {
        let _s = serial();
        let (c, called) = spawn_ready(|ready, called| {
            let l = lock::lock(); // held outside vh5, as a hdf5-metno user may
            ready.send(()).unwrap();
            let t0 = std::time::Instant::now();
            while !FORKING.load(Ordering::SeqCst) && t0.elapsed() < Duration::from_secs(2) {
                std::thread::yield_now();
            }
            drop(enter()); // a vh5 call while the fork is pending: must not wait for it
            called.store(true, Ordering::SeqCst);
            drop(l);
        });
        prepare_fork(); // gets the libhdf5 lock once the thread lets it go
        assert!(called.load(Ordering::SeqCst) && held());
        release();
        c.join().unwrap();
    }
}
