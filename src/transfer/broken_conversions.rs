//! Type conversions (`VH5_SLICES_CONVERT`) that the linked libhdf5 gets wrong for some values,
//! refused with a `Dtype` error instead of returning (or storing) those values. Each rule
//! names the libhdf5 software conversion function at fault and the versions it applies to;
//! whether libhdf5 uses a software function at all is asked of libhdf5 itself
//! ([`hard_conversion`]): compiler casts ("hard" paths, libhdf5 1.14.4+ with `_Float16` for
//! float16 in native byte order) are not refused. The rules were found by comparing every
//! float16 value, and edge values of every other source, against numpy's `astype` and
//! against libhdf5 1.10.8, 1.14.2, 1.14.6, 2.0.0 and 2.2.0
//! (`tests/python/test_py_float16_conversions.py`), and every ordered pair of the integer
//! widths, float32, float64 and complex numbers in every byte-order combination with edge and
//! random values on 1.10.8, 2.0.0 and 2.2.0 (`tests/python/test_py_numeric_conversions.py`;
//! `scripts/h5tconvert_differential.py` runs the same against any libhdf5, 1.14.6 too;
//! docs/ROBUSTNESS.md).

use std::ffi::{c_uint, CStr};

use hdf5_sys::h5i::hid_t;

use crate::dtype::Dtype;
use crate::error::Result;
use crate::hdf5::error::check;
use crate::hdf5::handle::Handle;
use crate::hdf5::lock::H5Lock;
use crate::hdf5::types::{classify, hard_conversion, is_complex_class};
use crate::hdf5::version::library_info;

/// What a libhdf5 conversion gets wrong, and since / until which version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Broken {
    /// float16 -> int64 / uint64 before 1.14.4: `H5T__conv_f_i` works in a buffer of
    /// `2**esize / 8 + 1` bytes, 5 for float16's 5-bit exponent: a negative value is negated
    /// in those 40 bits and lands in an int64 as garbage (-1.0 -> -9223370937343148033), and
    /// every value is copied out 64 bits at a time, reading 3 bytes past the buffer. HDF5
    /// pull request 4065 sized the buffer to the destination (libhdf5 1.14.4).
    F16ToI64,
    /// A float (float16 / float32 / float64) -> signed integer by software (`H5T__conv_f_i`)
    /// from libhdf5 1.14.4 on (rewritten by pull request 4065; unchanged through 2.2.0): a value in
    /// (-0.5, 0) is shifted out whole, which that code takes for an underflow, and becomes the
    /// integer's minimum (-0.3 -> -2147483648 in an int32) instead of 0. Unsigned destinations
    /// are not affected.
    FloatToSignedInt,
    /// int32 / int64 / uint32 / uint64 -> float16 by software (`H5T__conv_i_f`, every
    /// version through 2.2.0): overflow is tested as `exponent > all-ones` instead of `>=`, so an integer
    /// whose float16 exponent would be exactly 16 (|v| from 65568 to 131039) becomes NaN
    /// instead of infinity. Narrower integers cannot reach it.
    IntToF16,
    /// float32 / float64 -> float16 by software (`H5T__conv_f_f`, every version through 2.2.0): exact ties
    /// round away from zero (2049.0 -> 2050, not 2048), some values rounding to a subnormal
    /// round down, and values from 65520 to 65536 become +-65504 instead of +-infinity (it
    /// skips the rounding that would overflow). Before 2.0.0 also the rounding carry of every
    /// value after a subnormal one in the same call is lost (its flag is set once per call):
    /// 32767.0 becomes 16384.
    FloatToF16,
    /// float64 -> float32 by software (`H5T__conv_f_f`, a byte-order change: a big-endian
    /// dataset or a byte-swapped array), every version through 2.2.0: exact ties round away
    /// from zero (16777217.0 becomes 16777218, 1 + 2**-24 becomes 1 + 2**-23; IEEE and numpy
    /// round to even), results in float32's subnormal range round one step down
    /// (3 * 2**-150 becomes 2**-149, not 2**-148), and values from float32's largest plus half
    /// a step (3.4028235677973366e38) up to 2**128 become +-3.4028235e38 instead of +-inf
    /// (1.10.8, 1.14.6, 2.0.0, 2.2.0; the compiler cast of native types rounds to even). Before 2.0.0
    /// also the rounding carry of every value after a float32-subnormal one in the same call
    /// is lost: 16777215.9 becomes 8388608, 0.99999999 becomes 0.5.
    F64ToF32,
    /// An integer to the integer of the same size and the other signedness with a byte-order
    /// change (a big-endian dataset read into a native array, a little-endian one into a
    /// byte-swapped array, a native array written into a big-endian dataset), every version
    /// through 2.2.0: libhdf5 takes it for a byte swap (`H5T__conv_order` / `H5T__conv_order_opt`
    /// check the sizes and orders of integers, not their signs) and reinterprets the bits
    /// instead of clipping: int16 -1 becomes uint16 65535, uint32 3000000000 becomes int32
    /// -1294967296 (1.10.8, 1.14.6, 2.0.0, 2.2.0; every other integer conversion clips to the
    /// destination's limits). The same
    /// pair without a byte-order change goes through `H5T__conv_i_i` or a compiler cast, both
    /// right.
    IntSignSwap,
    /// complex64 <-> complex128 of libhdf5 2.x's complex number class by software
    /// (`H5T__conv_complex`: either side not in native byte order: a big-endian dataset or a
    /// byte-swapped array; libhdf5 2.0.0 and 2.2.0): an infinite or NaN part garbles the
    /// other part (inf+2j becomes inf+1.875j or inf+3.5e-319j, 3-infj becomes 2-infj, nan+1j
    /// becomes nan-0j). The compiler casts between the native complex types are exact.
    ComplexSpecials,
}

