//! Writes into damaged chunks: a row covering part of a corrupt chunk makes vh5 read the
//! chunk to merge it (raw decode by vh5, or libhdf5). A chunk that cannot be read must fail
//! the call naming the chunk, and must never be "repaired" with bytes libhdf5 made up
//! (uninitialised memory padding a short stream, the first bytes of a bomb).

use std::path::Path;

use vh5::dtype::Dtype;
use vh5::ffi::hdf5::*;
use vh5::ffi::slices_write::vh5_write_many_slices;
use vh5::ffi::vh5_status::{self, *};
use vh5::transfer::options::with_overrides;

use super::files::{c_close, c_dopen, c_open, chunk_addr, row};
use super::{find, patch, Guarded, Report};
use crate::common::{last_error, tables, TempDir};

/// Write a 2 x 3 block of 7.0 at (5, 6) of dataset `name` in a read-write copy of `src`;
/// returns the status and message, and the stored bytes of chunk [0, 0] before and after.
fn write_into(src: &Path, dst: &Path, name: &str, threads: usize) -> ((vh5_status, String), Vec<u8>, Vec<u8>) {
    std::fs::copy(src, dst).unwrap();
    let (addr, size) = chunk_addr(dst, name, &[0, 0]);
    let before = std::fs::read(dst).unwrap()[addr as usize..(addr + size.min(4096)) as usize].to_vec();
    let (st, m, f) = c_open(dst, VH5_FILE_READ_WRITE);
    assert_eq!(st, VH5_OK, "{m}");
    let (st, m, d) = c_dopen(f, name);
    assert_eq!(st, VH5_OK, "{m}");
    let mut g = Guarded::new(6 * 8, 0);
    g.buf[super::GUARD..super::GUARD + 48].copy_from_slice(&[7f64; 6].map(f64::to_ne_bytes).concat());
    let shape = [2u64, 3];
    let a = vh5_array { base: g.ptr() as *mut _, base_len: g.len, offset: 0, dtype: Dtype::Float64.code(), itemsize: 8, ndim: 2, shape: shape.as_ptr(), strides: std::ptr::null() };
    let t = tables(&[row(&[0, 0], &[5, 6], &[2, 3])]);
    let st = with_overrides(None, Some(threads), || unsafe { vh5_write_many_slices(d, &a, 1, t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), std::ptr::null(), std::ptr::null(), 0) });
    let msg = last_error();
    c_close(d);
    c_close(f);
    // A rewritten chunk may move: compare the stored bytes wherever the index points now.
    let (addr2, size2) = chunk_addr(dst, name, &[0, 0]);
    let after = std::fs::read(dst).unwrap()[addr2 as usize..(addr2 + size2.min(4096)) as usize].to_vec();
    ((st, msg), before, after)
}

pub fn run(rep: &mut Report, tmp: &TempDir) {
    const C: &str = "write into a corrupt chunk";
    const W: &str = "vh5_write_many_slices";
    let sample = tmp.path("sample.h5");
    let zlib = |data: &[u8]| {
        use std::io::Write;
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    // "x" chunk [0, 0] with 8 bytes overwritten (vh5 cannot inflate it; libhdf5 cannot either).
    {
        let bad = tmp.path("w-flipped-src.h5");
        std::fs::copy(&sample, &bad).unwrap();
        let (a, s) = chunk_addr(&bad, "x", &[0, 0]);
        patch(&bad, a + s / 2, &[0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33]);
        for threads in [1, 2] {
            let (got, before, after) = write_into(&bad, &tmp.path("w-flipped.h5"), "x", threads);
            rep.ensure(before == after, || format!("flipped write (threads {threads}): the corrupt chunk was rewritten"));
            if threads == 1 {
                rep.check(C, "row covering part of a gzip chunk with 8 bytes overwritten", W, VH5_ERR_HDF5, got, &["chunk [0, 0]", "row"]);
            }
        }
    }
    // "b" chunk [0, 0] replaced by a bomb / a short stream: vh5 decodes it and refuses; the
    // chunk must not be rewritten from libhdf5's cut or padded bytes.
    let (ab, sb) = chunk_addr(&sample, "b", &[0, 0]);
    for (tag, plain) in [("inflates to 16 MiB (512x the chunk)", vec![0u8; 16 << 20]), ("inflates to 100 bytes (chunk: 32 KiB)", vec![7u8; 100])] {
        let src = tmp.path("w-bomb-src.h5");
        std::fs::copy(&sample, &src).unwrap();
        let mut stored = zlib(&plain);
        stored.resize(sb as usize, 0);
        patch(&src, ab, &stored);
        for threads in [1, 2] {
            let (got, before, after) = write_into(&src, &tmp.path("w-bomb.h5"), "b", threads);
            rep.ensure(before == after, || format!("{tag} write (threads {threads}): the corrupt chunk was rewritten: {}", got.1));
            if threads == 1 {
                rep.check(C, format!("row covering part of a chunk whose valid zlib stream {tag}"), W, VH5_ERR_HDF5, got, &["chunk [0, 0]", "corrupted"]);
            }
        }
    }
    // The chunk index claims 2147418112 stored bytes for "b" chunk [0, 0] (file: 36 KB).
    {
        let src = tmp.path("w-bigsize-src.h5");
        std::fs::copy(&sample, &src).unwrap();
        let bytes = std::fs::read(&src).unwrap();
        let mut at = 0;
        while let Some(t) = find(&bytes, b"TREE", at) {
            if bytes[t + 4] == 1 && u32::from_le_bytes(bytes[t + 24..t + 28].try_into().unwrap()) as u64 == sb {
                patch(&src, t as u64 + 24, &0x7fff_0000u32.to_le_bytes());
            }
            at = t + 4;
        }
        for threads in [1, 2] {
            let (got, _, _) = write_into_unchecked(&src, &tmp.path("w-bigsize.h5"), "b", threads);
            if threads == 1 {
                rep.check(C, "row covering part of a chunk whose index entry claims 2147418112 stored bytes", W, VH5_ERR_HDF5, got, &["chunk [0, 0]", "addr overflow"]);
            } else {
                rep.ensure(got.0 == VH5_ERR_HDF5, || format!("bigsize write threads 2: {got:?}"));
            }
        }
    }
}

/// [`write_into`] without reading the chunk's stored bytes (its index entry is bogus).
fn write_into_unchecked(src: &Path, dst: &Path, name: &str, threads: usize) -> ((vh5_status, String), (), ()) {
    std::fs::copy(src, dst).unwrap();
    let (st, m, f) = c_open(dst, VH5_FILE_READ_WRITE);
    assert_eq!(st, VH5_OK, "{m}");
    let (st, m, d) = c_dopen(f, name);
    assert_eq!(st, VH5_OK, "{m}");
    let mut g = Guarded::new(6 * 8, 0);
    let shape = [2u64, 3];
    let a = vh5_array { base: g.ptr() as *mut _, base_len: g.len, offset: 0, dtype: Dtype::Float64.code(), itemsize: 8, ndim: 2, shape: shape.as_ptr(), strides: std::ptr::null() };
    let t = tables(&[row(&[0, 0], &[5, 6], &[2, 3])]);
    let st = with_overrides(None, Some(threads), || unsafe { vh5_write_many_slices(d, &a, 1, t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), std::ptr::null(), std::ptr::null(), 0) });
    let msg = last_error();
    c_close(d);
    c_close(f);
    ((st, msg), (), ())
}
