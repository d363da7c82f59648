//! libhdf5 2.x's complex number class (`H5T_COMPLEX`, `H5T_COMPLEX_IEEE_F32LE/BE`,
//! `F64LE/BE`): classified as complex64 / complex128 in the byte order of the parts, and
//! read by vh5 in every planner mode (the row path's `H5Dread` with the native complex type,
//! the chunk planner's raw chunks swapped per part) exactly as libhdf5 reads them into its
//! native complex type. Only against libhdf5 >= 2.0 (cfg `hdf5_2`, build.rs); a 1.x build
//! prints a SKIP line instead.

#[cfg(not(hdf5_2))]
#[test]
fn complex_class_needs_libhdf5_2() {
    println!("SKIP hdf5_complex_class: the linked libhdf5 is 1.x, which has no complex number class (H5T_COMPLEX)");
}

#[cfg(hdf5_2)]
mod common;
#[cfg(hdf5_2)]
mod native {

    use std::ffi::CString;

    use super::common::*;
    use hdf5_sys::h5d::*;
    use hdf5_sys::h5f::*;
    use hdf5_sys::h5i::hid_t;
    use hdf5_sys::h5p::*;
    use hdf5_sys::h5s::*;
    use hdf5_sys::h5t::*;
    use vh5::dtype::{ByteOrder, Dtype};
    use vh5::ffi::vh5_status::*;
    use vh5::transfer::options::{with_overrides, PlannerMode};

    const SHAPE: [u64; 2] = [9, 7];

    /// Dataset `x` of `ftype` (chunked 4x3, shuffle + deflate), written by libhdf5 from the
    /// native complex elements `data` of `mtype`.
    fn create(path: &std::path::Path, ftype: hid_t, mtype: hid_t, data: &[u8]) {
        let _s = vh5::hdf5::session();
        unsafe {
            let f = H5Fcreate(CString::new(path.to_str().unwrap()).unwrap().as_ptr(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
            let sp = H5Screate_simple(2, SHAPE.as_ptr(), std::ptr::null());
            let dcpl = H5Pcreate(*H5P_CLS_DATASET_CREATE);
            assert!(H5Pset_chunk(dcpl, 2, [4u64, 3].as_ptr()) >= 0 && H5Pset_shuffle(dcpl) >= 0 && H5Pset_deflate(dcpl, 1) >= 0);
            let d = H5Dcreate2(f, c"x".as_ptr(), ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            assert!(d >= 0);
            assert!(H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.as_ptr() as *const _) >= 0);
            H5Dclose(d);
            H5Pclose(dcpl);
            H5Sclose(sp);
            assert!(H5Fclose(f) >= 0);
        }
    }

    #[test]
    fn complex_class_reads_match_libhdf5_in_every_planner() {
        let tmp = TempDir::new("complexclass");
        let n = (SHAPE[0] * SHAPE[1]) as usize;
        // (file type, native memory type, dtype, byte order)
        let types = {
            let _s = vh5::hdf5::session(); // H5open ran: the predefined type globals are set
            [
                (*H5T_COMPLEX_IEEE_F32LE, *H5T_NATIVE_FLOAT_COMPLEX, Dtype::Complex64, ByteOrder::Little),
                (*H5T_COMPLEX_IEEE_F32BE, *H5T_NATIVE_FLOAT_COMPLEX, Dtype::Complex64, ByteOrder::Big),
                (*H5T_COMPLEX_IEEE_F64LE, *H5T_NATIVE_DOUBLE_COMPLEX, Dtype::Complex128, ByteOrder::Little),
                (*H5T_COMPLEX_IEEE_F64BE, *H5T_NATIVE_DOUBLE_COMPLEX, Dtype::Complex128, ByteOrder::Big),
            ]
        };
        for (i, (ftype, mtype, dt, order)) in types.into_iter().enumerate() {
            let size = dt.itemsize().unwrap();
            let data = data_for(dt, n, i as u64 + 1);
            let p = tmp.path(&format!("c{i}.h5"));
            create(&p, ftype, mtype, &data);
            let info = {
                let s = vh5::hdf5::session();
                vh5::hdf5::types::classify(s.lock(), ftype).unwrap()
            };
            assert_eq!((info.dtype, info.byte_order, info.plain, info.native_complex), (Some(dt), Some(order), true, true), "{info:?}");
            assert!(info.description.contains("HDF5 complex number type"), "{}", info.description);
            let (_, want) = read_whole(&p, "x", mtype, size);
            let (f, d) = ffi_open(&p, "x");
            let row = TRow { s: vec![0, 0], d: vec![0, 0], c: SHAPE.to_vec(), ss: vec![1, 1], ds: vec![1, 1] };
            for mode in [PlannerMode::Auto, PlannerMode::Rows, PlannerMode::Chunks] {
                let mut got = vec![0u8; want.len()];
                let (st, m) = with_overrides(Some(mode), Some(1), || ffi_read(d, &mut got, 0, dt, size, &SHAPE, None, std::slice::from_ref(&row), 0, false));
                assert_eq!(st, VH5_OK, "{dt:?} {order:?} {mode:?}: {m}");
                assert!(got == want, "{dt:?} {order:?} {mode:?}: values differ from libhdf5's read");
            }
            ffi_close(&[d, f]);
        }
    }
}
