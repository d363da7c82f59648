//! Scaleoffset chunks of 4-byte floats that libhdf5 writes but cannot decode.
//!
//! libhdf5's scaleoffset filter in float D-scale mode (`H5Pset_scaleoffset(H5Z_SO_FLOAT_DSCALE,
//! D)`, `H5Zscaleoffset.c`, `H5Z_scaleoffset_precompress_3`) finds the minimum and maximum of
//! a chunk's values (those further than 10^-D from the fill value when one is defined,
//! starting from the first such value) and sizes the packed values from
//! `llround(max * 10^D - min * 10^D)`, computed in the type (`float` here). When that
//! difference is NaN - the chunk's first counted value is NaN, or all its counted values are
//! the same infinity (or overflow to it when scaled) - `llround` gives `LLONG_MIN` on x86-64
//! and the chunk is stored with a header of 64 bits per value (minval the infinity): more than
//! a 4-byte float has. No libhdf5 decodes such a chunk: 2.0.0 and 2.2.0 refuse it ("minimum
//! number of bits exceeds size of type"), 1.14.6 too; 1.10.8 has no such check and decodes it
//! as zeros, silently (conformance seed 38 at 8000 cases: a row of `>f4` holding inf). 8-byte
//! floats are not affected (64 bits is their full precision: stored as they are). The encoder
//! is the same in every version (2.2.0 included).
//!
//! So vh5:
//! - reads (`chunk_guard::ReadGuard`, with a libhdf5 older than 2.0.0, whose decoder
//!   does not check the header): before each `H5Dread` reaches a chunk of such a dataset it
//!   fetches the chunk's stored bytes, undoes the filters after scaleoffset (deflate, shuffle,
//!   fletcher32; an nbit with nothing to pack passes them on) and refuses the read (`Hdf5`,
//!   naming the dataset, the chunk and why) when the header says more than 32 bits per value;
//! - writes ([`WriteGuard`], every libhdf5): checks every chunk it is about to write whole
//!   (vh5 writes each touched chunk once, from a buffer holding all its elements inside the
//!   extent) with libhdf5's own rule and refuses (`Unsupported`) a chunk that would be stored
//!   that way, before anything of it is written. Elements of an edge chunk outside the extent
//!   count as the fill value (what libhdf5 puts there).

use hdf5_sys::h5i::hid_t;

use super::chunk::{convert, fill_element, ChunkLayout};
use super::handle::dataset_name;
use super::lock::H5Lock;
use crate::error::Result;

const SCALEOFFSET: i32 = hdf5_sys::h5z::H5Z_FILTER_SCALEOFFSET;

/// Bytes of the header libhdf5's scaleoffset filter writes before the packed values.
const HEADER_BYTES: usize = 21;

/// The index in the pipeline and the client data of a float D-scale scaleoffset filter on
/// 4-byte values, the one kind that can store chunks no libhdf5 decodes.
fn float4_dscale(layout: &ChunkLayout) -> Option<(usize, &[u32])> {
    let i = layout.filters.iter().position(|f| f.id == SCALEOFFSET)?;
    let cd = &layout.filters[i].cd_values;
    // [0] scale type 0 = D-scale, [3] class 1 = float, [4] element size (checked by chunk_layout)
    (cd.len() >= 8 && cd[0] == 0 && cd[3] == 1 && cd[4] == 4).then_some((i, cd.as_slice()))
}

/// Whether libhdf5's scaleoffset encoder stores the chunk holding `values` (native 4-byte
/// floats, all of the chunk's elements) with more bits per value than a float has: the rule
/// of `H5Z_scaleoffset_precompress_3` / `_max_min_3` / `_check_3` for `float`, scale factor
/// `d`, `fill` when the dataset's fill value is defined (values within 10^-d of it do not
/// count; none counted gives 1 bit).
pub fn stored_unreadable(values: impl IntoIterator<Item = f32>, fill: Option<f32>, d: i32) -> bool {
    let tol = 10f64.powi(-d);
    // `fabs((double)(buf[i] - filval)) < pow(10.0, -D_val)`: a NaN difference counts
    let mut counted = values.into_iter().filter(|&x| fill.is_none_or(|f| (x - f).is_nan() || ((x - f) as f64).abs() >= tol));
    let Some(first) = counted.next() else { return false };
    let (mut min, mut max) = (first, first);
    for x in counted {
        if x > max {
            max = x;
        }
        if x < min {
            min = x;
        }
    }
    let scale = 10f32.powi(d);
    (max * scale - min * scale).is_nan()
}

/// The position in the pipeline of a float D-scale scaleoffset filter on 4-byte values (see
/// `float4_dscale`): the chunks a read reaches are checked by
/// `chunk_guard::ReadGuard` with [`check_float4_bits`].
pub fn float4_dscale_index(layout: &ChunkLayout) -> Option<usize> {
    float4_dscale(layout).map(|(i, _)| i)
}

