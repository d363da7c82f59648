//! Files written by h5py's HDF5 (2.x in h5py 3.16 wheels) with libver 'v112', 'v114' and
//! 'latest': through the C ABI they read equal to what h5py wrote where the linked libhdf5
//! reads the object formats; otherwise `vh5_dataset_open` is `VH5_ERR_UNSUPPORTED` naming the
//! file, the object, the format feature, the linked libhdf5 version and which build reads it
//! (never `VH5_ERR_NOT_FOUND`), and `list_datasets` lists the object with that reason. A
//! refusal is allowed only where the linked libhdf5 is older than the format: 1.12 for
//! 'v112' and 'v114' (1.14 added no object format versions over 1.12), the writer's own release
//! for 'latest' (HDF5 2.x's newest layout message is unknown to 1.14).
//! Skips (with a message) when python3 with h5py is not available to write the files.

mod common;

use std::ffi::CString;
use std::path::Path;
use std::process::Command;

use common::{ffi_close, ffi_read, last_error, TRow, TempDir};
use vh5::dtype::Dtype;
use vh5::ffi::hdf5::*;
use vh5::ffi::vh5_status::{self, *};

/// Write `<dir>/<libver>.h5` with h5py: /gz (6x10 float64 0..59, chunks 3x5, gzip) and /plain
/// (the same, contiguous). The (major, minor) version of the libhdf5 that wrote it, or None
/// when h5py is not there or lacks the libver.
fn h5py_file(dir: &Path, libver: &str) -> Option<(u32, u32)> {
    let code = format!(
        "import sys, h5py, numpy as np\nd = np.arange(60, dtype='<f8').reshape(6, 10)\ntry:\n    f = h5py.File(sys.argv[1], 'w', libver='{libver}')\nexcept ValueError:\n    sys.exit(3)\nwith f:\n    f.create_dataset('gz', data=d, chunks=(3, 5), compression='gzip')\n    f.create_dataset('plain', data=d)\nprint(*h5py.version.hdf5_version_tuple[:2])\n"
    );
    let p = dir.join(format!("{libver}.h5"));
    let writer = match Command::new("python3").arg("-c").arg(code).arg(&p).output() {
        Ok(o) if o.status.success() => {
            let v: Vec<u32> = String::from_utf8_lossy(&o.stdout).split_whitespace().filter_map(|x| x.parse().ok()).collect();
            (v.len() == 2).then(|| (v[0], v[1]))
        }
        _ => None,
    };
    if writer.is_none() {
        eprintln!("SKIP: python3 with h5py (libver {libver}) not available");
    }
    writer
}

fn open(path: &Path, name: &str) -> (i64, vh5_status, String, i64) {
    let c = |s: &str| CString::new(s).unwrap();
    let mut f = -1;
    let st = unsafe { vh5_file_open(c(path.to_str().unwrap()).as_ptr(), 0, &mut f) };
    assert_eq!(st, VH5_OK, "{}", last_error());
    let mut d = -1;
    let st = unsafe { vh5_dataset_open(f, c(name).as_ptr(), &mut d) };
    (f, st, last_error(), d)
}

fn check(libver: &str) {
    let tmp = TempDir::new("newer");
    let Some(writer) = h5py_file(&tmp.0, libver) else {
        return;
    };
    // The oldest libhdf5 that reads every object format of the file.
    let reader = if libver == "latest" { writer.max((1, 12)) } else { (1, 12) };
    let path = tmp.path(&format!("{libver}.h5"));
    let linked = {
        let (mut a, mut b) = (0u32, 0u32);
        assert_eq!(unsafe { vh5::ffi::version::vh5_hdf5_version(&mut a, &mut b, std::ptr::null_mut(), std::ptr::null_mut()) }, VH5_OK);
        (a, b)
    };
    let mut refused = Vec::new();
    for name in ["gz", "plain"] {
        let (f, st, msg, d) = open(&path, name);
        if st == VH5_OK {
            let mut buf = vec![0u8; 4 * 7 * 8];
            let rows = [TRow { s: vec![1, 2], d: vec![0, 0], c: vec![4, 7], ss: vec![1, 1], ds: vec![1, 1] }];
            let (st, msg) = ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[4, 7], None, &rows, 0, false);
            assert_eq!(st, VH5_OK, "{libver} {name}: {msg}");
            let got: Vec<f64> = buf.chunks_exact(8).map(|b| f64::from_ne_bytes(b.try_into().unwrap())).collect();
            let want: Vec<f64> = (1..5).flat_map(|i| (2..9).map(move |j| (i * 10 + j) as f64)).collect();
            assert_eq!(got, want, "{libver} {name}");
            ffi_close(&[d, f]);
            continue;
        }
        assert_eq!(st, VH5_ERR_UNSUPPORTED, "{libver} {name}: {msg}");
        assert!(linked < reader, "libhdf5 {linked:?} should read {libver} (written by {writer:?}): {msg}");
        let want = format!("file `{}`, object `{name}`: written with a newer HDF5 format than the linked libhdf5 {}.{}.", path.display(), linked.0, linked.1);
        assert!(msg.starts_with(&want), "{msg}");
        assert!(msg.contains("(libhdf5: bad version number for ") && !msg.contains("error stack"), "{msg}");
        // the release that reads it: HDF5 2.x's layout message version 5 needs 2.0 (1.14.6
        // refuses it too); the static-hdf5 hint (HDF5 2.2) wherever the linked one is older
        assert_eq!(msg.contains("static-hdf5"), linked < (2, 0), "{msg}");
        if msg.contains("(libhdf5: bad version number for layout message)") {
            assert!(msg.contains("layout message version 5") && msg.contains("needs libhdf5 2.0 or newer"), "{msg}");
        }
        refused.push(format!("/{name}"));
        ffi_close(&[f]);
    }
    // list_datasets never drops them: every dataset is listed, the refused ones with the reason
    let s = vh5::hdf5::session();
    let f = vh5::hdf5::open_file(s.lock(), path.to_str().unwrap(), 0).unwrap();
    let listed = vh5::hdf5::list_datasets(s.lock(), f.id()).unwrap();
    let names: Vec<&str> = listed.iter().map(|l| l.path.as_str()).collect();
    assert_eq!(names, ["/gz", "/plain"], "{libver}");
    for l in &listed {
        match &l.error {
            Some(e) => {
                assert!(refused.contains(&l.path), "{libver} {}: {}", l.path, e.message);
                assert_eq!(e.kind, vh5::error::ErrorKind::Unsupported, "{}", e.message);
                assert!(e.message.contains(&format!("object `{}`: written with a newer HDF5 format", l.path)), "{}", e.message);
            }
            None => assert!(!refused.contains(&l.path), "{libver} {}", l.path),
        }
    }
}

#[test]
fn newer_format_libver_latest_named_or_read() {
    check("latest");
}

#[test]
fn newer_format_libver_v112_named_or_read() {
    check("v112");
}

#[test]
fn newer_format_libver_v114_named_or_read() {
    check("v114");
}
