//! Storage features against libhdf5 itself (the system libhdf5 vh5 links): fill time never,
//! partial edge chunks stored unfiltered (`H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS`), fill values
//! of new edge chunks written raw into compressed datasets, and zero-column (0-d) tables.
//!
//! Reads: every planner mode and 1/2 threads, compared with libhdf5's `H5Dread` of the whole
//! dataset into a buffer pre-set to the fill value (vh5's documented answer for never-written
//! storage), then the rows applied by an index-loop reference.
//! Writes: the same rows written by vh5 into one copy of the file and by libhdf5 (`H5Dwrite`
//! per row, in row order) into another; then (optionally after growing the dataset, which
//! makes what lies outside an old edge chunk's extent visible) both read whole by libhdf5
//! and compared bit for bit, and their chunks' storage (allocated, filter mask) compared too.

mod common;
#[path = "common/write.rs"]
mod write_common;

use std::path::Path;

use common::*;
use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::*;
use vh5::dtype::Dtype;
use vh5::transfer::options::{with_overrides, PlannerMode};
use write_common::*;

fn c(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s).unwrap()
}

/// A 2-d float64 dataset "d" (maximum extent unlimited when chunked).
#[derive(Clone)]
struct Spec {
    shape: [u64; 2],
    chunk: Option<[u64; 2]>,
    shuffle: bool,
    gzip: Option<u32>,
    fletcher: bool,
    big: bool,
    fill: Option<f64>,
    fill_time: H5D_fill_time_t,
    dont_filter_partial: bool,
    /// Blocks (start, count) written by libhdf5 when the file is made.
    init: Vec<([u64; 2], [u64; 2])>,
}

impl Spec {
    fn chunked(shape: [u64; 2], chunk: [u64; 2]) -> Spec {
        Spec {
            shape,
            chunk: Some(chunk),
            shuffle: false,
            gzip: None,
            fletcher: false,
            big: false,
            fill: None,
            fill_time: H5D_fill_time_t::H5D_FILL_TIME_IFSET,
            dont_filter_partial: false,
            init: vec![],
        }
    }
}

/// The value libhdf5 writes at element (i, j) when the file is made.
fn init_value(i: u64, j: u64) -> f64 {
    (i * 1000 + j) as f64 * 0.25 + 1.0
}

