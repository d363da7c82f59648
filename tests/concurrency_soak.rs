//! Concurrency soak (issue #8): many threads mixing payload decoding, slice reads on several
//! files (shared handles and handles opened per call, every planner mode, 1-3 worker threads),
//! memory-to-memory copies and writes (each thread to its own gzip file, read back; and to
//! its own columns of the same gzip chunks of one shared file, through a shared handle or its
//! own, none of them lost), for a bounded time. Every result must equal the result computed single-threaded beforehand (itself checked against an independent reference), and
//! the run must finish: a watchdog aborts the process with a message if it does not (deadlock).
//!
//! A second test checks the promise behind "no deadlock": the libhdf5 lock is never held
//! while vh5 waits on its own worker threads. A thread that only takes and releases the lock
//! keeps getting it during a long multi-threaded gzip read, within a small fraction of the
//! read's duration (before the fix the reading thread held it for the whole call).
//!
//! Knobs: `VH5_SOAK_SECS` (default 8) and `VH5_SOAK_THREADS` (default 8).

mod common;
#[path = "common/write.rs"]
mod write_common;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::*;
use vh5::dtype::Dtype;
use vh5::ffi::hdf5::vh5_array;
use vh5::ffi::vh5_status::{self, *};
use vh5::transfer::options::{with_overrides, PlannerMode};

/// The two tests measure lock behaviour: never run them at the same time.
static SERIAL: Mutex<()> = Mutex::new(());

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).filter(|&n| n > 0).unwrap_or(default)
}

/// A small deterministic generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Held while a child process of this binary runs, and while the soak makes its files (some
/// are opened read-write after they are made, and its threads open others read-write). libhdf5 opens files without `O_CLOEXEC` and locks them
/// (`flock`, on the open file description): a child started while such a file is open
/// inherits the descriptor, and with it the lock, until it exits, and a later read-write open
/// of that file then fails ("unable to lock file, errno = 11"; seen with libhdf5 1.14.6 when
/// the tests of this binary run in parallel).
static CHILDREN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// One dataset of the soak: where it is, what it holds (native bytes, C order).
struct Ds {
    path: std::path::PathBuf,
    name: String,
    dtype: Dtype,
    shape: Vec<u64>,
    whole: Vec<u8>,
}

/// A read task: a table and a destination layout, with its single-threaded result.
struct ReadTask {
    ds: usize,
    rows: Vec<TRow>,
    dst_shape: Vec<u64>,
    dst_strides: Vec<i64>,
    dst_offset: usize,
    dst_len: usize,
    expect: Vec<u8>,
}

/// A payload task: a message and what decoding it gives single-threaded.
struct PayloadTask {
    msg: Vec<u8>,
    /// (dtype, shape, data bytes as copied by payload_copy_data, counts).
    expect: (u32, Vec<u64>, Vec<u8>, Vec<i64>),
}

fn make_datasets(tmp: &TempDir) -> Vec<Ds> {
    let mut out = Vec::new();
    let mut add = |file: &str,
                   name: &str,
                   shape: &[u64],
                   dtype: Dtype,
                   chunk: Option<Vec<u64>>,
                   gzip: Option<u32>,
                   shuffle: bool,
                   big: bool,
                   seed: u64,
                   written: Option<(Vec<u64>, Vec<u64>)>| {
        let path = tmp.path(file);
        let n: u64 = shape.iter().product();
        let data = data_for(dtype, n as usize, seed);
        let fill = vec![0x11u8; size_of(dtype)];
        let mut s = DsSpec::new(name, shape, dtype, if written.is_none() { Some(&data) } else { None });
        s.chunk = chunk;
        s.gzip = gzip;
        s.shuffle = shuffle;
        s.big_endian = big;
        s.fill = Some(&fill);
        create_file(&path, &[s]);
        if let Some((start, count)) = &written {
            let m: u64 = count.iter().product();
            write_block(&path, name, dtype, start, count, &data[..(m as usize) * size_of(dtype)]);
        }
        let mt = h5type(dtype, false, true);
        let (sh, whole) = read_whole(&path, name, mt, size_of(dtype));
        close_type(mt);
        assert_eq!(sh, shape);
        out.push(Ds { path, name: name.into(), dtype, shape: shape.to_vec(), whole });
    };
    add("gzip.h5", "x", &[240, 180], Dtype::Float64, Some(vec![24, 30]), Some(4), true, false, 1, None);
    add("contig.h5", "g/y", &[30, 40, 50], Dtype::Int32, None, None, false, false, 2, None);
    add("big.h5", "z", &[600, 90], Dtype::UInt16, Some(vec![50, 9]), None, false, true, 3, None);
    // Only part written: the other chunks are unallocated (fill value 0x1111).
    add("sparse.h5", "s", &[200, 200], Dtype::Float32, Some(vec![40, 40]), Some(1), false, false, 4, Some((vec![40, 0], vec![80, 120])));
    out
}

