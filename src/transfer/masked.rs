//! Writes into chunks stored with a non-zero filter mask (some filters of the pipeline
//! skipped for that chunk: `H5Dwrite_chunk` / h5py's `write_direct_chunk` with a mask, or an
//! optional filter that failed).
//!
//! libhdf5 (1.10 and 2.x alike; `H5Dwrite`, and `H5Dwrite_chunk` too) rewrites such a chunk
//! in place when its new stored size equals the old one and then keeps the OLD mask in the
//! chunk index (`H5D__chunk_file_alloc` reuses the file space and skips the index update;
//! the version-1 B-tree's insert is a no-op at an unchanged size): the chunk is stored with
//! every filter applied but the index says some were skipped, and every reader decodes it
//! wrongly afterwards. When the size changes the chunk is reallocated and the index entry,
//! mask included, rewritten.
//!
//! What vh5 does:
//! - **Raw chunk writes** ([`super::rawwrite`]): before storing a chunk with mask 0, the
//!   chunk's current stored size is looked up (`H5Dget_chunk_storage_size`, ~2 us); only when
//!   it equals the new size is the old mask needed (known when the chunk was fetched for a
//!   partial update, else read with the chunk's bytes: `H5Dread_chunk`). A non-zero mask at
//!   an unchanged size: [`store_unmasked`] stores the chunk twice, first one byte longer
//!   (reallocated: the index entry is rewritten), then its real bytes (reallocated again,
//!   mask 0 recorded).
//! - **Writes through `H5Dwrite`** (type conversions, pipelines vh5 does not encode):
//!   [`unmask_chunks`] first reads every touched stored chunk's mask; with a pipeline vh5
//!   encodes (deflate, shuffle, fletcher32) the masked ones are decoded (mask honoured),
//!   re-encoded with every filter and stored with mask 0 (same values, so the file reads the
//!   same) before libhdf5 writes; with any other pipeline (szip, scaleoffset, nbit, plugins)
//!   the whole write is refused (`Unsupported`) before anything is written, except (chunked
//!   writes with no type conversion beyond a byte swap) when every filter the chunk's mask
//!   leaves ON is one vh5 encodes: such a chunk ([`KeptMask`]) is merged by vh5 and stored
//!   again with `H5Dwrite_chunk` under the SAME mask, only those filters run ([`store_kept`]);
//!   its mask never changes, so the stale mask cannot occur whatever the size. An optional
//!   filter that failed (Blosc, szip on incompressible data) leaves its bit set: such chunks
//!   stay stored as libhdf5 stored them (not compressed again even if they now would). Kept
//!   only when every filter the mask SKIPS is lossless ([`lossless`]): libhdf5 runs
//!   every filter on the chunk it rewrites, so a skipped lossy filter (scaleoffset's
//!   decimal scaling of floats, zfp, sz, ...) would change the values libhdf5's write stores
//!   and the kept chunk's values would differ from its (found by the conformance suite:
//!   a float64 scaleoffset chunk stored unfiltered by `write_direct_chunk`).

use hdf5_sys::h5i::hid_t;

use super::merge::MergeCtx;
use crate::codec::{parse_pipeline, swap_bytes, Decoder, Encoder, Filter};
use crate::engine::copy::dense_strides;
use crate::error::Result;
use crate::geometry::MAX_RANK;
use crate::hdf5::chunk::FilterSpec;
use crate::hdf5::chunk::{chunk_state, flush_dataset, is_partial_edge, read_raw_chunk, vh5_pipeline, ChunkLayout, ChunkState};
use crate::hdf5::filter_ids as ids;
use crate::hdf5::handle::dataset_name;
use crate::hdf5::lock::H5Lock;
use crate::hdf5::write::write_raw_chunk;
use crate::plan::PieceKey;

