//! Checks shared by every many-slice transfer between a caller's array and a dataset
//! (reads and writes): flag bits, the array's description against the table, and the
//! memory type libhdf5 moves elements as, and the error either returns to its caller. One
//! place, so reads and writes cannot drift apart.

use hdf5_sys::h5i::hid_t;

use super::broken_conversions::{linked_bug, record_write_bug};
use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::geometry::{ArrayLayout, SliceTable};
use crate::hdf5::lock::H5Lock;
use crate::hdf5::types::{conversion_exists, mem_type_like, mem_type_of, mem_type_swapped, MemType, TypeInfo};

/// Flag: versioned-hdf5 semantics: counts silently clipped to both extents, rows that end up
/// copying nothing are skipped.
pub const SLICES_CLIP: u32 = 1;
/// Flag: let libhdf5 convert the file type into the destination dtype.
pub const SLICES_CONVERT: u32 = 2;
/// Flag (reads only): the destination's elements are in the byte order opposite to the host's.
pub const SLICES_SWAPPED: u32 = 4;

/// `e`, the failure of a read or write of the dataset `dset`, as it leaves the transfer: a
/// missing-filter error made deep in libhdf5 names the dataset
/// ([`crate::hdf5::filter_support::name_dataset_of_missing_filter`]), and a failure because
/// `dset` was closed during the call says so ([`crate::hdf5::dataset::closed_during_call`]),
/// and an external raw data file libhdf5 could not open is named, as resolved, with the
/// dataset and libhdf5's rule for relative names
/// ([`crate::hdf5::external::explain_external_open_failure`]).
pub(crate) fn transfer_error(dset: hid_t, e: Error) -> Error {
    let e = crate::hdf5::external::explain_external_open_failure(dset, e);
    crate::hdf5::dataset::closed_during_call(dset, crate::hdf5::filter_support::name_dataset_of_missing_filter(dset, e))
}

/// Which way elements move; it only changes the wording of errors and the direction of a
/// libhdf5 conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// dataset -> caller's array (the array is the "destination").
    Read,
    /// caller's array -> dataset (the array is the "source").
    Write,
}

impl Direction {
    fn array(self) -> &'static str {
        match self {
            Direction::Read => "destination",
            Direction::Write => "source",
        }
    }
}

/// The flag bits of a transfer between an array and a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flags {
    pub clip: bool,
    pub convert: bool,
    /// The array's elements are in the byte order opposite to the host's (reads only).
    pub swapped: bool,
}

/// The [`Flags`] of `flags`; unknown bits, and `VH5_SLICES_SWAPPED` on a write, are
/// `InvalidArgument`.
pub(crate) fn parse_flags(dir: Direction, flags: u32) -> Result<Flags> {
    let known = match dir {
        Direction::Read => SLICES_CLIP | SLICES_CONVERT | SLICES_SWAPPED,
        Direction::Write => SLICES_CLIP | SLICES_CONVERT,
    };
    if flags & !known != 0 {
        if dir == Direction::Write && flags & SLICES_SWAPPED != 0 {
            bail!(InvalidArgument, "argument `flags`: VH5_SLICES_SWAPPED (4) applies to reads only; give writes a source in native byte order");
        }
        bail!(InvalidArgument, "argument `flags`: unknown bits {:#x} (defined: VH5_SLICES_CLIP = 1, VH5_SLICES_CONVERT = 2, VH5_SLICES_SWAPPED = 4 for reads)", flags & !known);
    }
    Ok(Flags { clip: flags & SLICES_CLIP != 0, convert: flags & SLICES_CONVERT != 0, swapped: flags & SLICES_SWAPPED != 0 })
}

/// The caller's array against the table: axes, item size against the dtype, and the buffer
/// length the layout was built for (`InvalidArgument`).
pub(crate) fn check_array(dir: Direction, table: &SliceTable, layout: &ArrayLayout, dtype: Dtype, buf_len: usize) -> Result<()> {
    let n = layout.shape.len();
    if table.ndim != n {
        let what = match dir {
            Direction::Read => "destination",
            Direction::Write => "source array",
        };
        bail!(InvalidArgument, "slice table has {} columns but the {what} has {n} axes", table.ndim);
    }
    if let Some(sz) = dtype.itemsize() {
        if sz != layout.itemsize {
            bail!(InvalidArgument, "{} itemsize {} does not match its dtype {} ({sz} bytes)", dir.array(), layout.itemsize, dtype.name());
        }
    }
    if layout.base_len != buf_len {
        bail!(InvalidArgument, "internal: layout base_len {} != buffer length {buf_len}", layout.base_len);
    }
    Ok(())
}

/// `Dtype` error when the linked libhdf5 gets some values of the conversion from `from`
/// (libhdf5 type `src`) to `to` (type `dst`) wrong (the rules and their evidence:
/// `transfer::broken_conversions`): names the libhdf5, the pair, what goes wrong and what to
/// do instead for the direction `dir`.
fn refuse_broken_conversion(l: &H5Lock, dir: Direction, src: hid_t, dst: hid_t, from: Dtype, to: Dtype) -> Result<()> {
    let Some(bug) = linked_bug(l, src, dst, from, to) else {
        return Ok(());
    };
    let instead = match dir {
        Direction::Read => format!("read the dataset as {} (no conversion) and convert it to {} with numpy's astype instead", from.name(), to.name()),
        Direction::Write => format!("convert the array to {} with numpy's astype and write that instead", to.name()),
    };
    bail!(Dtype, "libhdf5 {} cannot convert {} to {}: {}; {instead}", crate::hdf5::version::version_text(l), from.name(), to.name(), bug.what())
}