/// The position in the pipeline of a scaleoffset filter and the most bits per value its
/// elements have (8 x the element size of its client data, 1 to 8 bytes): a chunk header
/// saying more is refused by libhdf5 >= 1.14.6 ("minimum number of bits exceeds size of
/// type"); 1.10 decodes it into values that are not the data (a damaged integer chunk read as
/// the same wrong value in every element). Checked by `chunk_guard::ReadGuard` with
/// [`check_bits`]. `None` for an integer scaleoffset keeping all its elements' bits: libhdf5
/// passes such chunks through unchanged, with no header (`H5Z__filter_scaleoffset`, "no need
/// to process data", both directions).
pub fn bits_limit(layout: &ChunkLayout) -> Option<(usize, u32)> {
    let i = layout.filters.iter().position(|f| f.id == SCALEOFFSET)?;
    if super::filter_support::passes_through(&layout.filters[i]) {
        return None;
    }
    let size = *layout.filters[i].cd_values.get(4)?;
    (1..=8).contains(&size).then_some((i, 8 * size))
}

/// Refuse (`Hdf5`) the scaleoffset chunk at `origin` of `dset` whose header says `bits` per
/// value when that is more than its elements have (`max`, see [`bits_limit`]).
pub fn check_bits(lock: &H5Lock, dset: hid_t, origin: &[u64], bits: u32, max: u32) -> Result<()> {
    if bits > max {
        bail!(
            Hdf5,
            "dataset {}: the scaleoffset chunk at {origin:?} says {bits} bits per value, more than its {}-byte elements have: the chunk is corrupted \
             (libhdf5 >= 1.14.6 refuses it; libhdf5 {}, linked here, would decode values that are not the data): vh5 refuses the read",
            dataset_name(lock, dset),
            max / 8,
            super::version::version_text(lock)
        );
    }
    Ok(())
}

/// The most bytes libhdf5's scaleoffset encoder stores for a chunk of `elems` values (its
/// header and 64 bits per value).
pub fn largest_output(elems: u64) -> u64 {
    elems.saturating_mul(8).saturating_add(HEADER_BYTES as u64 + 1)
}

/// Refuse (`Hdf5`) the scaleoffset chunk at `origin` of `dset` (float D-scale, 4-byte floats)
/// whose header says `bits` per value when that is more than a 4-byte float has.
pub fn check_float4_bits(lock: &H5Lock, dset: hid_t, origin: &[u64], bits: u32) -> Result<()> {
    if bits > 32 {
        bail!(
            Hdf5,
            "dataset {}: the scaleoffset chunk at {origin:?} says {bits} bits per value, more than its 4-byte floats have: libhdf5 stores a chunk so \
             when its first counted value is NaN or all its counted values are the same infinity, and no libhdf5 decodes it (2.0 and 2.2 report \
             an error; libhdf5 {}, linked here, would return zeros): vh5 refuses the read",
            dataset_name(lock, dset),
            super::version::version_text(lock)
        );
    }
    Ok(())
}

/// Checks the chunks a write is about to store whole (see the module docs). One per write.
pub struct WriteGuard {
    dset: hid_t,
    mem_type: hid_t,
    mem_itemsize: usize,
    /// Whether `mem_type` is the native float (no conversion needed).
    native: bool,
    scale: i32,
    fill: Option<f32>,
    /// Elements per chunk (libhdf5 encodes all of them, outside the extent too).
    chunk_elems: u64,
    values: Vec<u8>,
    bkg: Vec<u8>,
}

