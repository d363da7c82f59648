//! One chunk of a planned read: how the calling thread fetches it under the libhdf5 lock
//! ([`Fetcher`]: raw `H5Dread_chunk` or `H5Dread` of its region) and what a worker does with
//! it outside the lock ([`Shared::process`]: decode, convert, scatter every piece). Driven by
//! [`super::chunked`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use hdf5_sys::h5i::hid_t;

use super::rows::{Ctx, RawKind};
use crate::codec::{swap_bytes, Decoder, Filter};
use crate::engine::copy::dense_strides;
use crate::error::{Error, ErrorKind, Result};
use crate::geometry::{axis_step, Row, SliceTable, MAX_RANK};
use crate::hdf5::chunk::{chunk_state, read_raw_chunk, ChunkState};
use crate::hdf5::chunk_cache::{entry_bytes, trim_to_box, CacheKey, ChunkCache};
use crate::hdf5::chunk_index::{ChunkIndex, Entry};
use crate::hdf5::dataset::HyperslabReader;
use crate::hdf5::lock::{lock, H5Lock};
use crate::plan::{ChunkGrid, PieceBlock, PieceKey, Plan};

/// A fetched chunk on its way to a worker.
pub(super) struct Job {
    pub(super) group: usize,
    pub(super) buf: Vec<u8>,
    /// `Some(mask)`: stored bytes to decode; `None`: already in the memory type, laid out
    /// densely over the chunk's extent clipped to the dataset.
    pub(super) raw_mask: Option<u32>,
    /// Decoded bytes served by the dataset's chunk cache (nothing fetched: `buf` is empty).
    pub(super) hit: Option<Arc<Vec<u8>>>,
    /// Where the decoded bytes go once decoded (a cache miss to fill).
    pub(super) key: Option<CacheKey>,
    /// Stored bytes still to read from the file (positioned read, no lock) before decoding:
    /// the chunk's entry in the dataset's chunk index (`raw_mask` is its filter mask).
    pub(super) at: Option<Entry>,
}

/// Everything a worker needs, shared read-only.
pub(super) struct Shared<'a> {
    pub(super) plan: &'a Plan,
    pub(super) grid: &'a ChunkGrid,
    pub(super) table: &'a SliceTable<'a>,
    pub(super) ctx: &'a Ctx<'a>,
    pub(super) filters: &'a [Filter],
    pub(super) raw: Option<RawKind>,
    /// Decoded size of a whole chunk in the file type, bytes (what the filters must produce).
    pub(super) stored_bytes: usize,
    /// Set when the file type's bytes are not the memory type's: libhdf5 converts each
    /// chunk vh5 decoded (`H5Tconvert`).
    pub(super) convert: Option<Convert>,
    /// `H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS`: partial edge chunks are stored unfiltered.
    pub(super) dont_filter_partial: bool,
    /// The dataset's decoded-chunk cache, when this call keeps what it decodes there (raw
    /// fetches in the memory form, see `chunked::read_chunked`).
    pub(super) cache: Option<&'a ChunkCache>,
    /// The dataset's chunk index (stored bytes read with positioned reads), when it has one.
    pub(super) index: Option<&'a ChunkIndex>,
}

/// A libhdf5 type conversion applied to decoded chunks (file type -> memory type).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Convert {
    pub ftype: hid_t,
    pub mtype: hid_t,
    pub file_itemsize: usize,
}

