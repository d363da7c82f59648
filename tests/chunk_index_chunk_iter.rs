//! The chunk index from libhdf5's `H5Dchunk_iter` (src/hdf5/chunk_index.rs): a file in the
//! newest format (layout version 4: fixed and extensible arrays, version-2 B-trees) written
//! by the linked libhdf5 gets an index on a libhdf5 >= 1.14 build (`VH5_CHUNK_INDEX=require`:
//! no index is an error) and reads equal to libhdf5's own `H5Dread`; on a libhdf5 1.10 build
//! (vh5's own reading of the version-1 B-tree and of layout version 4's fixed array, single
//! chunk and implicit indexes) the fixed-array datasets too, and `require` refuses the
//! extensible array and the version-2 B-tree, naming the layout version. One test per
//! process: `VH5_CHUNK_INDEX` is read once.

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

const SHAPE: [u64; 2] = [61, 45];

/// `path` in the newest format: datasets `fixed` (fixed array, gzip), `fixed_raw` (fixed
/// array), `earray` (extensible array, unlimited axis 0, gzip), `btree2` (version-2 B-tree,
/// two unlimited axes, gzip) and `sparse` (fixed array, gzip, only rows 10..30 written), each
/// 61 x 45 float64 in 4 x 4 chunks, `value(i, j) = i * 1000 + j`.
fn make(path: &std::path::Path) {
    let _s = vh5::hdf5::session();
    let cs = |s: &str| CString::new(s).unwrap();
    let v: Vec<f64> = (0..SHAPE[0]).flat_map(|i| (0..SHAPE[1]).map(move |j| (i * 1000 + j) as f64)).collect();
    let u = H5S_UNLIMITED;
    unsafe {
        let fapl = H5Pcreate(*H5P_CLS_FILE_ACCESS);
        assert!(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST) >= 0);
        let f = H5Fcreate(cs(path.to_str().unwrap()).as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        assert!(f >= 0);
        H5Pclose(fapl);
        for (name, max, gzip) in [("fixed", SHAPE, true), ("fixed_raw", SHAPE, false), ("earray", [u, SHAPE[1]], true), ("btree2", [u, u], true), ("sparse", SHAPE, true)] {
            let sp = H5Screate_simple(2, SHAPE.as_ptr(), max.as_ptr());
            let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
            assert!(H5Pset_chunk(dcpl, 2, [4u64, 4].as_ptr()) >= 0);
            if gzip {
                assert!(H5Pset_deflate(dcpl, 4) >= 0);
            }
            let d = H5Dcreate2(f, cs(name).as_ptr(), *H5T_IEEE_F64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            assert!(d >= 0, "{name}");
            if name == "sparse" {
                let (start, count) = ([10u64, 0], [20u64, SHAPE[1]]);
                let ms = H5Screate_simple(2, count.as_ptr(), std::ptr::null());
                H5Sselect_hyperslab(sp, H5S_seloper_t::H5S_SELECT_SET, start.as_ptr(), std::ptr::null(), count.as_ptr(), std::ptr::null());
                let w = &v[(10 * SHAPE[1]) as usize..(30 * SHAPE[1]) as usize];
                assert!(H5Dwrite(d, *H5T_NATIVE_DOUBLE, ms, sp, H5P_DEFAULT, w.as_ptr() as *const _) >= 0);
                H5Sclose(ms);
            } else {
                assert!(H5Dwrite(d, *H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.as_ptr() as *const _) >= 0);
            }
            H5Dclose(d);
            H5Pclose(dcpl);
            H5Sclose(sp);
        }
        assert!(H5Fclose(f) >= 0);
    }
}

#[test]
fn chunk_index_chunk_iter_layout_v4_equals_libhdf5() {
    // Before any vh5 call of this process (the only test of this binary).
    std::env::set_var("VH5_CHUNK_INDEX", "require");
    let tmp = TempDir::new("chunk_iter");
    let p = tmp.path("v4.h5");
    make(&p);
    for name in ["fixed", "fixed_raw", "earray", "btree2", "sparse"] {
        let (_, want) = read_whole(&p, name, *H5T_NATIVE_DOUBLE, 8);
        let (f, d) = ffi_open(&p, name);
        // Whole read and a stepped read (every other row and column): >= 16 whole chunks, so
        // both qualify for the index.
        let rows = [TRow { s: vec![0, 0], d: vec![0, 0], c: SHAPE.to_vec(), ss: vec![1, 1], ds: vec![1, 1] }];
        let stepped = [TRow { s: vec![1, 1], d: vec![0, 0], c: vec![30, 22], ss: vec![2, 2], ds: vec![1, 1] }];
        for (rows, shape, step) in [(&rows, SHAPE.to_vec(), 1usize), (&stepped, vec![30, 22], 2)] {
            let mut buf = vec![0u8; (shape[0] * shape[1]) as usize * 8];
            let (st, msg) = ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &shape, None, rows, 0, step == 2);
            // libhdf5 1.10: vh5 reads the fixed arrays itself (layout_v4_fixed_array).
            let fixed_array = !cfg!(hdf5_1_12) && matches!(name, "fixed" | "fixed_raw" | "sparse");
            if cfg!(hdf5_1_14) || fixed_array {
                assert_eq!(st, VH5_OK, "{name}: {msg}");
                let (nr, nc) = (shape[0] as usize, shape[1] as usize);
                for i in 0..nr {
                    for j in 0..nc {
                        let (si, sj) = (1 + step * i - usize::from(step == 1), 1 + step * j - usize::from(step == 1));
                        let k = si * SHAPE[1] as usize + sj;
                        assert_eq!(buf[(i * nc + j) * 8..][..8], want[k * 8..][..8], "{name} step {step} at ({i}, {j})");
                    }
                }
            } else if step == 1 {
                assert_ne!(st, VH5_OK, "{name}: libhdf5 1.10 build: no index for this layout version 4 index");
                assert!(msg.contains("layout message version 4"), "{name}: {msg}");
            }
        }
        ffi_close(&[d, f]);
    }
}