/// `Dtype` error when writing records of the native memory type `mem` into the record file
/// type `ftype` would make libhdf5 convert a member wrongly ([`record_write_bug`]: float16
/// members, whose native type in libhdf5 1.10 is float32).
fn refuse_broken_member(l: &H5Lock, ftype: hid_t, mem: hid_t) -> Result<()> {
    let Some(b) = record_write_bug(l, ftype, mem)? else {
        return Ok(());
    };
    bail!(
        Dtype,
        "libhdf5 {} cannot write these records: the record member `{}` is {} in the dataset and {} in vh5's memory layout, and {}; \
         vh5 does not write records with such members with this libhdf5",
        crate::hdf5::version::version_text(l),
        b.path,
        b.to.name(),
        b.from.name(),
        b.bug.what()
    )
}

/// The dataset a transfer moves elements of: its id, file type and the type's classification.
#[derive(Clone, Copy)]
pub(crate) struct DatasetType<'a> {
    pub dset: hid_t,
    pub ftype: hid_t,
    pub finfo: &'a TypeInfo,
}

/// The memory type to move elements of the dataset `file` (file type `ftype`, classified as
/// `finfo`) to or from an array of `dtype` with `itemsize` bytes per element.
///
/// Same dtype: the file type's native memory type (big-endian files are converted by byte
/// order only), or with `flags.swapped` the same type in the other byte order (see
/// [`mem_type_swapped`]). Different dtypes: `Dtype` error, unless `convert` and libhdf5 has a
/// conversion path in the transfer's direction (`flags.convert`) that it does not get wrong
/// ([`refuse_broken_conversion`]). Types vh5 does not move (variable-length,
/// references): `Unsupported`.
pub(crate) fn memory_type(l: &H5Lock, dir: Direction, file: DatasetType<'_>, dtype: Dtype, itemsize: usize, flags: Flags) -> Result<MemType> {
    let DatasetType { dset, ftype, finfo } = file;
    let Flags { convert, swapped, .. } = flags;
    let fdesc = &finfo.description;
    let side = dir.array();
    Ok(match finfo.dtype {
        None => bail!(
            Unsupported,
            "dataset type not supported ({}): vh5 {} fixed-size types only",
            finfo.unsupported.as_deref().unwrap_or("unsupported type"),
            if dir == Direction::Read { "reads" } else { "writes" }
        ),
        Some(fd) if fd == dtype => {
            if fd == Dtype::Opaque && finfo.mem_itemsize != itemsize {
                bail!(Dtype, "dataset type ({fdesc}) has {} bytes per element in memory but the {side} itemsize is {itemsize}", finfo.mem_itemsize);
            }
            if swapped {
                mem_type_swapped(l, fd, finfo.native_complex)?
            } else {
                let m = mem_type_of(l, finfo, dset)?;
                if fd == Dtype::Opaque && dir == Direction::Write {
                    refuse_broken_member(l, ftype, m.id())?;
                }
                m
            }
        }
        Some(fd) if convert && dtype != Dtype::Opaque => {
            let m = if swapped { mem_type_swapped(l, dtype, finfo.native_complex)? } else { mem_type_like(l, dtype, finfo)? };
            let (src, dst, from, to) = if dir == Direction::Read { (ftype, m.id(), fd, dtype) } else { (m.id(), ftype, dtype, fd) };
            refuse_broken_conversion(l, dir, src, dst, from, to)?;
            let raw = raw_bytes_hint(finfo, side);
            match dir {
                Direction::Read if !conversion_exists(l, ftype, m.id()) => {
                    bail!(Dtype, "libhdf5 has no conversion from the dataset type ({fdesc}) to {}{raw}", dtype.name())
                }
                Direction::Write if !conversion_exists(l, m.id(), ftype) => {
                    bail!(Dtype, "libhdf5 has no conversion from {} to the dataset type ({fdesc}){raw}", dtype.name())
                }
                _ => m,
            }
        }
        Some(fd) => {
            // Suggest VH5_SLICES_CONVERT only where libhdf5 has the conversion (it converts a
            // bitfield only to another bitfield, so never to an integer array).
            let convertible = dtype != Dtype::Opaque
                && mem_type_like(l, dtype, finfo).is_ok_and(|m| if dir == Direction::Read { conversion_exists(l, ftype, m.id()) } else { conversion_exists(l, m.id(), ftype) });
            let hint = if convertible {
                " (pass VH5_SLICES_CONVERT to let libhdf5 convert)".to_string()
            } else if dtype != Dtype::Opaque {
                format!(" (libhdf5 has no conversion for it{})", raw_bytes_hint(finfo, side))
            } else {
                String::new()
            };
            let is = if fd == Dtype::Opaque { "has" } else { "is" };
            match dir {
                Direction::Read => bail!(Dtype, "dtype mismatch: dataset {is} {fdesc}, destination is {}{hint}", dtype.name()),
                Direction::Write => bail!(Dtype, "dtype mismatch: source is {}, dataset {is} {fdesc}{hint}", dtype.name()),
            }
        }
    })
}

/// The hint for an array whose dtype libhdf5 cannot convert to or from the dataset type
/// `finfo`: for a type vh5 moves as raw bytes, `; use an opaque ...` of its memory itemsize
/// (empty for other types).
fn raw_bytes_hint(finfo: &TypeInfo, side: &str) -> String {
    if finfo.dtype != Some(Dtype::Opaque) {
        return String::new();
    }
    format!("; use an opaque {side} (VH5_DTYPE_OPAQUE, itemsize {}) for the raw bytes", finfo.mem_itemsize)
}
