//! C ABI of object navigation and description beyond `vh5_dataset_info`: the members of a
//! group (`vh5_group_members`), a link itself (`vh5_link_get`) and the parameters of a
//! dataset's filters (`vh5_dataset_filter_params`) and the memory type a dataset's elements are
//! moved with (`vh5_dataset_mem_type`).
//!
//! Thread safety: callable from any thread at once (libhdf5 calls run under vh5's lock).

use std::ffi::c_char;

use super::{bytes_arg, guard, null_arg, refuse_outputs_in_string, vh5_status};
use crate::hdf5 as h5;

/// `vh5_group_members` flag: list every object below the group (recursively, through hard
/// links) instead of the group's own links.
pub const VH5_GROUP_RECURSIVE: u32 = 1;

/// List the members of the group at path `group` (a NUL-terminated byte string, relative to
/// `loc`; `"/"` or `"."` for the root group) of the file or group `loc`.
///
/// The result is a sequence of records, each one kind byte, the member's name and a NUL byte,
/// in h5py's order: without flags, creation order when the group tracks it
/// (`H5P_CRT_ORDER_TRACKED`, indexed or not; h5py's `track_order=True`), else name order
/// (names compared byte by byte); with `VH5_GROUP_RECURSIVE`, name order at every level
/// (h5py's `visit` order, whatever order the groups track). Names are the bytes stored in the
/// file, never replaced: usually UTF-8, but files written by other tools may hold names that
/// are not (Latin-1 `"temp\xe9rature"`); such a name, or a path made of them, opens with
/// `vh5_dataset_open` / lists with `vh5_group_members` as it is. A name never holds a NUL
/// byte, so records split at NUL bytes. Kind bytes: `'g'` group, `'d'` dataset, `'t'` named
/// datatype, `'e'` external link (never followed), `'s'` soft link to nothing (dangling),
/// `'?'` anything else. Without flags the records are the group's links (names are link names;
/// a soft link has the kind of its target). With `VH5_GROUP_RECURSIVE` they are every hard
/// link below the group, names relative to it (`"sub"`, `"sub/x"`, ...; a group before its
/// members; soft and external links left out; an object reachable by two hard links appears
/// under both names).
///
/// Two-call protocol: `*len_out` receives the total size of the records in bytes. When `cap`
/// is at least that size they are copied to `buf`; otherwise nothing is written to `buf` and
/// the call returns `VH5_ERR_BUFFER_TOO_SMALL`, except that `buf` NULL with `cap` 0 is a size
/// query and returns `VH5_OK`.
///
/// Returns `VH5_OK`; `VH5_ERR_NULL_ARGUMENT` (`group` or `len_out` NULL, or `buf` NULL with
/// `cap` > 0); `VH5_ERR_INVALID_ARGUMENT` (unknown flag bits; the object at `group` is not a
/// group — the message says what it is, or which component of the path is a dataset;
/// `len_out` overlapping the bytes of `group`: nothing written, the message names the byte
/// offset; `buf` may hold `group`, which is read before anything is copied out);
/// `VH5_ERR_INVALID_HANDLE` (`loc` is not an open file or group id); `VH5_ERR_NOT_FOUND`
/// (naming the missing path component); `VH5_ERR_UNSUPPORTED` (the path goes through an
/// external link and `loc` was not opened with `VH5_FILE_ALLOW_EXTERNAL`);
/// `VH5_ERR_BUFFER_TOO_SMALL`; `VH5_ERR_HDF5`. `*len_out` is 0 on other failures.
/// Thread-safe.
///
/// # Safety
/// `group` must be NULL or a NUL-terminated string; `buf` NULL or valid for `cap` byte writes;
/// `len_out` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn vh5_group_members(loc: i64, group: *const c_char, flags: u32, buf: *mut u8, cap: usize, len_out: *mut usize) -> vh5_status {
    guard(|| {
        // `*len_out` is written first: it must not lie in the string it would change. (`buf`
        // may hold `group`: the name is read before the members are copied out.)
        // SAFETY: group is NULL or NUL-terminated (the caller's contract).
        unsafe { refuse_outputs_in_string("group", group, &[("len_out", len_out.cast_const().cast(), std::mem::size_of::<usize>())]) }?;
        if !len_out.is_null() {
            // SAFETY: len_out is valid for one write (the caller's contract).
            unsafe { *len_out = 0 };
        }
        if len_out.is_null() {
            return Err(null_arg("len_out"));
        }
        if flags & !VH5_GROUP_RECURSIVE != 0 {
            bail!(InvalidArgument, "argument `flags`: unknown bits {:#x} (defined: VH5_GROUP_RECURSIVE = 1)", flags & !VH5_GROUP_RECURSIVE);
        }
        if buf.is_null() && cap > 0 {
            return Err(null_arg("buf"));
        }
        // SAFETY: group is NULL or NUL-terminated (the caller's contract).
        let group = unsafe { bytes_arg(group, "group") }?;
        let s = h5::session();
        let members = h5::links::members(s.lock(), loc, group, flags & VH5_GROUP_RECURSIVE != 0)?;
        let mut out = Vec::new();
        for (kind, name) in members {
            out.push(kind);
            out.extend_from_slice(&name);
            out.push(0);
        }
        // SAFETY: the caller's contract for buf, cap and len_out (checked non-NULL above).
        unsafe { copy_out(&out, buf, cap, len_out, "the members") }
    })
}

