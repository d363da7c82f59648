//! Case generation for the slices oracle (fuzz/src/slices.rs): every choice is read from a
//! byte stream ([`Pick`]), so libFuzzer's mutations and proptest's random bytes both steer
//! the same structure-aware builders (ranks, shapes, dtypes, layouts, tables, flags).

use super::{c_strides, dtype_size, is_empty, ArraySpec, CopyCase, FixtureDs, ReadCase, Tables, WriteCase, MAX_BUF};

/// A source of choices (bytes). Exhausted sources return 0 from `raw`.
pub trait Pick {
    /// The next input byte (0 when the input is exhausted).
    fn raw(&mut self) -> u8;
    /// The next choice byte: `raw() ^ 0x80`, so that an exhausted input (0x80 here) picks the
    /// common branch of every choice below rather than the rare ones.
    fn byte(&mut self) -> u8 {
        self.raw() ^ 0x80
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0u64, |v, _| (v << 8) | self.byte() as u64)
    }
    /// Uniform-ish in `0..n` (0 when n <= 1).
    fn below(&mut self, n: u64) -> u64 {
        match n {
            0 | 1 => 0,
            2..=256 => self.byte() as u64 % n,
            _ => self.u64() % n,
        }
    }
    /// True with probability about `k`/256.
    fn chance(&mut self, k: u8) -> bool {
        self.byte() < k
    }
}

/// [`Pick`] over a byte slice (the stable property test and seed replays).
pub struct Bytes<'a>(pub &'a [u8], pub usize);
impl Pick for Bytes<'_> {
    fn raw(&mut self) -> u8 {
        let b = self.0.get(self.1).copied().unwrap_or(0);
        self.1 += 1;
        b
    }
}

/// A value that is usually small (`0..small`) and sometimes one of the edges of uint64.
pub(super) fn interesting(p: &mut impl Pick, small: u64) -> u64 {
    match p.byte() {
        0..=229 => p.below(small),
        230..=235 => u64::MAX - p.below(3),
        236..=239 => (1u64 << 63) - p.below(2),
        240..=243 => 1u64 << (32 + p.below(31)),
        244..=247 => small + p.below(8),
        _ => p.u64(),
    }
}

/// Per-axis extents: mostly 0..=6, sometimes huge (for broadcast sources and refusals).
pub(super) fn gen_shape(p: &mut impl Pick, n: usize) -> Vec<u64> {
    (0..n)
        .map(|_| {
            if n > 6 {
                // high ranks stay small in elements
                return if p.chance(16) { p.below(3) } else { 1 };
            }
            match p.byte() {
                0..=9 => 0,
                10..=14 => interesting(p, 1 << 20),
                _ => 1 + p.below(6),
            }
        })
        .collect()
}

/// A layout for `shape`: proper (permuted, padded, some axes reversed), NULL strides, or
/// per-axis wild strides; offset and base_len around the exact minimum.
pub(super) fn gen_layout(p: &mut impl Pick, shape: &[u64], itemsize: usize) -> (Option<Vec<i64>>, usize, usize) {
    let n = shape.len();
    let kind = p.byte();
    let strides: Option<Vec<i64>> = if kind < 40 {
        None
    } else if kind < 200 {
        // proper layout: axes in a random order, padding, random reversal
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, p.below(i as u64 + 1) as usize);
        }
        let pad_item = if p.chance(40) { p.below(4) as i64 } else { 0 };
        let mut acc: i64 = itemsize as i64 + pad_item;
        let mut s = vec![0i64; n];
        for &k in order.iter().rev() {
            s[k] = acc;
            let pad = if p.chance(50) { p.below(3) as i64 } else { 0 };
            acc = acc.saturating_mul((shape[k].min(1 << 20) as i64).max(1) + pad);
        }
        for v in s.iter_mut() {
            if p.chance(60) {
                *v = -*v;
            }
        }
        Some(s)
    } else {
        Some(
            (0..n)
                .map(|_| match p.byte() {
                    0..=49 => 0,
                    50..=149 => p.below(65) as i64 - 32,
                    150..=199 => (itemsize as i64) * (p.below(9) as i64 - 4),
                    200..=219 => i64::MAX - p.below(2) as i64,
                    220..=239 => i64::MIN + p.below(2) as i64,
                    _ => (p.u64() >> p.below(64)) as i64,
                })
                .collect(),
        )
    };
    // Exact extent of the layout (as vh5 validates it).
    let st = match &strides {
        Some(s) => Some(s.clone()),
        None => c_strides(shape, itemsize),
    };
    let (mut lo, mut hi) = (0i128, itemsize as i128);
    let mut ok = st.is_some();
    if let Some(st) = &st {
        if !is_empty(shape) {
            for (&e, &s) in shape.iter().zip(st) {
                let r = (e as i128 - 1) * s as i128;
                if r < 0 {
                    lo = lo.saturating_add(r);
                } else {
                    hi = hi.saturating_add(r);
                }
            }
        } else {
            hi = 0;
        }
    }
    ok &= lo >= -(MAX_BUF as i128) && hi <= MAX_BUF as i128;
    let extra = if p.chance(80) { p.below(9) as usize } else { 0 };
    let (offset, base_len) = if ok {
        let offset = (-lo) as usize + extra;
        let span = (hi - lo) as usize + extra;
        let base_len = match p.byte() {
            0..=19 => span.saturating_sub(1 + p.below(2) as usize),
            20..=39 => span + p.below(16) as usize,
            40..=49 => p.below(64) as usize,
            _ => span,
        };
        (if p.chance(12) { p.below(64) as usize } else { offset }, base_len.min(MAX_BUF))
    } else {
        (p.below(64) as usize, p.below(256) as usize)
    };
    (strides, offset, base_len)
}

