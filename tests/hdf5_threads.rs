//! Concurrency: 8 threads reading different slices of the same and of different files at once
//! get exactly the single-threaded results.

mod common;
use common::*;
use vh5::dtype::Dtype;
use vh5::ffi::vh5_status::*;

#[test]
fn eight_threads_match_single_threaded_results() {
    let tmp = TempDir::new("threads");
    let mut paths = Vec::new();
    for k in 0..3u64 {
        let p = tmp.path(&format!("t{k}.h5"));
        let data = data_for(Dtype::Float64, 200 * 150, 100 + k);
        let mut s = DsSpec::new("x", &[200, 150], Dtype::Float64, Some(&data));
        s.chunk = Some(vec![20, 30]);
        s.gzip = Some(3);
        s.shuffle = k % 2 == 0;
        create_file(&p, &[s]);
        paths.push(p);
    }
    let job = |t: usize, shared_dset: Option<i64>| -> Vec<u8> {
        let p = &paths[t % 3];
        let own = if shared_dset.is_none() { Some(ffi_open(p, "x")) } else { None };
        let d = shared_dset.unwrap_or_else(|| own.unwrap().1);
        let rows: Vec<TRow> = (0..300)
            .map(|i| {
                let a = ((i * 37 + t * 11) % 190) as u64;
                let b = ((i * 53 + t * 7) % 140) as u64;
                TRow { s: vec![a, b], d: vec![(i % 30) as u64 * 2, (t % 3) as u64], c: vec![2, 10], ss: vec![1 + (t % 2) as u64, 1], ds: vec![1, 1] }
            })
            .collect();
        let mut buf = vec![0u8; 60 * 13 * 8];
        let (st, m) = ffi_read(d, &mut buf, 0, Dtype::Float64, 8, &[60, 13], None, &rows, 0, true);
        assert_eq!(st, VH5_OK, "{m}");
        if let Some((f, d)) = own {
            ffi_close(&[d, f]);
        }
        buf
    };
    let serial: Vec<Vec<u8>> = (0..8).map(|t| job(t, None)).collect();
    // Different files, own handles.
    for _ in 0..3 {
        let par: Vec<Vec<u8>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8).map(|t| s.spawn(move || job(t, None))).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(par == serial);
    }
    // The same dataset handle shared by all threads (threads 0, 3, 6 read file 0).
    let (f, d) = ffi_open(&paths[0], "x");
    let par: Vec<(usize, Vec<u8>)> = std::thread::scope(|s| {
        let hs: Vec<_> = [0usize, 3, 6, 0, 3, 6, 0, 3].into_iter().map(|t| s.spawn(move || (t, job(t, Some(d))))).collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (t, got) in par {
        assert!(got == serial[t], "thread job {t}");
    }
    ffi_close(&[d, f]);
}