/// Random in-bounds rows (sometimes with steps, sometimes clipped at the edges) and a
/// destination with C-order, reversed (negative) or padded strides.
fn make_read_task(ds_index: usize, ds: &Ds, rng: &mut Rng) -> ReadTask {
    let n = ds.shape.len();
    let isz = size_of(ds.dtype);
    let dst_shape: Vec<u64> = (0..n).map(|j| 8 + rng.below(ds.shape[j].min(40))).collect();
    let mut dst_strides = vec![0i64; n];
    let pad = 1 + rng.below(2) as i64; // 1 = dense, 2 = every other element
    let mut acc = isz as i64 * pad;
    for j in (0..n).rev() {
        dst_strides[j] = acc;
        acc *= dst_shape[j] as i64;
    }
    let span = acc as usize;
    let reverse_axis = if rng.below(3) == 0 { Some(rng.below(n as u64) as usize) } else { None };
    let mut dst_offset = 0usize;
    if let Some(j) = reverse_axis {
        dst_offset = (dst_shape[j] - 1) as usize * dst_strides[j] as usize;
        dst_strides[j] = -dst_strides[j];
    }
    let nrows = 1 + rng.below(120) as usize;
    let rows = (0..nrows)
        .map(|_| {
            let (mut s, mut d, mut c, mut ss, mut dsx) = (vec![], vec![], vec![], vec![], vec![]);
            for (&extent, &dst_extent) in ds.shape.iter().zip(&dst_shape) {
                let step = if rng.below(4) == 0 { 1 + rng.below(3) } else { 1 };
                let dstep = if rng.below(6) == 0 { 2 } else { 1 };
                let cnt = 1 + rng.below(6);
                let sj = rng.below(extent);
                let dj = rng.below(dst_extent);
                s.push(sj);
                d.push(dj);
                c.push(cnt);
                ss.push(step);
                dsx.push(dstep);
            }
            TRow { s, d, c, ss, ds: dsx }
        })
        .collect::<Vec<_>>();
    // Independent reference (index loops, clip semantics) from the whole dataset.
    let mut expect = vec![0xA5u8; span];
    reference(&ds.whole, &ds.shape, &mut expect, &dst_shape, &dst_strides, dst_offset, isz, &rows, true).unwrap();
    ReadTask { ds: ds_index, rows, dst_shape, dst_strides, dst_offset, dst_len: span, expect }
}

/// Run a read task through the C ABI; returns the destination bytes.
fn run_read(t: &ReadTask, ds: &Ds, dset: i64) -> Vec<u8> {
    let mut buf = vec![0xA5u8; t.dst_len];
    let (st, m) = ffi_read(dset, &mut buf, t.dst_offset, ds.dtype, size_of(ds.dtype), &t.dst_shape, Some(&t.dst_strides), &t.rows, vh5::ffi::hdf5::VH5_SLICES_CLIP, true);
    assert_eq!(st, VH5_OK, "{m}");
    buf
}

