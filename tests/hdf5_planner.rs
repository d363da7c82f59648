//! The chunk planner (read every needed chunk once, decode raw chunks ourselves, scatter
//! pieces on worker threads) against an index-loop reference over the whole dataset read
//! with one plain H5Dread, in every strategy (auto, chunks with 1 and 2 threads, rows):
//! rows spanning many chunks, partial edge chunks, overlapping rows, unallocated chunks with
//! fill values, gzip + shuffle + fletcher32, big-endian types; plus corrupted chunks.

mod common;
use std::ffi::CString;
use std::io::{Seek, SeekFrom, Write};

use common::*;
use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::H5Tclose;
use proptest::prelude::*;
use vh5::dtype::Dtype;
use vh5::ffi::vh5_status;
use vh5::transfer::options::{with_overrides, PlannerMode};
use vh5::transfer::{ArrayLayout, DstArray, ReadStats, SliceTable};

const MODES: [(PlannerMode, usize); 4] = [(PlannerMode::Auto, 2), (PlannerMode::Chunks, 1), (PlannerMode::Chunks, 2), (PlannerMode::Rows, 1)];

struct Spec {
    shape: Vec<u64>,
    chunk: Vec<u64>,
    dtype: Dtype,
    big: bool,
    shuffle: bool,
    gzip: bool,
    fletcher: bool,
}

