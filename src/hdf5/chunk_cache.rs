//! Decoded-chunk cache: chunks vh5 decoded for one call, kept for the next calls on the same
//! open dataset (repeated reads of the same region, as libhdf5's chunk cache serves them).
//! Pure, safe Rust (no libhdf5 call), held per dataset by [`super::meta::DatasetMeta`]; the read
//! planner decides what to look up and insert.
//!
//! - **Bounded in bytes** (decoded bytes held; default [`DEFAULT_CACHE_BYTES`], env
//!   `VH5_CHUNK_CACHE_BYTES`, 0 = off; see `transfer::options::chunk_cache_bytes`); a chunk
//!   larger than the bound is never kept. Least recently used chunks are dropped first.
//! - **Thread-safe**: one mutex around the index; hits hand out an `Arc` of the bytes, so
//!   scattering from a hit runs outside the mutex (and outside the libhdf5 lock), and an entry
//!   evicted meanwhile stays alive until its last reader is done. A call served whole from
//!   the cache (the cached gather) instead holds the mutex once for all its lookups and
//!   copies ([`ChunkCache::locked`]).
//! - **Keyed** by the chunk's linear index on the grid and the memory form of the bytes (byte
//!   handling and item size): a hit costs no libhdf5 call. The planner only gives a cache to datasets of files opened read-only
//!   without SWMR (nothing in this process can change them: extent fixed, so the linear
//!   index is stable); vh5's writes and `vh5_close` clear it anyway ([`ChunkCache::clear`]).
//!   What another process writing the file leaves stale is in docs/ARCHITECTURE.md.
//! - **Entries hold the chunk's box inside the dataset's extent** (`plan::ChunkGrid::chunk_extent`): per
//!   axis `min(chunk, extent - origin)` elements, C order, compact, counted in the bound as
//!   those bytes. Interior chunks are the whole decoded chunk (moved in, no copy); a partial
//!   edge chunk is copied out of its decoded chunk ([`trim_to_box`]: a copy of its in-extent
//!   bytes only). A (3, 74, 3944) dataset in (900, 3, 3) chunks holds 216 of each chunk's
//!   64,800 decoded bytes inside its extent: its whole 7 MB fits the default bound, where
//!   whole chunks (2.1 GB) never did. Every reader of an entry takes its strides from the
//!   box ([`entry_bytes`] is the length an entry must have; one of another length is treated
//!   as a miss). The bound counts these bytes only, not the per-entry bookkeeping (~140
//!   bytes an entry, measured: key, list links, `Arc` and `Vec` headers, allocator rounding).

use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::{Arc, Mutex};

use lru::LruCache;

use crate::engine::copy::{copy_strided_runs, dense_strides};
use crate::geometry::MAX_RANK;

/// Default bound of [`ChunkCache`]: 16 MiB of decoded chunks per open dataset (HDF5 2.0's
/// default chunk cache is 8 MiB, h5py's documentation suggests raising it for repeated reads).
pub const DEFAULT_CACHE_BYTES: u64 = 16 << 20;

/// Bytes of a cache entry whose box is `boxed` (elements per axis) of `itemsize`-byte items:
/// the length every entry of that chunk must have (saturates instead of overflowing).
pub fn entry_bytes(boxed: &[u64], itemsize: usize) -> u64 {
    boxed.iter().fold(itemsize as u64, |a, &b| a.saturating_mul(b))
}