fn make(path: &Path, s: &Spec) {
    let _s = vh5::hdf5::session();
    unsafe {
        let f = H5Fcreate(c(path.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        assert!(f >= 0);
        let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
        let unlimited = [H5S_UNLIMITED; 2];
        let sp = H5Screate_simple(2, s.shape.as_ptr(), if s.chunk.is_some() { unlimited.as_ptr() } else { std::ptr::null() });
        if let Some(ch) = s.chunk {
            assert!(H5Pset_chunk(dcpl, 2, ch.as_ptr()) >= 0);
            if s.shuffle {
                assert!(H5Pset_shuffle(dcpl) >= 0);
            }
            if let Some(l) = s.gzip {
                assert!(H5Pset_deflate(dcpl, l) >= 0);
            }
            if s.fletcher {
                assert!(H5Pset_fletcher32(dcpl) >= 0);
            }
            if s.dont_filter_partial {
                assert!(H5Pset_chunk_opts(dcpl, H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS) >= 0);
            }
        }
        if let Some(fv) = s.fill {
            assert!(H5Pset_fill_value(dcpl, *H5T_NATIVE_DOUBLE, &fv as *const f64 as *const _) >= 0);
        }
        assert!(H5Pset_fill_time(dcpl, s.fill_time) >= 0);
        let ft = if s.big { *H5T_IEEE_F64BE } else { *H5T_IEEE_F64LE };
        let d = H5Dcreate2(f, c("d").as_ptr(), ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        assert!(d >= 0);
        for (start, count) in &s.init {
            let v: Vec<f64> = (0..count[0]).flat_map(|i| (0..count[1]).map(move |j| init_value(start[0] + i, start[1] + j))).collect();
            write_hyperslab(d, start, &[1, 1], count, &v);
        }
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(sp);
        assert!(H5Fclose(f) >= 0);
    }
}

/// `H5Dwrite` of `v` (native doubles, dense) into the hyperslab start/stride/count of `d`.
unsafe fn write_hyperslab(d: i64, start: &[u64], stride: &[u64], count: &[u64], v: &[f64]) {
    let fs = H5Dget_space(d);
    assert!(H5Sselect_hyperslab(fs, H5S_seloper_t::H5S_SELECT_SET, start.as_ptr(), stride.as_ptr(), count.as_ptr(), std::ptr::null()) >= 0);
    let ms = H5Screate_simple(count.len() as i32, count.as_ptr(), std::ptr::null());
    assert!(H5Dwrite(d, *H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, v.as_ptr() as *const _) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
}

/// libhdf5's view of the whole dataset: `H5Dread` into a buffer pre-set to `preset`.
fn oracle_whole(path: &Path, preset: f64) -> (Vec<u64>, Vec<f64>) {
    let _s = vh5::hdf5::session();
    unsafe {
        let f = H5Fopen(c(path.to_str().unwrap()).as_ptr(), H5F_ACC_RDONLY, H5P_DEFAULT);
        assert!(f >= 0);
        let d = H5Dopen2(f, c("d").as_ptr(), H5P_DEFAULT);
        let sp = H5Dget_space(d);
        let mut dims = [0u64; 2];
        H5Sget_simple_extent_dims(sp, dims.as_mut_ptr(), std::ptr::null_mut());
        let mut v = vec![preset; (dims[0] * dims[1]) as usize];
        assert!(H5Dread(d, *H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.as_mut_ptr() as *mut _) >= 0);
        H5Sclose(sp);
        H5Dclose(d);
        H5Fclose(f);
        (dims.to_vec(), v)
    }
}

/// Per chunk of the dataset (C order of the grid): `None` unallocated, else (filter mask, stored size).
fn chunk_storage(path: &Path, shape: [u64; 2], chunk: [u64; 2]) -> Vec<Option<(u32, u64)>> {
    let _s = vh5::hdf5::session();
    let mut out = vec![];
    unsafe {
        let f = H5Fopen(c(path.to_str().unwrap()).as_ptr(), H5F_ACC_RDONLY, H5P_DEFAULT);
        let d = H5Dopen2(f, c("d").as_ptr(), H5P_DEFAULT);
        for i in (0..shape[0]).step_by(chunk[0] as usize) {
            for j in (0..shape[1]).step_by(chunk[1] as usize) {
                let (mut m, mut addr, mut size) = (0u32, 0u64, 0u64);
                let o = [i, j];
                assert!(H5Dget_chunk_info_by_coord(d, o.as_ptr(), &mut m, &mut addr, &mut size) >= 0);
                out.push(if addr == hdf5_sys::h5::HADDR_UNDEF || size == 0 { None } else { Some((m, size)) });
            }
        }
        H5Dclose(d);
        H5Fclose(f);
    }
    out
}

fn set_extent(path: &Path, dims: [u64; 2]) {
    let _s = vh5::hdf5::session();
    unsafe {
        let f = H5Fopen(c(path.to_str().unwrap()).as_ptr(), H5F_ACC_RDWR, H5P_DEFAULT);
        let d = H5Dopen2(f, c("d").as_ptr(), H5P_DEFAULT);
        assert!(H5Dset_extent(d, dims.as_ptr()) >= 0);
        H5Dclose(d);
        assert!(H5Fclose(f) >= 0);
    }
}

fn row(s: [u64; 2], d: [u64; 2], c: [u64; 2], ss: [u64; 2], ds: [u64; 2]) -> TRow {
    TRow { s: s.to_vec(), d: d.to_vec(), c: c.to_vec(), ss: ss.to_vec(), ds: ds.to_vec() }
}

const MODES: [PlannerMode; 3] = [PlannerMode::Auto, PlannerMode::Chunks, PlannerMode::Rows];

/// Read `rows` from "d" into a (dn0, dn1) destination pre-set to a sentinel, with vh5 in
/// every planner mode and thread count; each result must equal libhdf5's whole-dataset read
/// (pre-set to the fill value, 0 when none) with the rows applied by the reference.
fn check_reads(path: &Path, spec: &Spec, rows: &[TRow], dshape: [u64; 2]) {
    let (shape, whole) = oracle_whole(path, spec.fill.unwrap_or(0.0));
    let sentinel = -12345.5f64;
    let whole_b: Vec<u8> = whole.iter().flat_map(|x| x.to_ne_bytes()).collect();
    let mut want: Vec<u8> = std::iter::repeat_n(sentinel.to_ne_bytes(), (dshape[0] * dshape[1]) as usize).flatten().collect();
    let strides = [dshape[1] as i64 * 8, 8];
    reference(&whole_b, &shape, &mut want, &dshape, &strides, 0, 8, rows, false).unwrap();
    let (f, d) = ffi_open(path, "d");
    let t = tables(rows);
    let tb = vh5::transfer::SliceTable::new(2, rows.len(), &t[0], &t[1], &t[2], Some(&t[3]), Some(&t[4])).unwrap();
    for mode in MODES {
        for threads in [1, 2] {
            // Two calls per case: buffers reused across calls must not leak either.
            for _ in 0..2 {
                let mut got: Vec<u8> = std::iter::repeat_n(sentinel.to_ne_bytes(), want.len() / 8).flatten().collect();
                let layout = vh5::transfer::ArrayLayout { shape: dshape.to_vec(), strides: strides.to_vec(), offset: 0, base_len: got.len(), itemsize: 8 };
                let mut dst = vh5::transfer::DstArray { buf: &mut got, layout, dtype: Dtype::Float64 };
                with_overrides(Some(mode), Some(threads), || vh5::transfer::read_many_slices(d, &mut dst, &tb, 0)).unwrap();
                if got != want {
                    let g: Vec<f64> = got.chunks(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect();
                    let w: Vec<f64> = want.chunks(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect();
                    let k = g.iter().zip(&w).position(|(a, b)| a.to_bits() != b.to_bits()).unwrap();
                    panic!("{mode:?}, {threads} threads: destination element {k} (row-major in {dshape:?}) is {} , libhdf5 says {}", g[k], w[k]);
                }
            }
        }
    }
    ffi_close(&[d, f]);
}

/// Write `rows` of `src` (a C-order (sn0, sn1) float64 array) into "d": by vh5 into a copy of
/// `path`, by libhdf5 (`H5Dwrite` per row) into another copy; optionally grow both to `grow`;
/// then both must read back identically through libhdf5 (pre-set buffers, so never-written
/// storage compares too) and store the same chunks (allocated or not, filter mask).
/// Returns vh5's write statistics.
fn check_write(dir: &TempDir, path: &Path, spec: &Spec, rows: &[TRow], sshape: [u64; 2], grow: Option<[u64; 2]>, threads: usize) -> vh5::transfer::WriteStats {
    let a = dir.path("vh5.h5");
    let b = dir.path("libhdf5.h5");
    std::fs::copy(path, &a).unwrap();
    std::fs::copy(path, &b).unwrap();
    let src: Vec<f64> = (0..sshape[0] * sshape[1]).map(|k| -(k as f64) * 0.5 - 3.0).collect();
    let srcb: Vec<u8> = src.iter().flat_map(|x| x.to_ne_bytes()).collect();
    // vh5
    let (f, d) = open_rw(&a, "d", true);
    let t = tables(rows);
    let tb = vh5::transfer::SliceTable::new(2, rows.len(), &t[0], &t[1], &t[2], Some(&t[3]), Some(&t[4])).unwrap();
    let lay = SrcLay::c(&sshape, 8);
    let layout = vh5::transfer::ArrayLayout { shape: lay.shape.clone(), strides: lay.strides.clone(), offset: 0, base_len: srcb.len(), itemsize: 8 };
    let sa = vh5::transfer::SrcArray { buf: &srcb, layout, dtype: Dtype::Float64 };
    let stats = with_overrides(None, Some(threads), || vh5::transfer::write_many_slices(d, &sa, &tb, 0)).unwrap();
    ffi_close(&[d, f]);
    // libhdf5, one H5Dwrite per row in row order
    {
        let _s = vh5::hdf5::session();
        unsafe {
            let f = H5Fopen(c(b.to_str().unwrap()).as_ptr(), H5F_ACC_RDWR, H5P_DEFAULT);
            let d = H5Dopen2(f, c("d").as_ptr(), H5P_DEFAULT);
            for r in rows {
                let v: Vec<f64> =
                    (0..r.c[0]).flat_map(|i| (0..r.c[1]).map(move |j| ((r.s[0] + i * r.ss[0]) * sshape[1] + r.s[1] + j * r.ss[1]) as usize)).map(|k| src[k]).collect();
                write_hyperslab(d, &r.d, &r.ds, &r.c, &v);
            }
            H5Dclose(d);
            assert!(H5Fclose(f) >= 0);
        }
    }
    let mut shape = spec.shape;
    if let Some(g) = grow {
        set_extent(&a, g);
        set_extent(&b, g);
        shape = g;
    }
    for preset in [spec.fill.unwrap_or(0.0), -777.0] {
        let (_, va) = oracle_whole(&a, preset);
        let (_, vb) = oracle_whole(&b, preset);
        if let Some(k) = va.iter().zip(&vb).position(|(x, y)| x.to_bits() != y.to_bits()) {
            panic!("element {k} (row-major in {shape:?}): after vh5's write it reads {}, after libhdf5's {}", va[k], vb[k]);
        }
    }
    if let Some(ch) = spec.chunk {
        assert_eq!(
            chunk_storage(&a, shape, ch).iter().map(|c| c.map(|x| x.0)).collect::<Vec<_>>(),
            chunk_storage(&b, shape, ch).iter().map(|c| c.map(|x| x.0)).collect::<Vec<_>>(),
            "allocated chunks and filter masks"
        );
    }
    stats
}

// ---------------------------------------------------------------------------------------
// Fill time never (H5D_FILL_TIME_NEVER, netCDF "no fill" files)
// ---------------------------------------------------------------------------------------

fn never_spec(gzip: bool) -> Spec {
    let mut s = Spec::chunked([23, 17], [5, 4]);
    s.fill = Some(6.5);
    s.fill_time = H5D_fill_time_t::H5D_FILL_TIME_NEVER;
    s.gzip = gzip.then_some(4);
    s.shuffle = gzip;
    // Chunks (0,0), (0,1) and the corner chunk (4,4) written; the others never.
    s.init = vec![([0, 0], [5, 8]), ([20, 16], [3, 1])];
    s
}

/// Rows that cross written and never-written chunks; several rows so scratch buffers are
/// reused from a written chunk to a never-written one.
fn never_read_rows() -> Vec<TRow> {
    vec![
        row([0, 0], [0, 0], [5, 8], [1, 1], [1, 1]),
        row([3, 2], [5, 0], [9, 9], [1, 1], [1, 1]),
        row([0, 0], [14, 0], [2, 17], [1, 1], [1, 1]),
        row([10, 1], [16, 0], [3, 5], [2, 3], [1, 1]),
        row([18, 12], [19, 5], [5, 5], [1, 1], [1, 2]),
        row([1, 1], [24, 0], [1, 3], [1, 1], [1, 1]),
        row([7, 9], [25, 0], [1, 1], [1, 1], [1, 1]),
    ]
}

#[test]
fn fill_time_never_read_unwritten_chunks_unfiltered() {
    let dir = TempDir::new("never-read");
    let p = dir.path("f.h5");
    let s = never_spec(false);
    make(&p, &s);
    check_reads(&p, &s, &never_read_rows(), [26, 17]);
}

#[test]
fn fill_time_never_read_unwritten_chunks_gzip_shuffle() {
    let dir = TempDir::new("never-read-gz");
    let p = dir.path("f.h5");
    let s = never_spec(true);
    make(&p, &s);
    check_reads(&p, &s, &never_read_rows(), [26, 17]);
}

#[test]
fn fill_time_never_read_contiguous_unallocated() {
    let dir = TempDir::new("never-contig");
    let p = dir.path("f.h5");
    let mut s = never_spec(false);
    s.chunk = None;
    s.init = vec![];
    make(&p, &s);
    check_reads(&p, &s, &never_read_rows(), [26, 17]);
}

/// Rows each covering part of new chunks, after rows that fill other chunks.
fn never_write_rows() -> Vec<TRow> {
    vec![
        row([0, 0], [5, 4], [5, 4], [1, 1], [1, 1]),   // chunk (1,1) whole
        row([0, 0], [10, 8], [2, 3], [1, 1], [1, 1]),  // part of chunk (2,2)
        row([0, 0], [15, 0], [5, 4], [1, 1], [1, 1]),  // chunk (3,0) whole
        row([2, 1], [16, 5], [3, 2], [1, 1], [1, 1]),  // part of chunk (3,1)
        row([4, 0], [20, 12], [2, 2], [1, 1], [1, 1]), // part of edge chunk (4,3)
        row([1, 0], [1, 13], [3, 4], [1, 1], [1, 1]),  // part of chunk (0,3) and edge chunk (0,4)
    ]
}

#[test]
fn fill_time_never_write_partial_new_chunks_unfiltered() {
    let dir = TempDir::new("never-write");
    let p = dir.path("f.h5");
    let s = never_spec(false);
    make(&p, &s);
    for threads in [1, 2] {
        check_write(&dir, &p, &s, &never_write_rows(), [8, 6], Some([30, 25]), threads);
    }
}

#[test]
fn fill_time_never_write_partial_new_chunks_gzip_shuffle() {
    let dir = TempDir::new("never-write-gz");
    let p = dir.path("f.h5");
    let s = never_spec(true);
    make(&p, &s);
    for threads in [1, 2] {
        let st = check_write(&dir, &p, &s, &never_write_rows(), [8, 6], Some([30, 25]), threads);
        assert!(st.raw_chunks > 0, "the raw chunk writer ran: {st:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Partial edge chunks stored unfiltered (H5Pset_chunk_opts H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS)
// ---------------------------------------------------------------------------------------

/// 23x17 float64, 5x4 chunks (edge chunks on both axes), the given pipeline and the option.
fn partial_spec(shuffle: bool, gzip: bool, fletcher: bool, big: bool, written: bool) -> Spec {
    let mut s = Spec::chunked([23, 17], [5, 4]);
    s.shuffle = shuffle;
    s.gzip = gzip.then_some(5);
    s.fletcher = fletcher;
    s.big = big;
    s.fill = Some(-2.5);
    s.dont_filter_partial = true;
    if written {
        s.init = vec![([0, 0], [23, 17])];
    }
    s
}

const PIPES: [(bool, bool, bool, bool); 5] = [
    (true, false, false, false), // shuffle only: an unfiltered chunk "unshuffled" reads as garbage
    (false, true, false, false), // gzip
    (true, true, false, false),  // shuffle + gzip
    (true, false, true, false),  // shuffle + fletcher32
    (true, true, false, true),   // shuffle + gzip, big-endian
];

fn edge_read_rows() -> Vec<TRow> {
    vec![
        row([0, 0], [0, 0], [23, 17], [1, 1], [1, 1]),
        row([20, 14], [23, 0], [3, 3], [1, 1], [1, 1]),
        row([1, 15], [26, 0], [11, 2], [2, 1], [1, 1]),
        row([22, 0], [32, 0], [1, 17], [1, 1], [1, 1]),
    ]
}

#[test]
fn dont_filter_partial_chunks_read() {
    let dir = TempDir::new("dfp-read");
    let p = dir.path("f.h5");
    for (shuffle, gzip, fletcher, big) in PIPES {
        let s = partial_spec(shuffle, gzip, fletcher, big, true);
        make(&p, &s);
        // Edge chunks are stored unfiltered (libhdf5: mask 0, the chunk's bytes).
        let st = chunk_storage(&p, s.shape, [5, 4]);
        assert!(st.iter().all(|c| c.is_some_and(|(m, _)| m == 0)));
        assert_eq!(st[st.len() - 1].unwrap().1, 5 * 4 * 8, "corner chunk stored whole and unfiltered");
        check_reads(&p, &s, &edge_read_rows(), [37, 17]);
    }
}

#[test]
fn dont_filter_partial_chunks_read_after_grow_and_shrink() {
    // libhdf5 re-filters old edge chunks that become whole when the dataset grows and
    // stores unfiltered the whole chunks that become partial when it shrinks: vh5 decides
    // by the current extent as libhdf5 does.
    let dir = TempDir::new("dfp-resize");
    let p = dir.path("f.h5");
    for (shuffle, gzip, fletcher, big) in [PIPES[0], PIPES[2], PIPES[3]] {
        let mut s = partial_spec(shuffle, gzip, fletcher, big, true);
        make(&p, &s);
        set_extent(&p, [27, 22]);
        s.shape = [27, 22];
        check_reads(&p, &s, &[row([0, 0], [0, 0], [27, 22], [1, 1], [1, 1]), row([18, 13], [27, 0], [6, 6], [1, 1], [1, 1])], [33, 22]);
        set_extent(&p, [13, 9]);
        s.shape = [13, 9];
        check_reads(&p, &s, &[row([0, 0], [0, 0], [13, 9], [1, 1], [1, 1]), row([9, 6], [13, 0], [4, 3], [1, 1], [1, 1])], [17, 9]);
    }
}

fn edge_write_rows() -> Vec<TRow> {
    vec![
        row([0, 0], [20, 16], [3, 1], [1, 1], [1, 1]), // the corner chunk, whole (3x1 in extent)
        row([0, 0], [20, 0], [3, 4], [1, 1], [1, 1]),  // edge chunk (4,0) whole
        row([1, 1], [21, 5], [2, 2], [1, 1], [1, 1]),  // edge chunk (4,1) in part
        row([0, 2], [6, 16], [9, 1], [1, 1], [1, 1]),  // edge chunks (1,4), (2,4) whole, (3,4) in part
        row([2, 0], [0, 0], [5, 4], [1, 1], [1, 1]),   // an interior chunk, whole
        row([0, 1], [7, 5], [3, 3], [1, 1], [1, 1]),   // interior chunks in part
    ]
}

#[test]
fn dont_filter_partial_chunks_write() {
    let dir = TempDir::new("dfp-write");
    let p = dir.path("f.h5");
    for (shuffle, gzip, fletcher, big) in PIPES {
        for written in [true, false] {
            let s = partial_spec(shuffle, gzip, fletcher, big, written);
            make(&p, &s);
            for (threads, grow) in [(1, None), (2, Some([31, 26]))] {
                let st = check_write(&dir, &p, &s, &edge_write_rows(), [12, 8], grow, threads);
                assert!(st.raw_chunks > 0, "the raw chunk writer ran: {st:?}");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// New edge chunks written raw into compressed datasets: the fill value outside the extent
// ---------------------------------------------------------------------------------------

#[test]
fn fill_value_outside_extent_of_new_edge_chunks_raw_write() {
    // Every fill time x user fill value or none, gzip and shuffle+fletcher32; some chunks
    // stored by libhdf5 first. After the writes the dataset grows, which shows what both
    // writers put outside the old extent of the edge chunks.
    let dir = TempDir::new("fill-edge");
    let p = dir.path("f.h5");
    for fill_time in [H5D_fill_time_t::H5D_FILL_TIME_IFSET, H5D_fill_time_t::H5D_FILL_TIME_ALLOC, H5D_fill_time_t::H5D_FILL_TIME_NEVER] {
        for fill in [Some(4.25), None] {
            for (shuffle, gzip, fletcher) in [(false, true, false), (true, false, true)] {
                let mut s = Spec::chunked([23, 17], [5, 4]);
                s.shuffle = shuffle;
                s.gzip = gzip.then_some(3);
                s.fletcher = fletcher;
                s.fill = fill;
                s.fill_time = fill_time;
                s.init = vec![([0, 0], [7, 6]), ([20, 0], [3, 2])]; // edge chunk (4,0) stored
                make(&p, &s);
                for (threads, grow) in [(1, Some([31, 26])), (2, Some([24, 19]))] {
                    let st = check_write(&dir, &p, &s, &edge_write_rows(), [12, 8], grow, threads);
                    assert!(st.raw_chunks > 0, "the raw chunk writer ran: {st:?}");
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Zero-column tables (0-d arrays): O(1) however many rows are declared
// ---------------------------------------------------------------------------------------

#[test]
fn zero_column_tables_scalar_dataset_and_0d_arrays_cost_o1() {
    let dir = TempDir::new("zero-col");
    let p = dir.path("f.h5");
    let v = 42.5f64.to_ne_bytes();
    create_file(&p, &[DsSpec::new("s", &[], Dtype::Float64, Some(&v))]);
    let huge = 1usize << 50; // ~10^15 rows of zero bytes each
    let tb = vh5::transfer::SliceTable::new(0, huge, &[], &[], &[], None, None).unwrap();
    let t0 = std::time::Instant::now();
    // read
    let (f, d) = ffi_open(&p, "s");
    let mut out = [0u8; 8];
    let layout = vh5::transfer::ArrayLayout { shape: vec![], strides: vec![], offset: 0, base_len: 8, itemsize: 8 };
    let mut dst = vh5::transfer::DstArray { buf: &mut out, layout: layout.clone(), dtype: Dtype::Float64 };
    let st = vh5::transfer::read_many_slices(d, &mut dst, &tb, 0).unwrap();
    assert_eq!((st.rows_read, st.elements), (huge, huge as u64));
    assert_eq!(f64::from_ne_bytes(out), 42.5);
    let st =
        vh5::transfer::read_many_slices(d, &mut vh5::transfer::DstArray { buf: &mut out, layout: layout.clone(), dtype: Dtype::Float64 }, &tb, vh5::transfer::SLICES_CLIP).unwrap();
    assert_eq!(st.rows_read, huge);
    ffi_close(&[d, f]);
    // write
    let (f, d) = open_rw(&p, "s", true);
    let src = 7.25f64.to_ne_bytes();
    let sa = vh5::transfer::SrcArray { buf: &src, layout: layout.clone(), dtype: Dtype::Float64 };
    let st = vh5::transfer::write_many_slices(d, &sa, &tb, 0).unwrap();
    assert_eq!((st.rows_written, st.elements, st.hdf5_writes), (huge, huge as u64, 1));
    ffi_close(&[d, f]);
    assert_eq!(oracle_scalar(&p), 7.25);
    // memory copy between two arrays
    let mut dstb = [0u8; 8];
    let st = vh5::transfer::copy_many_slices(&src, &layout, Dtype::Float64, &mut dstb, &layout, Dtype::Float64, &tb, 0).unwrap();
    assert_eq!((st.rows_copied, st.elements), (huge, huge as u64));
    assert_eq!(dstb, src);
    assert!(t0.elapsed() < std::time::Duration::from_secs(2), "took {:?}", t0.elapsed());
}

fn oracle_scalar(path: &Path) -> f64 {
    let native = {
        let _s = vh5::hdf5::session();
        *H5T_NATIVE_DOUBLE
    };
    let (_, b) = read_whole(path, "s", native, 8);
    f64::from_ne_bytes(b[..8].try_into().unwrap())
}

#[test]
fn zero_column_tables_overlapping_0d_copy_equals_row_by_row() {
    // 0-d source and destination sharing some bytes of one buffer: copying the element N
    // times (rows run in order) must equal N memmoves, for small N and for a huge N.
    for size in [1usize, 3, 8] {
        for shift in 1..size {
            for (s_off, d_off) in [(0, shift), (shift, 0)] {
                for reps in (1..=size + 3).chain([1usize << 40]) {
                    let mut want: Vec<u8> = (0..32u8).collect();
                    for _ in 0..reps.min(64) {
                        want.copy_within(s_off..s_off + size, d_off);
                    }
                    let mut got: Vec<u8> = (0..32u8).collect();
                    let lay = |off| vh5::transfer::ArrayLayout { shape: vec![], strides: vec![], offset: off, base_len: 32, itemsize: size };
                    let tb = vh5::transfer::SliceTable::new(0, reps, &[], &[], &[], None, None).unwrap();
                    let st = vh5::transfer::copy_many_slices_within(&mut got, &lay(s_off), &lay(d_off), Dtype::Opaque, &tb, 0).unwrap();
                    assert_eq!(got, want, "size {size} src {s_off} dst {d_off} rows {reps}");
                    assert_eq!(st.rows_copied, reps);
                }
            }
        }
    }
}
