//! Filter pipelines libhdf5 itself cannot decode reliably, refused before any chunk reaches
//! its filters (reads and writes).
//!
//! libhdf5's scaleoffset, nbit and szip filters assume what arrives at them, in write order,
//! is something they were not necessarily given:
//!
//! - scaleoffset and (compressing) nbit take their input as exactly the chunk's elements (their
//!   client data hold the element count): after a filter that changes the chunk's length
//!   (deflate, szip, fletcher32's checksum, another scaleoffset / nbit, a plugin) they encode
//!   part of the bytes, or read past them, and decode back to the element count, not to what
//!   the earlier filter produced. Observed with files written by libhdf5 2.0 (h5py): szip then
//!   scaleoffset on `u1` reads back other values in every h5py run (2.0.0), zeros from 1.10.8,
//!   an error from 2.2.0; deflate then scaleoffset makes 1.10.8 and 2.2.0 alike read
//!   uninitialised memory (valgrind).
//! - szip (libaec's SZ interface) drops the bytes past the last whole pixel of its input
//!   (pixels of 1, 2, 4 or 8 bytes from its bits-per-pixel parameter) and on decode reports the
//!   declared length: the lost tail is uninitialised memory. A chunk's own elements are
//!   whole pixels, but what scaleoffset, deflate, nbit, a plugin or fletcher32 (4 bytes more:
//!   not whole 8-byte pixels) hand on in general is not. Observed: scaleoffset then szip on
//!   `>f8`, and nbit + fletcher32 then szip on `<u8`, read uninitialised bytes (valgrind) in
//!   libhdf5 1.10.8 and 2.2.0 alike: the values, or a fletcher32 failure, vary run to run.
//!   With a partial pixel libaec 1.1's encoder also writes past its buffer (writes aborted in
//!   "free()" with libhdf5 1.10.8, 2.0.0 and 2.2.0). A number type nbit packs is the
//!   exception whose length is known: `elements * precision / 8 + 1` bytes whatever the data
//!   (`nbit_packed_len`); szip after it (shuffle, fletcher32 between them or not) is
//!   accepted when that is whole pixels and szip keeps every bit (next point).
//! - szip codes samples of the type's precision (`H5Z_set_local_szip`: 1 .. 24 bits at bit
//!   offset 0, other than 8 and 16, stay as they are) in pixels of 1, 2 or 4 bytes and keeps
//!   only those low bits of each pixel: right for the chunk's elements, whose other bits are
//!   zero, wrong for what any filter before szip hands on (packed bits, shuffled bytes, a
//!   checksum, a compressed stream). Observed: `<u4` at 12 bits of precision with shuffle, then
//!   szip reads other values (no error) in libhdf5 1.10.8, 2.0.0 and 2.2.0; with nbit,
//!   fletcher32 or deflate before szip, other values or "szip_filter: decompression failed".
//!   The sweep behind both points (integers of 1 .. 8 bytes, both orders, precisions and
//!   offsets, EC / NN, 2 .. 32 pixels per block, odd chunk sizes, random and constant data;
//!   nbit, [shuffle | fletcher32], szip written and read back by 1.10.8, 2.0.0 and 2.2.0):
//!   of 4432 cases the 886 this rule accepts were written by all three and read back exact in
//!   every pairing (none of the 111 writes that aborted or failed); the rest read wrong,
//!   failed, aborted or read right by chance (szip skipped, as an optional filter,
//!   on chunks it could not shrink; all-zero data).
//!
//! - Before libhdf5 2.2.0, nbit and scaleoffset with nothing to do (nbit on a type of full
//!   precision, client data \[1\] non-zero; integer scaleoffset keeping every bit) hand on the
//!   capacity of their buffer instead of its data length (fixed by HDF5 pull request 6389,
//!   "fix nbit/scaleoffset no-op return values"; the 2.2.0 sources return the length). When
//!   a filter after them in write order (deflate, fletcher32, ...) leaves a buffer larger than
//!   its data, the filters before them (shuffle, fletcher32, ...) decode the wrong length:
//!   shuffle + nbit + deflate on `<f4` and shuffle + nbit + fletcher32 read scrambled values
//!   with libhdf5 1.10.8 and 2.0.0, correct ones with 2.2.0. Refused only when the linked
//!   libhdf5 is older than 2.2.0 ([`passthrough_problem`]).
//! - Writes only, before libhdf5 2.2.0: the same pass-through after deflate hands on what
//!   deflate's encoder reported as the buffer size, its INPUT length (`*buf_size = nbytes`;
//!   2.2.0 reports its buffer's real size), as the data's length, whatever follows: a chunk
//!   deflate cannot shrink is stored cut to its input length, which no reader decodes
//!   ("inflate() failed"); deflate + nbit on random `<i8` in libhdf5 1.10.8 and 2.0.0 alike,
//!   written whole by 2.2.0 (conformance seed 36). Reads are not refused: a chunk reads as it
//!   was stored or fails in every version ([`passthrough_write_problem`]).
//!
//! No libhdf5 release reads the chunks of the first two kinds correctly (the data was lost or scrambled when
//! libhdf5 wrote them), so the refusal does not depend on the linked version; it names it.
//! [`check_pipeline`] follows the chunk's length through the pipeline in write order and
//! refuses (`Unsupported`) at the first of these filters whose input length is not what it
//! needs. Filters the linked libhdf5 does not have (`H5Zfilter_avail`) count as skipped (an
//! optional filter unavailable when the chunk was written left it as it was; a chunk that
//! needs one fails to read with libhdf5's own error).

