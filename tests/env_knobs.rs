//! The `VH5_*` environment variables (read once per process): an invalid value is never
//! silently ignored — every read and write fails with `VH5_ERR_INVALID_ARGUMENT` naming the
//! variable and its value — `vh5_set_num_threads` refuses more than `VH5_MAX_THREADS`, and
//! `vh5_set_planner` an unknown mode.
//! Each case runs in a child process (the test binary re-executed with the variable set).

mod common;
use common::*;
use vh5::dtype::Dtype;
use vh5::ffi::threads::{vh5_get_num_threads, vh5_set_num_threads, VH5_MAX_THREADS};
use vh5::ffi::vh5_status::*;

/// Child: read one element; print the status and the message.
fn child(path: &str) {
    let (f, d) = ffi_open(std::path::Path::new(path), "x");
    let mut buf = vec![0u8; 8];
    let rows = [TRow { s: vec![1, 2], d: vec![0, 0], c: vec![1, 1], ss: vec![1, 1], ds: vec![1, 1] }];
    let (st, m) = ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[1, 1], None, &rows, 0, true);
    println!("ENV-CHILD\t{st:?}\t{m}\t{}", f64::from_ne_bytes(buf.try_into().unwrap()));
    ffi_close(&[d, f]);
}

#[test]
fn invalid_environment_values_fail_every_read_naming_the_variable() {
    if let Ok(p) = std::env::var("VH5_ENV_CHILD") {
        return child(&p);
    }
    let tmp = TempDir::new("env");
    let p = tmp.path("e.h5");
    let data: Vec<u8> = (0..12).flat_map(|i| (i as f64).to_ne_bytes()).collect();
    let mut s = DsSpec::new("x", &[3, 4], Dtype::Float64, Some(&data));
    s.chunk = Some(vec![2, 2]);
    create_file(&p, &[s]);
    let cases: &[(&str, &str, Option<&str>)] = &[
        ("VH5_PLANNER", "chunks", None),
        ("VH5_PLANNER", " ROWS ", None),
        ("VH5_PLANNER", "", None),
        ("VH5_PLANNER", "xyz", Some("VH5_PLANNER=\"xyz\" is not one of auto, chunks, rows")),
        ("VH5_THREADS", "2", None),
        ("VH5_THREADS", "abc", Some("VH5_THREADS=\"abc\" is not an integer in [1, 1024]")),
        ("VH5_THREADS", "0", Some("VH5_THREADS=\"0\"")),
        ("VH5_THREADS", "-1", Some("VH5_THREADS=\"-1\"")),
        ("VH5_THREADS", "1000000", Some("VH5_THREADS=\"1000000\"")),
        ("VH5_MAX_CHUNK_BYTES", "1048576", None),
        ("VH5_MAX_CHUNK_BYTES", "0", Some("VH5_MAX_CHUNK_BYTES=\"0\" is not a positive number of bytes")),
        ("VH5_MAX_CHUNK_BYTES", "-1", Some("VH5_MAX_CHUNK_BYTES=\"-1\"")),
        ("VH5_CHUNK_CACHE_BYTES", "0", None),
        ("VH5_CHUNK_CACHE_BYTES", "1048576", None),
        ("VH5_CHUNK_CACHE_BYTES", "16MiB", Some("VH5_CHUNK_CACHE_BYTES=\"16MiB\" is not a number of bytes")),
        ("VH5_CHUNK_CACHE_BYTES", "-1", Some("VH5_CHUNK_CACHE_BYTES=\"-1\"")),
        ("VH5_CHUNK_INDEX", "always", None),
        ("VH5_CHUNK_INDEX", " off ", None),
        ("VH5_CHUNK_INDEX", "yes", Some("VH5_CHUNK_INDEX=\"yes\" is not one of 0, off, 1, on, always, require")),
    ];
    for (var, val, err) in cases {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "invalid_environment_values_fail_every_read_naming_the_variable", "--nocapture", "--test-threads=1"])
            .env("VH5_ENV_CHILD", &p)
            .env_remove("VH5_PLANNER")
            .env_remove("VH5_THREADS")
            .env_remove("VH5_MAX_CHUNK_BYTES")
            .env_remove("VH5_CHUNK_CACHE_BYTES")
            .env_remove("VH5_CHUNK_INDEX")
            .env(var, val)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().find_map(|l| l.find("ENV-CHILD\t").map(|k| &l[k + "ENV-CHILD\t".len()..])).unwrap_or_else(|| panic!("{var}={val:?}: no result: {stdout}"));
        let f: Vec<&str> = line.split('\t').collect();
        match err {
            None => {
                assert_eq!(f[0], "VH5_OK", "{var}={val:?}: {line}");
                assert_eq!(f[2].trim(), "6", "{var}={val:?}: element [1, 2]");
            }
            Some(e) => {
                assert_eq!(f[0], "VH5_ERR_INVALID_ARGUMENT", "{var}={val:?}: {line}");
                assert!(f[1].contains(e), "{var}={val:?}: message {:?} does not contain {e:?}", f[1]);
                assert_eq!(f[2].trim(), "0", "{var}={val:?}: nothing written");
            }
        }
    }
}

#[test]
fn set_num_threads_refuses_more_than_the_maximum() {
    let before = vh5_get_num_threads();
    assert_eq!(vh5_set_num_threads(VH5_MAX_THREADS + 1), VH5_ERR_INVALID_ARGUMENT);
    assert!(last_error().contains("at most 1024"), "{}", last_error());
    assert_eq!(vh5_get_num_threads(), before, "unchanged after the refusal");
}

#[test]
fn set_planner_refuses_unknown_modes_and_zero_restores_the_default() {
    use vh5::ffi::planner::*;
    let before = vh5_get_planner();
    assert!((VH5_PLANNER_AUTO..=VH5_PLANNER_ROWS).contains(&before));
    assert_eq!(vh5_set_planner(VH5_PLANNER_ROWS + 1), VH5_ERR_INVALID_ARGUMENT);
    assert!(last_error().contains("mode = 4"), "{}", last_error());
    assert_eq!(vh5_get_planner(), before, "unchanged after the refusal");
    for m in [VH5_PLANNER_ROWS, VH5_PLANNER_CHUNKS, VH5_PLANNER_AUTO] {
        assert_eq!(vh5_set_planner(m), VH5_OK);
        assert_eq!(vh5_get_planner(), m);
    }
    assert_eq!(vh5_set_planner(VH5_PLANNER_DEFAULT), VH5_OK);
    assert_eq!(vh5_get_planner(), before);
}