impl Broken {
    /// What goes wrong, for the refusal's message.
    pub(crate) fn what(self) -> &'static str {
        match self {
            Broken::F16ToI64 => {
                "its float-to-integer conversion works on a 5-byte buffer for 2-byte floats, which turns negative values \
                 into garbage (-1.0 becomes -9223370937343148033) and reads past the buffer for 64-bit integers (fixed in libhdf5 1.14.4, HDF5 pull request 4065)"
            }
            Broken::FloatToSignedInt => {
                "its software float-to-integer conversion (H5T__conv_f_i, rewritten in libhdf5 1.14.4) turns negative values above -0.5 \
                 (-0.3, -1e-7) into the integer's minimum instead of 0 (no fixed release known)"
            }
            Broken::IntToF16 => {
                "its software integer-to-float conversion (H5T__conv_i_f, every libhdf5 version) gives NaN instead of infinity \
                 for integers from 65568 to 131039 in magnitude"
            }
            Broken::FloatToF16 => {
                "its software float-to-float conversion (H5T__conv_f_f, every libhdf5 version) rounds exact ties away from zero \
                 (2049.0 becomes 2050, IEEE and numpy give 2048) and values from 65520 to 65536 to +-65504 instead of +-inf, \
                 and before libhdf5 2.0.0 halves values whose rounding carries once a subnormal value went through the same call (32767.0 becomes 16384)"
            }
            Broken::F64ToF32 => {
                "its software float-to-float conversion (H5T__conv_f_f, used when the byte order changes) rounds exact ties away from zero \
                 (16777217.0 becomes 16777218, IEEE and numpy give 16777216), values just above the largest float32 to it instead of +-inf, \
                 and before libhdf5 2.0.0 halves values whose rounding carries once a float32-subnormal value went through the same call \
                 (16777215.9 becomes 8388608; no fixed release known)"
            }
            Broken::IntSignSwap => {
                "it converts between signed and unsigned integers of the same size with a byte-order change by swapping the bytes \
                 (H5T__conv_order, every libhdf5 version), which reinterprets values out of the destination's range instead of clipping them \
                 (int16 -1 becomes uint16 65535)"
            }
            Broken::ComplexSpecials => {
                "its software conversion between complex number types of different sizes (H5T__conv_complex, used when either side \
                 is not in native byte order) garbles the other part of a number with an infinite or NaN part (inf+2j becomes inf+1.875j; \
                 no fixed release known)"
            }
        }
    }
}

/// The bug of libhdf5 `version` converting `from` to `to`, `hard` telling whether libhdf5
/// converts them with a compiler cast. The one rule table (the fuzz oracle's
/// `conversion_refused` mirrors it).
pub(crate) fn broken(version: (u32, u32, u32), hard: bool, from: Dtype, to: Dtype) -> Option<Broken> {
    use Dtype::*;
    let float = |d: Dtype| matches!(d, Float16 | Float32 | Float64);
    if from == Float16 && matches!(to, Int64 | UInt64) && version < (1, 14, 4) {
        return Some(Broken::F16ToI64);
    }
    if hard {
        return None;
    }
    match (from, to) {
        (f, Int8 | Int16 | Int32 | Int64) if float(f) && version >= (1, 14, 4) => Some(Broken::FloatToSignedInt),
        (Int32 | Int64 | UInt32 | UInt64, Float16) => Some(Broken::IntToF16),
        (Float32 | Float64, Float16) => Some(Broken::FloatToF16),
        (Float64, Float32) => Some(Broken::F64ToF32),
        _ => None,
    }
}