use hdf5_sys::h5i::hid_t;

use super::chunk::{ChunkLayout, FilterSpec};
use super::error::{session, MISSING_FILTER};
use super::handle::dataset_name;
use super::lock::H5Lock;
use crate::error::{Error, ErrorKind, Result};

use super::filter_ids::{BITSHUFFLE, BLOSC, BLOSC2, BZIP2, DEFLATE, FLETCHER32, LZ4, LZF, NBIT, SCALEOFFSET, SHUFFLE, SZ, SZIP, ZFP, ZSTD};

/// Whether the linked libhdf5 has filter `id` (`H5Zfilter_avail`; may leave a plugin-search
/// failure on the error stack: callers clear it). Lock held by the caller.
fn available(id: i32) -> bool {
    // SAFETY: plain query; the caller holds the libhdf5 lock.
    unsafe { hdf5_sys::h5z::H5Zfilter_avail(id) > 0 }
}

/// Name of a filter id for messages.
pub(crate) fn filter_name(id: i32) -> String {
    match id {
        DEFLATE => "deflate".into(),
        SHUFFLE => "shuffle".into(),
        FLETCHER32 => "fletcher32".into(),
        SZIP => "szip".into(),
        NBIT => "nbit".into(),
        SCALEOFFSET => "scaleoffset".into(),
        LZF => "lzf".into(),
        // Plugins, by their ids in the HDF Group's registry of filter ids (the ones
        // hdf5plugin ships): named with the id, since a file may use an id for another filter.
        BZIP2 => format!("bzip2 (filter {BZIP2})"),
        BLOSC => format!("blosc (filter {BLOSC})"),
        LZ4 => format!("lz4 (filter {LZ4})"),
        BITSHUFFLE => format!("bitshuffle (filter {BITSHUFFLE})"),
        ZFP => format!("zfp (filter {ZFP})"),
        ZSTD => format!("zstd (filter {ZSTD})"),
        SZ => format!("sz (filter {SZ})"),
        BLOSC2 => format!("blosc2 (filter {BLOSC2})"),
        _ => format!("filter {id}"),
    }
}

/// Bytes per szip pixel for a bits-per-pixel parameter (libaec's SZ interface: 32 and 64
/// bits are coded as interleaved bytes of 4 and 8 bytes per pixel; up to 8, 16 and 32 bits
/// take 1, 2 and 4 bytes).
fn szip_pixel_bytes(bpp: u32) -> u64 {
    match bpp {
        0..=8 => 1,
        9..=16 => 2,
        17..=32 => 4,
        _ => 8,
    }
}

