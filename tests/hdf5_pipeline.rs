//! The planner's fetch/decode pipeline (src/transfer/chunked.rs): with many compressed chunks
//! the calling thread fills the worker queue faster than the workers decode, so it decodes
//! chunks itself (queue full) and helps drain the queue at the end; chunk buffers are
//! recycled between chunks of different stored sizes. Every thread count and mode must give
//! the reference result, including an unallocated chunk (fill value) and overlapping rows.

mod common;
use common::*;
use vh5::dtype::Dtype;
use vh5::ffi::vh5_status::*;
use vh5::transfer::options::{with_overrides, PlannerMode};

#[test]
fn pipeline_matches_reference_for_every_thread_count() {
    let tmp = TempDir::new("pipeline");
    let p = tmp.path("pipe.h5");
    // 240 x 180 float64, chunks 12 x 9 -> 400 chunks, gzip + shuffle; random-ish data so
    // stored chunk sizes differ (buffers of different capacities get recycled).
    let data = data_for(Dtype::Float64, 240 * 180, 7);
    let mut s = DsSpec::new("x", &[240, 180], Dtype::Float64, Some(&data));
    s.chunk = Some(vec![12, 9]);
    s.gzip = Some(1);
    s.shuffle = true;
    // int32 with a fill value, one chunk never written.
    let fill = (-5i32).to_ne_bytes();
    let mut u = DsSpec::new("u", &[40, 40], Dtype::Int32, None);
    u.chunk = Some(vec![10, 10]);
    u.gzip = Some(4);
    u.fill = Some(&fill);
    create_file(&p, &[s, u]);
    let block: Vec<u8> = (0..30 * 40i32).flat_map(|i| i.to_ne_bytes()).collect();
    write_block(&p, "u", Dtype::Int32, &[10, 0], &[30, 40], &block); // rows 0..10 stay unwritten

    for (name, dtype, size, shape) in [("x", Dtype::Float64, 8usize, [240u64, 180]), ("u", Dtype::Int32, 4, [40, 40])] {
        let mem = h5type(dtype, false, true);
        let (_, whole) = read_whole(&p, name, mem, size);
        let mut rows: Vec<TRow> = (0..1500u64)
            .map(|i| {
                let a = (i * 97) % (shape[0] - 5);
                let b = (i * 61) % (shape[1] - 4);
                TRow { s: vec![a, b], d: vec![5 * i, 0], c: vec![5, 4], ss: vec![1, 1], ds: vec![1, 1] }
            })
            .collect();
        // Two rows writing the same destination block: run last, in row order.
        rows.push(TRow { s: vec![1, 1], d: vec![0, 0], c: vec![2, 2], ss: vec![1, 1], ds: vec![1, 1] });
        rows.push(TRow { s: vec![3, 2], d: vec![1, 1], c: vec![2, 2], ss: vec![1, 1], ds: vec![1, 1] });
        let dst_shape = [1500 * 5, 4];
        let mut want = vec![0u8; 1500 * 5 * 4 * size];
        reference(&whole, &shape, &mut want, &dst_shape, &[4 * size as i64, size as i64], 0, size, &rows, false).unwrap();
        let (f, d) = ffi_open(&p, name);
        for mode in [None, Some(PlannerMode::Chunks)] {
            for threads in [1usize, 2, 3, 8] {
                for _ in 0..2 {
                    let mut got = vec![0xAAu8; want.len()];
                    let (st, m) = with_overrides(mode, Some(threads), || ffi_read(d, &mut got, 0, dtype, size, &dst_shape, None, &rows, 0, false));
                    assert_eq!(st, VH5_OK, "{name} mode {mode:?} threads {threads}: {m}");
                    assert!(got == want, "{name} mode {mode:?} threads {threads}: result differs from the reference");
                }
            }
        }
        ffi_close(&[d, f]);
    }
}
