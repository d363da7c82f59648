//! Mapping between libhdf5 datatypes and vh5 [`Dtype`]s, and the memory types vh5 reads with.
//!
//! File types are classified as follows (HDF5 1.10 User Guide, "HDF5 Datatypes"):
//! - `H5T_INTEGER` of 1/2/4/8 bytes: int8..int64 / uint8..uint64 (by `H5Tget_sign`);
//! - `H5T_FLOAT` of 4/8 bytes: float32/float64; of 2 bytes with the IEEE half layout
//!   (`H5Tget_fields` = sign bit 15, exponent at 10 of 5 bits, mantissa at 0 of 10 bits, bias
//!   15; `H5T_IEEE_F16` does not exist in 1.10): float16;
//! - `H5T_ENUM` over a 1-byte integer with exactly the members FALSE=0 and TRUE=1 (how h5py
//!   stores numpy bool): bool;
//! - `H5T_COMPOUND` with exactly two members `r` then `i` of the same 4- or 8-byte float type at
//!   offsets 0 and its size (how h5py stores numpy complex): complex64/complex128;
//! - `H5T_COMPLEX` (libhdf5 >= 2.0's complex number class, e.g. `H5T_COMPLEX_IEEE_F64BE`) of
//!   4- or 8-byte IEEE float parts: complex64/complex128, moved with the native complex type
//!   (`H5Tcomplex_create` of the native float: [`TypeInfo::native_complex`]); of float16 parts
//!   (no numpy dtype): [`Dtype::Opaque`] records, described as such;
//! - any other fixed-size type (compound, array, opaque, bitfield, fixed-length string, other
//!   enums, other float layouts): [`Dtype::Opaque`], moved with its native memory type
//!   (`H5Tget_native_type`, fixed-length strings in it NUL-padded: [`native_of`]), whose size
//!   is the item size the destination must have;
//! - variable-length strings, `H5T_VLEN`, `H5T_REFERENCE` (also nested inside a compound or
//!   array type): unsupported.
//!
//! Byte order is reported separately ([`ByteOrder`]): reading a big-endian file type with the
//! native memory type of the same [`Dtype`] makes libhdf5 swap bytes while reading.

use std::ffi::{c_char, c_uint, CStr};

use hdf5_sys::h5::hsize_t;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5t::*;

use super::error::check;
use super::handle::Handle;
use super::lock::H5Lock;
use crate::dtype::{ByteOrder, Dtype};
use crate::error::{ErrorKind, Result};

/// What vh5 makes of a file datatype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    /// The vh5 dtype; `None` when vh5 cannot read this type (see `unsupported`).
    pub dtype: Option<Dtype>,
    /// Size of one element in the file, bytes.
    pub file_itemsize: usize,
    /// Size of one element of the memory type vh5 reads with (what a destination's item size
    /// must be), bytes. Equal to `file_itemsize` except for some opaque types.
    pub mem_itemsize: usize,
    /// Byte order of the file type; `None` when not applicable (1-byte types, bool, strings,
    /// opaque/compound types of mixed or no order) and for numeric types whose layout is not
    /// the standard one of their dtype ([`TypeInfo::plain`] false): their bytes are never
    /// byte-swapped raw, libhdf5 converts them.
    pub byte_order: Option<ByteOrder>,
    /// The file type's bit layout is exactly the standard one of `dtype` in `byte_order`
    /// (floats: IEEE fields and bias, implied mantissa bit, full precision, offset 0, zero
    /// padding), so raw bytes (copied, or swapped when the order differs) are the values.
    /// `false` for a numeric dtype classified by its fields but with another normalisation,
    /// precision, offset or padding (e.g. `H5T_IEEE_F32BE` with `H5Tset_norm(H5T_NORM_NONE)`):
    /// such types are read and written only through libhdf5's conversion to and from the
    /// native type of `dtype`.
    pub plain: bool,
    /// Human-readable description of the file type, e.g. "float32 (big-endian)".
    pub description: String,
    /// Why the type cannot be read (variable-length or reference types).
    pub unsupported: Option<String>,
    /// The file type is of libhdf5 2.x's complex number class (`H5T_COMPLEX`), not h5py's
    /// `{r, i}` compound: a complex `dtype` is moved with the native complex memory type
    /// ([`mem_type_like`]), which libhdf5 converts it to and from (byte order, float size);
    /// libhdf5 has no conversion between a complex type and a compound of floats in another
    /// byte order. Always false with libhdf5 1.x.
    pub native_complex: bool,
}