/// The stored size and filter mask of the chunk at `origin` when its stored size is `len`
/// (the only case where libhdf5 keeps the old mask); `None` when it is not stored, stored at
/// another size, or libhdf5 cannot tell (then `H5Dwrite_chunk` reallocates it, or libhdf5
/// starts a new chunk).
pub fn same_size_entry(l: &H5Lock, dset: hid_t, origin: &[u64], len: usize) -> Result<Option<(u64, u32)>> {
    match chunk_state(l, dset, origin) {
        ChunkState::Stored { size } if size == len as u64 => {
            let mut b = Vec::new();
            Ok(read_raw_chunk(l, dset, origin, size, &mut b)?.map(|mask| (size, mask)))
        }
        _ => Ok(None),
    }
}

/// Store `data`, the chunk at `origin` with every filter applied, with filter mask 0, so that
/// the chunk index records mask 0: `old` is the chunk's current (stored size, mask) when
/// known; a non-zero mask at the size of `data` is replaced by storing the chunk one byte
/// longer first (see the module docs). Lock held; the dataset is chunked and writable.
pub fn store_unmasked(l: &H5Lock, dset: hid_t, origin: &[u64], data: &[u8], old: Option<(u64, u32)>) -> Result<()> {
    if let Some((size, mask)) = old {
        if mask != 0 && size == data.len() as u64 {
            let mut longer = Vec::new();
            crate::mem::reserve_total(&mut longer, data.len() + 1, || format!("chunk at {origin:?}"))?;
            longer.extend_from_slice(data);
            longer.push(0);
            write_raw_chunk(l, dset, origin, 0, &longer)
                .map_err(|e| crate::error::Error::new(e.kind, format!("chunk at {origin:?} (filter mask {mask:#x}): storing it reallocated, to clear its mask: {}", e.message)))?;
            return write_raw_chunk(l, dset, origin, 0, data).map_err(|e| {
                crate::error::Error::new(
                    e.kind,
                    format!("chunk at {origin:?}: {} (it was stored one byte longer just before, to clear its filter mask {mask:#x}: it does not read back)", e.message),
                )
            });
        }
    }
    write_raw_chunk(l, dset, origin, 0, data)
}

/// A stored chunk whose filter mask is not 0, in a pipeline vh5 does not encode as a whole,
/// whose filters left on by the mask vh5 encodes: the write merges it itself ([`store_kept`]).
pub struct KeptMask {
    /// The chunk's first element.
    pub origin: Vec<u64>,
    /// Its filter mask (bit `i` set: filter `i` of the pipeline skipped), kept when stored.
    pub mask: u32,
    /// The filters `mask` leaves on, in pipeline order.
    pub filters: Vec<Filter>,
}

/// Filters whose decoded output always equals their input (registered HDF5 filter ids):
/// deflate, shuffle, fletcher32, szip, LZF, Blosc, LZ4, bitshuffle, Zstandard, bzip2. A
/// chunk whose mask skips only these reads the same whether they ran or not. Not listed:
/// nbit (drops padding bits), scaleoffset (lossless only for integers with minimum bits
/// computed by libhdf5 or all bits: [`lossless`]; decimal scaling of floats drops digits),
/// lossy codecs (zfp, sz, jpeg, ...), and codecs whose options may be lossy (Blosc2's
/// filters).
pub const LOSSLESS_FILTERS: [i32; 10] = [ids::DEFLATE, ids::SHUFFLE, ids::FLETCHER32, ids::SZIP, ids::LZF, ids::BLOSC, ids::LZ4, ids::BITSHUFFLE, ids::ZSTD, ids::BZIP2];

/// Whether filter `f` stores every value exactly: [`LOSSLESS_FILTERS`], or scaleoffset of
/// integers (scale type 2, `cd_values[0]`) whose minimum bits (`cd_values[1]`) are 0 (libhdf5
/// computes them from the values) or the element's bits (`cd_values[4]` bytes).
pub fn lossless(f: &FilterSpec) -> bool {
    let cd = &f.cd_values;
    LOSSLESS_FILTERS.contains(&f.id) || (f.id == ids::SCALEOFFSET && cd.len() > 4 && cd[0] == 2 && (cd[1] == 0 || u64::from(cd[1]) == u64::from(cd[4]) * 8))
}