/// The two-call protocol's second half: `*len_out = out.len()`; `out` copied to `buf` when
/// `cap` is large enough, nothing written when `buf` is NULL and `cap` 0 (a size query),
/// `BufferTooSmall` otherwise (`what` names the result in the message).
///
/// # Safety
/// `len_out` valid for one write; `buf` NULL or valid for `cap` byte writes.
unsafe fn copy_out(out: &[u8], buf: *mut u8, cap: usize, len_out: *mut usize, what: &str) -> crate::error::Result<()> {
    // SAFETY: len_out is valid for one write (the caller's contract).
    unsafe { *len_out = out.len() };
    if buf.is_null() && cap == 0 {
        return Ok(());
    }
    if cap < out.len() {
        bail!(BufferTooSmall, "argument `cap`: {cap} bytes, but {} bytes are needed for {what}", out.len());
    }
    // SAFETY: buf is valid for cap >= out.len() bytes (the caller's contract).
    unsafe { std::ptr::copy_nonoverlapping(out.as_ptr(), buf, out.len()) };
    Ok(())
}

/// Read the link `name` itself (a NUL-terminated byte path relative to the file or group
/// `loc`, e.g. `"grp/link"`; its last component is not followed): store its kind in
/// `*kind_out` and copy its value to `buf`. What h5py's `Group.get(name, getlink=True)` reads.
///
/// Kinds (ASCII bytes): `'h'` hard link (value empty), `'s'` soft link (value: the target
/// path, e.g. `"/data/x"`, then a NUL byte), `'e'` external link (value: the file name as
/// stored, a NUL byte, the object path in that file, a NUL byte; libhdf5's
/// `H5Lunpack_elink_val` layout of the link message, HDF5 File Format Specification, "Link
/// Message"), `'?'` a user-defined link class (value empty). Values are the bytes stored in
/// the file, never replaced: UTF-8 is not required. The link is not followed: a dangling soft
/// link or an external link to a missing file reads as well as any other (no file is opened,
/// whatever `VH5_FILE_ALLOW_EXTERNAL` says); a path through an external link *before* its
/// last component is followed only in files opened with `VH5_FILE_ALLOW_EXTERNAL`.
///
/// Two-call protocol as `vh5_group_members`: `*len_out` receives the value's size in bytes
/// (NUL bytes included; 0 for kinds `'h'` and `'?'`); the value is copied when `cap` is at
/// least that size, `buf` NULL with `cap` 0 is a size query (`VH5_OK`), a smaller `cap`
/// returns `VH5_ERR_BUFFER_TOO_SMALL` with nothing written to `buf` (`*kind_out` and
/// `*len_out` are set).
///
/// Returns `VH5_OK`; `VH5_ERR_NULL_ARGUMENT` (`name`, `kind_out` or `len_out` NULL, or `buf`
/// NULL with `cap` > 0); `VH5_ERR_INVALID_ARGUMENT` (`name` empty or the root group, which no
/// link reaches; a component before the last is not a group, naming it; `kind_out` or
/// `len_out` overlapping the bytes of `name`: nothing written, the message names the byte
/// offset; `buf` may hold `name`, which is read before anything is copied out);
/// `VH5_ERR_INVALID_HANDLE` (`loc` is not an open file or group id); `VH5_ERR_NOT_FOUND`
/// (naming the missing path component); `VH5_ERR_UNSUPPORTED` (the path goes through an
/// external link before its last component and `loc` was not opened with
/// `VH5_FILE_ALLOW_EXTERNAL`); `VH5_ERR_BUFFER_TOO_SMALL`; `VH5_ERR_HDF5` (libhdf5 could not
/// read the link, or its value is malformed). On failures other than
/// `VH5_ERR_BUFFER_TOO_SMALL` (and the overlap refusal), `*kind_out` and `*len_out` are 0.
/// Thread-safe.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string; `kind_out` and `len_out` NULL or valid for
/// one write; `buf` NULL or valid for `cap` byte writes.
#[no_mangle]
pub unsafe extern "C" fn vh5_link_get(loc: i64, name: *const c_char, kind_out: *mut u8, buf: *mut u8, cap: usize, len_out: *mut usize) -> vh5_status {
    guard(|| {
        // `*len_out` and `*kind_out` are written first: they must not lie in the string they
        // would change. (`buf` may hold `name`: it is read before the value is copied out.)
        let outputs = [("len_out", len_out.cast_const().cast(), std::mem::size_of::<usize>()), ("kind_out", kind_out.cast_const(), 1)];
        // SAFETY: name is NULL or NUL-terminated (the caller's contract).
        unsafe { refuse_outputs_in_string("name", name, &outputs) }?;
        if !len_out.is_null() {
            // SAFETY: len_out is valid for one write (the caller's contract).
            unsafe { *len_out = 0 };
        }
        if !kind_out.is_null() {
            // SAFETY: kind_out is valid for one write (the caller's contract).
            unsafe { *kind_out = 0 };
        }
        if len_out.is_null() {
            return Err(null_arg("len_out"));
        }
        if kind_out.is_null() {
            return Err(null_arg("kind_out"));
        }
        if buf.is_null() && cap > 0 {
            return Err(null_arg("buf"));
        }
        // SAFETY: name is NULL or NUL-terminated (the caller's contract).
        let name = unsafe { bytes_arg(name, "name") }?;
        let s = h5::session();
        let (kind, mut value) = h5::links::link_value(s.lock(), loc, name)?;
        if !value.is_empty() {
            value.push(0);
        }
        // SAFETY: kind_out is valid for one write (checked non-NULL above).
        unsafe { *kind_out = kind };
        // SAFETY: the caller's contract for buf, cap and len_out (checked non-NULL above).
        unsafe { copy_out(&value, buf, cap, len_out, "the link's value") }
    })
}

