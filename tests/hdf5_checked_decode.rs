//! Chunks of pipelines vh5 decodes itself (deflate, shuffle, fletcher32) are decoded by vh5's
//! checked decoder in every planner mode, and a chunk it finds corrupt is refused with
//! `VH5_ERR_HDF5` naming the chunk, never handed to libhdf5 (libhdf5 1.10 pads a short zlib
//! stream with uninitialised memory and crashes on a fletcher32 chunk shorter than its
//! checksum). Files are written by libhdf5; corrupt chunks are stored with `H5Dwrite_chunk`.

mod common;

use std::ffi::CString;

use common::*;
use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::*;
use vh5::dtype::Dtype;
use vh5::ffi::vh5_status::*;
use vh5::transfer::options::{with_max_chunk_bytes, with_overrides, PlannerMode};

const MODES: [PlannerMode; 3] = [PlannerMode::Auto, PlannerMode::Rows, PlannerMode::Chunks];

fn cs(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// A 16 x 16 float64 dataset in 8 x 8 chunks with the given pipeline, every chunk written
/// with `value(i, j) = i * 100 + j`; then the chunk at `bad_origin` replaced by `stored`
/// (stored bytes, filter mask 0) when given.
fn make(path: &std::path::Path, shuffle: bool, deflate: bool, fletcher: bool, bad: Option<([u64; 2], &[u8])>) {
    let _s = vh5::hdf5::session();
    unsafe {
        let f = H5Fcreate(cs(path.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        assert!(f >= 0);
        let sp = H5Screate_simple(2, [16u64, 16].as_ptr(), std::ptr::null());
        let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
        assert!(H5Pset_chunk(dcpl, 2, [8u64, 8].as_ptr()) >= 0);
        if shuffle {
            assert!(H5Pset_shuffle(dcpl) >= 0);
        }
        if deflate {
            assert!(H5Pset_deflate(dcpl, 4) >= 0);
        }
        if fletcher {
            assert!(H5Pset_fletcher32(dcpl) >= 0);
        }
        let d = H5Dcreate2(f, cs("x").as_ptr(), *H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        assert!(d >= 0);
        let v: Vec<f64> = (0..16u64).flat_map(|i| (0..16u64).map(move |j| (i * 100 + j) as f64)).collect();
        assert!(H5Dwrite(d, *H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.as_ptr() as *const _) >= 0);
        if let Some((origin, stored)) = bad {
            assert!(H5Dwrite_chunk(d, H5P_DEFAULT, 0, origin.as_ptr(), stored.len(), stored.as_ptr() as *const _) >= 0);
        }
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(sp);
        assert!(H5Fclose(f) >= 0);
    }
}

fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn row(s: [u64; 2], d: [u64; 2], c: [u64; 2]) -> TRow {
    TRow { s: s.to_vec(), d: d.to_vec(), c: c.to_vec(), ss: vec![1, 1], ds: vec![1, 1] }
}

/// Row tables that touch chunk (1, 1) (dataset offset [8, 8]): one small row (auto's
/// one-row fast path), several rows in the chunk, and two overlapping rows.
fn tables_touching_bad_chunk() -> Vec<(&'static str, Vec<TRow>)> {
    vec![
        ("one row", vec![row([9, 9], [0, 0], [2, 2])]),
        ("four rows", (0..4).map(|k| row([8 + k, 8], [k, 0], [1, 2])).collect()),
        ("overlapping rows", vec![row([0, 0], [0, 0], [4, 4]), row([10, 10], [1, 1], [2, 2])]),
    ]
}

/// Every table, planner mode and thread count refuses the read with `VH5_ERR_HDF5`, names
/// chunk [1, 1] and every word of `words`, and leaves the destination untouched.
fn assert_refused_everywhere(path: &std::path::Path, words: &[&str]) {
    let (f, d) = ffi_open(path, "x");
    for (what, rows) in tables_touching_bad_chunk() {
        for mode in MODES {
            for threads in [1, 2] {
                let mut buf = vec![0xA5u8; 4 * 4 * 8];
                let (st, m) = with_overrides(Some(mode), Some(threads), || ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[4, 4], None, &rows, 0, false));
                assert_eq!(st, VH5_ERR_HDF5, "{what} {mode:?}/{threads}: {st:?} {m}");
                assert!(m.contains("chunk [1, 1]") && m.contains("dataset offset [8, 8]"), "{what} {mode:?}: {m}");
                for w in words {
                    assert!(m.contains(w), "{what} {mode:?}: {w:?} not in {m}");
                }
                assert!(!m.contains("H5Dread of"), "{what} {mode:?}: handed to libhdf5: {m}");
                // Rows are read chunk by chunk: nothing of the bad chunk reaches the destination
                // (rows only touching good chunks may have been written before).
                if what != "overlapping rows" {
                    assert!(buf.iter().all(|&b| b == 0xA5), "{what} {mode:?}: destination written");
                }
            }
        }
    }
    // A good chunk of the same file still reads in every mode.
    for mode in MODES {
        let mut buf = vec![0u8; 4 * 8];
        let (st, m) = with_overrides(Some(mode), Some(1), || ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[2, 2], None, &[row([1, 2], [0, 0], [2, 2])], 0, false));
        assert_eq!(st, VH5_OK, "{m}");
        let got: Vec<f64> = buf.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got, vec![102.0, 103.0, 202.0, 203.0]);
    }
    ffi_close(&[d, f]);
}

#[test]
fn fletcher32_chunk_shorter_than_checksum_refused_in_every_planner() {
    let tmp = TempDir::new("f32short");
    for len in [1usize, 2, 3] {
        let p = tmp.path(&format!("f{len}.h5"));
        let stored = vec![0x11u8; len];
        make(&p, false, false, true, Some(([8, 8], &stored)));
        assert_refused_everywhere(&p, &["fletcher32", "corrupted"]);
    }
}

#[test]
fn fletcher32_checksum_mismatch_not_retried_through_libhdf5() {
    let tmp = TempDir::new("f32bad");
    let p = tmp.path("f.h5");
    let mut stored = vec![0u8; 8 * 8 * 8];
    stored.extend_from_slice(&0xdead_beefu32.to_le_bytes());
    make(&p, false, false, true, Some(([8, 8], &stored)));
    assert_refused_everywhere(&p, &["fletcher32 checksum mismatch", "corrupted"]);
}

#[test]
fn deflate_short_stream_refused_in_every_planner() {
    // A valid zlib stream that inflates to 100 bytes (the chunk holds 512): libhdf5 1.10
    // would pad the rest with uninitialised memory on its H5Dread path.
    let tmp = TempDir::new("short");
    let p = tmp.path("s.h5");
    let z = zlib(&[7u8; 100]);
    make(&p, true, true, false, Some(([8, 8], &z)));
    assert_refused_everywhere(&p, &["decode to 100 bytes", "corrupted"]);
}

#[test]
fn deflate_corrupt_stream_not_retried_through_libhdf5() {
    let tmp = TempDir::new("garbage");
    let p = tmp.path("g.h5");
    make(&p, false, true, false, Some(([8, 8], &[0x55u8; 64])));
    assert_refused_everywhere(&p, &["inflate", "corrupted"]);
}

#[test]
fn fletcher32_short_chunk_above_memory_limit_prechecked() {
    // Chunks above VH5_MAX_CHUNK_BYTES go through libhdf5 piece by piece: vh5 checks the
    // stored size first (libhdf5 1.10 reads before the buffer of a chunk under 4 bytes).
    let tmp = TempDir::new("f32big");
    let p = tmp.path("f.h5");
    make(&p, false, false, true, Some(([8, 8], &[1u8, 2])));
    let (f, d) = ffi_open(&p, "x");
    for mode in MODES {
        let mut buf = vec![0xA5u8; 4 * 4 * 8];
        let rows = [row([9, 9], [0, 0], [2, 2])];
        let (st, m) = with_max_chunk_bytes(64, || with_overrides(Some(mode), Some(1), || ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[4, 4], None, &rows, 0, false)));
        assert_eq!(st, VH5_ERR_HDF5, "{mode:?}: {m}");
        assert!(m.contains("chunk [1, 1]") && m.contains("too short for a checksum"), "{mode:?}: {m}");
        assert!(buf.iter().all(|&b| b == 0xA5));
    }
    ffi_close(&[d, f]);
}