/// A dtype code and item size: mostly consistent, sometimes unknown codes or wrong sizes.
pub(super) fn gen_dtype(p: &mut impl Pick) -> (u32, usize) {
    let code = match p.byte() {
        0..=2 => [0u32, 16, u32::MAX][p.below(3) as usize],
        3..=20 => 15,
        _ => 1 + p.below(14) as u32,
    };
    let size = match dtype_size(code) {
        Some(Some(s)) if !p.chance(6) => s,
        Some(None) => 1 + p.below(24) as usize,
        _ => p.below(17) as usize,
    };
    (code, size)
}

pub(super) fn gen_rank(p: &mut impl Pick) -> usize {
    match p.byte() {
        0..=3 => 5 + p.below(29) as usize, // up to 33 (one past the maximum)
        4..=24 => 0,
        _ => 1 + p.below(4) as usize,
    }
}

/// Rows against the source extents `ss` and destination extents `ds` (`n` columns).
pub(super) fn gen_tables(p: &mut impl Pick, n: usize, sshape: &[u64], dshape: &[u64]) -> Tables {
    let nslices = match p.byte() {
        0..=9 => 0,
        10..=239 => 1 + p.below(6) as usize,
        _ => 7 + p.below(26) as usize,
    };
    let with_ss = p.chance(110);
    let with_ds = p.chance(110);
    let mut t = Tables { nslices, src_step: with_ss.then(Vec::new), dst_step: with_ds.then(Vec::new), ..Default::default() };
    let ext = |sh: &[u64], j: usize| sh.get(j).copied().unwrap_or(4).min(1 << 20);
    for _ in 0..nslices {
        for j in 0..n {
            let (es, ed) = (ext(sshape, j), ext(dshape, j));
            t.src_start.push(interesting(p, es + 1));
            t.dst_start.push(interesting(p, ed + 1));
            let c = match p.byte() {
                0..=12 => 0,
                13..=24 => interesting(p, 1 << 10),
                _ => 1 + p.below(es.max(ed).max(1) + 1),
            };
            t.count.push(c);
            for (want, v) in [(with_ss, &mut t.src_step), (with_ds, &mut t.dst_step)] {
                if want {
                    let s = match p.byte() {
                        0..=3 => 0,
                        4..=9 => interesting(p, 1 << 20),
                        10..=159 => 1,
                        _ => 2 + p.below(3),
                    };
                    v.as_mut().unwrap().push(s);
                }
            }
        }
    }
    if p.chance(8) {
        t.null_table = Some(p.below(5) as u8);
    }
    t
}

pub(super) fn gen_flags(p: &mut impl Pick, convert_ok: bool) -> u32 {
    match p.byte() {
        0..=99 => 0,
        100..=199 => 1,
        200..=219 => 2 | (p.byte() & 1) as u32,
        220..=229 if convert_ok => 2,
        _ => 1u32 << p.below(32),
    }
}