impl Shared<'_> {
    pub(super) fn origin_extent(&self, group: usize) -> ([u64; MAX_RANK], [u64; MAX_RANK], [u64; MAX_RANK]) {
        let n = self.grid.ndim();
        let (mut coord, mut origin, mut extent) = ([0u64; MAX_RANK], [0u64; MAX_RANK], [0u64; MAX_RANK]);
        self.grid.chunk_coord(self.plan.groups[group].0, &mut coord[..n]);
        self.grid.chunk_origin(&coord[..n], &mut origin[..n]);
        self.grid.chunk_extent(&coord[..n], &mut extent[..n]);
        (coord, origin, extent)
    }

    /// Decode a job (raw chunks) and scatter its pieces. A chunk vh5 cannot decode is
    /// corrupt (vh5 decodes every filter of the pipelines it fetches raw): `Hdf5` naming the
    /// chunk, never handed to libhdf5 (which may crash on it, or pad it with uninitialised
    /// memory); `NoMemory` when a buffer could not be allocated.
    pub(super) fn process(&self, job: &mut Job, dec: &mut Decoder) -> Result<()> {
        let n = self.grid.ndim();
        if let Some(hit) = &job.hit {
            // (An entry holds the chunk's box inside the dataset: `chunk_cache`.)
            let (mut origin, mut boxed) = ([0u64; MAX_RANK], [0u64; MAX_RANK]);
            let linear = self.plan.groups[job.group].0;
            self.grid.linear_origin(linear, &mut origin[..n]);
            self.grid.linear_extent(linear, &mut boxed[..n]);
            return self.scatter(job.group, hit, &origin[..n], &boxed[..n]);
        }
        let (coord, origin, extent) = self.origin_extent(job.group);
        if let (Some(e), Some(ix)) = (job.at.take(), self.index) {
            ix.read(&e, &mut job.buf).map_err(|x| Error::new(x.kind, format!("chunk {:?} (dataset offset {:?}): {}", &coord[..n], &origin[..n], x.message)))?;
        }
        let dims: &[u64] = if let Some(mask) = job.raw_mask {
            self.decode(&mut job.buf, mask, dec, &coord[..n], &origin[..n])?;
            self.grid.chunk()
        } else {
            &extent[..n]
        };
        self.scatter(job.group, &job.buf, &origin[..n], dims)?;
        if let (Some(c), Some(k), Some(_)) = (self.cache, job.key, job.raw_mask) {
            // Keep the decoded chunk: an interior chunk's buffer moves into the cache (no
            // copy); of a partial edge chunk only its box inside the dataset is copied out.
            let entry = if self.grid.is_partial(&extent[..n]) { trim_to_box(&job.buf, self.grid.chunk(), &extent[..n], self.ctx.itemsize)? } else { std::mem::take(&mut job.buf) };
            drop(c.insert(k, entry));
        }
        Ok(())
    }

    /// Length of the cache entry of the chunk with linear index `linear`: its box inside the
    /// dataset in the memory type (`hdf5::chunk_cache`), bytes.
    pub(super) fn entry_bytes(&self, linear: u64) -> u64 {
        let n = self.grid.ndim();
        let mut boxed = [0u64; MAX_RANK];
        self.grid.linear_extent(linear, &mut boxed[..n]);
        entry_bytes(&boxed[..n], self.ctx.itemsize)
    }

    /// Decode the stored bytes of the chunk at grid coordinates `coord` (its first element at
    /// dataset coordinates `origin`; both for messages and for the partial-edge rule) in `buf`
    /// (filter mask `mask`) into the whole chunk in the memory type: filters, byte swap,
    /// conversion. `Hdf5` naming the chunk when it is corrupt, `NoMemory` when a buffer
    /// could not be allocated.
    pub(super) fn decode(&self, buf: &mut Vec<u8>, mask: u32, dec: &mut Decoder, coord: &[u64], origin: &[u64]) -> Result<()> {
        let stored = buf.len();
        let at = |m: &str| format!("chunk {coord:?} (dataset offset {origin:?}, {stored} bytes stored, filter mask {mask:#x}): {m}");
        dec.decode_checked(self.active_filters(origin), mask, buf, self.stored_bytes).map_err(|e| match e.kind {
            ErrorKind::NoMemory => Error::new(e.kind, at(&e.message)),
            _ if e.message.contains("corrupt") => Error::new(ErrorKind::Hdf5, at(&e.message)),
            _ => Error::new(ErrorKind::Hdf5, at(&format!("{}: the chunk is corrupted", e.message))),
        })?;
        if buf.len() != self.stored_bytes {
            bail!(Hdf5, "{}", at(&format!("its filters decode to {} bytes, the chunk holds {}: the chunk is corrupted", buf.len(), self.stored_bytes)));
        }
        if let Some(RawKind::Swap(u)) = self.raw {
            swap_bytes(buf, u);
        }
        if let Some(c) = self.convert {
            let elems = self.stored_bytes / c.file_itemsize.max(1);
            convert_chunk(c.ftype, c.mtype, elems, c.file_itemsize, self.ctx.itemsize, buf).map_err(|e| Error::new(e.kind, at(&e.message)))?;
        }
        Ok(())
    }

    /// The filters the stored bytes of the chunk at dataset coordinates `origin` went
    /// through: none for a partial edge chunk of a dataset with
    /// `H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS` (stored as is: libhdf5 reads it without the
    /// pipeline, whatever its stored mask).
    pub(super) fn active_filters(&self, origin: &[u64]) -> &[Filter] {
        if self.dont_filter_partial && crate::hdf5::chunk::is_partial_edge(origin, self.grid.chunk(), self.ctx.src_shape) {
            &[]
        } else {
            self.filters
        }
    }

    /// Prefetch the first destination byte of every piece of chunk group `group` (rows
    /// scattered in another order than the destination's: each piece's first write is a
    /// cache miss, ~40% of a read of one small row per chunk in random order).
    pub(super) fn prefetch_dst(&self, group: usize) {
        for p in &self.plan.pieces[self.plan.groups[group].1.clone()] {
            self.ctx.dst.prefetch(self.ctx.layout.byte_offset(self.plan.piece(p).1));
        }
    }

    /// Scatter every piece of chunk group `group` from `buf` (dense C order over `dims`, the
    /// chunk's first element at dataset coordinates `origin`).
    pub(super) fn scatter(&self, group: usize, buf: &[u8], origin: &[u64], dims: &[u64]) -> Result<()> {
        let n = self.grid.ndim();
        let itemsize = self.ctx.itemsize;
        let mut cstr = [0isize; MAX_RANK];
        dense_strides(dims, itemsize, &mut cstr[..n]);
        let mut b = PieceBlock::new();
        for p in &self.plan.pieces[self.plan.groups[group].1.clone()] {
            self.plan.block(p, origin, &cstr[..n], self.ctx.layout, (self.table.src_step, self.table.dst_step), &mut b);
            // SAFETY: pieces planned here belong to rows whose destinations overlap no other
            // row's, and the pieces of one row are disjoint: no other thread writes these
            // elements (see the module docs).
            unsafe { self.ctx.dst.copy_in(buf, b.chunk_off, &b.chunk_strides[..n], b.array_off, &b.array_strides[..n], &b.counts[..n], itemsize)? };
        }
        Ok(())
    }
}