/// Whether every filter of pipeline `specs` that `mask` skips (bit set) is [`lossless`].
pub fn skips_only_lossless(specs: &[FilterSpec], mask: u32) -> bool {
    specs.iter().enumerate().filter(|&(i, _)| i < 32 && mask & (1 << i) != 0).all(|(_, f)| lossless(f))
}

/// The filters of pipeline `specs` that `mask` leaves on (bit clear), as filters vh5 runs;
/// `None` when one of them is not a filter vh5 encodes.
pub fn left_on(specs: &[FilterSpec], mask: u32) -> Option<Vec<Filter>> {
    let on: Vec<(i32, &[u32])> = specs.iter().enumerate().filter(|&(i, _)| i >= 32 || mask & (1 << i) == 0).map(|(_, f)| (f.id, f.cd_values.as_slice())).collect();
    parse_pipeline(&on)
}

/// Before a write through `H5Dwrite` of the chunks whose first elements are `origins`
/// (`n` coordinates each, any order, duplicates allowed; `chunk`: the chunk shape, `dims`
/// the extent): find the stored ones with a non-zero filter mask and store them again
/// decoded and re-encoded with every filter, mask 0 (see the module docs). When vh5 does not
/// encode the pipeline: with `can_merge` (the caller merges chunks in the file's bytes, up to
/// a byte swap) and every masked chunk's left-on filters encodable by vh5, those chunks are
/// returned (the caller stores them with [`store_kept`] instead of `H5Dwrite`); otherwise
/// `Unsupported`, nothing written. `itemsize`: bytes of one element in the file.
pub fn unmask_chunks(l: &H5Lock, dset: hid_t, layout: &ChunkLayout, dims: &[u64], itemsize: usize, origins: &[u64], can_merge: bool) -> Result<Vec<KeptMask>> {
    let Some(chunk) = layout.chunk.as_deref() else { return Ok(Vec::new()) };
    if layout.filters.is_empty() {
        return Ok(Vec::new());
    }
    let n = chunk.len();
    flush_dataset(l, dset)?;
    let fsize = crate::hdf5::chunk::file_size(l, dset)?;
    let mut seen = std::collections::HashSet::new();
    // Stored bytes kept only to re-encode them here (a pipeline vh5 encodes): a kept-mask
    // chunk is read again when merged, so that memory stays bounded by one chunk.
    let whole = vh5_pipeline(&layout.filters);
    let mut masked: Vec<(&[u64], Vec<u8>, u32)> = Vec::new();
    for origin in origins.chunks_exact(n) {
        if !seen.insert(origin) || (layout.dont_filter_partial && is_partial_edge(origin, chunk, dims)) {
            continue;
        }
        let ChunkState::Stored { size } = chunk_state(l, dset, origin) else { continue };
        if size > fsize {
            continue; // libhdf5 reads it and fails with its reason
        }
        let mut b = Vec::new();
        if let Some(mask) = read_raw_chunk(l, dset, origin, size, &mut b)?.filter(|&m| m != 0) {
            masked.push((origin, if whole.is_some() { b } else { Vec::new() }, mask));
        }
    }
    if masked.is_empty() {
        return Ok(Vec::new());
    }
    let Some(filters) = whole else { return keep_masks(l, dset, layout, chunk, masked, can_merge) };
    let chunk_bytes = chunk.iter().product::<u64>() as usize * itemsize;
    let (mut dec, mut enc) = (Decoder::default(), Encoder::default());
    for (origin, mut b, mask) in masked {
        let old = (b.len() as u64, mask);
        dec.decode_checked(&filters, mask, &mut b, chunk_bytes)
            .map_err(|e| crate::error::Error::new(e.kind, format!("chunk at {origin:?} (filter mask {mask:#x}): {}: the chunk is corrupted", e.message)))?;
        if b.len() != chunk_bytes {
            bail!(Hdf5, "chunk at {origin:?} (filter mask {mask:#x}): its filters decode to {} bytes, the chunk holds {chunk_bytes}: the chunk is corrupted", b.len());
        }
        enc.encode(&filters, &mut b).map_err(|m| err!(Hdf5, "chunk at {origin:?}: {m}"))?;
        store_unmasked(l, dset, origin, &b, Some(old))?;
        forget_last_lookup(l, dset, origin, chunk);
    }
    Ok(Vec::new())
}