fn order_of(t: hid_t) -> Option<ByteOrder> {
    // SAFETY: t is a valid datatype id (caller holds the lock).
    match unsafe { H5Tget_order(t) } {
        H5T_order_t::H5T_ORDER_LE => Some(ByteOrder::Little),
        H5T_order_t::H5T_ORDER_BE => Some(ByteOrder::Big),
        _ => None,
    }
}

fn member_name(t: hid_t, i: c_uint) -> String {
    // SAFETY: valid compound/enum id; the returned string is allocated by libhdf5 and freed
    // with H5free_memory.
    unsafe {
        let p: *mut c_char = H5Tget_member_name(t, i);
        if p.is_null() {
            return String::new();
        }
        let s = crate::names::escape(CStr::from_ptr(p).to_bytes());
        hdf5_sys::h5::H5free_memory(p as *mut _);
        s
    }
}

/// Why `t` (or a type nested in it) cannot be read: variable-length and reference types.
fn unsupported_reason(lock: &H5Lock, t: hid_t) -> Result<Option<String>> {
    // SAFETY: t is a valid datatype id; we hold the lock.
    unsafe {
        let class = H5Tget_class(t);
        if class == H5T_class_t::H5T_STRING && check(lock, H5Tis_variable_str(t), "H5Tis_variable_str")? > 0 {
            return Ok(Some("variable-length string type".into()));
        }
        match class {
            H5T_class_t::H5T_VLEN => Ok(Some("variable-length (vlen) type".into())),
            H5T_class_t::H5T_REFERENCE => Ok(Some("reference type".into())),
            H5T_class_t::H5T_COMPOUND => {
                let n = check(lock, H5Tget_nmembers(t), "H5Tget_nmembers")?;
                for i in 0..n as c_uint {
                    let m = Handle::new(lock, H5Tget_member_type(t, i), "H5Tget_member_type")?;
                    if let Some(r) = unsupported_reason(lock, m.id())? {
                        return Ok(Some(format!("compound member `{}`: {r}", member_name(t, i))));
                    }
                }
                Ok(None)
            }
            H5T_class_t::H5T_ARRAY => {
                let base = Handle::new(lock, H5Tget_super(t), "H5Tget_super")?;
                Ok(unsupported_reason(lock, base.id())?.map(|r| format!("array of {r}")))
            }
            _ => Ok(None),
        }
    }
}

/// Classify the file datatype `t`: a vh5 dtype when its layout is one numpy reads as plain
/// bytes (integers, IEEE floats, the h5py bool enum, h5py complex compounds), opaque bytes of
/// its native memory type otherwise, or unsupported (variable-length data, references).
pub fn classify(lock: &H5Lock, t: hid_t) -> Result<TypeInfo> {
    // SAFETY: t is a valid datatype id; we hold the lock.
    let (class, size) = unsafe { (H5Tget_class(t), H5Tget_size(t)) };
    if size == 0 {
        return Err(super::error::hdf5_error(lock, ErrorKind::Hdf5, "H5Tget_size failed"));
    }
    let order = if size > 1 { order_of(t) } else { None };
    if let Some(reason) = unsupported_reason(lock, t)? {
        return Ok(TypeInfo {
            dtype: None,
            file_itemsize: size,
            mem_itemsize: size,
            byte_order: None,
            plain: false,
            description: reason.clone(),
            unsupported: Some(reason),
            native_complex: false,
        });
    }
    let known = match class {
        H5T_class_t::H5T_INTEGER => integer_dtype(t, size).map(|d| simple(d, size, order)),
        H5T_class_t::H5T_FLOAT => float_info(lock, t, size, order)?,
        H5T_class_t::H5T_ENUM => is_bool_enum(t, size).then(|| simple(Dtype::Bool, size, None)),
        H5T_class_t::H5T_COMPOUND => complex_info(lock, t, size)?,
        #[cfg(hdf5_2)]
        H5T_class_t::H5T_COMPLEX => return complex_class_info(lock, t, size),
        _ => None,
    };
    match known {
        Some(info) => Ok(info),
        None => opaque_info(lock, t, class, size, order),
    }
}

/// " (little-endian)", " (big-endian)" or "" for descriptions.
fn order_txt(o: Option<ByteOrder>) -> &'static str {
    match o {
        Some(ByteOrder::Little) => " (little-endian)",
        Some(ByteOrder::Big) => " (big-endian)",
        None => "",
    }
}

