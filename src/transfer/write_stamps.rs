//! Lost-update protection for raw chunk writes running beside other writes of the same
//! dataset in this process. Pure, safe Rust (no libhdf5 call); its callers hold the libhdf5
//! lock whenever they read or store a chunk.
//!
//! A raw write ([`super::rawwrite`]) reads a chunk it covers in part under the libhdf5 lock
//! (prepare), merges and encodes it with the lock released, and stores it under the lock again
//! (finish). Any other write storing that chunk in between (another thread's call on the same
//! dataset through the same or another dataset id, file id or `vh5.File`) would be overwritten
//! by bytes merged into the older version: its elements silently lost (two threads writing the
//! even and odd columns of the same gzip chunks lost up to a third of them).
//!
//! So every write that may run beside a raw write leaves a stamp in the dataset's [`Book`]
//! (keyed by the dataset's identity in libhdf5, [`DatasetId`], never by an id number), and a
//! raw write compares, before storing a chunk, the chunk's stamp with the clock it read when it
//! prepared the chunk: a chunk stored by someone else since is not stored but merged again from
//! the chunk as it is now ([`RawWriteSession::stale`]). Optimistic: nobody waits for anybody,
//! so there is no lock order to get wrong (a thread holding the libhdf5 lock never waits for a
//! write that needs it), writes to different chunks of one dataset and to different datasets
//! keep running in parallel, and an error or a panic leaves nothing held
//! ([`RawWriteSession`] deregisters on drop).
//!
//! - A book exists only while a raw write of its dataset is in flight; the raw writes register
//!   ([`RawWriteSession::begin`]), stores are recorded only while another raw write of the
//!   dataset is in flight (nobody else could need the stamp). A lone write costs, per chunk,
//!   a hash of its coordinates and up to three rounds of its book's uncontended mutex (the
//!   clock read at prepare, the staleness check and the store's record).
//! - Writes through `H5Dwrite` (libhdf5 merges the chunks itself, the whole call under the
//!   lock) stamp the whole dataset ([`written_through_libhdf5`]): every chunk a raw write
//!   prepared before is merged again, after one more flush of libhdf5's chunk cache.
//! - Chunks are keyed by a hash of their grid coordinates (independent of the extent); a
//!   collision only merges a chunk again for nothing. At most [`MAX_STAMPS`] chunk stamps are
//!   kept per book: beyond, the whole dataset is stamped instead.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Chunk stamps kept per dataset before they are replaced by one whole-dataset stamp.
pub const MAX_STAMPS: usize = 1 << 16;

/// A dataset's identity in this process: libhdf5's number of its (shared) file, the same for
/// every file id opened on that file, and its object header's address or token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DatasetId {
    pub fileno: u64,
    pub token: [u8; 16],
}

/// Stamps of one dataset while raw writes of it are in flight.
#[derive(Debug, Default)]
struct Book {
    /// Advanced at every recorded store.
    clock: u64,
    /// Raw writes of the dataset in flight.
    writers: usize,
    /// Chunk key -> clock of its last recorded store.
    chunks: HashMap<u64, u64>,
    /// Clock of the last whole-dataset stamp.
    all: u64,
}

impl Book {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn stamp_all(&mut self) {
        self.all = self.tick();
        self.chunks.clear();
    }
}

type Books = HashMap<DatasetId, Arc<Mutex<Book>>>;

static BOOKS: Mutex<Option<Books>> = Mutex::new(None);
/// Raw writes in flight in the process (any dataset): 0 lets `H5Dwrite` writes skip the books.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

fn books() -> MutexGuard<'static, Option<Books>> {
    BOOKS.lock().unwrap_or_else(|p| p.into_inner())
}

fn entry(b: &Mutex<Book>) -> MutexGuard<'_, Book> {
    b.lock().unwrap_or_else(|p| p.into_inner())
}

/// The key of the chunk at grid coordinates `coord`.
pub fn chunk_key(coord: &[u64]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    coord.hash(&mut h);
    h.finish()
}

/// One raw write's registration in its dataset's book (see the module docs). Dropping it
/// (success, error or unwinding) deregisters the write.
#[derive(Debug)]
pub struct RawWriteSession {
    id: DatasetId,
    book: Arc<Mutex<Book>>,
}

impl RawWriteSession {
    /// Register a raw write of dataset `id`, before it prepares any chunk (libhdf5 lock held).
    pub fn begin(id: DatasetId) -> Self {
        let mut g = books();
        let book = Arc::clone(g.get_or_insert_with(HashMap::new).entry(id).or_default());
        entry(&book).writers += 1;
        ACTIVE.fetch_add(1, Ordering::SeqCst);
        Self { id, book }
    }

    /// The clock to remember with a chunk being prepared (libhdf5 lock held, as for the read).
    pub fn now(&self) -> u64 {
        entry(&self.book).clock
    }

    /// Whether chunk `key`, prepared at clock `seen`, was stored since by another write (or
    /// the whole dataset written through libhdf5): then it must be merged again, not stored.
    pub fn stale(&self, key: u64, seen: u64) -> bool {
        let b = entry(&self.book);
        b.all > seen || b.chunks.get(&key).is_some_and(|&t| t > seen)
    }