/// Why the pipeline `filters` (write order) cannot be decoded reliably, or `None`.
/// `chunk_bytes` is the length of a chunk's elements in the file type; `avail(id)` tells
/// whether the linked libhdf5 has filter `id`.
pub fn pipeline_problem(filters: &[FilterSpec], chunk_bytes: u64, avail: impl Fn(i32) -> bool) -> Option<String> {
    // The chunk's length as the next filter receives it: `None` once it depends on the data.
    let mut len = Some(chunk_bytes);
    // Whether what the next filter receives is still the chunk's elements at their length
    // (only shuffle and filters with nothing to do so far).
    let mut elements = true;
    let mut before: Vec<String> = Vec::new();
    // The filters so far that changed the bytes (all but those with nothing to do).
    let mut changed: Vec<String> = Vec::new();
    for f in filters {
        let name = filter_name(f.id);
        let compressing_nbit = f.id == NBIT && !nbit_has_nothing_to_do(&f.cd_values);
        if !avail(f.id) {
            before.push(format!("{name} (not in this libhdf5: counted as skipped)"));
            continue;
        }
        if f.id == SCALEOFFSET || compressing_nbit {
            if !elements {
                return Some(format!(
                    "{name} comes after {} in the pipeline: it encodes its input as the chunk's {chunk_bytes} bytes of elements, which they changed",
                    before.join(", ")
                ));
            }
        } else if f.id == SZIP {
            if let Some(why) = szip_problem(&f.cd_values, len, &before, &changed) {
                return Some(why);
            }
        }
        len = match f.id {
            SHUFFLE => len,
            FLETCHER32 => len.map(|l| l + 4),
            NBIT if compressing_nbit => nbit_packed_len(&f.cd_values, chunk_bytes),
            NBIT => len,
            _ => None,
        };
        elements &= f.id == SHUFFLE || (f.id == NBIT && !compressing_nbit);
        if !passes_through(f) {
            changed.push(name.clone());
        }
        before.push(name);
    }
    None
}

/// Why szip (client data `cd`: options, pixels per block, bits per pixel, pixels per
/// scanline) cannot code what the filters `before` it hand on (`len` bytes, `None` when that
/// depends on the data; `changed`: those of them that changed the bytes), or `None`.
///
/// - libaec codes `bpp`-bit samples in pixels of 1, 2 or 4 bytes ([`szip_pixel_bytes`]; 32
///   and 64 bits as interleaved bytes) and keeps only the low `bpp` bits of each. libhdf5
///   takes `bpp` from the type's precision (`H5Z_set_local_szip`: a precision of 1 .. 24 bits
///   at bit offset 0, other than 8 and 16, stays as it is), right for the chunk's elements
///   (their other bits are zero), wrong for the bytes any filter before szip hands on (packed
///   bits, shuffled bytes, a checksum, a compressed stream): values read back wrong or fail to
///   decode.
/// - Past the last whole pixel of its input, libaec (1.0.6 and 1.1.4 alike) leaves bytes
///   undecoded or the decode fails, and its encoder may write past its buffer.
fn szip_problem(cd: &[u32], len: Option<u64>, before: &[String], changed: &[String]) -> Option<String> {
    let bpp = cd.get(2).copied().unwrap_or(64);
    let px = szip_pixel_bytes(bpp);
    if !changed.is_empty() && u64::from(bpp) != 8 * px {
        return Some(format!(
            "szip codes {bpp}-bit samples (the type's precision) in {px}-byte pixels and keeps only their low {bpp} bits, but what {} hand{} on uses \
             every bit: values decode wrong or not at all",
            changed.join(", "),
            if changed.len() == 1 { "s" } else { "" }
        ));
    }
    if px > 1 && len.is_none_or(|l| l % px != 0) {
        let got = len.map_or_else(|| "a data-dependent number of bytes".to_string(), |l| format!("{l} bytes"));
        let after = if before.is_empty() { String::new() } else { format!(" after {}", before.join(", ")) };
        return Some(format!("szip{after} receives {got}, not whole {px}-byte pixels: libaec drops the rest and libhdf5 decodes it as uninitialised memory"));
    }
    None
}