/// How the calling thread gets a chunk's bytes (under the libhdf5 lock).
pub(super) struct Fetcher<'a> {
    pub(super) dset: hid_t,
    /// Fetch stored chunks raw (`H5Dread_chunk`) for vh5 to decode.
    pub(super) raw_ok: bool,
    /// vh5 decodes the pipeline: chunks never go through libhdf5's filters.
    pub(super) checked: bool,
    /// File size: a stored chunk claiming more bytes is corrupt.
    pub(super) fsize: u64,
    pub(super) itemsize: usize,
    /// The pipeline has fletcher32 (a stored chunk needs at least its 4-byte checksum).
    pub(super) fletcher: bool,
    /// The dataset's decoded-chunk cache (looked up before every raw fetch), and whether this
    /// call keeps what it decodes there.
    pub(super) cache: Option<&'a ChunkCache>,
    pub(super) keep: bool,
    /// Look chunks up in `cache` (false when it held nothing at the call's start and the call
    /// keeps nothing: every lookup would miss, and each took the cache's mutex).
    pub(super) probe: bool,
    /// Memory form of the decoded bytes ([`CacheKey::form`], [`CacheKey::unit`]).
    pub(super) form: (u8, usize),
    /// Cache hits and misses (raw fetches looked up and not found).
    pub(super) hits: AtomicUsize,
    pub(super) misses: AtomicUsize,
}