/// The masked chunks of a pipeline vh5 does not encode as a whole, as [`KeptMask`]s when
/// `can_merge` and vh5 encodes the filters each one's mask leaves on; else the refusal
/// naming the first chunk that cannot be kept (nothing written).
fn keep_masks(l: &H5Lock, dset: hid_t, layout: &ChunkLayout, chunk: &[u64], masked: Vec<(&[u64], Vec<u8>, u32)>, can_merge: bool) -> Result<Vec<KeptMask>> {
    let mut kept = Vec::with_capacity(masked.len());
    for (origin, _, mask) in &masked {
        match (can_merge && skips_only_lossless(&layout.filters, *mask)).then(|| left_on(&layout.filters, *mask)).flatten() {
            Some(filters) => kept.push(KeptMask { origin: origin.to_vec(), mask: *mask, filters }),
            None => return Err(refusal(&dataset_name(l, dset), layout, chunk, origin, *mask, can_merge, masked.len())),
        }
    }
    Ok(kept)
}

/// The refusal of a write to `dataset` (its printable name) reaching the masked chunk at
/// `first` (one of `nmasked` such chunks) that [`keep_masks`] cannot keep: names the
/// pipeline, the mask and why.
fn refusal(dataset: &str, layout: &ChunkLayout, chunk: &[u64], first: &[u64], mask: u32, can_merge: bool, nmasked: usize) -> crate::error::Error {
    let name = crate::hdf5::filter_support::filter_name;
    let names: Vec<String> = layout.filters.iter().map(|f| name(f.id)).collect();
    let on: Vec<String> = layout.filters.iter().enumerate().filter(|&(i, _)| i >= 32 || mask & (1 << i) == 0).map(|(_, f)| name(f.id)).collect();
    let off: Vec<String> = layout.filters.iter().enumerate().filter(|&(i, f)| i < 32 && mask & (1 << i) != 0 && !lossless(f)).map(|(_, f)| name(f.id)).collect();
    let why = if !can_merge {
        "the write converts types or goes through libhdf5 row by row (vh5 merges such a chunk only in the dataset's own bytes)".to_string()
    } else if !off.is_empty() {
        format!(
            "the filters this mask skips include ones that change values ([{}]: libhdf5 would apply them to the rewritten chunk, so keeping the mask would store other values)",
            off.join(", ")
        )
    } else {
        format!("the filters this mask leaves on ([{}]) include one vh5 does not encode", on.join(", "))
    };
    let coord: Vec<u64> = first.iter().zip(chunk).map(|(o, c)| o / c).collect();
    err!(
        Unsupported,
        "dataset {}: chunk {coord:?} (dataset offset {first:?}) is stored with filter mask {mask:#x} (some filters of the pipeline [{}] skipped){}: \
         vh5 does not encode this pipeline itself and {why}, and libhdf5 would store the rewritten chunk with every filter applied but keep the stale mask \
         when its stored size is unchanged (no reader could decode it): the write is refused, nothing was written",
        dataset,
        names.join(", "),
        if nmasked > 1 { format!(" ({nmasked} chunks this write touches are masked)") } else { String::new() }
    )
}