fn cbor_payloads(rng: &mut Rng) -> Vec<Vec<u8>> {
    use ciborium::Value;
    let t = |s: &str| Value::Text(s.into());
    let mut out = Vec::new();
    for k in 0..6u64 {
        let n = 1 + rng.below(5000) as usize;
        let data = bytes(n * 8, 50 + k);
        let counts: Vec<i64> = (0..n as i64).map(|i| (i * 7 + k as i64) % 13).collect();
        let mut m = vec![(t("bytes"), Value::Bytes(data)), (t("dtype"), t("float64")), (t("byte_order"), t(if k % 2 == 0 { "little" } else { "big" }))];
        m.push((t("shape"), Value::Array(vec![Value::Integer((n as u64).into())])));
        if k % 3 == 0 {
            // 0.13.1: counts as bytes
            let cab: Vec<u8> = counts.iter().flat_map(|c| if k % 2 == 0 { c.to_le_bytes() } else { c.to_be_bytes() }).collect();
            m.push((t("count"), Value::Array(vec![])));
            m.push((t("count_as_bytes"), Value::Bytes(cab)));
        } else {
            m.push((t("count"), Value::Array(counts.iter().map(|&c| Value::Integer(c.into())).collect())));
        }
        let mut v = Vec::new();
        ciborium::into_writer(&Value::Map(m), &mut v).unwrap();
        out.push(v);
        // An RFC 8746 typed array (tag 85: float32 little endian) of the same length.
        let mut v = Vec::new();
        ciborium::into_writer(&Value::Tag(85, Box::new(Value::Bytes(bytes(n * 4, 90 + k)))), &mut v).unwrap();
        out.push(v);
    }
    out
}