#[test]
fn gzip_shuffle_converted_reads_match_libhdf5() {
    // Conversions (float64 -> float32, int16) of a shuffle+gzip dataset: vh5 decodes the
    // chunks, libhdf5 converts them (H5Tconvert), in every planner mode and thread count;
    // the values are libhdf5's H5Dread ones.
    let tmp = TempDir::new("conv");
    let p = tmp.path("c.h5");
    make(&p, true, true, true, None);
    let (f, d) = ffi_open(&p, "x");
    let rows = vec![row([3, 5], [0, 0], [9, 9]), row([0, 14], [9, 0], [1, 2]), row([15, 0], [9, 2], [1, 7])];
    for (dt, size) in [(Dtype::Float32, 4usize), (Dtype::Int16, 2)] {
        let mut want: Option<Vec<u8>> = None;
        for mode in MODES {
            for threads in [1, 2] {
                let mut buf = vec![0u8; 10 * 9 * size];
                let (st, m) = with_overrides(Some(mode), Some(threads), || ffi_read(d, &mut buf, 0, dt, size, &[10, 9], None, &rows, vh5::transfer::SLICES_CONVERT, false));
                assert_eq!(st, VH5_OK, "{m}");
                match &want {
                    None => want = Some(buf),
                    Some(w) => assert_eq!(&buf, w, "{dt:?} {mode:?}/{threads}"),
                }
            }
        }
        // libhdf5's own conversion of the first row.
        let w = want.unwrap();
        let v = |k: usize| -> f64 {
            match dt {
                Dtype::Float32 => f32::from_le_bytes(w[k * 4..k * 4 + 4].try_into().unwrap()) as f64,
                _ => i16::from_le_bytes(w[k * 2..k * 2 + 2].try_into().unwrap()) as f64,
            }
        };
        assert_eq!(v(0), 305.0);
        assert_eq!(v(9 + 8), 413.0);
        assert_eq!(v(9 * 9), 14.0);
    }
    ffi_close(&[d, f]);
}