/// Copy the box `boxed` (elements per axis, each at most `chunk`'s; the box starts at the
/// chunk's first element) of the decoded whole chunk `decoded` (C order over `chunk`,
/// `itemsize`-byte items) into a new compact C-order buffer: a partial edge chunk's cache
/// entry. Copies the box's bytes only. `NoMemory` when the buffer cannot be allocated,
/// `OutOfBounds` when `decoded` is shorter than `chunk` says.
pub fn trim_to_box(decoded: &[u8], chunk: &[u64], boxed: &[u64], itemsize: usize) -> crate::error::Result<Vec<u8>> {
    let n = chunk.len();
    let total = usize::try_from(entry_bytes(&boxed[..n], itemsize)).map_err(|_| err!(NoMemory, "chunk box {:?} does not fit in memory", &boxed[..n]))?;
    let mut out = Vec::new();
    crate::mem::resize_zeroed(&mut out, total, || format!("cache entry of chunk box {:?} ({total} bytes)", &boxed[..n]))?;
    let (mut cs, mut bs, mut counts) = ([0isize; MAX_RANK], [0isize; MAX_RANK], [0usize; MAX_RANK]);
    dense_strides(chunk, itemsize, &mut cs[..n]);
    dense_strides(&boxed[..n], itemsize, &mut bs[..n]);
    for (c, &b) in counts.iter_mut().zip(&boxed[..n]) {
        *c = b as usize;
    }
    copy_strided_runs(decoded, 0, &cs[..n], &mut out, 0, &bs[..n], &counts[..n], itemsize)?;
    Ok(out)
}

/// Identity of a decoded chunk (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheKey {
    /// C-order linear index of the chunk on the dataset's chunk grid.
    pub chunk: u64,
    /// Memory form: 0 = the file's bytes, 1 = byte-swapped in words of `unit` bytes.
    pub form: u8,
    /// Item size (`form` 0) or swapped word size (`form` 1), bytes.
    pub unit: usize,
}

impl Hash for CacheKey {
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u64(self.chunk);
        h.write_u64((u64::from(self.form) << 56) ^ self.unit as u64);
    }
}

/// Hashes a [`CacheKey`] so that its table slot follows the chunk's linear index: reads visit
/// chunks in index order, so their lookups walk the table in order instead of at random (a
/// hit on a 65,536-chunk cache missed the CPU caches twice per lookup with a mixing hash: 22%
/// of a whole read served from the cache). The low 57 bits are the linear index (hashbrown
/// takes the slot from the low bits); the top 7 (its tag byte) mix the whole key.
#[derive(Default)]
struct ChunkHasher {
    words: [u64; 2],
    n: usize,
}

impl Hasher for ChunkHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let i = self.n.min(1);
        self.words[i] = self.words[i].rotate_left(8) ^ x;
        self.n += 1;
    }

    fn finish(&self) -> u64 {
        const LOW: u64 = (1 << 57) - 1;
        let [chunk, rest] = self.words;
        let tag = (chunk ^ rest.rotate_left(29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (chunk & LOW) | (tag & !LOW)
    }
}

struct Inner {
    /// Most recently used first; unbounded in entries (the bound is in bytes, kept below).
    lru: LruCache<CacheKey, Arc<Vec<u8>>, BuildHasherDefault<ChunkHasher>>,
    bytes: u64,
}

impl Default for Inner {
    fn default() -> Inner {
        Inner { lru: LruCache::unbounded_with_hasher(BuildHasherDefault::default()), bytes: 0 }
    }
}

/// A byte-bounded LRU of decoded chunks (see the module docs).
pub struct ChunkCache {
    cap: u64,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for ChunkCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (n, bytes) = self.usage();
        f.debug_struct("ChunkCache").field("cap", &self.cap).field("chunks", &n).field("bytes", &bytes).finish()
    }
}

impl ChunkCache {
    /// An empty cache holding at most `cap` decoded bytes (0: holds nothing).
    pub fn new(cap: u64) -> ChunkCache {
        ChunkCache { cap, inner: Mutex::new(Inner::default()) }
    }

