//! Fallible buffer sizing for every buffer whose size comes from numbers in a file (chunk
//! shape, stored chunk size, decoded size) or from a row's extent: a refused allocation
//! becomes a `NoMemory` error naming what the buffer was for and how many bytes it needed,
//! never a process abort (`Vec::resize` / `reserve` abort on allocation failure).

use crate::error::Result;

/// Make `buf` exactly `bytes` long (new bytes zeroed, existing bytes kept), reserving
/// fallibly. `what` names the buffer's purpose for the error message ("chunk [3, 1]", "row 7").
pub fn resize_zeroed(buf: &mut Vec<u8>, bytes: usize, what: impl FnOnce() -> String) -> Result<()> {
    if bytes > buf.len() {
        reserve_total(buf, bytes, what)?;
    }
    buf.resize(bytes, 0);
    Ok(())
}

/// Make sure `buf` can hold `total` bytes without reallocating (fallible, exact).
pub fn reserve_total(buf: &mut Vec<u8>, total: usize, what: impl FnOnce() -> String) -> Result<()> {
    if total > buf.capacity() {
        buf.try_reserve_exact(total - buf.len()).map_err(|e| err!(NoMemory, "{}: cannot allocate {total} bytes ({e})", what()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_allocation_is_an_error() {
        let mut b = vec![1u8, 2];
        resize_zeroed(&mut b, 4, || "x".into()).unwrap();
        assert_eq!(b, [1, 2, 0, 0]);
        resize_zeroed(&mut b, 1, || "x".into()).unwrap();
        assert_eq!(b, [1]);
        // More than the address space can hold: refused, not aborted.
        let e = resize_zeroed(&mut b, usize::MAX / 2, || "chunk [7]".into()).unwrap_err();
        assert_eq!(e.kind, crate::error::ErrorKind::NoMemory);
        assert!(e.message.starts_with(&format!("chunk [7]: cannot allocate {} bytes", usize::MAX / 2)), "{}", e.message);
        assert_eq!(b, [1]);
    }
}