fn shared_payloads() -> Vec<Vec<u8>> {
    let Some(root) = shared_data() else { return vec![] };
    let dir = root.join("payloads/server");
    let mut v: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .map(|it| it.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "cbor")).filter_map(|p| std::fs::read(p).ok()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Decode through the C ABI: view, counts into an int64 buffer, data copy.
fn run_payload(msg: &[u8]) -> (u32, Vec<u64>, Vec<u8>, Vec<i64>) {
    use vh5::ffi::payload::*;
    let mut view: payload_view = unsafe { std::mem::zeroed() };
    let st = unsafe { payload_decode_view(msg.as_ptr(), msg.len(), 0, &mut view) };
    assert_eq!(st, VH5_OK, "{}", last_error());
    let shape = view.shape[..view.ndim as usize].to_vec();
    // The view points into the message.
    let off = view.data as usize - msg.as_ptr() as usize;
    assert_eq!(off, view.data_offset);
    assert!(off + view.data_len <= msg.len());
    let mut data = vec![0u8; view.data_len];
    let mut written = 0usize;
    let st = unsafe { payload_copy_data(msg.as_ptr(), msg.len(), data.as_mut_ptr() as *mut _, data.len(), &mut written) };
    assert_eq!(st, VH5_OK, "{}", last_error());
    assert_eq!(written, data.len());
    let mut counts = vec![0i64; view.count_len as usize];
    let st = unsafe { payload_decode_count(msg.as_ptr(), msg.len(), counts.as_mut_ptr(), counts.len(), &mut written) };
    assert_eq!(st, VH5_OK, "{}", last_error());
    counts.truncate(written);
    (view.dtype, shape, data, counts)
}

/// One memory-to-memory copy task: a 2-D source, rows, the expected destination.
fn run_copy(src: &[u8], rows: &[TRow]) -> (vh5_status, Vec<u8>) {
    let shape = [64u64, 48];
    let mut dst = vec![0u8; 32 * 24 * 4];
    let dshape = [32u64, 24];
    let t = tables(rows);
    let a = |p: *mut u8, len: usize, sh: &[u64; 2]| vh5_array {
        base: p as *mut _,
        base_len: len,
        offset: 0,
        dtype: Dtype::Int32.code(),
        itemsize: 4,
        ndim: 2,
        shape: sh.as_ptr(),
        strides: std::ptr::null(),
    };
    let s = a(src.as_ptr() as *mut u8, src.len(), &shape);
    let d = a(dst.as_mut_ptr(), dst.len(), &dshape);
    let st = unsafe {
        vh5::ffi::slices_write::vh5_copy_many_slices(&s, &d, rows.len(), t[0].as_ptr(), t[1].as_ptr(), t[2].as_ptr(), t[3].as_ptr(), t[4].as_ptr(), vh5::ffi::hdf5::VH5_SLICES_CLIP)
    };
    (st, dst)
}

#[test]
fn soak_mixed_payloads_reads_and_copies_match_single_threaded() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let secs = env_usize("VH5_SOAK_SECS", 8) as u64;
    let nthreads = env_usize("VH5_SOAK_THREADS", 8);
    let tmp = TempDir::new("soak");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Made while no child process of this binary is started (`CHILDREN`): `make_datasets`
    // opens a file read-write after creating it (seen failing when the refused-threads test's
    // child inherited the new file's locked descriptor).
    let mut datasets = {
        let _no_children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
        make_datasets(&tmp)
    };
    // A real netCDF-4 file too when the shared data is here (extra coverage only).
    if let Some(root) = shared_data() {
        let p = root.join("real/test1.nc");
        if p.exists() {
            let mt = h5type(Dtype::Float64, false, true);
            let (shape, whole) = read_whole(&p, "tas", mt, 8);
            close_type(mt);
            datasets.push(Ds { path: p, name: "tas".into(), dtype: Dtype::Float64, shape, whole });
        }
    } else {
        println!("SKIP (part): no shared data (../shared/data or VH5_SHARED_DATA): the real-file dataset and recorded server payloads are left out");
    }

    // Tasks and their single-threaded results (which must equal the independent reference).
    let mut reads = Vec::new();
    for (i, ds) in datasets.iter().enumerate() {
        for _ in 0..5 {
            reads.push(make_read_task(i, ds, &mut rng));
        }
    }
    let handles: Vec<(i64, i64)> = datasets.iter().map(|d| ffi_open(&d.path, &d.name)).collect();
    for t in &mut reads {
        let got = with_overrides(Some(PlannerMode::Rows), Some(1), || run_read(t, &datasets[t.ds], handles[t.ds].1));
        assert!(got == t.expect, "single-threaded read of dataset {} differs from the reference", datasets[t.ds].name);
    }
    let mut payloads: Vec<PayloadTask> = Vec::new();
    for msg in cbor_payloads(&mut rng).into_iter().chain(shared_payloads()) {
        let expect = run_payload(&msg);
        payloads.push(PayloadTask { msg, expect });
    }
    let copy_src = data_for(Dtype::Int32, 64 * 48, 77);
    let copies: Vec<(Vec<TRow>, Vec<u8>)> = (0..6)
        .map(|k| {
            let rows: Vec<TRow> = (0..40u64)
                .map(|i| TRow {
                    s: vec![(i * 7 + k) % 64, (i * 5) % 48],
                    d: vec![(i * 3) % 32, (i + k) % 24],
                    c: vec![1 + i % 4, 1 + (i + k) % 5],
                    ss: vec![1 + i % 2, 1],
                    ds: vec![1, 1],
                })
                .collect();
            let mut expect = vec![0u8; 32 * 24 * 4];
            reference(&copy_src, &[64, 48], &mut expect, &[32, 24], &[96, 4], 0, 4, &rows, true).unwrap();
            let (st, got) = run_copy(&copy_src, &rows);
            assert_eq!(st, VH5_OK, "{}", last_error());
            assert!(got == expect, "single-threaded copy {k} differs from the reference");
            (rows, expect)
        })
        .collect();

    // One writable gzip file per soak thread (writes of different threads go to different
    // files; each thread checks its file against its own model after every write). Made while
    // no child process of this binary is started (`CHILDREN`).
    let wshape = [60u64, 80];
    let no_children = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
    let writable: Vec<(std::path::PathBuf, Vec<u8>)> = (0..nthreads)
        .map(|tid| {
            let p = tmp.path(&format!("w{tid}.h5"));
            let data = data_for(Dtype::Float64, 60 * 80, 500 + tid as u64);
            let mut s = DsSpec::new("w", &wshape, Dtype::Float64, Some(&data));
            s.chunk = Some(vec![10, 16]);
            s.gzip = Some(2);
            s.shuffle = tid % 2 == 0;
            create_file(&p, &[s]);
            (p, data)
        })
        .collect();
    // One gzip dataset all threads write, each only its own columns (c % nthreads == tid),
    // whose chunks hold columns of several threads: no thread's write may be lost.
    let sshape = [40u64, 6 * nthreads as u64];
    let spath = tmp.path("shared_w.h5");
    let sinit = data_for(Dtype::Float64, (sshape[0] * sshape[1]) as usize, 999);
    {
        let mut s = DsSpec::new("s", &sshape, Dtype::Float64, Some(&sinit));
        s.chunk = Some(vec![10, 16]);
        s.gzip = Some(2);
        s.shuffle = true;
        create_file(&spath, &[s]);
    }
    let shared_w = write_common::open_rw(&spath, "s", true);
    let shared_models: Mutex<Vec<Vec<u8>>> = Mutex::new(vec![sinit.clone(); nthreads]);
    drop(no_children);

    // Watchdog: a deadlock must fail the run, not hang CI.
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let limit = Duration::from_secs(secs + 180);
    {
        let done = done.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            while t0.elapsed() < limit {
                if done.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            eprintln!("concurrency soak: not finished {} s after its {} s budget: deadlock suspected", limit.as_secs() - secs, secs);
            std::process::abort();
        });
    }

    let ops = [AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0)];
    let end = Instant::now() + Duration::from_secs(secs);
    let modes = [PlannerMode::Auto, PlannerMode::Chunks, PlannerMode::Rows];
    std::thread::scope(|sc| {
        for (tid, (wpath, model)) in writable.iter().cloned().enumerate() {
            let (reads, payloads, copies, datasets, handles, ops, copy_src) = (&reads, &payloads, &copies, &datasets, &handles, &ops, &copy_src);
            let (spath, shared_w, shared_models, sinit) = (&spath, shared_w, &shared_models, &sinit);
            let mut model = model;
            sc.spawn(move || {
                let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ ((tid as u64 + 1) * 0x9E37_79B9));
                let (wf, wd) = write_common::open_rw(&wpath, "w", true);
                let (sf, sd) = write_common::open_rw(spath, "s", true);
                let mut smodel = sinit.to_vec();
                while Instant::now() < end {
                    match rng.below(12) {
                        // Writes to this thread's columns of the shared file (through the
                        // handle all threads share or its own), its columns read back.
                        11 => {
                            let d = if rng.below(2) == 0 { shared_w.1 } else { sd };
                            let src = data_for(Dtype::Float64, 40 * 4, rng.next());
                            let lay = write_common::SrcLay::c(&[40, 4], 8);
                            let rows: Vec<TRow> = (0..1 + rng.below(4))
                                .map(|j| {
                                    let d0 = rng.below(40);
                                    let col = tid as u64 + rng.below(6) * nthreads as u64;
                                    TRow { s: vec![0, j], d: vec![d0, col], c: vec![1 + rng.below(40 - d0), 1], ss: vec![1, 1], ds: vec![1, 1] }
                                })
                                .collect();
                            let w = SoakWrite { src: &src, lay: &lay, rows: &rows, flags: 0, thr: 1 + rng.below(3) as usize };
                            let back = w.run(tid, (d, sd), &mut smodel, &sshape, "shared-file ");
                            assert!(
                                own_columns(&back, &sshape, nthreads, tid) == own_columns(&smodel, &sshape, nthreads, tid),
                                "thread {tid}: its columns of the shared file differ from its model after a write ({} threads)",
                                w.thr
                            );
                            ops[5].fetch_add(1, Ordering::Relaxed);
                        }
                        // Writes to this thread's own file, read back whole and compared.
                        10 => {
                            let src = data_for(Dtype::Float64, 30 * 40, rng.next());
                            let lay = write_common::SrcLay::c(&[30, 40], 8);
                            let rows: Vec<TRow> = (0..1 + rng.below(30))
                                .map(|_| TRow {
                                    s: vec![rng.below(30), rng.below(40)],
                                    d: vec![rng.below(60), rng.below(80)],
                                    c: vec![1 + rng.below(12), 1 + rng.below(20)],
                                    ss: vec![1, 1],
                                    ds: vec![1, 1 + rng.below(2)],
                                })
                                .collect();
                            let w = SoakWrite { src: &src, lay: &lay, rows: &rows, flags: vh5::ffi::hdf5::VH5_SLICES_CLIP, thr: 1 + rng.below(3) as usize };
                            let back = w.run(tid, (wd, wd), &mut model, &wshape, "");
                            assert!(back == model, "thread {tid}: its file differs from its model after a write ({} threads)", w.thr);
                            ops[4].fetch_add(1, Ordering::Relaxed);
                        }
                        // Reads on a handle shared by all threads, any mode and thread count.
                        0..=3 => {
                            let t = &reads[rng.below(reads.len() as u64) as usize];
                            let (mode, thr) = (modes[rng.below(3) as usize], 1 + rng.below(3) as usize);
                            let got = with_overrides(Some(mode), Some(thr), || run_read(t, &datasets[t.ds], handles[t.ds].1));
                            assert!(got == t.expect, "thread {tid}: read of {} ({mode:?}, {thr} threads) differs from single-threaded", datasets[t.ds].name);
                            ops[0].fetch_add(1, Ordering::Relaxed);
                        }
                        // Reads on a file opened and closed by this thread for this call.
                        4 => {
                            let t = &reads[rng.below(reads.len() as u64) as usize];
                            let ds = &datasets[t.ds];
                            let (f, d) = ffi_open(&ds.path, &ds.name);
                            let got = with_overrides(Some(modes[rng.below(3) as usize]), Some(1 + rng.below(3) as usize), || run_read(t, ds, d));
                            ffi_close(&[d, f]);
                            assert!(got == t.expect, "thread {tid}: read of {} on its own handle differs", ds.name);
                            ops[1].fetch_add(1, Ordering::Relaxed);
                        }
                        5..=7 => {
                            let p = &payloads[rng.below(payloads.len() as u64) as usize];
                            let got = run_payload(&p.msg);
                            assert!(got == p.expect, "thread {tid}: payload decode differs from single-threaded");
                            ops[2].fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            let (rows, expect) = &copies[rng.below(copies.len() as u64) as usize];
                            let (st, got) = run_copy(copy_src, rows);
                            assert_eq!(st, VH5_OK);
                            assert!(&got == expect, "thread {tid}: copy differs");
                            ops[3].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                ffi_close(&[wd, wf, sd, sf]);
                shared_models.lock().unwrap()[tid] = smodel;
            });
        }
    });
    ffi_close(&[shared_w.1, shared_w.0]);
    let (_, back) = read_whole(&spath, "s", h5type(Dtype::Float64, false, true), 8);
    for (tid, m) in shared_models.lock().unwrap().iter().enumerate() {
        assert!(own_columns(&back, &sshape, nthreads, tid) == own_columns(m, &sshape, nthreads, tid), "thread {tid}: a write to its columns of the shared file was lost");
    }
    done.store(true, Ordering::SeqCst);
    for (f, d) in &handles {
        ffi_close(&[*d, *f]);
    }
    let n: Vec<usize> = ops.iter().map(|o| o.load(Ordering::Relaxed)).collect();
    println!(
        "soak: {nthreads} threads for {secs} s over {} datasets, {} payloads: {} shared-handle reads, {} own-handle reads, {} payload decodes, {} copies, {} writes (+ read back), {} writes to shared chunks (none lost), all identical to single-threaded",
        datasets.len(),
        payloads.len(),
        n[0],
        n[1],
        n[2],
        n[3],
        n[4],
        n[5]
    );
    assert!(n.iter().all(|&k| k > 0), "every kind of operation ran: {n:?}");
}

/// The elements of columns `c % nthreads == tid` of a C-order float64 array of `shape`.
/// One write of the soak: `rows` of the float64 array `src` (laid out as `lay`) with `flags`,
/// through `thr` encode threads.
struct SoakWrite<'a> {
    src: &'a [u8],
    lay: &'a write_common::SrcLay,
    rows: &'a [TRow],
    flags: u32,
    thr: usize,
}