/// A type vh5 reads as `d` in `order`, raw bytes of `size` in the file and in memory.
fn simple(d: Dtype, size: usize, order: Option<ByteOrder>) -> TypeInfo {
    TypeInfo {
        dtype: Some(d),
        file_itemsize: size,
        mem_itemsize: size,
        byte_order: order,
        plain: true,
        description: format!("{}{}", d.name(), order_txt(order)),
        unsupported: None,
        native_complex: false,
    }
}

/// The dtype of an integer type of `size` bytes without padding bits (precision 8*size,
/// offset 0: otherwise not a plain numpy integer).
fn integer_dtype(t: hid_t, size: usize) -> Option<Dtype> {
    // SAFETY: t is a valid integer type id (the caller's class check); lock held by the caller.
    let (signed, plain) = unsafe { (H5Tget_sign(t) == H5T_sign_t::H5T_SGN_2, H5Tget_precision(t) == 8 * size && H5Tget_offset(t) == 0) };
    let d = match (size, signed) {
        (1, true) => Dtype::Int8,
        (2, true) => Dtype::Int16,
        (4, true) => Dtype::Int32,
        (8, true) => Dtype::Int64,
        (1, false) => Dtype::UInt8,
        (2, false) => Dtype::UInt16,
        (4, false) => Dtype::UInt32,
        (8, false) => Dtype::UInt64,
        _ => return None,
    };
    plain.then_some(d)
}

/// A float type with the IEEE half / single / double fields: plain, or converted by libhdf5
/// when its encoding differs in another way ([`float_layout_oddity`]); `None` for other fields.
fn float_info(lock: &H5Lock, t: hid_t, size: usize, order: Option<ByteOrder>) -> Result<Option<TypeInfo>> {
    let (mut spos, mut epos, mut esize, mut mpos, mut msize) = (0usize, 0usize, 0usize, 0usize, 0usize);
    // SAFETY: t is a valid float type id; lock held by the caller; out-pointers are locals.
    check(lock, unsafe { H5Tget_fields(t, &mut spos, &mut epos, &mut esize, &mut mpos, &mut msize) }, "H5Tget_fields")?;
    // SAFETY: as above.
    let ebias = unsafe { H5Tget_ebias(t) };
    let d = match (size, spos, epos, esize, mpos, msize, ebias) {
        (2, 15, 10, 5, 0, 10, 15) => Dtype::Float16,
        (4, 31, 23, 8, 0, 23, 127) => Dtype::Float32,
        (8, 63, 52, 11, 0, 52, 1023) => Dtype::Float64,
        _ => return Ok(None),
    };
    if order.is_none() {
        return Ok(None);
    }
    Ok(Some(match float_layout_oddity(lock, t, size)? {
        // Same fields, another encoding: libhdf5 converts (never raw bytes).
        Some(odd) => TypeInfo {
            byte_order: None,
            plain: false,
            description: format!("{}{} with a non-IEEE layout ({odd}; converted by libhdf5)", d.name(), order_txt(order)),
            ..simple(d, size, order)
        },
        None => simple(d, size, order),
    }))
}

/// Whether the enum type `t` is h5py's bool: 1 byte, members FALSE = 0 and TRUE = 1.
fn is_bool_enum(t: hid_t, size: usize) -> bool {
    // SAFETY: t is a valid enum type id; lock held by the caller; `v` is a local of the
    // member size (1 byte, checked first).
    unsafe {
        size == 1
            && H5Tget_nmembers(t) == 2
            && [("FALSE", 0i8), ("TRUE", 1i8)].into_iter().enumerate().all(|(i, (name, val))| {
                let mut v = 0i8;
                let r = H5Tget_member_value(t, i as c_uint, &mut v as *mut i8 as *mut _);
                r >= 0 && v == val && member_name(t, i as c_uint) == name
            })
    }
}

