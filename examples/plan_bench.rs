//! Planning benchmark: the planner's work for a read of N rows of 2 elements per axis, one row
//! inside every chunk, in random order (what `transfer::chunked::plan_rows` does: validate,
//! destination boxes, `Plan::add`, overlap check, `Plan::finish`, recycle), for 1-D (chunks of
//! 16) and 2-D (chunks of 4x4) grids of 1k, 16k and 256k chunks. Prints per phase the best
//! time per row over the calls and the minor page faults per call (Linux).
//!
//! `cargo run --release --example plan_bench [CALLS]` (default 10); env `ONLY=2-262144`
//! runs one case (rank-chunks).

use std::time::Instant;
use vh5::geometry::{row_counts, row_steps, SliceTable, MAX_RANK};
use vh5::plan::{overlapping_rows, push_dst_box, ChunkGrid, Plan};

/// Minor page faults of this process so far (0 where /proc is missing).
fn faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis: state is field 3, minflt field 10.
    stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(7)?.parse().ok()).unwrap_or(0)
}

/// Dataset shape, chunk, src starts, dst starts, counts.
type Tables = (Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>, Vec<u64>);

/// One-chunk rows in random order.
fn tables(nd: usize, nch: u64, rnd: &mut impl FnMut() -> u64) -> Tables {
    let (shape, chunk) = match nd {
        1 => (vec![16 * nch], vec![16]),
        _ => {
            let side = (nch as f64).sqrt().round() as u64;
            (vec![4 * side, 4 * (nch / side)], vec![4, 4])
        }
    };
    let per: Vec<u64> = shape.iter().zip(&chunk).map(|(s, c)| s / c).collect();
    let m = nch as usize;
    let mut order: Vec<u64> = (0..nch).collect();
    for i in (1..m).rev() {
        order.swap(i, (rnd() % (i as u64 + 1)) as usize);
    }
    let (mut src, mut dst) = (vec![0u64; m * nd], vec![0u64; m * nd]);
    for (i, &c) in order.iter().enumerate() {
        let mut lin = c;
        for j in (0..nd).rev() {
            src[i * nd + j] = (lin % per[j]) * chunk[j] + rnd() % (chunk[j] - 1);
            lin /= per[j];
        }
        dst[i * nd] = i as u64 * 2;
    }
    (shape, chunk, src, dst, vec![2u64; m * nd])
}

/// One call's planning; returns the seconds of (validate + boxes + add, overlap, finish).
fn plan_call(t: &SliceTable, grid: &ChunkGrid, shape: &[u64], dshape: &[u64]) -> [f64; 3] {
    let (n, m) = (t.ndim, t.nslices);
    let t0 = Instant::now();
    let mut plan = Plan::recycled(n, m * 2);
    let mut boxes = plan.take_scratch();
    boxes.reserve(m * 2 * n);
    let mut valid = plan.take_rows();
    valid.reserve(m);
    let (mut cnt, mut ss, mut ds) = ([0u64; MAX_RANK], [1u64; MAX_RANK], [1u64; MAX_RANK]);
    for i in 0..m {
        if !row_counts(t, i, shape, dshape, false, ["dataset", "destination"], &mut cnt[..n]).expect("valid row") {
            continue;
        }
        let (s0, d0) = (&t.src_start[i * n..i * n + n], &t.dst_start[i * n..i * n + n]);
        row_steps(t, i, &cnt[..n], &mut ss[..n], &mut ds[..n]);
        push_dst_box(d0, &cnt[..n], &ds[..n], &mut boxes);
        valid.push(i);
        plan.add(grid, i, &cnt[..n], (s0, &ss[..n]), (d0, &ds[..n]));
    }
    let t1 = Instant::now();
    assert!(!overlapping_rows(&boxes, dshape).contains(&true));
    plan.keep_scratch(boxes);
    let t2 = Instant::now();
    plan.finish();
    let t3 = Instant::now();
    assert_eq!(plan.groups.len(), m);
    plan.keep_rows(valid);
    plan.recycle();
    [(t1 - t0).as_secs_f64(), (t2 - t1).as_secs_f64(), (t3 - t2).as_secs_f64()]
}

fn main() {
    let calls: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(10);
    let mut seed = 12345u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for nd in [1usize, 2] {
        for nch in [1024u64, 16384, 262144] {
            if std::env::var("ONLY").is_ok_and(|v| v != format!("{nd}-{nch}")) {
                continue;
            }
            let (shape, chunk, src, dst, count) = tables(nd, nch, &mut rnd);
            let m = nch as usize;
            let mut dshape = vec![2u64; nd];
            dshape[0] = nch * 2;
            let t = SliceTable::new(nd, m, &src, &dst, &count, None, None).expect("tables");
            let grid = ChunkGrid::new(&shape, &chunk).expect("grid");
            let (mut best, f0) = ([f64::MAX; 4], faults());
            for _ in 0..calls {
                let s = plan_call(&t, &grid, &shape, &dshape);
                for k in 0..3 {
                    best[k] = best[k].min(s[k]);
                }
                best[3] = best[3].min(s.iter().sum());
            }
            let fl = (faults() - f0) / calls as u64;
            let ns = |x: f64| x * 1e9 / m as f64;
            println!(
                "{nd}-D {:>4}k rows: add {:5.1}  overlap {:4.1}  finish {:5.1}  total {:5.1} ns/row; {fl} page faults/call",
                nch / 1024,
                ns(best[0]),
                ns(best[1]),
                ns(best[2]),
                ns(best[3])
            );
        }
    }
}