impl Fetcher<'_> {
    /// Fetch chunk group `g` into `buf` (recycled): raw stored bytes when allocated and
    /// [`Fetcher::raw_ok`], else libhdf5's read of its region (fill values, conversion).
    pub(super) fn fetch(&self, l: &H5Lock, reader: &mut HyperslabReader, sh: &Shared, g: usize, buf: Vec<u8>) -> Result<Job> {
        let mut job = Job { group: g, buf, raw_mask: None, hit: None, key: None, at: None };
        // A hit needs no libhdf5 call (and no chunk geometry): only chunks fetched stored and
        // decoded by vh5 are kept.
        let key = self.cache.map(|_| CacheKey { chunk: sh.plan.groups[g].0, form: self.form.0, unit: self.form.1 });
        if let (Some(c), Some(k), true) = (self.cache, &key, self.probe) {
            if let Some(hit) = c.get(k).filter(|b| b.len() as u64 == sh.entry_bytes(k.chunk)) {
                self.hits.fetch_add(1, Ordering::Relaxed);
                job.hit = Some(hit);
                return Ok(job);
            }
        }
        let n = sh.grid.ndim();
        let (coord, origin, extent) = sh.origin_extent(g);
        // With the dataset's chunk index (only given for raw fetches): a chunk missing from it
        // is unallocated (the index was checked complete against libhdf5's count).
        let entry = sh.index.map(|ix| ix.get(sh.plan.groups[g].0));
        let state = match entry {
            Some(Some(e)) => ChunkState::Stored { size: e.size },
            Some(None) => ChunkState::Unallocated,
            // Unfiltered chunks without the index are read by libhdf5 (`H5Dread` of their region),
            // never fetched raw: libhdf5 reads chunk-size bytes at their address whatever their
            // index entry says, while `H5Dread_chunk` reads the entry's size (1.10 / 1.14: into a
            // buffer sized from a lookup that may report another size, an overflow; 2.x: an
            // error where libhdf5 reads the chunk).
            None if self.raw_ok && !sh.filters.is_empty() => chunk_state(l, self.dset, &origin[..n]),
            None => ChunkState::Unknown,
        };
        if let (Some(k), ChunkState::Stored { .. }) = (key, state) {
            self.misses.fetch_add(1, Ordering::Relaxed);
            job.key = self.keep.then_some(k);
        }
        match state {
            ChunkState::Stored { size, .. } if size > self.fsize => {
                bail!(
                    Hdf5,
                    "chunk {:?} (dataset offset {:?}): its stored size {size} bytes exceeds the file ({} bytes): the chunk index is corrupted",
                    &coord[..n],
                    &origin[..n],
                    self.fsize
                )
            }
            ChunkState::Stored { .. } if matches!(entry, Some(Some(_))) => {
                // Read by whoever decodes it (`Shared::process`), outside the lock.
                let e = entry.flatten().expect("indexed chunk");
                job.at = Some(e);
                job.raw_mask = Some(e.mask);
            }
            ChunkState::Stored { size, .. } => {
                // None: no file address after all (a never-written chunk only libhdf5's chunk
                // cache holds): read as unallocated below.
                job.raw_mask = read_raw_chunk(l, self.dset, &origin[..n], size, &mut job.buf).map_err(|e| Error::new(e.kind, format!("chunk {:?}: {}", &coord[..n], e.message)))?;
            }
            _ => {}
        }
        if job.raw_mask.is_none() {
            read_region(reader, &origin[..n], &extent[..n], self.itemsize, sh.ctx.fill, &mut job.buf)
                .map_err(|e| Error::new(e.kind, format!("chunk {:?} (dataset offset {:?}): {}", &coord[..n], &origin[..n], e.message)))?;
        }
        Ok(job)
    }

    /// Before libhdf5 decodes chunk group `g` itself (checked reads of chunks too big to hold
    /// whole): refuse a stored size past the end of the file, or too short for fletcher32's
    /// checksum (libhdf5 1.10 reads before the buffer and may crash on it).
    pub(super) fn precheck(&self, l: &H5Lock, sh: &Shared, g: usize) -> Result<()> {
        if !self.checked {
            return Ok(());
        }
        let n = sh.grid.ndim();
        let (coord, origin, _) = sh.origin_extent(g);
        if let ChunkState::Stored { size, .. } = chunk_state(l, self.dset, &origin[..n]) {
            let at = format!("chunk {:?} (dataset offset {:?}, {size} bytes stored)", &coord[..n], &origin[..n]);
            if size > self.fsize {
                bail!(Hdf5, "{at}: its stored size exceeds the file ({} bytes): the chunk index is corrupted", self.fsize);
            }
            let k = sh.filters.iter().position(|f| *f == Filter::Fletcher32);
            // The filter mask only matters for such a short chunk: ask for it then (a scan of
            // the chunk index in libhdf5 1.10, but only for corrupt-looking chunks).
            if self.fletcher && size < 4 && k.is_some_and(|k| k >= 32 || crate::hdf5::chunk::chunk_filter_mask(l, self.dset, &origin[..n]).is_none_or(|m| m & (1 << k) == 0)) {
                bail!(Hdf5, "{at}: fletcher32: too short for a checksum: the chunk is corrupted");
            }
        }
        Ok(())
    }
}