/// h5py's complex compound {r, i} of two equal float32 / float64 members, packed; `None`
/// for any other compound.
fn complex_info(lock: &H5Lock, t: hid_t, size: usize) -> Result<Option<TypeInfo>> {
    // SAFETY: t is a valid compound type id; lock held by the caller.
    unsafe {
        if H5Tget_nmembers(t) != 2 || member_name(t, 0) != "r" || member_name(t, 1) != "i" {
            return Ok(None);
        }
        let r = Handle::new(lock, H5Tget_member_type(t, 0), "H5Tget_member_type")?;
        let i = Handle::new(lock, H5Tget_member_type(t, 1), "H5Tget_member_type")?;
        let (ri, ii) = (classify(lock, r.id())?, classify(lock, i.id())?);
        let half = size / 2;
        let same = ri.dtype == ii.dtype && ri.byte_order == ii.byte_order;
        let at = H5Tget_member_offset(t, 0) == 0 && H5Tget_member_offset(t, 1) == half && size == 2 * half;
        let Some(d) = complex_of_parts(ri.dtype, size) else { return Ok(None) };
        if !(same && at) {
            return Ok(None);
        }
        if !ri.plain {
            return Ok(Some(TypeInfo { plain: false, description: format!("{} of {}", d.name(), ri.description), ..simple(d, size, None) }));
        }
        Ok(Some(simple(d, size, ri.byte_order)))
    }
}

/// A type of libhdf5 2.x's complex number class: complex64 / complex128 of IEEE float32 /
/// float64 parts (plain when the parts are, bytes swapped per part for the other byte
/// order), opaque records for parts numpy has no complex dtype of (float16: numpy has no
/// complex32) or another float layout.
#[cfg(hdf5_2)]
fn complex_class_info(lock: &H5Lock, t: hid_t, size: usize) -> Result<TypeInfo> {
    // SAFETY: t is a valid complex type id; lock held by the caller.
    let base = Handle::new(lock, unsafe { H5Tget_super(t) }, "H5Tget_super (complex)")?;
    let part = classify(lock, base.id())?;
    let Some(d) = complex_of_parts(part.dtype, size) else {
        let opaque = opaque_info(lock, t, H5T_class_t::H5T_COMPLEX, size, part.byte_order)?;
        let description = format!(
            "an HDF5 complex number type of {} parts ({size} bytes in the file; numpy has no complex dtype of such parts), \
             {} bytes in memory (native order), moved as raw bytes",
            part.description, opaque.mem_itemsize
        );
        return Ok(TypeInfo { description, native_complex: false, ..opaque });
    };
    let info = if part.plain { simple(d, size, part.byte_order) } else { TypeInfo { plain: false, ..simple(d, size, None) } };
    let description = format!("{} (HDF5 complex number type of {})", d.name(), part.description);
    Ok(TypeInfo { description, native_complex: true, ..info })
}

/// Whether `t` (a valid datatype id; the caller holds the lock) is of libhdf5 2.x's complex
/// number class (`H5T_COMPLEX`); always false with libhdf5 1.x, which has no such class.
pub fn is_complex_class(t: hid_t) -> bool {
    #[cfg(hdf5_2)]
    {
        // SAFETY: as documented: a valid type id under the caller's lock.
        unsafe { H5Tget_class(t) == H5T_class_t::H5T_COMPLEX }
    }
    #[cfg(not(hdf5_2))]
    {
        let _ = t;
        false
    }
}

/// The complex dtype whose parts are `part` and whose size is `size`: complex64 of float32,
/// complex128 of float64; `None` otherwise.
pub(crate) fn complex_of_parts(part: Option<Dtype>, size: usize) -> Option<Dtype> {
    match (part, size) {
        (Some(Dtype::Float32), 8) => Some(Dtype::Complex64),
        (Some(Dtype::Float64), 16) => Some(Dtype::Complex128),
        _ => None,
    }
}