pub(super) fn gen_array(p: &mut impl Pick, n: usize, dtype: (u32, usize)) -> ArraySpec {
    let shape = gen_shape(p, n);
    let (strides, offset, base_len) = gen_layout(p, &shape, dtype.1.max(1));
    let null_base = base_len == 0 && p.chance(128);
    ArraySpec { dtype: dtype.0, itemsize: dtype.1, shape, strides, offset, base_len, null_base }
}

pub fn gen_copy(p: &mut impl Pick) -> CopyCase {
    let n = gen_rank(p);
    let sdt = gen_dtype(p);
    let ddt = if p.chance(8) { gen_dtype(p) } else { sdt };
    let mut src = gen_array(p, n, sdt);
    let dn = if p.chance(6) { (n + 1 + p.below(2) as usize) % 34 } else { n };
    let mut dst = gen_array(p, dn, ddt);
    if dn == n && p.chance(60) {
        // a destination of the same shape (rows then fit more often)
        dst.shape = src.shape.clone();
        let (st, o, l) = gen_layout(p, &dst.shape, dst.itemsize.max(1));
        (dst.strides, dst.offset, dst.base_len) = (st, o, l);
        dst.null_base = false;
    }
    let same_buffer = p.chance(50) && !src.null_base && !dst.null_base;
    if same_buffer {
        let l = src.base_len.max(dst.base_len);
        src.base_len = l;
        dst.base_len = l;
    }
    let tables = gen_tables(p, dst.shape.len(), &src.shape, &dst.shape);
    let flags = gen_flags(p, false);
    CopyCase { src, dst, same_buffer, tables, flags, seed: p.byte() }
}

pub fn gen_read(p: &mut impl Pick, fixture: &[FixtureDs]) -> ReadCase {
    let ds = p.below(fixture.len() as u64) as usize;
    let f = &fixture[ds];
    let n = match p.byte() {
        0..=5 => gen_rank(p),
        _ => f.shape.len(),
    };
    let dt = match p.byte() {
        0..=149 => (f.dtype, dtype_size(f.dtype).unwrap().unwrap()),
        150..=229 => {
            let code = f.whole[p.below(f.whole.len() as u64) as usize].0;
            (code, dtype_size(code).unwrap().unwrap())
        }
        _ => gen_dtype(p),
    };
    let mut dst = gen_array(p, n, dt);
    if p.chance(100) && n == f.shape.len() {
        // the dataset's own extents (small ones only) in a fresh layout
        dst.shape = f.shape.iter().map(|&e| e.min(8)).collect();
        let (st, o, l) = gen_layout(p, &dst.shape, dst.itemsize.max(1));
        (dst.strides, dst.offset, dst.base_len) = (st, o, l);
        dst.null_base = false;
    }
    let tables = gen_tables(p, n, &f.shape, &dst.shape);
    let mut flags = gen_flags(p, true);
    if dt.0 != f.dtype && p.chance(200) && flags <= 3 {
        flags |= 2;
    }
    ReadCase { ds, dst, tables, flags, mode: p.below(3) as usize, threads: 1 + p.below(3) as usize, seed: p.byte() }
}

pub fn gen_write(p: &mut impl Pick, fixture: &[FixtureDs]) -> WriteCase {
    let ds = p.below(fixture.len() as u64) as usize;
    let f = &fixture[ds];
    let n = match p.byte() {
        0..=5 => gen_rank(p),
        _ => f.shape.len(),
    };
    let dt = match p.byte() {
        0..=169 => (f.dtype, dtype_size(f.dtype).unwrap().unwrap()),
        170..=229 => {
            let code = [12u32, 5, 4, 11][p.below(4) as usize];
            (code, dtype_size(code).unwrap().unwrap())
        }
        _ => gen_dtype(p),
    };
    let mut src = gen_array(p, n, dt);
    if p.chance(100) && n == f.shape.len() {
        src.shape = f.shape.iter().map(|&e| e.min(8)).collect();
        let (st, o, l) = gen_layout(p, &src.shape, src.itemsize.max(1));
        (src.strides, src.offset, src.base_len) = (st, o, l);
        src.null_base = false;
    }
    let tables = gen_tables(p, n, &src.shape, &f.shape);
    let mut flags = gen_flags(p, true);
    if dt.0 != f.dtype && p.chance(200) && flags <= 3 {
        flags |= 2;
    }
    WriteCase { ds, src, tables, flags, threads: 1 + p.below(3) as usize, seed: p.byte() }
}