impl SoakWrite<'_> {
    /// Write to `dset` (thread `tid`), apply the write to `model` (the 2-d dataset's expected
    /// content, extent `shape`), then read the dataset back whole through `back_from` (the same
    /// or another id of it) and return what was read. `what` prefixes "write" / "read back" in
    /// failure messages.
    fn run(&self, tid: usize, (dset, back_from): (i64, i64), model: &mut [u8], shape: &[u64; 2], what: &str) -> Vec<u8> {
        let clip = self.flags & vh5::ffi::hdf5::VH5_SLICES_CLIP != 0;
        let (st, m) = with_overrides(None, Some(self.thr), || write_common::ffi_write(dset, self.src, self.lay, Dtype::Float64, 8, self.rows, self.flags));
        assert_eq!(st, VH5_OK, "thread {tid}: {what}write: {m}");
        write_common::ref_write(model, shape, self.src, self.lay, 8, self.rows, clip).unwrap();
        let mut back = vec![0u8; model.len()];
        let whole = [TRow { s: vec![0, 0], d: vec![0, 0], c: shape.to_vec(), ss: vec![1, 1], ds: vec![1, 1] }];
        let (st, m) = ffi_read(back_from, &mut back, 0, Dtype::Float64, 8, shape, None, &whole, 0, true);
        assert_eq!(st, VH5_OK, "thread {tid}: {what}read back: {m}");
        back
    }
}

