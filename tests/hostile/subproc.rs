//! Cases that may take the process down (libhdf5 parsing damaged metadata in C; allocations
//! under a low address-space limit) run in a child process: the test binary re-executes
//! itself with `VH5_HOSTILE_CASE` set, running only `hostile_subprocess_case`, which prints
//! one result line. A child killed by a signal is reported as such in the table.

use std::path::Path;
use std::process::Command;

use vh5::dtype::Dtype;
use vh5::ffi::hdf5::*;
use vh5::ffi::vh5_status::*;
use vh5::transfer::options::{with_overrides, PlannerMode};

use super::files::{c_close, c_dopen, c_open, c_read, row, x_value};
use super::{f64s, status_name, Guarded};

const TAG: &str = "HOSTILE-RESULT\t";

/// What the child reported: (status name or "crash (signal N)", message).
pub fn run_child(case: &str, file: &Path, extra_env: &[(&str, &str)]) -> (String, String) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["--exact", "hostile_subprocess_case", "--nocapture", "--test-threads=1"]).env("VH5_HOSTILE_CASE", case).env("VH5_HOSTILE_FILE", file);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("re-run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if let Some(line) = stdout.lines().find_map(|l| l.find(TAG).map(|k| &l[k + TAG.len()..])) {
        let (st, msg) = line.split_once('\t').unwrap_or((line, ""));
        return (st.to_string(), msg.replace('\u{1}', "\n"));
    }
    use std::os::unix::process::ExitStatusExt;
    let what = match out.status.signal() {
        Some(sig) => format!("crash (signal {sig})"),
        None => format!("no result (exit {:?})", out.status.code()),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").to_string();
    (what, last)
}

fn report(st: &str, msg: &str) {
    println!("{TAG}{st}\t{}", msg.replace('\n', "\u{1}"));
}

/// Limit the child's address space to its current size plus `extra` bytes.
fn limit_address_space(extra: u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let vm_kb: u64 = status.lines().find_map(|l| l.strip_prefix("VmSize:")).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    let lim = vm_kb * 1024 + extra;
    let r = libc::rlimit { rlim_cur: lim, rlim_max: lim };
    // SAFETY: plain syscall wrapper with a valid pointer to a local struct.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &r) }, 0);
}

/// Body of the child (called from the `hostile_subprocess_case` test).
pub fn child(case: &str) {
    let file = std::path::PathBuf::from(std::env::var_os("VH5_HOSTILE_FILE").unwrap());
    if case == "flip" {
        // Open, describe, read everything in both strategies; report the first failure.
        let (st, m, f) = c_open(&file, 0);
        if st != VH5_OK {
            return report(&status_name(st as i32), &format!("vh5_file_open: {m}"));
        }
        let (st, m, d) = c_dopen(f, "x");
        if st != VH5_OK {
            c_close(f);
            return report(&status_name(st as i32), &format!("vh5_dataset_open: {m}"));
        }
        let mut info: vh5_dataset_info = unsafe { std::mem::zeroed() };
        let st = unsafe { vh5_dataset_get_info(d, &mut info) };
        if st != VH5_OK {
            return report(&status_name(st as i32), &format!("vh5_dataset_get_info: {}", crate::common::last_error()));
        }
        for (mode, name) in [(PlannerMode::Chunks, "chunks"), (PlannerMode::Rows, "rows")] {
            let mut g = Guarded::new(40 * 30 * 8, 0x5A);
            let (st, m) = with_overrides(Some(mode), Some(1), || c_read(d, &mut g, Dtype::Float64, &[40, 30], &[row(&[0, 0], &[0, 0], &[40, 30])], 0));
            assert!(g.guards_intact(), "guard bytes overwritten");
            if st != VH5_OK {
                return report(&status_name(st as i32), &format!("vh5_read_many_slices ({name}): {m}"));
            }
            let v = f64s(g.body());
            let want: Vec<f64> = (0..40u64).flat_map(|i| (0..30u64).map(move |j| x_value(i, j))).collect();
            if v != want {
                return report("VH5_OK", &format!("vh5_read_many_slices ({name}): VH5_OK but the data differs from what was written"));
            }
        }
        c_close(d);
        c_close(f);
        return report("VH5_OK", "opened, described and read; data intact");
    }
    if let Some(rest) = case.strip_prefix("nomem:") {
        // "nomem:<dataset>:<rows|chunks>:<extra MiB>"
        let mut it = rest.split(':');
        let (name, mode, extra) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap().parse::<u64>().unwrap());
        let mode = PlannerMode::parse(mode).unwrap();
        let (st, m, f) = c_open(&file, 0);
        assert_eq!(st, VH5_OK, "{m}");
        let (st, m, d) = c_dopen(f, name);
        assert_eq!(st, VH5_OK, "{m}");
        let mut info: vh5_dataset_info = unsafe { std::mem::zeroed() };
        unsafe { vh5_dataset_get_info(d, &mut info) };
        let far = [info.shape[0] - 2, info.shape[1] - 2];
        limit_address_space(extra << 20);
        let mut g = Guarded::new(4 * 8, 0x5A);
        let (st, m) = with_overrides(Some(mode), Some(1), || c_read(d, &mut g, Dtype::Float64, &[2, 2], &[row(&far, &[0, 0], &[2, 2])], 0));
        assert!(g.guards_intact(), "guard bytes overwritten");
        let mut msg = m;
        if st == VH5_OK {
            msg = format!("values {:?}", f64s(g.body()));
        } else {
            assert!(g.untouched(), "destination written on failure");
            // The process goes on: a small read of an unfiltered region works right after.
            let mut g2 = Guarded::new(8, 0);
            let (st2, m2) = with_overrides(Some(PlannerMode::Rows), Some(1), || c_read(d, &mut g2, Dtype::Float64, &[1, 1], &[row(&[0, 0], &[0, 0], &[1, 1])], 0));
            if name == "r" {
                assert_eq!(st2, VH5_OK, "read after the failure: {m2}");
            }
        }
        c_close(d);
        c_close(f);
        return report(&status_name(st as i32), &msg);
    }
    panic!("unknown case {case}");
}