/// Copy the client data values (`cd_values`) of filter number `index` (0-based, pipeline
/// order as in `vh5_dataset_info.filter_id`) of the dataset `dset` into `values` (room for
/// `cap` entries) and store their number in `*n_out`. Deflate (gzip) has one value, the
/// compression level; szip has the options mask and pixels per block first; shuffle the item
/// size. When `cap` is smaller than the number, the first `cap` values are copied (`*n_out`
/// still says how many there are); `values` may be NULL when `cap` is 0.
///
/// Returns `VH5_OK`; `VH5_ERR_NULL_ARGUMENT` (`n_out` NULL, or `values` NULL with `cap` > 0);
/// `VH5_ERR_INVALID_HANDLE` (`dset` is not an open dataset id); `VH5_ERR_INVALID_ARGUMENT`
/// (no filter `index`); `VH5_ERR_HDF5`. `*n_out` is 0 on failure. Thread-safe.
///
/// # Safety
/// `values` must be NULL or valid for `cap` writes; `n_out` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn vh5_dataset_filter_params(dset: i64, index: u32, values: *mut u32, cap: usize, n_out: *mut usize) -> vh5_status {
    if !n_out.is_null() {
        // SAFETY: n_out is valid for one write (the caller's contract).
        unsafe { *n_out = 0 };
    }
    guard(|| {
        if n_out.is_null() {
            return Err(null_arg("n_out"));
        }
        if values.is_null() && cap > 0 {
            return Err(null_arg("values"));
        }
        let s = h5::session();
        let v = h5::dataset::filter_params(s.lock(), dset, index)?;
        let n = v.len().min(cap);
        if n > 0 {
            // SAFETY: values is valid for cap >= n writes (the caller's contract).
            unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), values, n) };
        }
        // SAFETY: n_out is valid for one write.
        unsafe { *n_out = v.len() };
        Ok(())
    })
}

