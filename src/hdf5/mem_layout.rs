//! The memory type vh5 moves a dataset's elements with, described as a numpy dtype: what a
//! binding compares a structured (record) array with before moving records as raw bytes.
//!
//! vh5 reads and writes [`Dtype::Opaque`] types (compounds, arrays, strings, enums, ...) as
//! raw records of libhdf5's native memory type (`H5Tget_native_type` of the file type). That
//! layout is not the file's: members are laid out in member order with native alignment
//! (a compound stored as `a` at 4, `b` at 0 has `a` at 0, `b` at 4 in memory), numbers are in
//! native byte order, and float16 members may become float32 (libhdf5 1.10). A caller's
//! record array is only right when its layout is exactly this one; the description lets the
//! caller check that (and refuse any other layout rather than mix fields up).
//!
//! The description is numpy's dtype vocabulary in JSON ([`describe`]): a type string such as
//! `"<i4"`, `"|b1"`, `"|S10"`, `"|V8"` (`">M8[s]"` for h5py's datetime64 / timedelta64 opaque
//! types: the dtype of their `NUMPY:` tag); a compound as numpy's dict form `{"names": [...],
//! "formats": [...], "offsets": [...], "itemsize": n}`; an array type as `[base, [dims...]]`;
//! `null` when some part has no exact numpy equivalent (time types, non-UTF-8 member names,
//! bitfields with padding bits, ...). A number of reduced precision (a 12-bit integer, say) is
//! described by its native memory type (`"<i2"`), the type libhdf5 converts it to. The native
//! `long double` is numpy's longdouble (`"<f16"` on x86-64).

use std::ffi::{c_uint, CStr};

use hdf5_sys::h5i::{hid_t, H5I_type_t};
use hdf5_sys::h5t::*;
use serde_json::{json, Value};

use super::dataset::{dataset_info, expect_kind};
use super::handle::Handle;
use super::lock::H5Lock;
use super::types::{classify, mem_type_of};
use crate::dtype::Dtype;
use crate::error::Result;

/// The numpy type string of a plain numeric dtype in native byte order (`"<f8"`, `"|u1"`).
fn numeric_typestr(d: Dtype) -> Option<String> {
    let (kind, size) = match d {
        Dtype::Bool => ('b', 1),
        Dtype::Int8 => ('i', 1),
        Dtype::Int16 => ('i', 2),
        Dtype::Int32 => ('i', 4),
        Dtype::Int64 => ('i', 8),
        Dtype::UInt8 => ('u', 1),
        Dtype::UInt16 => ('u', 2),
        Dtype::UInt32 => ('u', 4),
        Dtype::UInt64 => ('u', 8),
        Dtype::Float16 => ('f', 2),
        Dtype::Float32 => ('f', 4),
        Dtype::Float64 => ('f', 8),
        Dtype::Complex64 => ('c', 8),
        Dtype::Complex128 => ('c', 16),
        Dtype::Opaque => return None,
    };
    Some(format!("{}{kind}{size}", order_char(size)))
}

/// numpy's byte-order character for a native type of `size` bytes.
fn order_char(size: usize) -> char {
    if size == 1 {
        '|'
    } else if cfg!(target_endian = "little") {
        '<'
    } else {
        '>'
    }
}

/// Member `i`'s name as UTF-8, `None` when it is not (numpy field names are str).
fn utf8_member_name(t: hid_t, i: c_uint) -> Option<String> {
    // SAFETY: valid compound id under the caller's lock; the string is libhdf5's allocation,
    // freed with H5free_memory.
    unsafe {
        let p = H5Tget_member_name(t, i);
        if p.is_null() {
            return None;
        }
        let s = CStr::from_ptr(p).to_str().ok().map(str::to_owned);
        hdf5_sys::h5::H5free_memory(p as *mut _);
        s
    }
}

/// The numpy description of the memory type `t` (see the module docs); `None` when some part
/// of it has no exact numpy equivalent.
pub fn describe(lock: &H5Lock, t: hid_t) -> Result<Option<Value>> {
    let info = classify(lock, t)?;
    if info.unsupported.is_some() {
        return Ok(None);
    }
    if let Some(d) = info.dtype.filter(|&d| d != Dtype::Opaque) {
        // A plain number (also h5py's bool enum and {r, i} complex compound) in native order;
        // `plain` false means its bits are not numpy's (never the case for a native type).
        return Ok(if info.plain { numeric_typestr(d).map(Value::String) } else { None });
    }
    let size = info.file_itemsize;
    if let Some(tagged) = numpy_time_tag(lock, t, size)? {
        return Ok(Some(tagged));
    }
    // SAFETY: t is a valid datatype id; we hold the lock; every id opened is owned by a Handle.
    unsafe {
        Ok(match H5Tget_class(t) {
            H5T_class_t::H5T_STRING => Some(json!(format!("|S{size}"))),
            H5T_class_t::H5T_OPAQUE => Some(json!(format!("|V{size}"))),
            // C `long double` (x87 extended on x86-64): numpy's longdouble is the same C type.
            H5T_class_t::H5T_FLOAT if super::error::check(lock, H5Tequal(t, *H5T_NATIVE_LDOUBLE), "H5Tequal")? > 0 => Some(json!(format!("{}f{size}", order_char(size)))),
            H5T_class_t::H5T_BITFIELD if matches!(size, 1 | 2 | 4 | 8) && H5Tget_precision(t) == 8 * size && H5Tget_offset(t) == 0 => {
                Some(json!(format!("{}u{size}", order_char(size))))
            }
            H5T_class_t::H5T_ENUM => {
                let base = Handle::new(lock, H5Tget_super(t), "H5Tget_super")?;
                describe(lock, base.id())?
            }
            H5T_class_t::H5T_ARRAY => {
                let base = Handle::new(lock, H5Tget_super(t), "H5Tget_super")?;
                let nd = super::error::check(lock, H5Tget_array_ndims(t), "H5Tget_array_ndims")? as usize;
                let mut dims = vec![0u64; nd.max(1)];
                super::error::check(lock, H5Tget_array_dims2(t, dims.as_mut_ptr()), "H5Tget_array_dims2")?;
                dims.truncate(nd);
                describe(lock, base.id())?.map(|b| json!([b, dims]))
            }
            H5T_class_t::H5T_COMPOUND => compound(lock, t, size)?,
            _ => None,
        })
    }
}