/// The number of bytes nbit hands on when it packs an atomic type (client data `cd`:
/// parameter count, nothing-to-do flag, element count, class 1 = atomic, size, order,
/// precision, offset): `H5Z__nbit_compress` packs `precision` bits of each element and reports
/// the index of the byte it would write next + 1, `elements * precision / 8 + 1` whatever the
/// data (one byte more than it wrote when the bits end on a byte boundary: nbit never reads
/// it back). `None` for compound and array types, or client data that do not describe the
/// chunk's `chunk_bytes` bytes.
fn nbit_packed_len(cd: &[u32], chunk_bytes: u64) -> Option<u64> {
    let [_, _, n, class, size, _, prec, off, ..] = *cd else { return None };
    let (n, size, prec, off) = (u64::from(n), u64::from(size), u64::from(prec), u64::from(off));
    (class == 1 && n.checked_mul(size) == Some(chunk_bytes) && prec > 0 && prec + off <= 8 * size).then(|| n * prec / 8 + 1)
}

/// Whether nbit's client data say there is nothing to pack: libhdf5 tests `cd_values[1]` for
/// non-zero (`H5Z__filter_nbit`), so any non-zero value (1 as libhdf5 writes it, or a damaged
/// one: seed 54 at 8000 cases, 1 -> 3080193) makes the filter pass its input on.
pub fn nbit_has_nothing_to_do(cd: &[u32]) -> bool {
    cd.get(1).is_some_and(|&v| v != 0)
}

/// Whether an nbit / scaleoffset filter passes its input through unchanged (see the module docs).
pub fn passes_through(f: &FilterSpec) -> bool {
    let cd = &f.cd_values;
    match f.id {
        NBIT => nbit_has_nothing_to_do(cd),
        SCALEOFFSET => cd.len() > 4 && cd[0] == 2 && u64::from(cd[1]) == u64::from(cd[4]) * 8,
        _ => false,
    }
}

/// Why the pipeline `filters` (write order) decodes wrong in a libhdf5 older than 2.2.0, or
/// `None`: a pass-through nbit / scaleoffset with a filter before it and one after it (in
/// write order) that may leave a buffer larger than its data (anything but shuffle and szip,
/// which size their output exactly). `avail` as for [`pipeline_problem`].
pub fn passthrough_problem(filters: &[FilterSpec], avail: impl Fn(i32) -> bool) -> Option<String> {
    let used: Vec<&FilterSpec> = filters.iter().filter(|f| avail(f.id)).collect();
    let i = used.iter().position(|f| passes_through(f))?;
    let later = used[i + 1..].iter().find(|f| !matches!(f.id, SHUFFLE | SZIP))?;
    if i == 0 {
        return None;
    }
    Some(format!(
        "{} has nothing to do here and hands on the capacity of the buffer {} left instead of its length, so {} decodes the wrong number of bytes",
        filter_name(used[i].id),
        filter_name(later.id),
        filter_name(used[i - 1].id)
    ))
}

/// Why writing the pipeline `filters` (write order) through a libhdf5 older than 2.2.0 may
/// store chunks cut short, or `None`: a pass-through nbit / scaleoffset whose nearest earlier
/// filter that does something is deflate. Before 2.2.0 deflate's encoder reports its INPUT
/// length as the buffer size (`*buf_size = nbytes` in `H5Zdeflate.c`; its buffer is
/// `compressBound(nbytes)` long and its output may be longer than its input), and the
/// pass-through hands that size on as the data's length: a chunk deflate cannot shrink is
/// stored cut to its input length (no reader decodes it: "inflate() failed"), one it shrinks
/// with uninitialised bytes after the stream (read correctly). The other filters report a
/// buffer size at least their output length (shuffle, fletcher32, nbit that packs,
/// scaleoffset: exactly; szip: its input length + 4, never less than what it keeps). Only
/// writes: what a reader decodes is what was stored. `avail` as for [`pipeline_problem`].
pub fn passthrough_write_problem(filters: &[FilterSpec], avail: impl Fn(i32) -> bool) -> Option<String> {
    let used: Vec<&FilterSpec> = filters.iter().filter(|f| avail(f.id)).collect();
    let i = (0..used.len()).find(|&i| passes_through(used[i]) && used[..i].iter().rev().find(|f| !passes_through(f)).is_some_and(|f| f.id == DEFLATE))?;
    Some(format!(
        "{} has nothing to do here and hands on the buffer size deflate reported, deflate's input length, as the data's length: a chunk deflate cannot \
         shrink is stored cut short, which no reader can decode",
        filter_name(used[i].id)
    ))
}