/// Describe the memory type vh5 reads and writes the elements of the dataset `dset` with, as
/// UTF-8 JSON text (no NUL byte) in numpy's vocabulary:
/// `{"itemsize": n, "numpy": D, "fill_value": F, "file_type": T}`.
///
/// `itemsize` is `vh5_dataset_info.itemsize`. `D` describes the element layout: a numpy type
/// string in native byte order (`"<f8"`, `"|b1"`, `"|S10"` a fixed-length string, `"|V8"` an
/// opaque type (`"<M8[s]"`, `">m8[ms]"`... for an opaque type h5py tagged with a numpy
/// datetime64 / timedelta64 dtype, `"NUMPY:<M8[s]"`: its bytes are values of that dtype), `"<u2"` a bitfield, an enum as its base integer, `"<f16"` the C `long double`
/// of x86-64, numpy's longdouble); a compound as numpy's dict
/// form `{"names": [...], "formats": [D, ...], "offsets": [...], "itemsize": n}`; an array
/// type as `[D, [dims...]]`; `null` when some part has no exact numpy equivalent (time types,
/// member names that are not UTF-8, variable-length types). Numbers stored with padding bits
/// or a reduced precision are described by the native type libhdf5 converts them to, which
/// is what vh5 reads and writes: a 12-bit integer in 2 bytes is `"<i2"` (its values
/// converted to full 16-bit integers), not `null`. For
/// `VH5_DTYPE_OPAQUE` datasets this is libhdf5's native memory type (`H5Tget_native_type` of
/// the file type), NOT the file's layout: compound members in member order at native
/// alignment, numbers in native byte order, fixed-length strings NUL-padded like numpy's `S`
/// (space-padded and NUL-terminated strings are converted by libhdf5 as h5py does) (h5py's
/// dtype for the same dataset keeps the file's offsets and byte order, which may differ). It
/// is derived once per dataset id and stays the same across reads and writes through that id
/// (libhdf5 sorts a compound's members by offset when it first converts it, so another id of
/// the same dataset opened after a read may describe its members in offset order). Records in any other layout moved as
/// `VH5_DTYPE_OPAQUE` of the same item size would be read or written with their fields in
/// the wrong places: a binding compares its record type with `D` first. `F` is the fill value
/// as lowercase hex of one element of this type (`itemsize` bytes, any size), or `null` when
/// none is defined or the type cannot be read. `T` is a human-readable description of the
/// file type (what `vh5 info` prints, e.g. `"complex128 (HDF5 complex number type of float64
/// (big-endian))"`), for messages only: its wording may change.
///
/// Two-call protocol as `vh5_group_members`: `*len_out` receives the text's size in bytes; it
/// is copied when `cap` is at least that size; `buf` NULL with `cap` 0 is a size query
/// (`VH5_OK`); a smaller `cap` returns `VH5_ERR_BUFFER_TOO_SMALL` with nothing written.
///
/// Returns `VH5_OK`; `VH5_ERR_NULL_ARGUMENT` (`len_out` NULL, or `buf` NULL with `cap` > 0);
/// `VH5_ERR_INVALID_HANDLE` (`dset` is not an open dataset id); `VH5_ERR_BUFFER_TOO_SMALL`;
/// `VH5_ERR_HDF5`. `*len_out` is 0 on other failures. Thread-safe.
///
/// # Safety
/// `buf` must be NULL or valid for `cap` byte writes; `len_out` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn vh5_dataset_mem_type(dset: i64, buf: *mut u8, cap: usize, len_out: *mut usize) -> vh5_status {
    if !len_out.is_null() {
        // SAFETY: len_out is valid for one write (the caller's contract).
        unsafe { *len_out = 0 };
    }
    guard(|| {
        if len_out.is_null() {
            return Err(null_arg("len_out"));
        }
        if buf.is_null() && cap > 0 {
            return Err(null_arg("buf"));
        }
        let s = h5::session();
        let text = h5::mem_layout::mem_type_json(s.lock(), dset)?;
        // SAFETY: the caller's contract for buf, cap and len_out (checked non-NULL above).
        unsafe { copy_out(text.as_bytes(), buf, cap, len_out, "the description") }
    })
}