/// Any other type: opaque bytes of its native memory type.
fn opaque_info(lock: &H5Lock, t: hid_t, class: H5T_class_t, size: usize, order: Option<ByteOrder>) -> Result<TypeInfo> {
    let mem = native_of(lock, t)?;
    // SAFETY: a valid type id; lock held by the caller.
    let mem_size = unsafe { H5Tget_size(mem.id()) };
    let class_name = match class {
        H5T_class_t::H5T_INTEGER => "an integer",
        H5T_class_t::H5T_FLOAT => "a float",
        H5T_class_t::H5T_TIME => "a time",
        H5T_class_t::H5T_STRING => "a fixed-length string",
        H5T_class_t::H5T_BITFIELD => "a bitfield",
        H5T_class_t::H5T_OPAQUE => "an opaque",
        H5T_class_t::H5T_COMPOUND => "a compound",
        H5T_class_t::H5T_ENUM => "an enum",
        H5T_class_t::H5T_ARRAY => "an array",
        #[cfg(hdf5_2)]
        H5T_class_t::H5T_COMPLEX => "a complex number",
        _ => "an other",
    };
    let bytes = |n: usize| if n == 1 { "1 byte".to_string() } else { format!("{n} bytes") };
    Ok(TypeInfo {
        dtype: Some(Dtype::Opaque),
        file_itemsize: size,
        mem_itemsize: mem_size,
        byte_order: order,
        plain: false,
        // "an enum type of 1 byte in the file, ..., moved as raw bytes": read as "dataset has ..."
        description: format!(
            "{class_name} type of {} in the file{}, {} in memory{}, moved as raw bytes",
            bytes(size),
            order_txt(order),
            bytes(mem_size),
            if order.is_some() { " (native order)" } else { "" }
        ),
        unsupported: None,
        native_complex: false,
    })
}

/// How a float type whose fields match an IEEE layout differs from the IEEE encoding
/// (mantissa normalisation other than implied, precision below the size, a bit offset, or
/// padding bits set to one), described; `None` when it is plain IEEE.
fn float_layout_oddity(lock: &H5Lock, t: hid_t, size: usize) -> Result<Option<String>> {
    // SAFETY: t is a valid float type id; we hold the lock; out-pointers are locals.
    unsafe {
        let mut odd = Vec::new();
        let norm = H5Tget_norm(t);
        if norm != H5T_norm_t::H5T_NORM_IMPLIED {
            odd.push(format!("mantissa normalisation {norm:?}"));
        }
        let prec = check(lock, H5Tget_precision(t), "H5Tget_precision")?;
        if prec != 8 * size {
            odd.push(format!("precision {prec} bits"));
        }
        let off = H5Tget_offset(t);
        if off != 0 {
            odd.push(format!("bit offset {off}"));
        }
        let (mut lsb, mut msb) = (H5T_pad_t::H5T_PAD_ZERO, H5T_pad_t::H5T_PAD_ZERO);
        check(lock, H5Tget_pad(t, &mut lsb, &mut msb), "H5Tget_pad")?;
        if lsb != H5T_pad_t::H5T_PAD_ZERO || msb != H5T_pad_t::H5T_PAD_ZERO {
            odd.push(format!("padding {lsb:?}/{msb:?}"));
        }
        let inpad = H5Tget_inpad(t);
        if inpad != H5T_pad_t::H5T_PAD_ZERO {
            odd.push(format!("internal padding {inpad:?}"));
        }
        Ok((!odd.is_empty()).then(|| odd.join(", ")))
    }
}

/// The native memory type of an arbitrary fixed-size file type (`H5Tget_native_type`, or a
/// copy of the type itself for classes libhdf5 has no native mapping for), with every
/// fixed-length string in it (also inside compounds and arrays) NUL-padded
/// (`nul_padded_strings`).
pub fn native_of(lock: &H5Lock, t: hid_t) -> Result<Handle> {
    // SAFETY: valid type id; we hold the lock.
    let native = unsafe {
        let n = H5Tget_native_type(t, H5T_direction_t::H5T_DIR_ASCEND);
        if n >= 0 {
            Handle::new(lock, n, "H5Tget_native_type")?
        } else {
            super::error::clear_stack(lock);
            Handle::new(lock, H5Tcopy(t), "H5Tcopy")?
        }
    };
    Ok(nul_padded_strings(lock, native.id())?.unwrap_or(native))
}