/// Refuse (`Unsupported`) a read or write of `dset` whose chunked pipeline (`layout`) libhdf5
/// cannot decode reliably (see the module docs): the message names the file, the dataset,
/// the filters, the linked libhdf5. Cheap: no chunk is touched.
pub fn check_pipeline(lock: &H5Lock, dset: hid_t, layout: &ChunkLayout, write: bool) -> Result<()> {
    let Some(chunk) = &layout.chunk else { return Ok(()) };
    if write {
        check_writable_pipeline(lock, dset, layout)?;
    }
    if !layout.filters.iter().any(|f| matches!(f.id, SZIP | NBIT | SCALEOFFSET)) {
        return Ok(());
    }
    let size = super::chunk::file_type_size(lock, dset)?;
    let bytes = chunk.iter().fold(size, |a, &c| a.saturating_mul(c));
    let problem = pipeline_problem(&layout.filters, bytes, available);
    let old_lib = super::version::library_info(lock).map_or(true, |v| (v.major, v.minor) < (2, 2));
    let passthrough = if old_lib && problem.is_none() { passthrough_problem(&layout.filters, available) } else { None };
    let cut = if write && old_lib && problem.is_none() && passthrough.is_none() { passthrough_write_problem(&layout.filters, available) } else { None };
    // H5Zfilter_avail may leave a plugin-search failure on the error stack.
    super::error::clear_stack(lock);
    let pipeline: Vec<String> = layout.filters.iter().map(|f| filter_name(f.id)).collect();
    let version = super::version::version_text(lock);
    let verb = if write { "write" } else { "read" };
    if let Some(why) = passthrough {
        bail!(
            Unsupported,
            "dataset {}: filter pipeline [{}] (write order): {why}: a bug of libhdf5 before 2.2.0 (this is libhdf5 {version}; fixed by HDF5 pull request 6389), \
             which returns scrambled values; libhdf5 2.2.0 reads it correctly: vh5 refuses to {verb} it with this libhdf5",
            dataset_name(lock, dset),
            pipeline.join(", ")
        );
    }
    if let Some(why) = cut {
        bail!(
            Unsupported,
            "dataset {}: filter pipeline [{}] (write order): {why}: a bug of libhdf5 before 2.2.0 (this is libhdf5 {version}; 2.2.0 returns the data's length, \
             HDF5 pull request 6389): vh5 refuses to write it with this libhdf5 (reading it is not refused)",
            dataset_name(lock, dset),
            pipeline.join(", ")
        );
    }
    let Some(why) = problem else { return Ok(()) };
    bail!(
        Unsupported,
        "dataset {}: filter pipeline [{}] (write order): {why}. No libhdf5 release decodes such chunks reliably (libhdf5 {version}, linked here, neither; \
         2.0 and 2.2 return other values, uninitialised bytes or an error): vh5 refuses to {} it",
        dataset_name(lock, dset),
        pipeline.join(", "),
        verb
    )
}

/// The names of the filters of `dset`'s pipeline the linked libhdf5 does not have
/// (`H5Zfilter_avail`), in pipeline order; empty when it has them all or the pipeline cannot
/// be read (for messages).
pub fn unavailable_filters(lock: &H5Lock, dset: hid_t) -> Vec<String> {
    let Ok(layout) = super::chunk::chunk_layout(lock, dset) else {
        super::error::clear_stack(lock);
        return Vec::new();
    };
    let names = layout.filters.iter().filter(|f| !available(f.id)).map(|f| filter_name(f.id)).collect();
    super::error::clear_stack(lock);
    names
}