    /// Whether the dataset was written through libhdf5 since clock `seen` (libhdf5's chunk
    /// cache may then hold chunks not yet in the file: flush before reading chunks raw).
    pub fn written_through_libhdf5_since(&self, seen: u64) -> bool {
        entry(&self.book).all > seen
    }

    /// This write stored chunk `key` (libhdf5 lock held, right after the store).
    pub fn stored(&self, key: u64) {
        let mut b = entry(&self.book);
        if b.writers > 1 {
            let t = b.tick();
            if b.chunks.len() >= MAX_STAMPS && !b.chunks.contains_key(&key) {
                b.stamp_all();
            } else {
                b.chunks.insert(key, t);
            }
        }
    }
}

impl Drop for RawWriteSession {
    fn drop(&mut self) {
        let mut g = books();
        let mut b = entry(&self.book);
        b.writers -= 1;
        if b.writers == 0 {
            if let Some(m) = g.as_mut() {
                m.remove(&self.id);
            }
        }
        drop(b);
        ACTIVE.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A write through `H5Dwrite` of the dataset `id()` names is under way (libhdf5 lock held
/// for the whole write): raw writes of it in flight merge again every chunk they prepared
/// before. `id` is asked only while some raw write is in flight; `None` (the dataset could not
/// be identified) stamps every dataset with a raw write in flight.
pub fn written_through_libhdf5(id: impl FnOnce() -> Option<DatasetId>) {
    if ACTIVE.load(Ordering::SeqCst) == 0 {
        return;
    }
    let id = id();
    let g = books();
    let Some(m) = g.as_ref() else { return };
    match id {
        Some(id) => {
            if let Some(b) = m.get(&id) {
                entry(b).stamp_all();
            }
        }
        None => m.values().for_each(|b| entry(b).stamp_all()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> DatasetId {
        // Distinct from other tests' ids (the books are process-wide).
        DatasetId { fileno: 0xfeed_0000 + u64::from(n), token: [n; 16] }
    }

    #[test]
    fn a_chunk_stored_by_another_write_after_prepare_is_stale() {
        let a = RawWriteSession::begin(id(1));
        let b = RawWriteSession::begin(id(1));
        let (x, y) = (chunk_key(&[0, 0]), chunk_key(&[0, 1]));
        let seen = a.now();
        b.stored(x);
        assert!(a.stale(x, seen), "stored by b after a's prepare");
        assert!(!a.stale(y, seen), "another chunk");
        let again = a.now();
        assert!(!a.stale(x, again), "prepared again after b's store");
        a.stored(x);
        assert!(b.stale(x, seen));
    }

    #[test]
    fn a_lone_write_records_nothing_and_books_go_away() {
        let k = chunk_key(&[3]);
        {
            let a = RawWriteSession::begin(id(2));
            let seen = a.now();
            a.stored(k);
            assert!(!a.stale(k, seen));
            assert!(entry(&a.book).chunks.is_empty());
        }
        assert!(books().as_ref().is_none_or(|m| !m.contains_key(&id(2))), "deregistered on drop");
    }

    #[test]
    fn other_datasets_do_not_interfere() {
        let a = RawWriteSession::begin(id(3));
        let b = RawWriteSession::begin(id(4));
        let _b2 = RawWriteSession::begin(id(4));
        let k = chunk_key(&[1, 1]);
        let seen = a.now();
        b.stored(k);
        written_through_libhdf5(|| Some(id(4)));
        assert!(!a.stale(k, seen));
        assert!(!a.written_through_libhdf5_since(seen));
    }

    #[test]
    fn a_write_through_libhdf5_makes_every_prepared_chunk_stale() {
        let a = RawWriteSession::begin(id(5));
        let seen = a.now();
        written_through_libhdf5(|| Some(id(5)));
        assert!(a.stale(chunk_key(&[7, 7]), seen));
        assert!(a.written_through_libhdf5_since(seen));
        assert!(!a.stale(chunk_key(&[7, 7]), a.now()));
        // Unidentified: every book is stamped.
        let seen = a.now();
        written_through_libhdf5(|| None);
        assert!(a.stale(chunk_key(&[0]), seen));
    }

    #[test]
    fn too_many_stamps_turn_into_a_whole_dataset_stamp() {
        let a = RawWriteSession::begin(id(6));
        let b = RawWriteSession::begin(id(6));
        let seen = a.now();
        for c in 0..=MAX_STAMPS as u64 {
            b.stored(chunk_key(&[c]));
        }
        assert!(entry(&a.book).chunks.len() <= MAX_STAMPS);
        assert!(a.stale(chunk_key(&[u64::MAX]), seen), "conservative: every chunk prepared before");
    }

    #[test]
    fn deregistration_survives_a_panic() {
        let r = std::panic::catch_unwind(|| {
            let _a = RawWriteSession::begin(id(7));
            panic!("boom");
        });
        assert!(r.is_err());
        assert!(books().as_ref().is_none_or(|m| !m.contains_key(&id(7))));
    }
}