/// Deterministic bit flips in the metadata of the self-made file, each in a child process:
/// (where, file offset, XOR mask, expected outcome).
pub fn flips(rep: &mut super::Report, tmp: &crate::common::TempDir) {
    use super::{find, flip};
    let sample = tmp.path("sample.h5");
    let bytes = std::fs::read(&sample).unwrap();
    let (xh, xh_len) = super::files::header_addr(&sample, "x");
    let tree = (0..)
        .scan(0usize, |at, _| {
            let t = find(&bytes, b"TREE", *at)?;
            *at = t + 4;
            Some(t)
        })
        .find(|&t| bytes[t + 4] == 1)
        .expect("a chunk B-tree") as u64;
    let heap = find(&bytes, b"HEAP", 0).expect("a local heap") as u64;
    let snod = find(&bytes, b"SNOD", 0).expect("a symbol table node") as u64;
    // 2-d chunk B-tree keys: size u32, mask u32, 3 offsets u64 = 32 bytes; child addresses 8.
    let cases: Vec<(String, u64, u8, &str)> = vec![
        ("superblock: size of offsets (byte 13)".into(), 13, 0x04, EXPECT[0]),
        ("superblock: root group object header address".into(), 64, 0x40, EXPECT[1]),
        ("object header of x: version byte (+0)".into(), xh, 0xff, EXPECT[2]),
        ("object header of x: message count (+3)".into(), xh + 3, 0x40, EXPECT[3]),
        ("object header of x: header size (+10)".into(), xh + 10, 0x10, EXPECT[4]),
        (format!("object header of x: middle byte (+{})", xh_len / 2), xh + xh_len / 2, 0xff, EXPECT[5]),
        ("chunk B-tree of x: signature".into(), tree, 0x20, EXPECT[6]),
        ("chunk B-tree of x: entries used (+6)".into(), tree + 6, 0x40, EXPECT[7]),
        ("chunk B-tree of x: first child address (+63, high byte)".into(), tree + 63, 0x10, EXPECT[8]),
        ("chunk B-tree of x: first key offset (+36)".into(), tree + 36, 0x01, if linked_checks_btree_keys() || vh5_checks_root_keys() { "VH5_ERR_HDF5" } else { EXPECT[9] }),
        ("local heap: signature".into(), heap, 0x01, EXPECT[10]),
        ("symbol table node: signature".into(), snod, 0x01, EXPECT[11]),
    ];
    for (k, (what, off, mask, expected)) in cases.into_iter().enumerate() {
        let f = tmp.path(&format!("flip{k}.h5"));
        std::fs::copy(&sample, &f).unwrap();
        flip(&f, off, mask);
        let (st, msg) = run_child("flip", &f, &[]);
        let input = format!("{what} ^ {mask:#04x}");
        if st != expected {
            rep.failures.push(format!("[metadata flip] {input}: expected {expected}, got {st}: {msg}"));
        }
        rep.record_raw("metadata flip (child process)", input, "open → info → read", expected, &st, &msg);
    }
}

/// Whether the linked libhdf5 checks chunk B-tree keys against the chunk grid ("bad
/// coordinate offset"): the key flip that 1.10 reads as the fill value is then an error.
/// Seen on 2.x and on 1.14.6 (the 1.14 series vh5 builds against for h5py 3.12 .. 3.15); older
/// 1.14 releases and 1.12 are taken as 1.10, untested.
/// vh5 checks the keys of a chunk B-tree itself (`chunk_tree::first_use_damage`)
/// with libhdf5 1.10, whose object addresses it reads (1.12: tokens).
fn vh5_checks_root_keys() -> bool {
    let s = vh5::hdf5::session();
    vh5::hdf5::version::library_info(s.lock()).is_ok_and(|i| (i.major, i.minor) == (1, 10))
}

fn linked_checks_btree_keys() -> bool {
    let s = vh5::hdf5::session();
    vh5::hdf5::version::library_info(s.lock()).is_ok_and(|i| (i.major, i.minor, i.release) >= (1, 14, 6))
}

/// Expected outcome of each metadata flip (the child reports the first failing call).
/// No flip crashes libhdf5 1.10.8; three are not detected at all (v1 object headers and v1
/// B-trees carry no checksums): a message count libhdf5 does not need, a byte inside a
/// message it does not use, and a B-tree key whose chunk then reads as the fill value
/// (`VH5_OK` with wrong data — the child says so in the message; refused by libhdf5 >=
/// 1.14.6, and by vh5 itself with libhdf5 1.10 when the key is in the root node).
const EXPECT: [&str; 12] =
    ["VH5_ERR_HDF5", "VH5_ERR_HDF5", "VH5_ERR_HDF5", "VH5_OK", "VH5_ERR_HDF5", "VH5_OK", "VH5_ERR_HDF5", "VH5_ERR_HDF5", "VH5_ERR_HDF5", "VH5_OK", "VH5_ERR_HDF5", "VH5_ERR_HDF5"];
