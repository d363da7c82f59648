//! Element types shared by the payload and the slice halves of vh5.
//!
//! A [`Dtype`] is a fixed-size element type. Byte order is *not* part of it: payloads and
//! HDF5 files carry byte order separately ([`ByteOrder`]), and vh5 reports it next to the dtype.
//! The numeric codes ([`Dtype::code`]) are the stable `VH5_DTYPE_*` values of the C ABI.

/// Byte order of multi-byte elements.
/// Maximum number of axes of a dataset or array: HDF5's `H5S_MAX_RANK`. The one definition
/// (re-exported by `geometry` and `hdf5::dataset`; the C header's literal
/// `VH5_MAX_RANK` is checked against it at compile time).
pub const MAX_RANK: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    Little,
    Big,
}

impl ByteOrder {
    /// The byte order of the machine vh5 runs on.
    pub const NATIVE: ByteOrder = if cfg!(target_endian = "little") { ByteOrder::Little } else { ByteOrder::Big };

    /// Stable code used in the C ABI: 0 = little, 1 = big.
    pub fn code(self) -> u32 {
        match self {
            ByteOrder::Little => 0,
            ByteOrder::Big => 1,
        }
    }

    /// True when data in this order must be byte-swapped to be read natively.
    pub fn needs_swap(self) -> bool {
        self != Self::NATIVE
    }
}

/// A fixed-size element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dtype {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Float16,
    Float32,
    Float64,
    /// Two float32 (real, imaginary).
    Complex64,
    /// Two float64 (real, imaginary).
    Complex128,
    /// Any other fixed-size type (compound, array, opaque...) moved as raw bytes; the item
    /// size travels separately.
    Opaque,
}

/// All dtypes with a fixed item size, in code order.
pub const ALL_NUMERIC: [Dtype; 14] = [
    Dtype::Bool,
    Dtype::Int8,
    Dtype::Int16,
    Dtype::Int32,
    Dtype::Int64,
    Dtype::UInt8,
    Dtype::UInt16,
    Dtype::UInt32,
    Dtype::UInt64,
    Dtype::Float16,
    Dtype::Float32,
    Dtype::Float64,
    Dtype::Complex64,
    Dtype::Complex128,
];

impl Dtype {
    /// Stable code of the C ABI (`VH5_DTYPE_*`). 0 is never a valid dtype.
    pub fn code(self) -> u32 {
        match self {
            Dtype::Bool => 1,
            Dtype::Int8 => 2,
            Dtype::Int16 => 3,
            Dtype::Int32 => 4,
            Dtype::Int64 => 5,
            Dtype::UInt8 => 6,
            Dtype::UInt16 => 7,
            Dtype::UInt32 => 8,
            Dtype::UInt64 => 9,
            Dtype::Float16 => 10,
            Dtype::Float32 => 11,
            Dtype::Float64 => 12,
            Dtype::Complex64 => 13,
            Dtype::Complex128 => 14,
            Dtype::Opaque => 15,
        }
    }

    /// Inverse of [`Dtype::code`]; `None` for unknown codes.
    pub fn from_code(code: u32) -> Option<Dtype> {
        if code == 15 {
            return Some(Dtype::Opaque);
        }
        ALL_NUMERIC.iter().copied().find(|d| d.code() == code)
    }

    /// Size of one element in bytes; `None` for [`Dtype::Opaque`] (size given separately).
    pub fn itemsize(self) -> Option<usize> {
        Some(match self {
            Dtype::Bool | Dtype::Int8 | Dtype::UInt8 => 1,
            Dtype::Int16 | Dtype::UInt16 | Dtype::Float16 => 2,
            Dtype::Int32 | Dtype::UInt32 | Dtype::Float32 => 4,
            Dtype::Int64 | Dtype::UInt64 | Dtype::Float64 | Dtype::Complex64 => 8,
            Dtype::Complex128 => 16,
            Dtype::Opaque => return None,
        })
    }

    /// Size of the unit that byte swapping reverses (complex numbers swap each half).
    pub fn swap_unit(self) -> usize {
        match self {
            Dtype::Complex64 => 4,
            Dtype::Complex128 => 8,
            Dtype::Opaque => 1,
            d => d.itemsize().unwrap_or(1),
        }
    }