/// numpy's dict form of the compound memory type `t` of `size` bytes.
fn compound(lock: &H5Lock, t: hid_t, size: usize) -> Result<Option<Value>> {
    // SAFETY: t is a valid compound id; we hold the lock; member types are owned by Handles.
    unsafe {
        let n = super::error::check(lock, H5Tget_nmembers(t), "H5Tget_nmembers")? as c_uint;
        let (mut names, mut formats, mut offsets) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..n {
            let Some(name) = utf8_member_name(t, i) else { return Ok(None) };
            let m = Handle::new(lock, H5Tget_member_type(t, i), "H5Tget_member_type")?;
            let Some(f) = describe(lock, m.id())? else { return Ok(None) };
            names.push(name);
            formats.push(f);
            offsets.push(H5Tget_member_offset(t, i));
        }
        Ok(Some(json!({"names": names, "formats": formats, "offsets": offsets, "itemsize": size})))
    }
}

/// The JSON text `vh5_dataset_mem_type` returns for the dataset `dset` (an open dataset id:
/// `InvalidHandle` otherwise): `{"itemsize": n, "numpy": <description or null>,
/// "fill_value": "<hex bytes of one element>" or null, "file_type": "<text>"}`. For a type
/// vh5 cannot read (variable-length, references) `itemsize` is the file's, `numpy` and
/// `fill_value` null. `file_type` is [`super::types::TypeInfo::description`] (what `vh5 info`
/// prints), for messages.
pub fn mem_type_json(lock: &H5Lock, dset: hid_t) -> Result<String> {
    expect_kind(lock, dset, &[H5I_type_t::H5I_DATASET], "dataset")?;
    let info = dataset_info(lock, dset)?;
    if info.dtype.dtype.is_none() {
        return Ok(json!({"itemsize": info.dtype.file_itemsize, "numpy": null, "fill_value": null, "file_type": info.dtype.description}).to_string());
    }
    let mem = mem_type_of(lock, &info.dtype, dset)?;
    let numpy = describe(lock, mem.id())?;
    let fill = info.fill_value.map(|b| b.iter().map(|x| format!("{x:02x}")).collect::<String>());
    Ok(json!({"itemsize": info.dtype.mem_itemsize, "numpy": numpy, "fill_value": fill, "file_type": info.dtype.description}).to_string())
}

/// The numpy datetime64 / timedelta64 dtype string h5py tagged the opaque type `t` of `size`
/// bytes with (tag `"NUMPY:<M8[s]"`, what `h5py.opaque_dtype` writes: h5py reads the type back
/// as exactly that dtype, unit and byte order included, and converts it to no other), e.g.
/// `"<M8[s]"`, `">m8[ms]"`; `None` for any other type or tag. vh5 moves such elements as raw
/// bytes, which are values of that dtype as stored (not swapped to native order).
fn numpy_time_tag(lock: &H5Lock, t: hid_t, size: usize) -> Result<Option<Value>> {
    // SAFETY: t is a valid datatype id under the caller's lock; the tag is libhdf5's
    // allocation, freed with H5free_memory.
    let tag = unsafe {
        if H5Tget_class(t) != H5T_class_t::H5T_OPAQUE {
            return Ok(None);
        }
        let p = H5Tget_tag(t);
        if p.is_null() {
            super::error::clear_stack(lock);
            return Ok(None);
        }
        let s = CStr::from_ptr(p).to_bytes().to_vec();
        hdf5_sys::h5::H5free_memory(p as *mut _);
        s
    };
    let Some(dt) = tag.strip_prefix(b"NUMPY:") else { return Ok(None) };
    let Ok(dt) = std::str::from_utf8(dt) else { return Ok(None) };
    Ok(is_time_typestr(dt, size).then(|| json!(dt)))
}

/// Whether `s` is a numpy datetime64 / timedelta64 type string of `size` (8) bytes with an
/// explicit byte order: `"<M8[s]"`, `">m8[25us]"`, `"<M8"` (generic unit).
fn is_time_typestr(s: &str, size: usize) -> bool {
    let b = s.as_bytes();
    if size != 8 || b.len() < 3 || !matches!(b[0], b'<' | b'>') || !matches!(b[1], b'M' | b'm') || b[2] != b'8' {
        return false;
    }
    let unit = &s[3..];
    unit.is_empty() || (unit.len() > 2 && unit.starts_with('[') && unit.ends_with(']') && unit[1..unit.len() - 1].bytes().all(|c| c.is_ascii_alphanumeric()))
}