/// Convert `elems` decoded elements of `ftype` (`file_itemsize` bytes each) in `buf` into
/// `mtype` (`mem_itemsize` bytes each) with libhdf5 (`H5Tconvert`, taking the lock): the
/// conversion `H5Dread` would apply. `buf` ends up `elems * mem_itemsize` bytes long.
fn convert_chunk(ftype: hid_t, mtype: hid_t, elems: usize, file_itemsize: usize, mem_itemsize: usize, buf: &mut Vec<u8>) -> Result<()> {
    let big = elems.checked_mul(file_itemsize.max(mem_itemsize)).ok_or_else(|| err!(NoMemory, "conversion buffer of {elems} elements overflows"))?;
    crate::mem::resize_zeroed(buf, big, || "conversion buffer".to_string())?;
    let mut bkg = Vec::new();
    crate::mem::resize_zeroed(&mut bkg, elems * mem_itemsize, || "conversion background buffer".to_string())?;
    let l = lock();
    crate::hdf5::chunk::convert(&l, ftype, mtype, elems, buf, &mut bkg)?;
    buf.truncate(elems * mem_itemsize);
    Ok(())
}

/// A piece as a row of its own (for a `H5Dread` of just that piece).
pub(super) fn piece_row(plan: &Plan, table: &SliceTable, i: usize, p: &PieceKey) -> Row {
    let n = plan.ndim;
    let (s, d, c) = plan.piece(p);
    let mut r = Row { ndim: n, src_start: [0; MAX_RANK], dst_start: [0; MAX_RANK], count: [0; MAX_RANK], src_step: [1; MAX_RANK], dst_step: [1; MAX_RANK] };
    r.src_start[..n].copy_from_slice(s);
    r.dst_start[..n].copy_from_slice(d);
    r.count[..n].copy_from_slice(c);
    // Steps of axes where the piece has one element are never applied and may be any
    // uint64 (a row's other pieces step along them): `axis_step`, as for rows.
    for j in 0..n {
        r.src_step[j] = axis_step(c[j], table.src_step.map_or(1, |t| t[i * n + j]));
        r.dst_step[j] = axis_step(c[j], table.dst_step.map_or(1, |t| t[i * n + j]));
    }
    r
}

/// Read the region of one chunk (clipped extent) through libhdf5 into `buf` (memory type,
/// dense C order): filters, type conversion and fill values by libhdf5. With `fill`
/// (fill time never, see [`Ctx::fill`]) `buf` is first set to that element, which is what an
/// unallocated chunk then reads as (libhdf5 leaves it untouched).
fn read_region(reader: &mut HyperslabReader, origin: &[u64], extent: &[u64], itemsize: usize, fill: Option<&[u8]>, buf: &mut Vec<u8>) -> Result<()> {
    let elems: u64 = extent.iter().product();
    let what = || format!("region of extent {extent:?}");
    let bytes = usize::try_from(elems as u128 * itemsize as u128).map_err(|_| err!(NoMemory, "{}: {elems} elements do not fit in memory", what()))?;
    buf.clear();
    crate::mem::resize_zeroed(buf, bytes, what)?;
    if let Some(f) = fill {
        crate::hdf5::chunk::fill_with(buf, f);
    }
    reader.read(origin, None, extent, buf)
}