    /// Canonical lower-case name (numpy's): "int32", "float64", "complex128", "bool", "opaque".
    pub fn name(self) -> &'static str {
        self.c_name().to_str().unwrap_or("?")
    }

    /// [`Dtype::name`] as a NUL-terminated string (what `vh5_dtype_name` returns): the one
    /// table of dtype names.
    pub fn c_name(self) -> &'static std::ffi::CStr {
        match self {
            Dtype::Bool => c"bool",
            Dtype::Int8 => c"int8",
            Dtype::Int16 => c"int16",
            Dtype::Int32 => c"int32",
            Dtype::Int64 => c"int64",
            Dtype::UInt8 => c"uint8",
            Dtype::UInt16 => c"uint16",
            Dtype::UInt32 => c"uint32",
            Dtype::UInt64 => c"uint64",
            Dtype::Float16 => c"float16",
            Dtype::Float32 => c"float32",
            Dtype::Float64 => c"float64",
            Dtype::Complex64 => c"complex64",
            Dtype::Complex128 => c"complex128",
            Dtype::Opaque => c"opaque",
        }
    }

    /// Parse a canonical name as returned by [`Dtype::name`] (this covers every dtype name
    /// Reductionist 0.12-0.13.1 sends: int32, int64, uint32, uint64, float32, float64).
    pub fn from_name(name: &str) -> Option<Dtype> {
        ALL_NUMERIC.iter().copied().find(|d| d.name() == name)
    }

    /// numpy kind character: 'b' bool, 'i' signed, 'u' unsigned, 'f' float, 'c' complex, 'V' opaque.
    pub fn kind(self) -> char {
        match self {
            Dtype::Bool => 'b',
            Dtype::Int8 | Dtype::Int16 | Dtype::Int32 | Dtype::Int64 => 'i',
            Dtype::UInt8 | Dtype::UInt16 | Dtype::UInt32 | Dtype::UInt64 => 'u',
            Dtype::Float16 | Dtype::Float32 | Dtype::Float64 => 'f',
            Dtype::Complex64 | Dtype::Complex128 => 'c',
            Dtype::Opaque => 'V',
        }
    }

    /// Parse a numpy array-interface type string such as `<f8`, `>i4`, `|u1`, `=c16`, `<f2`,
    /// `|b1` (numpy `dtype.str`). Returns the dtype and its byte order (`None` for `|`, i.e.
    /// not applicable; `=` means native). Only the fixed-size numeric and bool kinds are
    /// accepted; anything else (`O`, `V`, `S`, `U`, `M`...) returns `None`.
    pub fn from_numpy_str(s: &str) -> Option<(Dtype, Option<ByteOrder>)> {
        let b = s.as_bytes();
        if b.len() < 3 {
            return None;
        }
        let order = match b[0] {
            b'<' => Some(ByteOrder::Little),
            b'>' => Some(ByteOrder::Big),
            b'=' => Some(ByteOrder::NATIVE),
            b'|' => None,
            _ => return None,
        };
        // `get`, not `[2..]`: byte 2 may fall inside a multi-byte UTF-8 character ("<é").
        let size: usize = s.get(2..)?.parse().ok()?;
        let d = ALL_NUMERIC.iter().copied().find(|d| d.kind() as u8 == b[1] && d.itemsize() == Some(size))?;
        // A 1-byte type needs no order; a multi-byte one must state it.
        if size > 1 && order.is_none() {
            return None;
        }
        Some((d, order))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_stable() {
        for d in ALL_NUMERIC {
            assert_eq!(Dtype::from_code(d.code()), Some(d));
        }
        assert_eq!(Dtype::Float64.code(), 12);
        assert_eq!(Dtype::from_code(0), None);
        assert_eq!(Dtype::from_code(16), None);
        assert_eq!(Dtype::from_code(15), Some(Dtype::Opaque));
    }

    #[test]
    fn names_round_trip() {
        for d in ALL_NUMERIC {
            assert_eq!(Dtype::from_name(d.name()), Some(d));
        }
        for n in ["int32", "int64", "uint32", "uint64", "float32", "float64"] {
            assert_eq!(Dtype::from_name(n).unwrap().name(), n);
        }
        assert_eq!(Dtype::from_name("float128"), None);
    }

    #[test]
    fn numpy_strings() {
        assert_eq!(Dtype::from_numpy_str("<f8"), Some((Dtype::Float64, Some(ByteOrder::Little))));
        assert_eq!(Dtype::from_numpy_str(">i4"), Some((Dtype::Int32, Some(ByteOrder::Big))));
        assert_eq!(Dtype::from_numpy_str("|u1"), Some((Dtype::UInt8, None)));
        assert_eq!(Dtype::from_numpy_str("<c16"), Some((Dtype::Complex128, Some(ByteOrder::Little))));
        assert_eq!(Dtype::from_numpy_str("<f2"), Some((Dtype::Float16, Some(ByteOrder::Little))));
        assert_eq!(Dtype::from_numpy_str("|b1"), Some((Dtype::Bool, None)));
        assert_eq!(Dtype::from_numpy_str("|f8"), None);
        assert_eq!(Dtype::from_numpy_str("|O"), None);
        assert_eq!(Dtype::from_numpy_str("<U4"), None);
        assert_eq!(Dtype::from_numpy_str("<f16"), None);
    }

    #[test]
    fn itemsizes() {
        assert_eq!(Dtype::Complex64.itemsize(), Some(8));
        assert_eq!(Dtype::Complex64.swap_unit(), 4);
        assert_eq!(Dtype::Opaque.itemsize(), None);
    }
}