fn own_columns(a: &[u8], shape: &[u64; 2], nthreads: usize, tid: usize) -> Vec<u8> {
    let cols = shape[1] as usize;
    a.chunks_exact(8).enumerate().filter(|(i, _)| (i % cols) % nthreads == tid).flat_map(|(_, b)| b.iter().copied()).collect()
}

/// Run `op` 3 times while a prober thread takes and releases the libhdf5 lock every 300 µs;
/// assert that the prober kept getting it during the calls (see the module docs).
fn assert_lock_free_during(what: &str, mut op: impl FnMut()) {
    let stop = AtomicBool::new(false);
    let (mut calls, mut max_wait, mut acquired) = (Vec::new(), Duration::ZERO, Vec::new());
    std::thread::scope(|sc| {
        let prober = sc.spawn(|| {
            let (mut worst, mut got) = (Duration::ZERO, Vec::new());
            while !stop.load(Ordering::SeqCst) {
                let t0 = Instant::now();
                let g = vh5::hdf5::lock::lock();
                worst = worst.max(t0.elapsed());
                got.push(Instant::now());
                drop(g);
                std::thread::sleep(Duration::from_micros(300));
            }
            (worst, got)
        });
        std::thread::sleep(Duration::from_millis(20));
        for _ in 0..3 {
            let t0 = Instant::now();
            op();
            calls.push((t0, Instant::now()));
        }
        stop.store(true, Ordering::SeqCst);
        (max_wait, acquired) = prober.join().unwrap();
    });
    let durations: Vec<Duration> = calls.iter().map(|(a, b)| *b - *a).collect();
    let shortest = *durations.iter().min().unwrap();
    // Acquisitions that happened while a call was running.
    let inside = acquired.iter().filter(|t| calls.iter().any(|(a, b)| *t > a && *t < b)).count();
    println!("lock prober ({what}): {} acquisitions, {inside} of them during the 3 calls, longest wait {max_wait:?}; calls {durations:?}", acquired.len());
    // Held for a whole call (the behaviour before issue #8), the prober gets the lock at most
    // once per call and waits about one call duration.
    assert!(inside >= 3 * calls.len(), "{what}: the prober got the libhdf5 lock only {inside} times during {} calls: the call holds it while its workers work", calls.len());
    assert!(max_wait * 2 < shortest, "{what}: the prober waited {max_wait:?} for the libhdf5 lock during calls taking {shortest:?}: the call holds it while its workers work");
}