/// `t` with every fixed-length string type in it (at any depth of compounds and arrays) of
/// the same size and character set but `H5T_STR_NULLPAD`, as numpy's `S` dtype and h5py's
/// memory type are; `None` when `t` has no string of another padding. libhdf5 converts
/// `H5T_STR_SPACEPAD` / `H5T_STR_NULLTERM` strings to and from it as h5py does (trailing
/// spaces removed on reading and put back on writing; a NUL-terminated string written
/// keeps room for its terminator), which copying the stored bytes would not.
fn nul_padded_strings(lock: &H5Lock, t: hid_t) -> Result<Option<Handle>> {
    // SAFETY: valid type ids under the lock; every id opened is owned by a Handle.
    unsafe {
        match H5Tget_class(t) {
            H5T_class_t::H5T_STRING => {
                if H5Tget_strpad(t) == H5T_str_t::H5T_STR_NULLPAD {
                    return Ok(None);
                }
                let h = Handle::new(lock, H5Tcopy(t), "H5Tcopy (string)")?;
                check(lock, H5Tset_strpad(h.id(), H5T_str_t::H5T_STR_NULLPAD), "H5Tset_strpad")?;
                Ok(Some(h))
            }
            H5T_class_t::H5T_ARRAY => {
                let base = Handle::new(lock, H5Tget_super(t), "H5Tget_super")?;
                let Some(b) = nul_padded_strings(lock, base.id())? else { return Ok(None) };
                let n = check(lock, H5Tget_array_ndims(t), "H5Tget_array_ndims")?;
                let mut dims = vec![0 as hsize_t; n as usize];
                check(lock, H5Tget_array_dims2(t, dims.as_mut_ptr()), "H5Tget_array_dims2")?;
                Ok(Some(Handle::new(lock, H5Tarray_create2(b.id(), n as c_uint, dims.as_ptr()), "H5Tarray_create2")?))
            }
            H5T_class_t::H5T_COMPOUND => {
                let n = check(lock, H5Tget_nmembers(t), "H5Tget_nmembers")? as c_uint;
                let mut members = Vec::with_capacity(n as usize);
                let mut changed = false;
                for i in 0..n {
                    let m = Handle::new(lock, H5Tget_member_type(t, i), "H5Tget_member_type")?;
                    let fixed = nul_padded_strings(lock, m.id())?;
                    changed |= fixed.is_some();
                    members.push(fixed.unwrap_or(m));
                }
                if !changed {
                    return Ok(None);
                }
                let h = Handle::new(lock, H5Tcreate(H5T_class_t::H5T_COMPOUND, H5Tget_size(t)), "H5Tcreate (compound)")?;
                for (i, m) in (0..n).zip(&members) {
                    let name = H5Tget_member_name(t, i);
                    if name.is_null() {
                        return Err(super::error::hdf5_error(lock, ErrorKind::Hdf5, "H5Tget_member_name failed"));
                    }
                    let r = H5Tinsert(h.id(), name, H5Tget_member_offset(t, i), m.id());
                    hdf5_sys::h5::H5free_memory(name as *mut _);
                    check(lock, r, "H5Tinsert")?;
                }
                Ok(Some(h))
            }
            _ => Ok(None),
        }
    }
}

/// A memory datatype: either one of libhdf5's predefined ids (never closed) or one we built.
#[derive(Debug)]
pub enum MemType {
    Predefined(hid_t),
    Owned(Handle),
}

impl MemType {
    pub fn id(&self) -> hid_t {
        match self {
            MemType::Predefined(id) => *id,
            MemType::Owned(h) => h.id(),
        }
    }
}

/// The memory type of `d` with its words in the byte order opposite to the host's (a
/// big-endian `float32` on a little-endian host), for destinations stored that way: libhdf5
/// converts into it, and raw chunk bytes of a file type in that order are moved unchanged.
/// 1-byte dtypes and bool have no byte order: their native type is returned. Complex is the
/// compound {r, i} of swapped floats, or with `native_complex` (a file type of libhdf5 2.x's
/// complex class: [`TypeInfo::native_complex`]) the complex type of swapped floats. `Dtype`
/// error for [`Dtype::Opaque`] (no single order).
pub fn mem_type_swapped(lock: &H5Lock, d: Dtype, native_complex: bool) -> Result<MemType> {
    if matches!(d, Dtype::Int8 | Dtype::UInt8 | Dtype::Bool) {
        return mem_type_for(lock, d);
    }
    let other = if cfg!(target_endian = "little") { H5T_order_t::H5T_ORDER_BE } else { H5T_order_t::H5T_ORDER_LE };
    // SAFETY: valid type ids under the lock; every type built here is owned by a Handle.
    unsafe {
        match d {
            Dtype::Opaque => Err(crate::err!(Dtype, "a byte-swapped array needs a numeric dtype: opaque (compound, string, ...) records have no single byte order")),
            Dtype::Complex64 | Dtype::Complex128 => {
                let (half, base) = if d == Dtype::Complex64 { (4, *H5T_NATIVE_FLOAT) } else { (8, *H5T_NATIVE_DOUBLE) };
                let f = Handle::new(lock, H5Tcopy(base), "H5Tcopy")?;
                check(lock, H5Tset_order(f.id(), other), "H5Tset_order")?;
                if native_complex {
                    return complex_class_of(lock, f.id());
                }
                let h = Handle::new(lock, H5Tcreate(H5T_class_t::H5T_COMPOUND, 2 * half), "H5Tcreate (complex)")?;
                check(lock, H5Tinsert(h.id(), c"r".as_ptr(), 0, f.id()), "H5Tinsert r")?;
                check(lock, H5Tinsert(h.id(), c"i".as_ptr(), half, f.id()), "H5Tinsert i")?;
                Ok(MemType::Owned(h))
            }
            _ => {
                let h = match mem_type_for(lock, d)? {
                    MemType::Predefined(id) => Handle::new(lock, H5Tcopy(id), "H5Tcopy")?,
                    MemType::Owned(h) => h,
                };
                check(lock, H5Tset_order(h.id(), other), "H5Tset_order")?;
                Ok(MemType::Owned(h))
            }
        }
    }
}

