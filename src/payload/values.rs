//! Reading single elements of a view (unaligned-safe, byte order honoured), for tools and
//! tests. Bulk readers should use the view's pointer or [`super::copy_data`] instead.

use super::view::PayloadView;
use crate::dtype::{ByteOrder, Dtype};

/// One element value, widened.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    Bool(bool),
    /// Any signed or unsigned integer type.
    Int(i128),
    /// float16 / float32 / float64, exactly widened to f64.
    Float(f64),
    /// complex64 / complex128 as (real, imaginary).
    Complex(f64, f64),
}

/// Convert IEEE 754 binary16 bits to f64 (exact).
pub fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let frac = (h & 0x3ff) as f64;
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

fn uint(b: &[u8], order: ByteOrder) -> u64 {
    let mut a = [0u8; 8];
    match order {
        ByteOrder::Little => a[..b.len()].copy_from_slice(b),
        ByteOrder::Big => b.iter().rev().enumerate().for_each(|(i, &x)| a[i] = x),
    }
    u64::from_le_bytes(a)
}

/// Decode one element of type `dtype` from its `itemsize` bytes in `order`.
pub fn scalar_from_bytes(b: &[u8], dtype: Dtype, order: ByteOrder) -> Scalar {
    let n = b.len();
    match dtype {
        Dtype::Bool => Scalar::Bool(b[0] != 0),
        Dtype::Int8 | Dtype::Int16 | Dtype::Int32 | Dtype::Int64 => {
            let shift = 64 - 8 * n as u32;
            Scalar::Int((((uint(b, order) << shift) as i64) >> shift) as i128)
        }
        Dtype::UInt8 | Dtype::UInt16 | Dtype::UInt32 | Dtype::UInt64 | Dtype::Opaque => Scalar::Int(uint(b, order) as i128),
        Dtype::Float16 => Scalar::Float(f16_to_f64(uint(b, order) as u16)),
        Dtype::Float32 => Scalar::Float(f32::from_bits(uint(b, order) as u32) as f64),
        Dtype::Float64 => Scalar::Float(f64::from_bits(uint(b, order))),
        Dtype::Complex64 => Scalar::Complex(f32::from_bits(uint(&b[..4], order) as u32) as f64, f32::from_bits(uint(&b[4..], order) as u32) as f64),
        Dtype::Complex128 => Scalar::Complex(f64::from_bits(uint(&b[..8], order)), f64::from_bits(uint(&b[8..], order))),
    }
}

impl PayloadView<'_> {
    /// Element `i` in payload order (C order, or Fortran order when `fortran_order`);
    /// `None` when `i >= nelements`.
    pub fn get(&self, i: u64) -> Option<Scalar> {
        let item = self.itemsize();
        let start = usize::try_from(i).ok()?.checked_mul(item)?;
        let b = self.data.get(start..start.checked_add(item)?)?;
        Some(scalar_from_bytes(b, self.dtype, self.byte_order.unwrap_or(ByteOrder::Little)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars() {
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
        assert_eq!(f16_to_f64(0x7c00), f64::INFINITY);
        assert!(f16_to_f64(0x7e00).is_nan());
        assert_eq!(scalar_from_bytes(&[0xff, 0xfe], Dtype::Int16, ByteOrder::Big), Scalar::Int(-2));
        assert_eq!(scalar_from_bytes(&[0xff; 8], Dtype::UInt64, ByteOrder::Big), Scalar::Int(u64::MAX as i128));
        assert_eq!(scalar_from_bytes(&1.5f32.to_be_bytes(), Dtype::Float32, ByteOrder::Big), Scalar::Float(1.5));
        let mut c = 1.0f64.to_le_bytes().to_vec();
        c.extend_from_slice(&(-3.0f64).to_le_bytes());
        assert_eq!(scalar_from_bytes(&c, Dtype::Complex128, ByteOrder::Little), Scalar::Complex(1.0, -3.0));
    }
}