/// Create `x` with the given filters and fill value; write `data` into the blocks `written`
/// (start, count) only (other chunks stay unallocated).
fn create(path: &std::path::Path, sp: &Spec, fill: &[u8], data: &[u8], written: &[(Vec<u64>, Vec<u64>)]) {
    {
        let _s = vh5::hdf5::session();
        unsafe {
            let c = |s: &str| CString::new(s).unwrap();
            let f = H5Fcreate(c(path.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
            assert!(f >= 0);
            let space = H5Screate_simple(sp.shape.len() as i32, sp.shape.as_ptr(), std::ptr::null());
            let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
            assert!(H5Pset_chunk(dcpl, sp.chunk.len() as i32, sp.chunk.as_ptr()) >= 0);
            if sp.shuffle {
                assert!(H5Pset_shuffle(dcpl) >= 0);
            }
            if sp.gzip {
                assert!(H5Pset_deflate(dcpl, 4) >= 0);
            }
            if sp.fletcher {
                assert!(H5Pset_fletcher32(dcpl) >= 0);
            }
            let ft = h5type(sp.dtype, sp.big, false);
            let mt = h5type(sp.dtype, false, true);
            assert!(H5Pset_fill_value(dcpl, mt, fill.as_ptr() as *const _) >= 0);
            let d = H5Dcreate2(f, c("x").as_ptr(), ft, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            assert!(d >= 0);
            H5Dclose(d);
            H5Tclose(ft);
            H5Tclose(mt);
            H5Pclose(dcpl);
            H5Sclose(space);
            H5Fclose(f);
        }
    }
    let size = size_of(sp.dtype);
    let n = sp.shape.len();
    for (start, count) in written {
        // gather the block from the whole-dataset data
        let total: u64 = count.iter().product();
        let mut block = Vec::with_capacity(total as usize * size);
        for lin in 0..total {
            let (mut r, mut off) = (lin, 0u64);
            let mut idx = vec![0u64; n];
            for j in (0..n).rev() {
                idx[j] = start[j] + r % count[j];
                r /= count[j];
            }
            for (&extent, &i) in sp.shape.iter().zip(&idx) {
                off = off * extent + i;
            }
            block.extend_from_slice(&data[off as usize * size..(off as usize + 1) * size]);
        }
        write_block(path, "x", sp.dtype, start, count, &block);
    }
}

/// Read through the Rust API with a strategy and thread count; returns the stats.
#[allow(clippy::too_many_arguments)]
fn read(d: i64, buf: &mut [u8], dtype: Dtype, shape: &[u64], rows: &[TRow], clip: bool, mode: PlannerMode, threads: usize) -> vh5::error::Result<ReadStats> {
    let t = tables(rows);
    let size = size_of(dtype);
    let table = SliceTable::new(shape.len(), rows.len(), &t[0], &t[1], &t[2], Some(&t[3]), Some(&t[4]))?;
    let layout = ArrayLayout { shape: shape.to_vec(), strides: ArrayLayout::c_strides(shape, size).unwrap(), offset: 0, base_len: buf.len(), itemsize: size };
    let mut dst = DstArray { buf, layout, dtype };
    with_overrides(Some(mode), Some(threads), || vh5::transfer::read_many_slices(d, &mut dst, &table, if clip { vh5::transfer::SLICES_CLIP } else { 0 }))
}

fn row_strategy(n: usize) -> impl Strategy<Value = TRow> {
    (
        proptest::collection::vec(0u64..40, n),
        proptest::collection::vec(0u64..12, n),
        proptest::collection::vec(1u64..20, n),
        proptest::collection::vec(prop_oneof![3 => Just(1u64), 1 => 2u64..5], n),
        proptest::collection::vec(prop_oneof![3 => Just(1u64), 1 => Just(2u64)], n),
    )
        .prop_map(|(s, d, c, ss, ds)| TRow { s, d, c, ss, ds })
}

#[derive(Debug, Clone)]
struct Case {
    shape: Vec<u64>,
    chunk: Vec<u64>,
    dtype: Dtype,
    big: bool,
    filters: (bool, bool, bool),
    written_frac: u8,
    rows: Vec<TRow>,
    seed: u64,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (2usize..=3).prop_flat_map(|n| {
        (
            proptest::collection::vec(5u64..40, n),
            proptest::collection::vec(1u64..9, n),
            prop::sample::select(vec![Dtype::Float64, Dtype::Int16, Dtype::Float32, Dtype::Complex64, Dtype::UInt8, Dtype::Int64]),
            any::<bool>(),
            (any::<bool>(), any::<bool>(), any::<bool>()),
            0u8..4,
            proptest::collection::vec(row_strategy(n), 1..25),
            any::<u64>(),
        )
            .prop_map(|(shape, chunk, dtype, big, filters, written_frac, rows, seed)| {
                // a fixed-size dataspace needs chunks no larger than the extent
                let chunk = chunk.iter().zip(&shape).map(|(c, s)| *c.min(s)).collect();
                Case { shape, chunk, dtype, big, filters, written_frac, rows, seed }
            })
    })
}

fn run_case(c: &Case) -> Result<(), TestCaseError> {
    let n = c.shape.len();
    let size = size_of(c.dtype);
    let tmp = TempDir::new("planner");
    let path = tmp.path("p.h5");
    let total: u64 = c.shape.iter().product();
    let data = data_for(c.dtype, total as usize, c.seed);
    let fill = data_for(c.dtype, 1, c.seed ^ 0x55);
    let sp = Spec { shape: c.shape.clone(), chunk: c.chunk.clone(), dtype: c.dtype, big: c.big, shuffle: c.filters.0, gzip: c.filters.1, fletcher: c.filters.2 };
    // written_frac 0: nothing written (all fill); 1: the first half on axis 0; 2: two corner
    // blocks; 3: everything.
    let half: Vec<u64> = c.shape.iter().enumerate().map(|(j, &s)| if j == 0 { s.div_ceil(2) } else { s }).collect();
    let corner: Vec<u64> = c.shape.iter().map(|&s| s.div_ceil(3)).collect();
    let far: Vec<u64> = c.shape.iter().map(|&s| s - s.div_ceil(3)).collect();
    let written = match c.written_frac {
        0 => vec![],
        1 => vec![(vec![0; n], half)],
        2 => vec![(vec![0; n], corner.clone()), (far, corner)],
        _ => vec![(vec![0; n], c.shape.clone())],
    };
    create(&path, &sp, &fill, &data, &written);
    let mt = h5type(c.dtype, false, true);
    let (_, src) = read_whole(&path, "x", mt, size);
    close_type(mt);
    let dst_shape: Vec<u64> = vec![24; n];
    let strides = ArrayLayout::c_strides(&dst_shape, size).unwrap();
    let buf_len = dst_shape.iter().product::<u64>() as usize * size;
    let init: Vec<u8> = (0..buf_len).map(|i| (i as u8).wrapping_mul(29) ^ 0x33).collect();
    let mut want = init.clone();
    reference(&src, &c.shape, &mut want, &dst_shape, &strides, 0, size, &c.rows, true).unwrap();
    let (f, d) = ffi_open(&path, "x");
    for (mode, threads) in MODES {
        let mut got = init.clone();
        let st = read(d, &mut got, c.dtype, &dst_shape, &c.rows, true, mode, threads);
        let st = st.map_err(|e| TestCaseError::fail(format!("{mode:?}/{threads}: {e}")))?;
        prop_assert!(got == want, "{:?}/{} differs from the reference ({:?})", mode, threads, st);
        if mode == PlannerMode::Chunks && st.hdf5_reads < st.rows_read {
            // some row was planned (not every row overlaps another)
            prop_assert!(st.chunks_read > 0, "{:?}", st);
            if c.written_frac == 3 && (c.filters.0 || c.filters.1 || c.filters.2) {
                // every chunk allocated: all read raw and decoded by vh5 (unfiltered chunks
                // without the chunk index are read by libhdf5's H5Dread: `Fetcher::fetch`)
                prop_assert_eq!(st.raw_chunks, st.chunks_read, "{:?}", st);
            }
        }
    }
    ffi_close(&[d, f]);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]
    #[test]
    fn planner_matches_reference(c in case_strategy()) {
        run_case(&c)?;
    }
}

fn f64s(v: impl IntoIterator<Item = f64>) -> Vec<u8> {
    v.into_iter().flat_map(|x| x.to_ne_bytes()).collect()
}
fn as_f64(b: &[u8]) -> Vec<f64> {
    b.chunks(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect()
}
fn r1(s: u64, d: u64, c: u64) -> TRow {
    TRow { s: vec![s], d: vec![d], c: vec![c], ss: vec![1], ds: vec![1] }
}

/// Row 0 reads chunk 1 into dst[0..5); the later row 1 reads chunk 0 into dst[2..5): chunk
/// order would scatter row 1 first and let row 0 overwrite it. The later row must win.
#[test]
fn overlapping_rows_across_chunks_later_row_wins() {
    let tmp = TempDir::new("planner-ovl");
    let p = tmp.path("o.h5");
    let data = f64s((0..40).map(|x| x as f64));
    let sp = Spec { shape: vec![40], chunk: vec![10], dtype: Dtype::Float64, big: false, shuffle: true, gzip: true, fletcher: false };
    create(&p, &sp, &0f64.to_ne_bytes(), &data, &[(vec![0], vec![40])]);
    let (f, d) = ffi_open(&p, "x");
    let rows = [r1(15, 0, 5), r1(0, 2, 3), r1(30, 6, 2)];
    for (mode, threads) in MODES {
        let mut buf = vec![0u8; 8 * 8];
        let st = read(d, &mut buf, Dtype::Float64, &[8], &rows, false, mode, threads).unwrap();
        assert_eq!(as_f64(&buf), vec![15., 16., 0., 1., 2., 0., 30., 31.], "{mode:?} {st:?}");
    }
    ffi_close(&[d, f]);
}

/// Many rows in random order touching 4 chunks: each chunk is read (and inflated) once.
#[test]
fn each_chunk_read_once() {
    let tmp = TempDir::new("planner-once");
    let p = tmp.path("o.h5");
    let data = f64s((0..400).map(|x| x as f64 * 0.5));
    let sp = Spec { shape: vec![20, 20], chunk: vec![10, 10], dtype: Dtype::Float64, big: true, shuffle: true, gzip: true, fletcher: true };
    create(&p, &sp, &1f64.to_ne_bytes(), &data, &[(vec![0, 0], vec![20, 20])]);
    let (f, d) = ffi_open(&p, "x");
    let mut rows = vec![];
    for k in 0..200u64 {
        let (a, b) = ((k * 7) % 18, (k * 13) % 18);
        rows.push(TRow { s: vec![a, b], d: vec![k * 2, 0], c: vec![2, 2], ss: vec![1, 1], ds: vec![1, 1] });
    }
    let mut want = vec![0f64; 400 * 2];
    for (k, r) in rows.iter().enumerate() {
        for x in 0..2 {
            for y in 0..2 {
                want[(k * 2 + x) * 2 + y] = ((r.s[0] as usize + x) * 20 + r.s[1] as usize + y) as f64 * 0.5;
            }
        }
    }
    for threads in [1, 2] {
        let mut buf = vec![0u8; 400 * 2 * 8];
        let st = read(d, &mut buf, Dtype::Float64, &[400, 2], &rows, false, PlannerMode::Auto, threads).unwrap();
        assert_eq!(as_f64(&buf), want);
        assert_eq!((st.chunks_read, st.raw_chunks, st.hdf5_reads, st.rows_read), (4, 4, 0, 200), "{st:?}");
    }
    ffi_close(&[d, f]);
}

/// File offset and stored size of the chunk at `origin`.
fn chunk_addr(path: &std::path::Path, origin: &[u64]) -> (u64, u64) {
    let (f, d) = ffi_open(path, "x");
    let _s = vh5::hdf5::session();
    let (mut mask, mut addr, mut size) = (0u32, 0u64, 0u64);
    let st = unsafe { H5Dget_chunk_info_by_coord(d, origin.as_ptr(), &mut mask, &mut addr, &mut size) };
    assert!(st >= 0);
    drop(_s);
    ffi_close(&[d, f]);
    (addr, size)
}

fn corrupt(path: &std::path::Path, at: u64, bytes: &[u8]) {
    let mut fh = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    fh.seek(SeekFrom::Start(at)).unwrap();
    fh.write_all(bytes).unwrap();
}

/// A corrupted gzip chunk (and a fletcher32 mismatch): a clear error naming the chunk, in
/// every strategy, and never garbage.
#[test]
fn corrupted_chunks_are_errors_naming_the_chunk() {
    for fletcher in [false, true] {
        let tmp = TempDir::new("planner-bad");
        let p = tmp.path("bad.h5");
        let data = f64s((0..1000).map(|x| (x as f64).sin()));
        let sp = Spec { shape: vec![1000], chunk: vec![100], dtype: Dtype::Float64, big: false, shuffle: true, gzip: true, fletcher };
        create(&p, &sp, &0f64.to_ne_bytes(), &data, &[(vec![0], vec![1000])]);
        let (addr, size) = chunk_addr(&p, &[300]);
        corrupt(&p, addr + size / 2, &[0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33]);
        let (f, d) = ffi_open(&p, "x");
        // good chunks still read fine
        let mut buf = vec![0u8; 200 * 8];
        read(d, &mut buf, Dtype::Float64, &[200], &[r1(0, 0, 100), r1(500, 100, 100)], false, PlannerMode::Chunks, 2).unwrap();
        assert_eq!(as_f64(&buf)[150], (550f64).sin());
        for (mode, threads) in MODES {
            let e = read(d, &mut buf, Dtype::Float64, &[200], &[r1(250, 0, 100), r1(310, 100, 50)], false, mode, threads).unwrap_err();
            assert!(matches!(e.kind, vh5::error::ErrorKind::Hdf5 | vh5::error::ErrorKind::Malformed), "{mode:?}: {e}");
            if mode != PlannerMode::Rows {
                assert!(e.message.contains("chunk [3]") && e.message.contains("dataset offset [300]"), "{mode:?}: {}", e.message);
            }
        }
        // through the C ABI too
        let mut buf = vec![0u8; 8];
        let (st, msg) = ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[1], None, &[r1(333, 0, 1)], 0, false);
        assert_eq!(st, vh5_status::VH5_ERR_HDF5, "{msg}");
        ffi_close(&[d, f]);
    }
}

/// An unfiltered chunk that was never written but sits in libhdf5's chunk cache (a fill-value
/// read through `H5Dread` put it there) is reported with a size by `H5Dget_chunk_storage_size`
/// (libhdf5 answers from its cache), yet has no file address: the chunk planner must read it
/// as unallocated (fill value), not fail in `H5Dread_chunk`. Found by `planner_matches_reference`
/// when the chunk lookup moved from `H5Dget_chunk_info_by_coord` to the index lookup.
#[test]
fn unallocated_chunk_in_chunk_cache_reads_as_fill_value() {
    let tmp = TempDir::new("planner-cached-fill");
    let p = tmp.path("c.h5");
    let data = f64s((0..7 * 34).map(|x| x as f64));
    let sp = Spec { shape: vec![7, 34], chunk: vec![1, 1], dtype: Dtype::Float64, big: false, shuffle: false, gzip: false, fletcher: false };
    create(&p, &sp, &(-2f64).to_ne_bytes(), &data, &[(vec![0, 0], vec![3, 34])]);
    let (f, d) = ffi_open(&p, "x");
    let rows = vec![TRow { s: vec![0, 0], d: vec![0, 0], c: vec![5, 1], ss: vec![1, 1], ds: vec![1, 1] }];
    let want = vec![0.0, 34.0, 68.0, -2.0, -2.0];
    for mode in [PlannerMode::Rows, PlannerMode::Chunks, PlannerMode::Auto] {
        let mut buf = vec![0u8; 5 * 8];
        read(d, &mut buf, Dtype::Float64, &[5, 1], &rows, false, mode, 1).unwrap_or_else(|e| panic!("{mode:?}: {e:?}"));
        assert_eq!(as_f64(&buf), want, "{mode:?}");
    }
    ffi_close(&[d, f]);
}

/// Repeated calls on one open dataset (file read-only): the second call is served by the
/// dataset's decoded-chunk cache (no fetch, no inflate) and gives the same answer, in the
/// byte-swapped memory form of a big-endian gzip + shuffle + fletcher32 dataset; a call
/// reading other chunks misses and still gives the right answer.
#[test]
fn decoded_chunk_cache_big_endian_gzip_shuffle_fletcher32() {
    let tmp = TempDir::new("planner-cache");
    let p = tmp.path("c.h5");
    let data = f64s((0..400).map(|x| x as f64 * 0.25));
    let sp = Spec { shape: vec![20, 20], chunk: vec![10, 10], dtype: Dtype::Float64, big: true, shuffle: true, gzip: true, fletcher: true };
    create(&p, &sp, &1f64.to_ne_bytes(), &data, &[(vec![0, 0], vec![20, 20])]);
    let (f, d) = ffi_open(&p, "x");
    let rows: Vec<TRow> = (0..50u64).map(|k| TRow { s: vec![(k * 3) % 18, (k * 5) % 18], d: vec![k * 2, 0], c: vec![2, 2], ss: vec![1, 1], ds: vec![1, 1] }).collect();
    let want: Vec<f64> = rows.iter().flat_map(|r| (0..4u64).map(move |e| ((r.s[0] + e / 2) * 20 + r.s[1] + e % 2) as f64 * 0.25)).collect();
    let mut stats = vec![];
    for threads in [2, 1, 2] {
        let mut buf = vec![0u8; 100 * 2 * 8];
        let st = read(d, &mut buf, Dtype::Float64, &[100, 2], &rows, false, PlannerMode::Auto, threads).unwrap();
        assert_eq!(as_f64(&buf), want);
        stats.push((st.chunks_read, st.cache_hits, st.cache_misses));
    }
    assert_eq!(stats, vec![(4, 0, 4), (4, 4, 0), (4, 4, 0)]);
    // One chunk only: served from the cache too.
    let one = [TRow { s: vec![15, 15], d: vec![0, 0], c: vec![2, 2], ss: vec![1, 1], ds: vec![1, 1] }];
    let mut buf = vec![0u8; 2 * 2 * 8];
    let st = read(d, &mut buf, Dtype::Float64, &[2, 2], &one, false, PlannerMode::Auto, 1).unwrap();
    assert_eq!(as_f64(&buf), vec![315.0 * 0.25, 316.0 * 0.25, 335.0 * 0.25, 336.0 * 0.25]);
    assert_eq!((st.cache_hits, st.cache_misses), (1, 0), "{st:?}");
    ffi_close(&[d, f]);
}

/// One row with a file-side step on the outer axis of an unfiltered chunked dataset: `auto`
/// reads the touched chunks whole and steps in the copy engine (libhdf5 walks a stepped
/// selection run by run, ~20x slower per byte), with libhdf5's answer.
#[test]
fn unfiltered_chunks_outer_step_read_whole() {
    let tmp = TempDir::new("planner-step");
    let p = tmp.path("s.h5");
    let data = f64s((0..40 * 30).map(|x| x as f64));
    let sp = Spec { shape: vec![40, 30], chunk: vec![20, 30], dtype: Dtype::Float64, big: false, shuffle: false, gzip: false, fletcher: false };
    create(&p, &sp, &0f64.to_ne_bytes(), &data, &[(vec![0, 0], vec![40, 30])]);
    let (f, d) = ffi_open(&p, "x");
    let rows = [TRow { s: vec![1, 0], d: vec![0, 0], c: vec![20, 30], ss: vec![2, 1], ds: vec![1, 1] }];
    let want: Vec<f64> = (0..20u64).flat_map(|i| (0..30u64).map(move |j| ((1 + 2 * i) * 30 + j) as f64)).collect();
    for (mode, threads) in MODES {
        let mut buf = vec![0u8; 20 * 30 * 8];
        let st = read(d, &mut buf, Dtype::Float64, &[20, 30], &rows, false, mode, threads).unwrap();
        assert_eq!(as_f64(&buf), want, "{mode:?}");
        if mode == PlannerMode::Auto {
            assert_eq!((st.chunks_read, st.hdf5_reads), (2, 0), "{st:?}");
        }
    }
    ffi_close(&[d, f]);
}

/// Calls whose chunks are all in the decoded-chunk cache are copied row by row in row order
/// from it (`transfer::cached_gather`): multi-chunk rows, file-side steps larger than a chunk,
/// destination steps and overlapping destinations (the later row wins) give the reference's
/// answer; a bad row is refused before anything is written; a call touching one chunk the
/// cache lacks falls back to the planner (one miss) with the same answer.
#[test]
fn cached_gather_row_order_steps_overlaps_and_errors() {
    let tmp = TempDir::new("planner-gather");
    let p = tmp.path("g.h5");
    let shape = [30u64, 20];
    let data = f64s((0..600).map(|x| x as f64 * 0.5));
    let sp = Spec { shape: shape.to_vec(), chunk: vec![10, 10], dtype: Dtype::Float64, big: true, shuffle: true, gzip: true, fletcher: false };
    create(&p, &sp, &0f64.to_ne_bytes(), &data, &[(vec![0, 0], shape.to_vec())]);
    let src: Vec<u8> = data.clone();
    let (f, d) = ffi_open(&p, "x");
    let dst_shape = [16u64, 24];
    let strides = ArrayLayout::c_strides(&dst_shape, 8).unwrap();
    let init = f64s((0..16 * 24).map(|x| -(x as f64)));
    let row = |s: [u64; 2], dd: [u64; 2], c: [u64; 2], ss: [u64; 2], ds: [u64; 2]| TRow { s: s.to_vec(), d: dd.to_vec(), c: c.to_vec(), ss: ss.to_vec(), ds: ds.to_vec() };
    // Touches the four chunks of rows 0-19 (fills the cache).
    let warm = [row([0, 0], [0, 0], [16, 20], [1, 1], [1, 1]), row([4, 0], [0, 0], [16, 20], [1, 1], [1, 1])];
    let mut buf = init.clone();
    let st = read(d, &mut buf, Dtype::Float64, &dst_shape, &warm, false, PlannerMode::Auto, 2).unwrap();
    assert_eq!(st.cache_misses, 4, "{st:?}");
    let rows = [
        row([3, 2], [0, 0], [12, 15], [1, 1], [1, 1]),   // four chunks
        row([0, 1], [2, 3], [4, 2], [5, 11], [1, 2]),    // steps past a chunk on both axes
        row([9, 9], [1, 1], [2, 2], [1, 1], [1, 1]),     // overlaps row 0: wins
        row([19, 19], [15, 23], [1, 1], [1, 1], [1, 1]), // one element, last chunk
    ];
    let mut want = init.clone();
    reference(&src, &shape, &mut want, &dst_shape, &strides, 0, 8, &rows, false).unwrap();
    for threads in [1, 2] {
        let mut got = init.clone();
        let st = read(d, &mut got, Dtype::Float64, &dst_shape, &rows, false, PlannerMode::Auto, threads).unwrap();
        assert_eq!(as_f64(&got), as_f64(&want), "threads {threads}");
        assert_eq!((st.cache_hits, st.cache_misses, st.hdf5_reads, st.rows_read), (4, 0, 0, 4), "{st:?}");
    }
    // A bad last row: refused, nothing written.
    let mut bad = rows.to_vec();
    bad.push(row([29, 0], [0, 0], [2, 1], [1, 1], [1, 1]));
    let mut got = init.clone();
    let e = read(d, &mut got, Dtype::Float64, &dst_shape, &bad, false, PlannerMode::Auto, 1).unwrap_err();
    assert!(e.message.contains("row 4"), "{e}");
    assert_eq!(got, init);
    // Chunk (2, 0) is not cached: the planner reads it, the rest are hits.
    let mut more = rows.to_vec();
    more.push(row([25, 5], [10, 10], [5, 5], [1, 1], [1, 1]));
    let mut want = init.clone();
    reference(&src, &shape, &mut want, &dst_shape, &strides, 0, 8, &more, false).unwrap();
    let mut got = init.clone();
    let st = read(d, &mut got, Dtype::Float64, &dst_shape, &more, false, PlannerMode::Auto, 2).unwrap();
    assert_eq!(as_f64(&got), as_f64(&want));
    // (Hits count fetches: the overlapping rows 0 and 2 run one by one.)
    assert!(st.cache_misses == 1 && st.cache_hits >= 4, "{st:?}");
    ffi_close(&[d, f]);
}
