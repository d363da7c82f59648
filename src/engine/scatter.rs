//! Scatter into a destination shared by several threads that write disjoint elements: the
//! strided copy of [`super::copy`] (its bounds check and raw core, no second engine) over a
//! raw destination pointer. The read planner's workers
//! scatter the pieces of different chunks at the same time; pieces of different rows never
//! share a destination element (rows whose destinations overlap run later, in row order, on
//! one thread), and pieces of one row are disjoint by construction.

use super::copy::{check_block, copy_raw};
use crate::error::Result;

/// A caller's destination buffer, shared by the threads of one read.
#[derive(Debug, Clone, Copy)]
pub struct DstPtr {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the pointer is only written through `copy_in`, whose contract requires that no two
// threads touch the same bytes at the same time; the buffer outlives the scoped threads.
unsafe impl Send for DstPtr {}
// SAFETY: as for `Send`: shared use only goes through `copy_in` / `range`, whose contracts
// keep threads on disjoint bytes.
unsafe impl Sync for DstPtr {}

impl DstPtr {
    /// Share `buf` (its exclusive borrow must last as long as this value is used).
    pub fn new(buf: &mut [u8]) -> DstPtr {
        DstPtr { ptr: buf.as_mut_ptr(), len: buf.len() }
    }

    /// Length of the buffer in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes `[off, off + len)` as a mutable slice (`OutOfBounds` outside the buffer).
    ///
    /// # Safety
    /// No other thread may access these bytes while the slice lives.
    // The mutable slice out of `&self` is the point of this type (disjoint ranges handed to
    // worker threads); the exclusivity is the caller's documented obligation above.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn range(&self, off: usize, len: usize) -> Result<&mut [u8]> {
        if off.checked_add(len).is_none_or(|e| e > self.len) {
            bail!(OutOfBounds, "scatter: bytes [{off}, +{len}) outside the destination of {} bytes", self.len);
        }
        // SAFETY: `[off, off + len)` is inside the destination (checked above); exclusivity is
        // the caller's contract.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.add(off), len) })
    }

    /// Hint that the destination byte `off` will be written soon (a prefetch into the cache;
    /// nothing for an offset outside the buffer, or off x86-64). Never reads or writes.
    pub fn prefetch(&self, off: usize) {
        if off < self.len {
            super::copy::prefetch(self.ptr.wrapping_add(off));
        }
    }

    /// Copy `prod(counts)` elements of `itemsize` bytes from `src` (element `idx` at byte
    /// `so + sum(idx*ss)`) to the destination (at byte `d_o + sum(idx*ds)`), in C order of
    /// `idx`. Both blocks are bounds-checked first (`OutOfBounds`, nothing written).
    ///
    /// # Safety
    /// No other thread may read or write the destination elements of this block during the call.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn copy_in(&self, src: &[u8], so: usize, ss: &[isize], d_o: usize, ds: &[isize], counts: &[usize], itemsize: usize) -> Result<()> {
        let n = counts.len();
        debug_assert!(ss.len() == n && ds.len() == n);
        if counts.contains(&0) {
            return Ok(());
        }
        check_block("scatter", "source", src.len(), so, ss, counts, itemsize)?;
        check_block("scatter", "destination", self.len, d_o, ds, counts, itemsize)?;
        // SAFETY: both blocks are inside their buffers (checked above); `src` is a shared
        // borrow distinct from the destination; exclusivity of the destination elements is the
        // caller's contract.
        unsafe { copy_raw(src.as_ptr().add(so), self.ptr.add(d_o), ss, ds, counts, itemsize) };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Same bytes as the copy engine for random layouts (negative, unaligned strides).
        #[test]
        fn matches_copy_engine(
            counts in proptest::collection::vec(1usize..5, 0..4),
            size in prop::sample::select(vec![1usize, 2, 3, 4, 8, 16]),
            step in 1isize..3, neg in any::<bool>(), so in 0usize..5, pad in 0usize..3,
        ) {
            let n = counts.len();
            let mut ss = vec![0isize; n];
            let mut acc = size as isize * step;
            for k in (0..n).rev() { ss[k] = acc; acc *= counts[k] as isize; }
            let src: Vec<u8> = (0..so + acc as usize + size).map(|i| (i * 13 + 1) as u8).collect();
            let mut ds = vec![0isize; n];
            let mut acc = (size + pad) as isize;
            for k in (0..n).rev() { ds[k] = acc; acc *= counts[k] as isize; }
            let mut off = 1usize;
            if neg && n > 0 { off += (ds[0] * (counts[0] as isize - 1)) as usize; ds[0] = -ds[0]; }
            let len = off + acc as usize + size + 4;
            let mut want = vec![0u8; len];
            let mut got = want.clone();
            crate::engine::copy::copy_strided(&src, so, &ss, &mut want, off, &ds, &counts, size).unwrap();
            let p = DstPtr::new(&mut got);
            // SAFETY: single-threaded test.
            unsafe { p.copy_in(&src, so, &ss, off, &ds, &counts, size).unwrap() };
            prop_assert_eq!(&got, &want);
            let p = DstPtr::new(&mut want);
            // SAFETY: single-threaded test.
            let r = unsafe { p.copy_in(&src, so, &ss, len, &ds, &counts, size) };
            prop_assert!(r.is_err());
        }
    }
}