#[test]
fn libhdf5_lock_is_free_while_reads_and_writes_wait_on_their_workers() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let tmp = TempDir::new("lockfree");
    let p = tmp.path("g.h5");
    // 64 MB of float64 in 1024 gzip+shuffle chunks: decoding / encoding dominates.
    let shape = [4096u64, 2048];
    let data = data_for(Dtype::Float64, 4096 * 2048, 5);
    let mut s = DsSpec::new("x", &shape, Dtype::Float64, Some(&data));
    s.chunk = Some(vec![64, 128]);
    s.gzip = Some(1);
    s.shuffle = true;
    create_file(&p, &[s]);
    let rows = vec![TRow { s: vec![0, 0], d: vec![0, 0], c: shape.to_vec(), ss: vec![1, 1], ds: vec![1, 1] }];
    let (f, d) = ffi_open(&p, "x");
    assert_lock_free_during("read, 2 threads", || {
        let mut buf = vec![0u8; data.len()];
        let (st, m) = with_overrides(Some(PlannerMode::Chunks), Some(2), || ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &shape, None, &rows, 0, true));
        assert_eq!(st, VH5_OK, "{m}");
        assert!(buf == data, "read differs from what was written");
    });
    ffi_close(&[d, f]);
    // Writes: every chunk covered, encoded by workers, stored by the calling thread.
    let (f, d) = write_common::open_rw(&p, "x", true);
    let src = data_for(Dtype::Float64, 4096 * 2048, 6);
    assert_lock_free_during("write, 2 threads", || {
        let (st, m) = with_overrides(None, Some(2), || write_common::ffi_write(d, &src, &write_common::SrcLay::c(&shape, 8), Dtype::Float64, 8, &rows, 0));
        assert_eq!(st, VH5_OK, "{m}");
    });
    ffi_close(&[d, f]);
    let mt = h5type(Dtype::Float64, false, true);
    let (_, back) = read_whole(&p, "x", mt, 8);
    close_type(mt);
    assert!(back == src, "the file holds what was written");
}