impl WriteGuard {
    /// A guard for writes of elements of `mem_type` (`mem_itemsize` bytes) into `dset`, when
    /// its pipeline has a float D-scale scaleoffset on 4-byte values; `None` otherwise.
    pub fn new(lock: &H5Lock, dset: hid_t, layout: &ChunkLayout, mem_type: hid_t, mem_itemsize: usize) -> Result<Option<WriteGuard>> {
        let (Some(chunk), Some((_, cd))) = (&layout.chunk, float4_dscale(layout)) else { return Ok(None) };
        let float = *hdf5_sys::h5t::H5T_NATIVE_FLOAT;
        let fill = if cd[7] == 1 {
            let b = fill_element(lock, dset, float, 4)?;
            Some(f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        } else {
            None
        };
        let native = super::chunk::types_equal(lock, mem_type, float);
        Ok(Some(WriteGuard { dset, mem_type, mem_itemsize, native, scale: cd[1] as i32, fill, chunk_elems: chunk.iter().product(), values: Vec::new(), bkg: Vec::new() }))
    }

    /// Refuse (`Unsupported`) to store the chunk at `origin` whose elements inside the
    /// extent are `buf` (C order, `mem_type`) when libhdf5 would store it undecodable.
    pub fn check(&mut self, lock: &H5Lock, origin: &[u64], buf: &[u8]) -> Result<()> {
        let elems = buf.len() / self.mem_itemsize.max(1);
        let (chunk_elems, fill, scale) = (self.chunk_elems, self.fill, self.scale);
        let values = self.floats(lock, buf)?.chunks_exact(4).map(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
        // outside the extent: the fill value (zeros when none is defined)
        let outside = chunk_elems.saturating_sub(elems as u64).min(1) as usize;
        let values = values.chain(std::iter::repeat_n(fill.unwrap_or(0.0), outside));
        if stored_unreadable(values, fill, scale) {
            bail!(
                Unsupported,
                "dataset {}: the chunk at {origin:?} would be stored by libhdf5's scaleoffset filter with 64 bits per value, more than its 4-byte floats \
                 have (its first value apart from the fill value is NaN, or all of them are the same infinity), which no libhdf5 decodes (1.10 reads \
                 zeros, 2.x an error): vh5 refuses to write it (nothing of this chunk was written)",
                dataset_name(lock, self.dset)
            );
        }
        Ok(())
    }
}

impl WriteGuard {
    /// `buf` (elements of `mem_type`) as native floats, converted as `H5Dwrite` converts.
    fn floats<'a>(&'a mut self, lock: &H5Lock, buf: &'a [u8]) -> Result<&'a [u8]> {
        if self.native {
            return Ok(buf);
        }
        let elems = buf.len() / self.mem_itemsize.max(1);
        self.values.clear();
        self.values.extend_from_slice(buf);
        self.values.resize(elems * self.mem_itemsize.max(4), 0);
        self.bkg.clear();
        self.bkg.resize(elems * 4, 0);
        convert(lock, self.mem_type, *hdf5_sys::h5t::H5T_NATIVE_FLOAT, elems, &mut self.values, &mut self.bkg)?;
        Ok(&self.values[..elems * 4])
    }

    /// For writes that libhdf5 merges into the chunks itself (`H5Dwrite` of a row, used when
    /// the elements need a type conversion), where vh5 never holds a whole chunk: refuse
    /// (`Unsupported`) a row `buf` (elements of `mem_type`) holding a value that is not a
    /// finite float once converted. Stricter than [`WriteGuard::check`] (an infinity among
    /// finite values is stored readably), but no chunk is stored undecodable from the row's
    /// values; rows written before stay written.
    pub fn check_row(&mut self, lock: &H5Lock, row: usize, buf: &[u8]) -> Result<()> {
        if self.floats(lock, buf)?.chunks_exact(4).all(|b| f32::from_ne_bytes([b[0], b[1], b[2], b[3]]).is_finite()) {
            return Ok(());
        }
        bail!(
            Unsupported,
            "dataset {}: row {row} holds a value that is not a finite 4-byte float once converted: libhdf5's scaleoffset filter may store its chunk with \
             64 bits per value, which no libhdf5 decodes, and a converted write leaves the chunk to libhdf5 (write float32 values to have vh5 check each \
             chunk): vh5 refuses the row",
            dataset_name(lock, self.dset)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::stored_unreadable;

    #[test]
    fn libhdf5s_rule_for_float_chunks() {
        let inf = f32::INFINITY;
        let nan = f32::NAN;
        // fill value defined (0): values within 10^-3 of it do not count
        let fill = Some(0.0);
        assert!(stored_unreadable([inf; 5], fill, 3));
        assert!(stored_unreadable([-inf, -inf, 0.0, 0.0], fill, 3));
        assert!(stored_unreadable([0.0, inf, 0.0, inf], fill, 3));
        assert!(stored_unreadable([nan, 1.0, 2.0], fill, 3));
        // the first COUNTED value
        assert!(stored_unreadable([0.0, nan, 1.0], fill, 3));
        // huge values that overflow to the same infinity when scaled
        assert!(stored_unreadable([3e38, 3e38], fill, 3));
        // readable: finite range, inf with finite values (full precision), both infinities,
        // NaN after the first counted value (libhdf5 stores another value, readably)
        assert!(!stored_unreadable([1.0, 2.0, 3.0], fill, 3));
        assert!(!stored_unreadable([1.0, inf, 2.0], fill, 3));
        assert!(!stored_unreadable([inf, 1.0], fill, 3));
        assert!(!stored_unreadable([-inf, inf], fill, 3));
        assert!(!stored_unreadable([1.0, nan, 2.0], fill, 3));
        // all fill
        assert!(!stored_unreadable([0.0, 0.0], fill, 3));
        // no fill value: every value counts
        assert!(stored_unreadable([inf, inf], None, 3));
        assert!(!stored_unreadable([0.0, inf], None, 3));
        assert!(stored_unreadable([nan, 0.0], None, 3));
        // fill value inf: inf - inf is NaN, not within 10^-3: infinities count all the same
        assert!(stored_unreadable([inf, inf], Some(inf), 3));
        assert!(!stored_unreadable([inf, 1.0, 2.0], Some(inf), 3));
    }
}