/// What the linked libhdf5 gets wrong converting `from` (libhdf5 type `src`) to `to` (type
/// `dst`), if anything ([`broken`]); `transfer::checks` refuses the transfer then.
pub(crate) fn linked_bug(l: &H5Lock, src: hid_t, dst: hid_t, from: Dtype, to: Dtype) -> Option<Broken> {
    // A libhdf5 that does not report its version (none in practice) counts as an old one.
    let version = library_info(l).map_or((0, 0, 0), |v| (v.major, v.minor, v.release));
    let hard = hard_conversion(l, src, dst);
    if sign_swap(from, to) && order_changes(src, dst) {
        return Some(Broken::IntSignSwap);
    }
    match (is_complex_class(src), is_complex_class(dst)) {
        (true, true) if !hard && from != to => Some(Broken::ComplexSpecials),
        // complex -> real (the real part): libhdf5 2.x converts the part with the float
        // code, bugs included (2.2.0: -0.3+1j -> int32 minimum, 2049+0j -> float16 2050)
        (true, false) => broken(version, hard, complex_part(from), to),
        // complex64 <-> complex128 as compounds (h5py's complex numbers, libhdf5 1.x): libhdf5
        // converts them member by member (`H5T__conv_struct`), each part with the float code,
        // bugs included (1.10.8, a big-endian complex128 dataset read as complex64:
        // 16777215.9 -> 8388608 after a float32-subnormal part). The compound conversion is
        // never "hard"; its parts' conversion decides.
        (false, false) if from != to && complex_part(from) != from && complex_part(to) != to => broken(version, parts_hard(l, src, dst), complex_part(from), complex_part(to)),
        _ => broken(version, hard, from, to),
    }
}

/// Whether libhdf5 converts the first members of the compound types `src` and `dst` (the
/// real parts of two compound complex types) with a compiler cast; false when either is not
/// a compound or a member cannot be read (the caller then applies the software-path rules).
fn parts_hard(l: &H5Lock, src: hid_t, dst: hid_t) -> bool {
    use hdf5_sys::h5t::{H5T_class_t, H5Tget_class, H5Tget_member_type, H5Tget_nmembers};
    // SAFETY: valid type ids under the lock; member type ids are owned by Handles.
    unsafe {
        let compound = |t| H5Tget_class(t) == H5T_class_t::H5T_COMPOUND && H5Tget_nmembers(t) > 0;
        if !compound(src) || !compound(dst) {
            return false;
        }
        let (Ok(a), Ok(b)) = (Handle::new(l, H5Tget_member_type(src, 0), "H5Tget_member_type"), Handle::new(l, H5Tget_member_type(dst, 0), "H5Tget_member_type")) else {
            crate::hdf5::error::clear_stack(l);
            return false;
        };
        hard_conversion(l, a.id(), b.id())
    }
}

/// Whether `from` -> `to` is an integer to the integer of the same size and the other
/// signedness, which libhdf5 converts wrongly with a byte-order change ([`Broken::IntSignSwap`]).
pub(crate) fn sign_swap(from: Dtype, to: Dtype) -> bool {
    use Dtype::*;
    matches!((from, to), (Int8, UInt8) | (UInt8, Int8) | (Int16, UInt16) | (UInt16, Int16) | (Int32, UInt32) | (UInt32, Int32) | (Int64, UInt64) | (UInt64, Int64))
}

/// Whether the atomic types `src` and `dst` have different byte orders (the one-byte types of
/// a file may say big-endian too; libhdf5 then swaps nothing but still takes the byte-swap
/// path). False when either order cannot be read.
fn order_changes(src: hid_t, dst: hid_t) -> bool {
    use hdf5_sys::h5t::{H5T_order_t, H5Tget_order};
    // SAFETY: valid type ids under the caller's lock.
    let (a, b) = unsafe { (H5Tget_order(src), H5Tget_order(dst)) };
    let known = |o: H5T_order_t| matches!(o, H5T_order_t::H5T_ORDER_LE | H5T_order_t::H5T_ORDER_BE);
    known(a) && known(b) && a != b
}

/// The float dtype of a complex dtype's parts; any other dtype itself.
fn complex_part(d: Dtype) -> Dtype {
    match d {
        Dtype::Complex64 => Dtype::Float32,
        Dtype::Complex128 => Dtype::Float64,
        d => d,
    }
}

/// A float member of a record type that the linked libhdf5 gets wrong when writing: the
/// member's path in the record (`a.b[]`), the memory and file dtypes, and the bug.
pub(crate) struct MemberBug {
    pub path: String,
    pub from: Dtype,
    pub to: Dtype,
    pub bug: Broken,
}