/// The native memory type vh5 uses for a numeric/bool/complex dtype (not [`Dtype::Opaque`]):
/// native byte order; bool is h5py's enum {FALSE=0, TRUE=1} over int8; complex is h5py's
/// compound {r, i}; float16 is the IEEE half layout.
pub fn mem_type_for(lock: &H5Lock, d: Dtype) -> Result<MemType> {
    // SAFETY: reading libhdf5's predefined type globals (initialised by H5open in lock());
    // building types with valid ids under the lock.
    unsafe {
        let pre = |g: hid_t| Ok(MemType::Predefined(g));
        match d {
            Dtype::Int8 => pre(*H5T_NATIVE_SCHAR),
            Dtype::Int16 => pre(*H5T_NATIVE_SHORT),
            Dtype::Int32 => pre(*H5T_NATIVE_INT),
            Dtype::Int64 => pre(*H5T_NATIVE_LLONG),
            Dtype::UInt8 => pre(*H5T_NATIVE_UCHAR),
            Dtype::UInt16 => pre(*H5T_NATIVE_USHORT),
            Dtype::UInt32 => pre(*H5T_NATIVE_UINT),
            Dtype::UInt64 => pre(*H5T_NATIVE_ULLONG),
            Dtype::Float32 => pre(*H5T_NATIVE_FLOAT),
            Dtype::Float64 => pre(*H5T_NATIVE_DOUBLE),
            Dtype::Float16 => {
                let h = Handle::new(lock, H5Tcopy(*H5T_NATIVE_FLOAT), "H5Tcopy")?;
                check(lock, H5Tset_fields(h.id(), 15, 10, 5, 0, 10), "H5Tset_fields (float16)")?;
                check(lock, H5Tset_size(h.id(), 2), "H5Tset_size (float16)")?;
                check(lock, H5Tset_ebias(h.id(), 15), "H5Tset_ebias (float16)")?;
                Ok(MemType::Owned(h))
            }
            Dtype::Bool => {
                let h = Handle::new(lock, H5Tenum_create(*H5T_NATIVE_SCHAR), "H5Tenum_create")?;
                for (name, v) in [(c"FALSE", 0i8), (c"TRUE", 1i8)] {
                    check(lock, H5Tenum_insert(h.id(), name.as_ptr(), &v as *const i8 as *const _), "H5Tenum_insert")?;
                }
                Ok(MemType::Owned(h))
            }
            Dtype::Complex64 | Dtype::Complex128 => {
                let (half, base) = if d == Dtype::Complex64 { (4, *H5T_NATIVE_FLOAT) } else { (8, *H5T_NATIVE_DOUBLE) };
                let h = Handle::new(lock, H5Tcreate(H5T_class_t::H5T_COMPOUND, 2 * half), "H5Tcreate (complex)")?;
                check(lock, H5Tinsert(h.id(), c"r".as_ptr(), 0, base), "H5Tinsert r")?;
                check(lock, H5Tinsert(h.id(), c"i".as_ptr(), half, base), "H5Tinsert i")?;
                Ok(MemType::Owned(h))
            }
            Dtype::Opaque => Err(crate::err!(Dtype, "internal: no generic memory type for opaque")),
        }
    }
}