/// Refuse (`Unsupported`) a write of `dset` whose pipeline has a filter the linked libhdf5
/// lacks: one of its own it was built without (the `static-hdf5` build has no szip) or a
/// plugin it cannot load (h5py's lzf, ...). libhdf5 would store the chunks without an
/// optional one (szip and lzf are added as optional filters), leaving chunks other readers
/// decode differently from what the writer meant: a chunk rewritten at its old size keeps the
/// filter mask it had, one that says the filter ran (HDF5 2.2.0 rewriting a scaleoffset + szip
/// chunk h5py wrote: unreadable), and a pipeline reliable without the filter is not with it
/// (libhdf5 1.10 rewriting h5py's shuffle + lzf + scaleoffset and lzf + nbit datasets: h5py
/// then failed to read them or read other values; conformance seed 21). Whether every stored
/// chunk skipped the filter is not known without reading them all: every such write is
/// refused. Reads are not refused here: chunks that need the filter fail with the
/// missing-filter error of [`super::error::hdf5_error`], the others read.
fn check_writable_pipeline(lock: &H5Lock, dset: hid_t, layout: &ChunkLayout) -> Result<()> {
    let missing = layout.filters.iter().find(|f| !available(f.id));
    super::error::clear_stack(lock);
    let Some(f) = missing else { return Ok(()) };
    bail!(
        Unsupported,
        "dataset {}: the linked libhdf5 {} has no '{}' filter, which its pipeline has: vh5 does not write it (libhdf5 would store chunks without \
         that filter, and a chunk rewritten at its old size keeps a filter mask saying it was applied: no reader could decode it){}",
        dataset_name(lock, dset),
        super::version::version_text(lock),
        filter_name(f.id),
        if f.id >= 256 { super::error::PLUGIN_HINT } else { "" }
    )
}