/// A 10 x 10 float64 dataset in `chunk` chunks, maximum dims `maxdims` (`None` = the dims),
/// every element written (`i * 100 + j`), earliest file format (v1 object headers, no checksums).
fn make_dims(path: &std::path::Path, chunk: [u64; 2], maxdims: Option<[u64; 2]>) {
    let _s = vh5::hdf5::session();
    unsafe {
        let fapl = fapl_v110_format(); // the layout message is patched by the caller
        let f = H5Fcreate(cs(path.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        H5Pclose(fapl);
        let sp = H5Screate_simple(2, [10u64, 10].as_ptr(), maxdims.as_ref().map_or(std::ptr::null(), |m| m.as_ptr()));
        let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
        assert!(H5Pset_chunk(dcpl, 2, chunk.as_ptr()) >= 0);
        let d = H5Dcreate2(f, cs("x").as_ptr(), *H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        assert!(d >= 0);
        let v: Vec<f64> = (0..10u64).flat_map(|i| (0..10u64).map(move |j| (i * 100 + j) as f64)).collect();
        assert!(H5Dwrite(d, *H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.as_ptr() as *const _) >= 0);
        H5Dclose(d);
        H5Pclose(dcpl);
        H5Sclose(sp);
        assert!(H5Fclose(f) >= 0);
    }
}

#[test]
fn chunk_dim_exceeding_fixed_dataset_refused() {
    // The layout message (version 3, class 2 = chunked, 3 dimensions: 4, 4, element size 8)
    // patched to chunk dims 16 x 4 on a fixed 10 x 10 dataset: libhdf5 never creates that
    // (chunk <= maximum dimension on fixed-size axes) and its read path returns garbage or
    // crashes on it. vh5 refuses it in every planner mode, naming the dataset and the axis.
    let tmp = TempDir::new("chunkdim");
    let p = tmp.path("c.h5");
    make_dims(&p, [4, 4], None);
    let mut bytes = std::fs::read(&p).unwrap();
    let dims = [4u8, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0];
    let hits: Vec<usize> = (0..bytes.len() - 23).filter(|&k| bytes[k..k + 3] == [3, 2, 3] && bytes[k + 11..k + 23] == dims).collect();
    assert_eq!(hits.len(), 1, "layout message not found once");
    bytes[hits[0] + 11] = 16;
    std::fs::write(&p, &bytes).unwrap();
    let (f, d) = ffi_open(&p, "x");
    for mode in MODES {
        let mut buf = vec![0xA5u8; 2 * 8];
        let (st, m) = with_overrides(Some(mode), Some(1), || ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[1, 2], None, &[row([1, 1], [0, 0], [1, 2])], 0, false));
        assert_eq!(st, VH5_ERR_HDF5, "{mode:?}: {m}");
        assert!(m.contains("`/x`") && m.contains("c.h5") && m.contains("axis 0") && m.contains("chunk dimension 16"), "{m}");
        assert!(buf.iter().all(|&b| b == 0xA5));
    }
    ffi_close(&[d, f]);
}

#[test]
fn chunk_larger_than_extendible_dataset_reads() {
    // Chunks larger than the current extent are legal on extendible axes (maximum dims
    // unlimited or larger): read in every mode.
    let tmp = TempDir::new("chunkbig");
    for (k, maxdims) in [[H5S_UNLIMITED, 10], [64, 64]].into_iter().enumerate() {
        let p = tmp.path(&format!("e{k}.h5"));
        make_dims(&p, [32, 10], Some(maxdims));
        let (f, d) = ffi_open(&p, "x");
        for mode in MODES {
            let mut buf = vec![0u8; 2 * 8];
            let (st, m) = with_overrides(Some(mode), Some(1), || ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[1, 2], None, &[row([9, 8], [0, 0], [1, 2])], 0, false));
            assert_eq!(st, VH5_OK, "{mode:?}: {m}");
            let got: Vec<f64> = buf.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
            assert_eq!(got, vec![908.0, 909.0]);
        }
        ffi_close(&[d, f]);
    }
}

/// A 16 x 16 int32 dataset, 8 x 8 chunks, pipeline deflate then shuffle (shuffle last, so
/// its entry ends the pipeline message), written by libhdf5; then the shuffle entry of the
/// filter pipeline message patched: `cd0` = its element size, or `None` = no client data.
fn make_bad_shuffle(path: &std::path::Path, cd0: Option<u32>) {
    {
        let _s = vh5::hdf5::session();
        unsafe {
            let fapl = fapl_v110_format(); // the filter pipeline message is patched below
            let f = H5Fcreate(cs(path.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
            H5Pclose(fapl);
            let sp = H5Screate_simple(2, [16u64, 16].as_ptr(), std::ptr::null());
            let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
            assert!(H5Pset_chunk(dcpl, 2, [8u64, 8].as_ptr()) >= 0);
            assert!(H5Pset_deflate(dcpl, 4) >= 0);
            assert!(H5Pset_shuffle(dcpl) >= 0);
            let d = H5Dcreate2(f, cs("x").as_ptr(), *H5T_STD_I32LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            let v: Vec<i32> = (0..256).map(|k| k * 1001).collect();
            assert!(H5Dwrite(d, *H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.as_ptr() as *const _) >= 0);
            H5Dclose(d);
            H5Pclose(dcpl);
            H5Sclose(sp);
            assert!(H5Fclose(f) >= 0);
        }
    }
    // Filter pipeline message v1 entry: id u16 (2), name length u16 (8), flags u16, number of
    // client data values u16 (1), name "shuffle\0", values u32 each (padded to 8 bytes).
    let mut bytes = std::fs::read(path).unwrap();
    let hits: Vec<usize> = (8..bytes.len() - 16).filter(|&k| &bytes[k..k + 8] == b"shuffle\0" && bytes[k - 8..k - 6] == [2, 0] && bytes[k - 2..k] == [1, 0]).collect();
    assert_eq!(hits.len(), 1, "shuffle filter entry not found once");
    let k = hits[0];
    assert_eq!(u32::from_le_bytes(bytes[k + 8..k + 12].try_into().unwrap()), 4);
    match cd0 {
        Some(v) => bytes[k + 8..k + 12].copy_from_slice(&v.to_le_bytes()),
        None => bytes[k - 2] = 0,
    }
    std::fs::write(path, &bytes).unwrap();
}

#[test]
fn shuffle_element_size_zero_or_missing_refused_like_libhdf5() {
    // libhdf5's shuffle filter refuses a client data count other than 1 or an element size of
    // 0 ("invalid shuffle parameters"); vh5 used to decode such chunks as a no-op (still
    // shuffled bytes with VH5_OK). Now libhdf5 decodes them and refuses, in every mode.
    let tmp = TempDir::new("badshuffle");
    for (tag, cd0) in [("size0", Some(0)), ("missing", None)] {
        let p = tmp.path(&format!("{tag}.h5"));
        make_bad_shuffle(&p, cd0);
        // libhdf5 itself refuses the read.
        {
            let _s = vh5::hdf5::session();
            unsafe {
                let f = H5Fopen(cs(p.to_str().unwrap()).as_ptr(), H5F_ACC_RDONLY, H5P_DEFAULT);
                let d = H5Dopen2(f, cs("x").as_ptr(), H5P_DEFAULT);
                assert!(d >= 0, "{tag}: libhdf5 cannot open the patched dataset");
                let mut buf = vec![0i32; 256];
                let st = H5Dread(d, *H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.as_mut_ptr() as *mut _);
                assert!(st < 0, "{tag}: libhdf5 read the chunks");
                vh5::hdf5::error::clear_stack(_s.lock());
                H5Dclose(d);
                H5Fclose(f);
            }
        }
        let (f, d) = ffi_open(&p, "x");
        for (what, rows) in tables_touching_bad_chunk() {
            for mode in MODES {
                let mut buf = vec![0u8; 4 * 4 * 4];
                let (st, m) = with_overrides(Some(mode), Some(2), || ffi_read(d, &mut buf, 0, Dtype::Int32, 4, &[4, 4], None, &rows, 0, false));
                assert_eq!(st, VH5_ERR_HDF5, "{tag} {what} {mode:?}: {m}");
                assert!(m.contains("shuffle") || m.contains("filter"), "{tag} {what} {mode:?}: {m}");
            }
        }
        ffi_close(&[d, f]);
    }
}

#[test]
fn gzip_one_row_reads_reuse_last_decoded_chunk_correctly() {
    // Small calls keep the last chunk vh5 decoded (keyed by its stored address, size, mask):
    // alternating one-row reads over all four chunks, repeated, equal the file's values, and
    // a corrupt chunk is still refused after a good chunk was cached (and vice versa).
    let tmp = TempDir::new("cache");
    let p = tmp.path("c.h5");
    let z = zlib(&[7u8; 100]);
    make(&p, true, true, false, Some(([8, 8], &z)));
    let (f, d) = ffi_open(&p, "x");
    for mode in MODES {
        for round in 0..3 {
            for (i, j) in [(1u64, 2u64), (1, 3), (9, 2), (2, 9), (3, 9)] {
                let mut buf = vec![0u8; 2 * 8];
                let (st, m) = with_overrides(Some(mode), Some(1), || ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[1, 2], None, &[row([i, j], [0, 0], [1, 2])], 0, false));
                assert_eq!(st, VH5_OK, "{mode:?} {round} ({i}, {j}): {m}");
                let got: Vec<f64> = buf.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
                assert_eq!(got, vec![(i * 100 + j) as f64, (i * 100 + j + 1) as f64], "{mode:?} {round} ({i}, {j})");
            }
            let mut buf = vec![0u8; 2 * 8];
            let (st, m) = with_overrides(Some(mode), Some(1), || ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[1, 2], None, &[row([9, 9], [0, 0], [1, 2])], 0, false));
            assert_eq!(st, VH5_ERR_HDF5, "{m}");
        }
    }
    ffi_close(&[d, f]);
}

#[test]
fn dont_filter_partial_chunks_read_by_libhdf5_in_every_planner() {
    // H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS: partial edge chunks are stored unfiltered and
    // their filter mask does not say so. vh5 lets libhdf5 read such datasets (rows, one-row
    // calls and the planner alike): values equal libhdf5's, for shuffle and shuffle+gzip.
    let tmp = TempDir::new("partial");
    for (k, deflate) in [false, true].into_iter().enumerate() {
        let p = tmp.path(&format!("p{k}.h5"));
        let v: Vec<f64> = (0..10u64).flat_map(|i| (0..10u64).map(move |j| (i * 100 + j) as f64)).collect();
        {
            let _s = vh5::hdf5::session();
            unsafe {
                let f = H5Fcreate(cs(p.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
                let sp = H5Screate_simple(2, [10u64, 10].as_ptr(), std::ptr::null());
                let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
                assert!(H5Pset_chunk(dcpl, 2, [4u64, 4].as_ptr()) >= 0);
                assert!(H5Pset_chunk_opts(dcpl, H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS) >= 0);
                assert!(H5Pset_shuffle(dcpl) >= 0);
                if deflate {
                    assert!(H5Pset_deflate(dcpl, 4) >= 0);
                }
                let d = H5Dcreate2(f, cs("x").as_ptr(), *H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
                assert!(d >= 0);
                assert!(H5Dwrite(d, *H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.as_ptr() as *const _) >= 0);
                H5Dclose(d);
                H5Pclose(dcpl);
                H5Sclose(sp);
                assert!(H5Fclose(f) >= 0);
            }
        }
        let (f, d) = ffi_open(&p, "x");
        let tables = [
            vec![row([9, 8], [0, 0], [1, 2])],
            (0..5).map(|i| row([2 * i, 8], [0, 0], [1, 2])).collect::<Vec<_>>()[4..].to_vec(),
            vec![row([8, 8], [0, 0], [1, 2]), row([1, 1], [1, 0], [1, 2])],
        ];
        for rows in tables {
            for mode in MODES {
                let mut buf = vec![0u8; 2 * 2 * 8];
                let (st, m) = with_overrides(Some(mode), Some(2), || ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[2, 2], None, &rows, 0, false));
                assert_eq!(st, VH5_OK, "{mode:?}: {m}");
                let got: Vec<f64> = buf.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
                let r0 = &rows[0];
                let want0 = (r0.s[0] * 100 + r0.s[1]) as f64;
                assert_eq!(&got[..2], &[want0, want0 + 1.0], "deflate {deflate} {mode:?}");
            }
        }
        ffi_close(&[d, f]);
    }
}