/// The memory type of the complex class (libhdf5 >= 2.0) with parts of the float type
/// `part`; `Dtype` error with libhdf5 1.x, which has no such class (never asked for there:
/// no 1.x file type is classified [`TypeInfo::native_complex`]).
fn complex_class_of(lock: &H5Lock, part: hid_t) -> Result<MemType> {
    #[cfg(hdf5_2)]
    {
        // SAFETY: a valid float type id under the lock; the new type is owned by the Handle.
        Ok(MemType::Owned(Handle::new(lock, unsafe { H5Tcomplex_create(part) }, "H5Tcomplex_create")?))
    }
    #[cfg(not(hdf5_2))]
    {
        let _ = (lock, part);
        Err(crate::err!(Dtype, "internal: the complex number type class needs libhdf5 >= 2.0"))
    }
}

/// The memory type vh5 moves elements of `d` in native byte order with to or from a dataset
/// whose file type is classified as `finfo`: for a complex `d` and a file type of libhdf5
/// 2.x's complex class, the native complex type (libhdf5 converts it to and from the file's
/// byte order and part size, which it does not between a complex type and the `{r, i}`
/// compound of [`mem_type_for`] unless the parts are identical); otherwise [`mem_type_for`].
pub fn mem_type_like(lock: &H5Lock, d: Dtype, finfo: &TypeInfo) -> Result<MemType> {
    match d {
        Dtype::Complex64 if finfo.native_complex => complex_class_of(lock, *H5T_NATIVE_FLOAT),
        Dtype::Complex128 if finfo.native_complex => complex_class_of(lock, *H5T_NATIVE_DOUBLE),
        _ => mem_type_for(lock, d),
    }
}

/// Whether libhdf5 has a conversion path from `src` to `dst` (`H5Tfind`).
pub fn conversion_exists(lock: &H5Lock, src: hid_t, dst: hid_t) -> bool {
    let mut cdata: *mut H5T_cdata_t = std::ptr::null_mut();
    // SAFETY: valid type ids; we hold the lock.
    let f = unsafe { H5Tfind(src, dst, &mut cdata) };
    if f.is_none() {
        super::error::clear_stack(lock);
        false
    } else {
        true
    }
}

/// Whether libhdf5 converts `src` to `dst` with a compiler cast (a "hard" conversion,
/// `H5Tcompiler_conv`) rather than with one of its software conversion functions
/// (`H5T__conv_f_f`, `H5T__conv_i_f`, `H5T__conv_f_i`, ...). Types in a non-native byte
/// order, and float16 before libhdf5 1.14.4 (or in a libhdf5 built without `_Float16`),
/// always take a software path. False when libhdf5 has no path at all.
pub fn hard_conversion(lock: &H5Lock, src: hid_t, dst: hid_t) -> bool {
    // SAFETY: valid type ids; we hold the lock.
    let r = unsafe { H5Tcompiler_conv(src, dst) };
    if r < 0 {
        super::error::clear_stack(lock);
    }
    r > 0
}

/// The memory type vh5 moves the elements of the open dataset `dset` (file type classified
/// as `info`) with when no conversion is asked for: the native type of the same dtype
/// ([`mem_type_like`]), or for [`Dtype::Opaque`] the native memory type of the file type,
/// fixed once per dataset id ([`super::meta::stable_native`]). `Unsupported` for types vh5
/// cannot read.
pub fn mem_type_of(lock: &H5Lock, info: &TypeInfo, dset: hid_t) -> Result<MemType> {
    match info.dtype {
        None => Err(crate::err!(Unsupported, "{}: vh5 reads fixed-size types only", info.unsupported.as_deref().unwrap_or("unsupported type"))),
        Some(Dtype::Opaque) => Ok(MemType::Owned(super::meta::stable_native(lock, dset)?)),
        Some(d) => mem_type_like(lock, d, info),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complex_of_parts_pairs_float32_and_float64_only() {
        assert_eq!(complex_of_parts(Some(Dtype::Float32), 8), Some(Dtype::Complex64));
        assert_eq!(complex_of_parts(Some(Dtype::Float64), 16), Some(Dtype::Complex128));
        // numpy has no complex32; sizes must be twice the part's
        assert_eq!(complex_of_parts(Some(Dtype::Float16), 4), None);
        assert_eq!(complex_of_parts(Some(Dtype::Float32), 16), None);
        assert_eq!(complex_of_parts(Some(Dtype::Int32), 8), None);
        assert_eq!(complex_of_parts(None, 8), None);
        for d in [Dtype::Complex64, Dtype::Complex128] {
            assert_eq!(d.swap_unit() * 2, d.itemsize().unwrap());
        }
    }
}