    /// The bound, bytes.
    pub fn capacity(&self) -> u64 {
        self.cap
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The decoded bytes of `key` (and mark them most recently used), `None` on a miss.
    pub fn get(&self, key: &CacheKey) -> Option<Arc<Vec<u8>>> {
        if self.cap == 0 {
            return None;
        }
        self.lock().lru.get(key).map(Arc::clone)
    }

    /// [`ChunkCache::get`] of every key of `keys` in order under one lock (a worker's lookups
    /// for a span of chunks: one lock instead of one per chunk, which two workers contended
    /// for): `hit(i, bytes)` for each key found (`i` its position in `keys`), `miss(i)` for
    /// the others, both called with the lock held (they must not use this cache).
    pub fn get_each(&self, keys: impl IntoIterator<Item = CacheKey>, mut hit: impl FnMut(usize, Arc<Vec<u8>>), mut miss: impl FnMut(usize)) {
        if self.cap == 0 {
            keys.into_iter().enumerate().for_each(|(i, _)| miss(i));
            return;
        }
        let mut g = self.lock();
        for (i, k) in keys.into_iter().enumerate() {
            match g.lru.get(&k) {
                Some(b) => hit(i, Arc::clone(b)),
                None => miss(i),
            }
        }
    }

    /// The cache held locked for a series of lookups by one thread ([`Locked::peek`]: no
    /// `Arc` clone, no reordering per lookup), `None` when the cache holds nothing by design
    /// (bound 0). Other threads' lookups and inserts wait until it is dropped: hold it only
    /// for a copy that makes no other call (the cached gather of a whole call: one lock
    /// instead of one per chunk, which was most of a 16,384-chunk gather's time).
    pub fn locked(&self) -> Option<Locked<'_>> {
        (self.cap != 0).then(|| Locked { g: self.lock() })
    }

    /// Keep `bytes` as the decoded chunk `key` (replacing an entry of the same key), dropping
    /// least recently used chunks until the bound holds. Bytes larger than the bound are not
    /// kept. Returns the evicted buffers (dropped by the caller outside the mutex; reusable).
    pub fn insert(&self, key: CacheKey, bytes: Vec<u8>) -> Vec<Arc<Vec<u8>>> {
        self.insert_each([(key, bytes)])
    }

    /// [`ChunkCache::insert`] of every item of `items` in order under one lock (a worker's
    /// decoded chunks of a span). Returns every evicted or refused buffer.
    pub fn insert_each(&self, items: impl IntoIterator<Item = (CacheKey, Vec<u8>)>) -> Vec<Arc<Vec<u8>>> {
        let mut out = Vec::new();
        let mut g = None;
        for (key, bytes) in items {
            let len = bytes.len() as u64;
            if len > self.cap || self.cap == 0 {
                out.push(Arc::new(bytes));
                continue;
            }
            let inner = &mut **g.get_or_insert_with(|| self.lock());
            if let Some(old) = inner.lru.pop(&key) {
                inner.bytes -= old.len() as u64;
                out.push(old);
            }
            while inner.bytes + len > self.cap {
                let Some((_, old)) = inner.lru.pop_lru() else { break };
                inner.bytes -= old.len() as u64;
                out.push(old);
            }
            inner.lru.put(key, Arc::new(bytes));
            inner.bytes += len;
        }
        out
    }

    /// Forget every chunk (the dataset was written, or closed).
    pub fn clear(&self) {
        let old = std::mem::take(&mut *self.lock());
        drop(old);
    }

    /// (chunks, decoded bytes) held now.
    pub fn usage(&self) -> (usize, u64) {
        let g = self.lock();
        (g.lru.len(), g.bytes)
    }
}

/// A [`ChunkCache`] locked by [`ChunkCache::locked`].
pub struct Locked<'a> {
    g: std::sync::MutexGuard<'a, Inner>,
}