/// Child body of `threads_the_system_refuses_are_not_an_error` (re-executed test binary).
fn refused_threads_child(path: &std::path::Path) {
    let data = data_for(Dtype::Float64, 1024 * 1024, 8);
    let rows = vec![TRow { s: vec![0, 0], d: vec![0, 0], c: vec![1024, 1024], ss: vec![1, 1], ds: vec![1, 1] }];
    let (f, d) = write_common::open_rw(path, "x", true);
    let mut buf = vec![0u8; data.len()];
    let src = data_for(Dtype::Float64, 1024 * 1024, 9);
    // Room for the buffers above and a little heap, not for many thread stacks (2 MiB each).
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let vm_kb: u64 = status.lines().find_map(|l| l.strip_prefix("VmSize:")).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    let extra_mb: u64 = std::env::var("VH5_SOAK_CHILD_EXTRA_MB").unwrap().parse().unwrap();
    let lim = vm_kb * 1024 + (extra_mb << 20);
    let r = libc::rlimit { rlim_cur: lim, rlim_max: lim };
    // SAFETY: plain syscall wrapper with a pointer to a local struct.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &r) }, 0);
    let (st, m) = with_overrides(Some(PlannerMode::Chunks), Some(1024), || ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[1024, 1024], None, &rows, 0, true));
    println!("SOAK-CHILD read {st:?} {m}");
    assert_eq!(st, VH5_OK, "{m}");
    if buf != data {
        let bad: Vec<usize> = (0..data.len() / 8).filter(|&i| buf[i * 8..i * 8 + 8] != data[i * 8..i * 8 + 8]).collect();
        let chunks: std::collections::BTreeSet<(usize, usize)> = bad.iter().map(|&i| (i / 1024 / 32, i % 1024 / 64)).collect();
        panic!("read differs: {} elements, first {:?}, chunks {:?}", bad.len(), &bad[..bad.len().min(5)], chunks.iter().take(20).collect::<Vec<_>>());
    }
    let (st, m) = with_overrides(None, Some(1024), || write_common::ffi_write(d, &src, &write_common::SrcLay::c(&[1024, 1024], 8), Dtype::Float64, 8, &rows, 0));
    println!("SOAK-CHILD write {st:?} {m}");
    assert_eq!(st, VH5_OK, "{m}");
    let (st, m) = with_overrides(Some(PlannerMode::Chunks), Some(1024), || ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[1024, 1024], None, &rows, 0, true));
    assert_eq!(st, VH5_OK, "{m}");
    assert!(buf == src, "read after write differs");
    ffi_close(&[d, f]);
    println!("SOAK-CHILD ok");
}

#[test]
fn threads_the_system_refuses_are_not_an_error() {
    if let Some(p) = std::env::var_os("VH5_SOAK_CHILD") {
        return refused_threads_child(std::path::Path::new(&p));
    }
    let tmp = TempDir::new("refused");
    let data = data_for(Dtype::Float64, 1024 * 1024, 8);
    // In a child under a low address-space limit (RLIMIT_AS: its size + 1 MiB, then + 6 MiB),
    // 1024 threads are asked for: thread creation fails at once or after one worker; the
    // calls go on with the workers they got (none: all on the calling thread).
    for extra_mb in ["1", "6"] {
        // A fresh file per child (each writes into it).
        let p = tmp.path(&format!("g{extra_mb}.h5"));
        let mut s = DsSpec::new("x", &[1024, 1024], Dtype::Float64, Some(&data));
        s.chunk = Some(vec![32, 64]); // 512 chunks: up to 511 workers asked for
        s.gzip = Some(1);
        s.shuffle = true;
        let _no_files_made = CHILDREN.lock().unwrap_or_else(|e| e.into_inner());
        create_file(&p, &[s]);
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "threads_the_system_refuses_are_not_an_error", "--nocapture", "--test-threads=1"])
            .env("VH5_SOAK_CHILD", &p)
            .env("VH5_SOAK_CHILD_EXTRA_MB", extra_mb)
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("SOAK-CHILD")).collect();
        println!("RLIMIT_AS = size + {extra_mb} MiB:\n{}", lines.join("\n"));
        assert!(out.status.success() && lines.contains(&"SOAK-CHILD ok"), "child failed ({:?}):\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    }
}
