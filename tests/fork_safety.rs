//! `fork()` while other threads are inside vh5 calls (through the C ABI): the child's vh5
//! calls must complete with the right values. Before the fork handlers the child inherited
//! vh5's libhdf5 lock (or a vh5 mutex) held by a thread that does not exist there, and hung.
//!
//! A test binary of its own: the child runs only vh5 calls and `_exit`, and no other test's
//! threads share the process. A hung child is killed by `SIGALRM`; the loop stops at the
//! first failure.
#![cfg(unix)]

mod common;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::*;
use vh5::dtype::Dtype;
use vh5::ffi::vh5_status::VH5_OK;

const N: u64 = 200;
const FORKS: usize = 20;

fn value(i: u64, j: u64) -> f64 {
    (i * N + j) as f64
}

/// Read the 8 x 8 blocks at `starts` through the C ABI; None on a failed call.
fn read_blocks(dset: i64, starts: &[(u64, u64)]) -> Option<Vec<f64>> {
    let rows: Vec<TRow> = starts.iter().enumerate().map(|(k, &(a, b))| TRow { s: vec![a, b], d: vec![k as u64 * 8, 0], c: vec![8, 8], ss: vec![1, 1], ds: vec![1, 1] }).collect();
    let mut buf = vec![0u8; starts.len() * 64 * 8];
    let (st, _) = ffi_read(dset, &mut buf, 0, Dtype::Float64, 8, &[starts.len() as u64 * 8, 8], None, &rows, 0, false);
    (st == VH5_OK).then(|| buf.chunks_exact(8).map(|b| f64::from_ne_bytes(b.try_into().unwrap())).collect())
}

fn blocks_right(got: &[f64], starts: &[(u64, u64)]) -> bool {
    starts.iter().enumerate().all(|(k, &(a, b))| (0..64).all(|e| got[k * 64 + e] == value(a + e as u64 / 8, b + e as u64 % 8)))
}

#[test]
fn fork_while_other_threads_are_in_vh5_calls_child_works() {
    let dir = TempDir::new("fork");
    let path = dir.path("src.h5");
    let data: Vec<u8> = (0..N * N).flat_map(|k| value(k / N, k % N).to_ne_bytes()).collect();
    let mut spec = DsSpec::new("x", &[N, N], Dtype::Float64, Some(&data));
    spec.chunk = Some(vec![10, 10]);
    spec.gzip = Some(4);
    create_file(&path, &[spec]);
    let (file, dset) = ffi_open(&path, "x");

    let stop = AtomicBool::new(false);
    let calls = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        // many blocks over gzip chunks (worker threads), and open-read-close (under the lock)
        sc.spawn(|| {
            let mut k = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let starts: Vec<(u64, u64)> = (0..300).map(|r| ((k + r * 7) % (N - 8), (k * 3 + r * 11) % (N - 8))).collect();
                let got = read_blocks(dset, &starts).expect("parent read");
                assert!(blocks_right(&got, &starts));
                calls.fetch_add(1, Ordering::Relaxed);
                k += 1;
            }
        });
        sc.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let (f, d) = ffi_open(&path, "x");
                assert!(read_blocks(d, &[(3, 4)]).is_some_and(|g| blocks_right(&g, &[(3, 4)])));
                ffi_close(&[d, f]);
                calls.fetch_add(1, Ordering::Relaxed);
            }
        });
        while calls.load(Ordering::Relaxed) < 4 {
            std::thread::yield_now();
        }
        let mut failed = None;
        for i in 0..FORKS {
            std::thread::sleep(std::time::Duration::from_millis(3 + (i as u64 * 7) % 20));
            // SAFETY: the child makes only vh5 calls (whose state the fork handlers keep
            // consistent) and leaves with `_exit`; the parent waits for it.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                failed = Some(format!("fork {i} failed"));
                break;
            }
            if pid == 0 {
                // SAFETY: alarm and _exit are async-signal-safe; SIGALRM's default kills.
                unsafe { libc::alarm(20) };
                let starts = [(i as u64, 2 * i as u64), (150, 170)];
                let (f, d) = ffi_open(&path, "x");
                let fresh = read_blocks(d, &starts).is_some_and(|g| blocks_right(&g, &starts));
                let inherited = read_blocks(dset, &starts).is_some_and(|g| blocks_right(&g, &starts));
                ffi_close(&[d, f]);
                // SAFETY: ends the child without running the parent's destructors.
                unsafe { libc::_exit(if fresh && inherited { 0 } else { 3 }) };
            }
            let mut status = 0;
            // SAFETY: waits for our own child.
            assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
            if status != 0 {
                let what =
                    if libc::WIFSIGNALED(status) { format!("killed by signal {} (14: hung)", libc::WTERMSIG(status)) } else { format!("exit {}", libc::WEXITSTATUS(status)) };
                failed = Some(format!("child {i} of {FORKS}: {what}"));
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        assert_eq!(failed, None);
    });
    ffi_close(&[dset, file]);
}