/// Merge the pieces `group` of a chunked write (`ctx`) into the kept-mask chunk `k` and store
/// it again under its own mask with `H5Dwrite_chunk`, only the filters the mask leaves on run
/// (see the module docs): read raw again (`H5Dread_chunk`) and decoded from its stored bytes, byte-swapped to memory order
/// (`swap`: word size) and back. `chunk`: the chunk shape; `itemsize`: bytes per element
/// (the file's and the memory's). Lock held.
#[allow(clippy::too_many_arguments)]
pub(super) fn store_kept(l: &H5Lock, dset: hid_t, k: KeptMask, ctx: &MergeCtx, group: &[PieceKey], chunk: &[u64], swap: Option<usize>, itemsize: usize) -> Result<()> {
    let KeptMask { origin, mask, filters } = k;
    // The dataset was flushed before the masks were read and the lock is held since: the
    // chunk's stored bytes are those its mask was read with.
    let mut b = Vec::new();
    let stored = match chunk_state(l, dset, &origin) {
        ChunkState::Stored { size } => read_raw_chunk(l, dset, &origin, size, &mut b)?,
        _ => None,
    };
    if stored != Some(mask) {
        bail!(Hdf5, "internal: chunk at {origin:?} was stored with filter mask {mask:#x} when the write began, now {stored:?}");
    }
    let chunk_bytes = chunk.iter().product::<u64>() as usize * itemsize;
    Decoder::default()
        .decode_checked(&filters, 0, &mut b, chunk_bytes)
        .map_err(|e| crate::error::Error::new(e.kind, format!("chunk at {origin:?} (filter mask {mask:#x}): {}: the chunk is corrupted", e.message)))?;
    if b.len() != chunk_bytes {
        bail!(
            Hdf5,
            "chunk at {origin:?} (filter mask {mask:#x}): the filters it was stored with decode to {} bytes, the chunk holds {chunk_bytes}: the chunk is corrupted",
            b.len()
        );
    }
    let mut dense = [0isize; MAX_RANK];
    dense_strides(chunk, itemsize, &mut dense[..chunk.len()]);
    if let Some(u) = swap {
        swap_bytes(&mut b, u);
    }
    ctx.merge(group, &origin, &dense[..chunk.len()], &mut b)?;
    if let Some(u) = swap {
        swap_bytes(&mut b, u);
    }
    Encoder::default().encode(&filters, &mut b).map_err(|m| err!(Hdf5, "chunk at {origin:?}: {m}"))?;
    write_raw_chunk(l, dset, &origin, mask, &b)
}

/// Make libhdf5 forget its one-entry cache of the last chunk it looked up in `dset`'s index
/// (`H5D_rdcc_t::last`). `H5Dwrite_chunk` fills that entry with the chunk's new address and
/// size but the chunk's OLD filter mask (libhdf5 1.10 .. 1.14: `H5D__chunk_direct_write`
/// caches before it sets the new mask), so a chunk that had a non-zero mask is read (by
/// `H5Dread`, `H5Dread_chunk`, a partial `H5Dwrite`) with that mask through every id of the
/// dataset in this process until another chunk is looked up. `origin`: the chunk stored last
/// (shape `chunk`); a lookup (`H5Dget_chunk_storage_size`, ~2 us) of a neighbouring chunk of
/// the maximal grid replaces the entry (the lookup of a chunk outside the maximal extent is
/// only made when there is no other chunk: single-chunk and B-tree indexes, where it is a
/// plain miss). Lock held; failures are ignored (the stack cleared).
pub fn forget_last_lookup(l: &H5Lock, dset: hid_t, origin: &[u64], chunk: &[u64]) {
    // SAFETY: valid dataset id (checked by the caller); lock held.
    let Ok(space) = crate::hdf5::handle::Handle::new(l, unsafe { hdf5_sys::h5d::H5Dget_space(dset) }, "H5Dget_space") else {
        crate::hdf5::error::clear_stack(l);
        return;
    };
    let Ok((_, max)) = crate::hdf5::hyperslab::space_dims(l, space.id()) else {
        crate::hdf5::error::clear_stack(l);
        return;
    };
    let mut alt = origin.to_vec();
    if let Some(j) = (0..alt.len()).find(|&j| alt[j].saturating_add(chunk[j]) < max[j]) {
        alt[j] += chunk[j];
    } else if let Some(j) = (0..alt.len()).find(|&j| alt[j] >= chunk[j]) {
        alt[j] -= chunk[j];
    } else if let Some(a) = alt.first_mut() {
        *a = a.saturating_add(chunk[0]);
    }
    let _ = chunk_state(l, dset, &alt);
    crate::hdf5::error::clear_stack(l);
}