impl Locked<'_> {
    /// The decoded bytes of `key`, `None` on a miss; the entry's recency is left unchanged
    /// (see [`Locked::promote`]).
    pub fn peek(&self, key: &CacheKey) -> Option<&[u8]> {
        self.g.lru.peek(key).map(|b| b.as_slice())
    }

    /// Mark `keys` most recently used, in order (the last one most recent): what
    /// [`ChunkCache::get`] of each in that order would have done.
    pub fn promote(&mut self, keys: impl IntoIterator<Item = CacheKey>) {
        for k in keys {
            self.g.lru.promote(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(chunk: u64) -> CacheKey {
        CacheKey { chunk, form: 0, unit: 8 }
    }

    /// A decoded chunk of `chunk` whose element at C index i holds i (u16, little-endian).
    fn numbered(chunk: &[u64]) -> Vec<u8> {
        (0..chunk.iter().product::<u64>() as u16).flat_map(u16::to_le_bytes).collect()
    }

    #[test]
    fn trim_to_box_keeps_the_in_extent_box_in_c_order() {
        // 3-D chunk (4, 3, 5) of which (2, 3, 1) lies inside the dataset.
        let chunk = [4, 3, 5];
        let got = trim_to_box(&numbered(&chunk), &chunk, &[2, 3, 1], 2).unwrap();
        let want: Vec<u8> = [0u16, 5, 10, 15, 20, 25].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(got, want);
        assert_eq!(got.len() as u64, entry_bytes(&[2, 3, 1], 2));
        // The whole chunk's box is the chunk; 1-D and a 1-element box.
        assert_eq!(trim_to_box(&numbered(&[6]), &[6], &[6], 2).unwrap(), numbered(&[6]));
        assert_eq!(trim_to_box(&numbered(&[6]), &[6], &[4], 2).unwrap(), numbered(&[4]));
        assert_eq!(trim_to_box(&numbered(&[2, 2, 2, 2]), &[2, 2, 2, 2], &[1, 1, 1, 1], 2).unwrap(), vec![0, 0]);
        // (900, 3, 3) chunks of a (3, 74, 3944) dataset: 216 of 64,800 bytes.
        let big = vec![7u8; 900 * 9 * 8];
        assert_eq!(trim_to_box(&big, &[900, 3, 3], &[3, 3, 3], 8).unwrap().len(), 216);
        // A decoded chunk shorter than its shape says: refused, no panic.
        assert!(trim_to_box(&[0u8; 10], &[4, 3], &[2, 3], 2).is_err());
    }

    #[test]
    fn trim_to_box_matches_an_element_by_element_oracle() {
        // Every box of every chunk shape up to 3 x 3 x 3.
        for chunk in (1..=27u64).map(|i| [1 + (i - 1) / 9, 1 + (i - 1) / 3 % 3, 1 + (i - 1) % 3]) {
            let dec = numbered(&chunk);
            for b in (0..chunk.iter().product::<u64>()).map(|i| [1 + i / (chunk[1] * chunk[2]), 1 + i / chunk[2] % chunk[1], 1 + i % chunk[2]]) {
                let mut want: Vec<u8> = Vec::new();
                for (x, y, z) in (0..b[0]).flat_map(|x| (0..b[1]).flat_map(move |y| (0..b[2]).map(move |z| (x, y, z)))) {
                    want.extend_from_slice(&(((x * chunk[1] + y) * chunk[2] + z) as u16).to_le_bytes());
                }
                assert_eq!(trim_to_box(&dec, &chunk, &b, 2).unwrap(), want, "chunk {chunk:?} box {b:?}");
            }
        }
    }

    #[test]
    fn entry_bytes_saturates() {
        assert_eq!(entry_bytes(&[3, 3, 3], 8), 216);
        assert_eq!(entry_bytes(&[], 8), 8);
        assert_eq!(entry_bytes(&[u64::MAX, 2], 8), u64::MAX);
    }

    #[test]
    fn lru_within_the_byte_bound() {
        let c = ChunkCache::new(30);
        assert!(c.insert(k(1), vec![1; 10]).is_empty());
        assert!(c.insert(k(2), vec![2; 10]).is_empty());
        assert!(c.insert(k(3), vec![3; 10]).is_empty());
        assert_eq!(c.usage(), (3, 30));
        // Touch 1: 2 is now the oldest and goes first.
        assert_eq!(c.get(&k(1)).unwrap()[0], 1);
        let ev = c.insert(k(4), vec![4; 10]);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0][0], 2);
        assert!(c.get(&k(2)).is_none());
        assert_eq!(c.get(&k(3)).unwrap()[0], 3);
        // A big one evicts as many as needed.
        let ev = c.insert(k(5), vec![5; 25]);
        assert_eq!(ev.len(), 3);
        assert_eq!(c.usage(), (1, 25));
    }

    #[test]
    fn get_each_reports_hits_and_misses_by_position_and_promotes_hits() {
        let c = ChunkCache::new(30);
        for i in 1..=3 {
            c.insert(k(i), vec![i as u8; 10]);
        }
        let (mut hits, mut misses) = (Vec::new(), Vec::new());
        c.get_each([k(2), k(9), k(1)], |i, b| hits.push((i, b[0])), |i| misses.push(i));
        assert_eq!((hits, misses), (vec![(0, 2), (2, 1)], vec![1]));
        // 2 then 1 were used: 3 is the oldest.
        let ev = c.insert(k(4), vec![4; 10]);
        assert_eq!((ev.len(), ev[0][0]), (1, 3));
        let mut misses = Vec::new();
        ChunkCache::new(0).get_each([k(1), k(2)], |_, _| panic!("bound 0 holds nothing"), |i| misses.push(i));
        assert_eq!(misses, [0, 1]);
    }

    #[test]
    fn insert_each_keeps_in_order_within_the_bound() {
        let c = ChunkCache::new(30);
        let out = c.insert_each((1..=4).map(|i| (k(i), vec![i as u8; 10])).chain([(k(9), vec![9; 31])]));
        // 1 evicted by 4; 9 larger than the bound, refused.
        assert_eq!(out.iter().map(|b| b[0]).collect::<Vec<_>>(), [1, 9]);
        assert_eq!(c.usage(), (3, 30));
        assert!(c.get(&k(1)).is_none() && c.get(&k(4)).is_some());
        assert_eq!(ChunkCache::new(0).insert_each([(k(1), vec![1])]).len(), 1);
    }

    #[test]
    fn locked_peeks_then_promotes_in_order() {
        let c = ChunkCache::new(30);
        for i in 1..=3 {
            c.insert(k(i), vec![i as u8; 10]);
        }
        {
            let mut l = c.locked().expect("bound > 0");
            assert_eq!(l.peek(&k(1)).unwrap()[0], 1);
            assert!(l.peek(&k(9)).is_none());
            // Peeking reorders nothing; promoting 2 then 1 leaves 3 the oldest.
            l.promote([k(2), k(1)]);
        }
        let ev = c.insert(k(4), vec![4; 10]);
        assert_eq!((ev.len(), ev[0][0]), (1, 3));
        let ev = c.insert(k(5), vec![5; 10]);
        assert_eq!(ev[0][0], 2);
        assert!(ChunkCache::new(0).locked().is_none());
    }

    #[test]
    fn key_includes_the_memory_form() {
        let c = ChunkCache::new(100);
        c.insert(k(1), vec![1; 8]);
        assert!(c.get(&CacheKey { form: 1, ..k(1) }).is_none());
        assert!(c.get(&CacheKey { unit: 4, ..k(1) }).is_none());
        // Same key replaces.
        let ev = c.insert(k(1), vec![9; 20]);
        assert_eq!(ev.len(), 1);
        assert_eq!(c.usage(), (1, 20));
        assert_eq!(c.get(&k(1)).unwrap()[0], 9);
    }

    #[test]
    fn too_big_zero_capacity_and_clear() {
        let c = ChunkCache::new(16);
        assert_eq!(c.insert(k(1), vec![0; 17]).len(), 1);
        assert_eq!(c.usage(), (0, 0));
        let z = ChunkCache::new(0);
        z.insert(k(1), vec![]);
        assert!(z.get(&k(1)).is_none());
        c.insert(k(2), vec![0; 8]);
        c.clear();
        assert_eq!(c.usage(), (0, 0));
        assert!(c.get(&k(2)).is_none());
    }

    #[test]
    fn shared_between_threads() {
        let c = Arc::new(ChunkCache::new(1 << 16));
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let c = Arc::clone(&c);
                s.spawn(move || {
                    for i in 0..500u64 {
                        let key = k((i * 7 + t) % 64);
                        match c.get(&key) {
                            Some(b) => assert!(b.iter().all(|&x| x == key.chunk as u8)),
                            None => drop(c.insert(key, vec![key.chunk as u8; 1000])),
                        }
                    }
                });
            }
        });
        let (n, bytes) = c.usage();
        assert!(bytes <= 1 << 16 && n as u64 * 1000 == bytes);
    }
}
