//! Shuffle (`H5Z_FILTER_SHUFFLE`, id 2, client data `[element size in bytes]`; HDF5 1.10
//! `src/H5Zshuffle.c`): byte `b` of element `e` is stored at `b * nelem + e`; a tail of
//! `nbytes % size` bytes is stored unchanged. [`shuffle`] (encode) and [`unshuffle`] (decode).

/// Both directions' start: `dst` sized as `src`. `None` (with `dst` a copy of `src`) when
/// there is nothing to reorder (item size <= 1 or at most one element); else the element
/// count and the bytes they span (the rest is a tail stored unchanged).
fn prepare(src: &[u8], dst: &mut Vec<u8>, size: usize) -> Option<(usize, usize)> {
    dst.clear();
    let nelem = src.len().checked_div(size).unwrap_or(0);
    if size <= 1 || nelem <= 1 {
        dst.extend_from_slice(src);
        return None;
    }
    dst.resize(src.len(), 0);
    Some((nelem, nelem * size))
}

/// The shuffle filter: `src` holds whole elements of `size` bytes; `dst` receives byte planes.
pub fn shuffle(src: &[u8], dst: &mut Vec<u8>, size: usize) {
    let Some((nelem, body)) = prepare(src, dst, size) else { return };
    for (b, plane) in dst[..body].chunks_exact_mut(nelem).enumerate() {
        for (e, out) in plane.iter_mut().enumerate() {
            *out = src[e * size + b];
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
}

/// Undo the shuffle filter: `src` holds byte planes; `dst` receives whole elements.
pub fn unshuffle(src: &[u8], dst: &mut Vec<u8>, size: usize) {
    let Some((nelem, body)) = prepare(src, dst, size) else { return };
    match size {
        2 => unshuffle_fixed::<2>(&src[..body], &mut dst[..body], nelem),
        4 => unshuffle_fixed::<4>(&src[..body], &mut dst[..body], nelem),
        8 => unshuffle8(&src[..body], &mut dst[..body], nelem),
        16 => unshuffle_fixed::<16>(&src[..body], &mut dst[..body], nelem),
        _ => {
            for b in 0..size {
                let plane = &src[b * nelem..(b + 1) * nelem];
                for (e, &byte) in plane.iter().enumerate() {
                    dst[e * size + b] = byte;
                }
            }
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
}

/// [`unshuffle`] of `nelem` 8-byte elements (`src`, `dst` exactly `8 * nelem` bytes): blocks
/// of 8 elements as an 8x8 byte matrix (one u64 per plane) transposed in registers with three
/// masked swap stages (bytes, 16-bit pairs, 32-bit halves; Hacker's Delight 7-3).
fn unshuffle8(src: &[u8], dst: &mut [u8], nelem: usize) {
    let full = nelem / 8 * 8;
    let word = |at: usize| u64::from_le_bytes(src[at..at + 8].try_into().expect("8 bytes"));
    for e0 in (0..full).step_by(8) {
        let mut r: [u64; 8] = std::array::from_fn(|b| word(b * nelem + e0));
        #[inline(always)]
        fn swap(r: &mut [u64; 8], a: usize, b: usize, shift: u32, mask: u64) {
            let t = ((r[a] >> shift) ^ r[b]) & mask;
            r[b] ^= t;
            r[a] ^= t << shift;
        }
        const M1: u64 = 0x00FF_00FF_00FF_00FF;
        const M2: u64 = 0x0000_FFFF_0000_FFFF;
        const M3: u64 = 0x0000_0000_FFFF_FFFF;
        swap(&mut r, 0, 1, 8, M1);
        swap(&mut r, 2, 3, 8, M1);
        swap(&mut r, 4, 5, 8, M1);
        swap(&mut r, 6, 7, 8, M1);
        swap(&mut r, 0, 2, 16, M2);
        swap(&mut r, 1, 3, 16, M2);
        swap(&mut r, 4, 6, 16, M2);
        swap(&mut r, 5, 7, 16, M2);
        swap(&mut r, 0, 4, 32, M3);
        swap(&mut r, 1, 5, 32, M3);
        swap(&mut r, 2, 6, 32, M3);
        swap(&mut r, 3, 7, 32, M3);
        for (k, v) in r.iter().enumerate() {
            dst[(e0 + k) * 8..(e0 + k) * 8 + 8].copy_from_slice(&v.to_le_bytes());
        }
    }
    for e in full..nelem {
        for b in 0..8 {
            dst[e * 8 + b] = src[b * nelem + e];
        }
    }
}

/// [`unshuffle`] of `nelem` elements of `N` bytes (`src` and `dst` exactly `N * nelem`
/// bytes): blocks of 16 elements, each element assembled from its `N` planes and stored at
/// once (the compiler vectorises the fixed-size gathers; ~4x the byte-by-byte loop).
fn unshuffle_fixed<const N: usize>(src: &[u8], dst: &mut [u8], nelem: usize) {
    const B: usize = 16;
    let planes: [&[u8]; N] = std::array::from_fn(|b| &src[b * nelem..(b + 1) * nelem]);
    let full = nelem / B * B;
    for (blk, out) in dst[..full * N].chunks_exact_mut(B * N).enumerate() {
        let e0 = blk * B;
        let mut tile = [[0u8; N]; B];
        for (b, plane) in planes.iter().enumerate() {
            let p: &[u8; B] = plane[e0..e0 + B].try_into().expect("16-byte block");
            for k in 0..B {
                tile[k][b] = p[k];
            }
        }
        for (k, t) in tile.iter().enumerate() {
            out[k * N..(k + 1) * N].copy_from_slice(t);
        }
    }
    for e in full..nelem {
        for (b, plane) in planes.iter().enumerate() {
            dst[e * N + b] = plane[e];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn shuffle_layout() {
        let mut out = vec![];
        // 3 elements of 2 bytes + 1 tail byte
        shuffle(&[1, 2, 3, 4, 5, 6, 7], &mut out, 2);
        assert_eq!(out, vec![1, 3, 5, 2, 4, 6, 7]);
    }

    proptest! {
        /// The fixed-size block paths (2, 4, 8, 16 bytes) equal the byte-by-byte definition,
        /// tails (elements past the last block of 16, bytes past the last element) included;
        /// shuffle inverts it.
        #[test]
        fn unshuffle_matches_definition(data in proptest::collection::vec(any::<u8>(), 0..1200), size in 1usize..18) {
            let mut got = Vec::new();
            unshuffle(&data, &mut got, size);
            let nelem = data.len() / size;
            let mut want = data.clone();
            if size > 1 && nelem > 1 {
                for e in 0..nelem {
                    for b in 0..size {
                        want[e * size + b] = data[b * nelem + e];
                    }
                }
            }
            prop_assert_eq!(&got, &want);
            let mut back = Vec::new();
            shuffle(&got, &mut back, size);
            prop_assert_eq!(back, data);
        }
    }
}