/// `e` with the dataset (`/name` in `file`) named in front when it is a missing-filter error
/// of `error::hdf5_error` (made deep in a read or write, where the dataset is not known); any
/// other error unchanged. Takes the libhdf5 lock only for a missing-filter error.
pub fn name_dataset_of_missing_filter(dset: hid_t, e: Error) -> Error {
    if e.kind != ErrorKind::Unsupported || !e.message.contains(MISSING_FILTER) {
        return e;
    }
    let s = session();
    let mut message = e.message;
    let unnamed = format!("'?' filter{MISSING_FILTER}");
    if message.contains(&unnamed) {
        let names = unavailable_filters(s.lock(), dset).join("', '");
        message = message.replacen(&unnamed, &format!("'{names}' filter{MISSING_FILTER}"), 1);
    }
    Error::new(e.kind, format!("dataset {}: {message}", dataset_name(s.lock(), dset)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(id: i32, cd: &[u32]) -> FilterSpec {
        FilterSpec { id, flags: 0, cd_values: cd.to_vec() }
    }

    #[test]
    fn scaleoffset_after_a_length_changing_filter() {
        let all = |_| true;
        let so = f(SCALEOFFSET, &[2, 0, 6, 0, 1, 0, 0, 0]);
        assert_eq!(pipeline_problem(&[so.clone(), f(DEFLATE, &[4])], 6, all), None);
        assert_eq!(pipeline_problem(&[f(SHUFFLE, &[1]), so.clone()], 6, all), None);
        for first in [f(SZIP, &[169, 2, 8, 6]), f(DEFLATE, &[4]), f(FLETCHER32, &[])] {
            let why = pipeline_problem(&[first, so.clone()], 6, all).unwrap();
            assert!(why.starts_with("scaleoffset comes after"), "{why}");
        }
        // an unavailable (skipped) optional filter changes nothing
        assert_eq!(pipeline_problem(&[f(300, &[]), so], 6, |id| id != 300), None);
    }

    #[test]
    fn passthrough_nbit_between_length_sensitive_filters() {
        let all = |_| true;
        let nop = f(NBIT, &[8, 1, 300, 1, 4, 0, 32, 0]);
        let shuffle = f(SHUFFLE, &[4]);
        for after in [f(DEFLATE, &[4]), f(FLETCHER32, &[])] {
            let why = passthrough_problem(&[shuffle.clone(), nop.clone(), after], all).unwrap();
            assert!(why.starts_with("nbit has nothing to do here"), "{why}");
        }
        assert_eq!(passthrough_problem(&[nop.clone(), f(DEFLATE, &[4])], all), None);
        assert_eq!(passthrough_problem(&[shuffle.clone(), nop.clone()], all), None);
        assert_eq!(passthrough_problem(&[shuffle.clone(), nop.clone(), f(SZIP, &[169, 8, 32, 32])], all), None);
        // nbit that packs bits returns its length
        assert_eq!(passthrough_problem(&[shuffle.clone(), f(NBIT, &[8, 0, 300, 1, 4, 0, 12, 0]), f(DEFLATE, &[4])], all), None);
        // integer scaleoffset keeping all 32 bits passes through too
        let so_nop = f(SCALEOFFSET, &[2, 32, 300, 0, 4, 1, 0, 0]);
        assert!(passthrough_problem(&[shuffle, so_nop, f(FLETCHER32, &[])], all).is_some());
    }

    #[test]
    fn passthrough_nbit_after_deflate_refused_for_writes() {
        let all = |_| true;
        let nop = f(NBIT, &[8, 1, 64, 1, 8, 0, 64, 0]);
        let deflate = f(DEFLATE, &[4]);
        // nbit last after deflate (conformance seed 36): passes on deflate's input length
        let why = passthrough_write_problem(&[deflate.clone(), nop.clone()], all).unwrap();
        assert!(why.starts_with("nbit has nothing to do here"), "{why}");
        // ... also with a filter after it that reads fine (shuffle sizes its output exactly)
        assert!(passthrough_write_problem(&[deflate.clone(), nop.clone(), f(SHUFFLE, &[8])], all).is_some());
        // an unavailable (skipped) filter between them changes nothing
        assert!(passthrough_write_problem(&[deflate.clone(), f(300, &[]), nop.clone()], |id| id != 300).is_some());
        // a filter that reports its own output length in between
        assert_eq!(passthrough_write_problem(&[deflate.clone(), f(FLETCHER32, &[]), nop.clone()], all), None);
        assert_eq!(passthrough_write_problem(&[deflate.clone(), f(SHUFFLE, &[8]), nop.clone()], all), None);
        // scaleoffset, szip, shuffle, fletcher32 before it: at least their output length
        assert_eq!(passthrough_write_problem(&[f(SCALEOFFSET, &[0, 3, 5, 1, 4, 0, 1, 0]), nop.clone()], all), None);
        assert_eq!(passthrough_write_problem(&[f(SZIP, &[169, 8, 64, 64]), nop.clone()], all), None);
        assert_eq!(passthrough_write_problem(&[nop.clone(), deflate.clone()], all), None);
        // every pass-through counts, not only the first
        assert!(passthrough_write_problem(&[nop.clone(), deflate.clone(), nop.clone()], all).is_some());
        // nbit that packs bits returns its own length
        assert_eq!(passthrough_write_problem(&[deflate.clone(), f(NBIT, &[8, 0, 64, 1, 8, 0, 12, 0])], all), None);
        // any non-zero client data [1] means nothing to pack, as libhdf5 reads it
        assert!(passthrough_write_problem(&[deflate, f(NBIT, &[8, 3080193, 64, 1, 8, 0, 64, 0])], all).is_some());
    }

    #[test]
    fn szip_needs_whole_pixels() {
        let all = |_| true;
        let sz64 = f(SZIP, &[169, 8, 64, 64]);
        let sz32 = f(SZIP, &[169, 8, 32, 64]);
        let sz8 = f(SZIP, &[169, 8, 8, 64]);
        assert_eq!(pipeline_problem(std::slice::from_ref(&sz64), 512, all), None);
        assert_eq!(pipeline_problem(&[f(SHUFFLE, &[8]), sz64.clone()], 512, all), None);
        assert_eq!(pipeline_problem(&[f(FLETCHER32, &[]), sz32.clone()], 256, all), None);
        assert!(pipeline_problem(&[f(FLETCHER32, &[]), sz64.clone()], 512, all).unwrap().contains("516 bytes, not whole 8-byte pixels"));
        assert!(pipeline_problem(&[f(SCALEOFFSET, &[0, 3, 64, 1, 8, 0, 0, 0]), sz64.clone()], 512, all).unwrap().contains("data-dependent"));
        assert!(pipeline_problem(&[f(DEFLATE, &[4]), sz32], 256, all).is_some());
        // 1-byte pixels: any length is whole pixels
        assert_eq!(pipeline_problem(&[f(SCALEOFFSET, &[2, 0, 64, 0, 1, 0, 0, 0]), sz8], 64, all), None);
        // nbit with nothing to pack (cd[1] = 1) leaves the length as it is
        assert_eq!(pipeline_problem(&[f(NBIT, &[8, 1, 64, 1, 8, 0, 64, 0]), f(FLETCHER32, &[]), f(SZIP, &[169, 8, 32, 64])], 256, all), None);
        assert!(pipeline_problem(&[f(NBIT, &[8, 0, 64, 1, 8, 0, 12, 0]), sz64], 512, all).is_some());
    }

    #[test]
    fn nbit_then_szip_on_whole_pixels_of_full_samples() {
        let all = |_| true;
        // nbit client data: [count, nothing to do, elements, atomic, size, order, precision, offset]
        let nbit = |n: u32, size: u32, prec: u32, off: u32| f(NBIT, &[8, 0, n, 1, size, 0, prec, off]);
        let szip = |bpp: u32| f(SZIP, &[169, 8, bpp, 1000]);
        // <u2 at 5 bits, offset 3: szip codes all 16 bits; 1000 * 5 / 8 + 1 = 626 bytes
        assert_eq!(pipeline_problem(&[nbit(1000, 2, 5, 3), szip(16)], 2000, all), None);
        assert_eq!(pipeline_problem(&[nbit(1000, 2, 5, 3), f(SHUFFLE, &[2]), szip(16)], 2000, all), None);
        // 4400 * 3 / 8 + 1 = 1651: a byte past the last whole pixel (libaec: decode fails)
        let why = pipeline_problem(&[nbit(4400, 2, 3, 8), szip(16)], 8800, all).unwrap();
        assert!(why.contains("szip after nbit receives 1651 bytes, not whole 2-byte pixels"), "{why}");
        // <i8 at 40 bits: 999 * 5 + 1 = 4996 bytes, + fletcher32's 4 = whole 8-byte pixels
        assert_eq!(pipeline_problem(&[nbit(999, 8, 40, 0), f(FLETCHER32, &[]), szip(64)], 7992, all), None);
        assert!(pipeline_problem(&[nbit(999, 8, 40, 0), szip(64)], 7992, all).unwrap().contains("4996 bytes"));
        // <i4 at 12 bits (1000 * 12 / 8 + 1 = 1501 bytes): szip keeps 12 of each 16 bits
        let why = pipeline_problem(&[nbit(1000, 4, 12, 0), szip(12)], 4000, all).unwrap();
        assert!(why.starts_with("szip codes 12-bit samples (the type's precision) in 2-byte pixels"), "{why}");
        assert!(why.contains("what nbit hands on uses every bit"), "{why}");
        // the same narrow szip first, or after filters with nothing to do, codes the elements
        assert_eq!(pipeline_problem(&[szip(12)], 4000, all), None);
        assert_eq!(pipeline_problem(&[f(NBIT, &[8, 1, 1000, 1, 4, 0, 32, 0]), szip(12)], 4000, all), None);
        // ... after shuffle, fletcher32 or deflate it does not (shuffle: wrong values, no error)
        for first in [f(SHUFFLE, &[4]), f(FLETCHER32, &[]), f(DEFLATE, &[4])] {
            assert!(pipeline_problem(&[first, szip(12)], 4000, all).unwrap().contains("keeps only their low 12 bits"));
        }
        assert!(pipeline_problem(&[f(SHUFFLE, &[4]), f(FLETCHER32, &[]), szip(20)], 4000, all).unwrap().contains("what shuffle, fletcher32 hand on"));
        // compound nbit, or client data not describing the chunk: length unknown
        assert!(pipeline_problem(&[f(NBIT, &[10, 0, 1000, 3, 4, 2, 1, 4, 0, 12]), szip(32)], 4000, all).unwrap().contains("data-dependent"));
        assert!(pipeline_problem(&[nbit(999, 4, 16, 16), szip(32)], 4000, all).unwrap().contains("data-dependent"));
        // a packed nbit's output is no longer the chunk's elements: scaleoffset after it is refused
        assert!(pipeline_problem(&[f(NBIT, &[8, 0, 1, 1, 1, 0, 7, 0]), f(SCALEOFFSET, &[2, 0, 1, 0, 1, 0, 0, 0])], 1, all).is_some());
    }
}
