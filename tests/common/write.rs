//! Helpers for the write tests (included with `#[path = "common/write.rs"] mod write_common;`): open read-write through the C ABI, call
//! `vh5_write_many_slices`, and an index-loop reference of a write (strided source array ->
//! C-order dataset).
#![allow(dead_code)]

use std::ffi::CString;
use std::path::Path;

use crate::common::{last_error, tables, TRow};
use vh5::dtype::Dtype;
use vh5::ffi::hdf5::*;
use vh5::ffi::slices_write::vh5_write_many_slices;
use vh5::ffi::vh5_status;

/// Open `path` read-write (or read-only) and dataset `name` through the C ABI.
pub fn open_rw(path: &Path, name: &str, rw: bool) -> (i64, i64) {
    let (mut f, mut d) = (-1, -1);
    let p = CString::new(path.to_str().unwrap()).unwrap();
    let st = unsafe { vh5_file_open(p.as_ptr(), if rw { VH5_FILE_READ_WRITE } else { 0 }, &mut f) };
    assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
    let n = CString::new(name).unwrap();
    let st = unsafe { vh5_dataset_open(f, n.as_ptr(), &mut d) };
    assert_eq!(st, vh5_status::VH5_OK, "{}", last_error());
    (f, d)
}

/// A strided source array description.
#[derive(Debug, Clone)]
pub struct SrcLay {
    pub shape: Vec<u64>,
    pub strides: Vec<i64>,
    pub offset: usize,
}

impl SrcLay {
    pub fn c(shape: &[u64], size: usize) -> SrcLay {
        SrcLay { shape: shape.to_vec(), strides: vh5::transfer::ArrayLayout::c_strides(shape, size).unwrap(), offset: 0 }
    }
    pub fn addr(&self, idx: &[u64]) -> usize {
        (self.offset as i64 + idx.iter().zip(&self.strides).map(|(&i, &s)| i as i64 * s).sum::<i64>()) as usize
    }
}

/// `vh5_write_many_slices` with the given tables; returns the status and the message.
pub fn ffi_write(dset: i64, src: &[u8], lay: &SrcLay, dtype: Dtype, size: usize, rows: &[TRow], flags: u32) -> (vh5_status, String) {
    let t = tables(rows);
    let a = vh5_array {
        base: src.as_ptr() as *mut _,
        base_len: src.len(),
        offset: lay.offset,
        dtype: dtype.code(),
        itemsize: size,
        ndim: lay.shape.len() as u32,
        shape: lay.shape.as_ptr(),
        strides: lay.strides.as_ptr(),
    };
    let st = unsafe { vh5_write_many_slices(dset, &a, rows.len(), t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), t[3].as_ptr(), t[4].as_ptr(), flags) };
    (st, if st == vh5_status::VH5_OK { String::new() } else { last_error() })
}

/// Reference write with index loops: rows applied in order to `data` (C-order dataset of
/// `dshape`). Err((row, axis)) for the first row out of bounds without clip (nothing written).
pub fn ref_write(data: &mut [u8], dshape: &[u64], src: &[u8], lay: &SrcLay, size: usize, rows: &[TRow], clip: bool) -> Result<(), (usize, usize)> {
    let n = dshape.len();
    let mut eff = vec![];
    for (i, r) in rows.iter().enumerate() {
        if r.c.contains(&0) {
            eff.push(None);
            continue;
        }
        let mut cnt = vec![0u64; n];
        for j in 0..n {
            let mut k = 0;
            while k < r.c[j] && r.s[j] + k * r.ss[j] < lay.shape[j] && r.d[j] + k * r.ds[j] < dshape[j] {
                k += 1;
            }
            if k < r.c[j] && !clip {
                return Err((i, j));
            }
            cnt[j] = k;
        }
        eff.push(if cnt.contains(&0) { None } else { Some(cnt) });
    }
    let mut dstr = vec![size as u64; n];
    for j in (0..n.saturating_sub(1)).rev() {
        dstr[j] = dstr[j + 1] * dshape[j + 1];
    }
    for (r, cnt) in rows.iter().zip(eff) {
        let Some(cnt) = cnt else { continue };
        let total: u64 = cnt.iter().product();
        for flat in 0..total {
            let mut k = vec![0u64; n];
            let mut rem = flat;
            for j in (0..n).rev() {
                k[j] = rem % cnt[j];
                rem /= cnt[j];
            }
            let si: Vec<u64> = (0..n).map(|j| r.s[j] + k[j] * r.ss[j]).collect();
            let a = lay.addr(&si);
            let b: u64 = (0..n).map(|j| (r.d[j] + k[j] * r.ds[j]) * dstr[j]).sum();
            let b = b as usize;
            data[b..b + size].copy_from_slice(&src[a..a + size]);
        }
    }
    Ok(())
}