/// The first float member (at any depth of compounds and arrays) of the record file type
/// `file` that writing from the memory type `mem` (vh5's native type of `file`, members
/// matched by name) makes the linked libhdf5 convert wrongly ([`linked_bug`]): with
/// libhdf5 1.10 the native type of a float16 member is float32, and `H5T__conv_f_f`
/// narrows it wrongly (65520 -> 65504, 2049 -> 2050). Reading (widening) is exact.
pub(crate) fn record_write_bug(l: &H5Lock, file: hid_t, mem: hid_t) -> Result<Option<MemberBug>> {
    member_bug(l, file, mem, String::new())
}

fn member_bug(l: &H5Lock, file: hid_t, mem: hid_t, path: String) -> Result<Option<MemberBug>> {
    use hdf5_sys::h5t::*;
    // SAFETY: valid type ids under the lock; every id opened is owned by a Handle.
    unsafe {
        let class = H5Tget_class(file);
        if class != H5Tget_class(mem) {
            return Ok(None);
        }
        match class {
            H5T_class_t::H5T_FLOAT => {
                let (f, m) = (classify(l, file)?.dtype, classify(l, mem)?.dtype);
                Ok(match (m, f) {
                    (Some(from), Some(to)) if from != to => linked_bug(l, mem, file, from, to).map(|bug| MemberBug { path, from, to, bug }),
                    _ => None,
                })
            }
            H5T_class_t::H5T_ARRAY => {
                let fb = Handle::new(l, H5Tget_super(file), "H5Tget_super")?;
                let mb = Handle::new(l, H5Tget_super(mem), "H5Tget_super")?;
                member_bug(l, fb.id(), mb.id(), format!("{path}[]"))
            }
            H5T_class_t::H5T_COMPOUND => {
                let n = check(l, H5Tget_nmembers(file), "H5Tget_nmembers")? as c_uint;
                for i in 0..n {
                    let name = H5Tget_member_name(file, i);
                    if name.is_null() {
                        continue;
                    }
                    let j = H5Tget_member_index(mem, name);
                    let text = crate::names::escape(CStr::from_ptr(name).to_bytes());
                    hdf5_sys::h5::H5free_memory(name as *mut _);
                    if j < 0 {
                        crate::hdf5::error::clear_stack(l);
                        continue;
                    }
                    let fm = Handle::new(l, H5Tget_member_type(file, i), "H5Tget_member_type")?;
                    let mm = Handle::new(l, H5Tget_member_type(mem, j as c_uint), "H5Tget_member_type")?;
                    let sub = if path.is_empty() { text } else { format!("{path}.{text}") };
                    if let Some(b) = member_bug(l, fm.id(), mm.id(), sub)? {
                        return Ok(Some(b));
                    }
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Dtype::*;

    #[test]
    fn rules_follow_the_libhdf5_version_and_path() {
        let old = (1, 10, 8);
        let mid = (1, 14, 6);
        let new = (2, 0, 0);
        // before 1.14.4 float16 has no hard path, and float16 -> 64-bit integers is broken either way
        assert_eq!(broken(old, false, Float16, Int64), Some(Broken::F16ToI64));
        assert_eq!(broken(old, false, Float16, Int32), None);
        assert_eq!(broken(old, false, Float32, Int8), None);
        assert_eq!(broken(mid, false, Float16, Int32), Some(Broken::FloatToSignedInt));
        assert_eq!(broken(mid, false, Float64, Int64), Some(Broken::FloatToSignedInt));
        assert_eq!(broken(mid, false, Float16, UInt32), None);
        assert_eq!(broken(new, true, Float16, Int32), None);
        for v in [old, mid, new] {
            assert_eq!(broken(v, false, Int32, Float16), Some(Broken::IntToF16));
            assert_eq!(broken(v, false, UInt64, Float16), Some(Broken::IntToF16));
            assert_eq!(broken(v, false, Int16, Float16), None);
            assert_eq!(broken(v, false, UInt16, Float16), None);
            assert_eq!(broken(v, false, Float64, Float16), Some(Broken::FloatToF16));
            assert_eq!(broken(v, false, Float16, Float32), None);
            assert_eq!(broken(v, true, Float32, Float16), None);
            assert_eq!(broken(v, true, Float64, Float32), None);
        }
        assert_eq!(broken(old, false, Float64, Float32), Some(Broken::F64ToF32));
        assert_eq!(broken(new, false, Float64, Float32), Some(Broken::F64ToF32));
        assert!(sign_swap(Int16, UInt16) && sign_swap(UInt64, Int64) && sign_swap(Int8, UInt8));
        assert!(!sign_swap(Int16, UInt32) && !sign_swap(Int32, Int32) && !sign_swap(Float32, Int32));
    }
}
