//! Plan buffers kept between calls: one pool for the whole process, bounded in bytes
//! ([`RECYCLE_BUDGET_BYTES`]) and in plans ([`POOL_PLANS`]).
//!
//! Why: a plan's buffers are written once per call; fresh ones are fresh pages. A read of
//! 262,144 one-chunk rows plans into ~40 MB of buffers: allocated and freed every call they
//! cost 4,600-8,000 page faults, half of the planning (docs/BENCHMARKS.md, session 17).
//! Kept in a pool they are memory already touched. The pool is process-wide (not per thread)
//! so that its memory is bounded whatever the number of calling threads.

use std::sync::{Mutex, MutexGuard};

use super::Plan;

/// Plan buffers the pool keeps between calls, all threads together, at most this many bytes
/// (64 MiB: the plans of about two concurrent 262,144-row calls). A plan larger than this
/// is freed when its call ends.
pub const RECYCLE_BUDGET_BYTES: usize = 64 << 20;

/// The pool keeps at most this many plans (one per call in flight is enough).
pub const POOL_PLANS: usize = 8;

/// Kept plans, oldest first, and their bytes.
#[derive(Debug, Default)]
pub(super) struct Pool {
    plans: Vec<Plan>,
    bytes: usize,
}

static POOL: Mutex<Pool> = Mutex::new(Pool { plans: Vec::new(), bytes: 0 });

fn pool() -> MutexGuard<'static, Pool> {
    // (Nothing in the pool's critical sections leaves it inconsistent on a panic.)
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pool {
    /// Take the smallest plan with room for `pieces` pieces, else the largest (`None`: empty).
    pub(super) fn take(&mut self, pieces: usize) -> Option<Plan> {
        let room = |p: &Plan| p.pieces.capacity();
        let fit = (0..self.plans.len()).filter(|&k| room(&self.plans[k]) >= pieces).min_by_key(|&k| room(&self.plans[k]));
        let k = fit.or_else(|| (0..self.plans.len()).max_by_key(|&k| room(&self.plans[k])))?;
        let p = self.plans.remove(k);
        self.bytes -= p.bytes();
        Some(p)
    }

    /// Keep `plan` when it holds at most `budget` bytes, dropping the oldest plans until the
    /// pool holds at most `budget` bytes and [`POOL_PLANS`] plans. Returns what is not kept
    /// (to be freed by the caller, outside the pool's lock).
    pub(super) fn put(&mut self, mut plan: Plan, budget: usize) -> Vec<Plan> {
        let bytes = plan.bytes();
        plan.written = bytes;
        if bytes > budget {
            return vec![plan];
        }
        self.plans.push(plan);
        self.bytes += bytes;
        let mut out = vec![];
        while self.bytes > budget || self.plans.len() > POOL_PLANS {
            let p = self.plans.remove(0);
            self.bytes -= p.bytes();
            out.push(p);
        }
        out
    }
}

impl Plan {
    /// Bytes of this plan's buffers that were ever written: the most their lengths held
    /// (what a kept plan holds in memory; capacity reserved and never written costs no page).
    pub(super) fn bytes(&self) -> usize {
        let used = (self.pieces.len() + self.spare.0.len()) * std::mem::size_of::<super::PieceKey>()
            + (self.coords.len() + self.spare.1.len() + self.scratch.len()) * 8
            + (self.rows.len() + self.counts.len()) * std::mem::size_of::<usize>()
            + self.groups.len() * std::mem::size_of::<(u64, std::ops::Range<usize>)>();
        used.max(self.written)
    }

    /// As [`Plan::with_capacity`], reusing the buffers of a plan [`Plan::recycle`]d earlier
    /// (by any thread; the smallest kept with room for `pieces`, else the largest): memory
    /// already touched, so planning a call costs no page faults (fresh buffers of a plan of
    /// 10,000 rows were ~1,000 page faults, ~15% of the call).
    pub fn recycled(ndim: usize, pieces: usize) -> Plan {
        let taken = pool().take(pieces);
        let Some(mut p) = taken else {
            return Plan::with_capacity(ndim, pieces);
        };
        p.ndim = ndim;
        p.pieces.clear();
        p.coords.clear();
        p.groups.clear();
        p.scratch.clear();
        p.rows.clear();
        p.pieces.reserve(pieces);
        p.coords.reserve(pieces.saturating_mul(3 * ndim));
        p
    }

    /// Keep this plan's buffers for a later [`Plan::recycled`] within the process-wide
    /// [`RECYCLE_BUDGET_BYTES`] (else they are freed; so are the oldest kept plans when the
    /// pool exceeds its bounds).
    pub fn recycle(self) {
        let freed = pool().put(self, RECYCLE_BUDGET_BYTES);
        drop(freed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan that wrote `pieces` pieces (capacity alone does not count).
    fn plan(pieces: usize) -> Plan {
        let mut p = Plan::with_capacity(1, pieces);
        p.pieces.resize(pieces, crate::plan::PieceKey { chunk: 0, row: 0, at: 0 });
        p
    }

    #[test]
    fn pool_takes_the_smallest_that_fits_else_the_largest() {
        let mut pool = Pool::default();
        for n in [100, 10, 1000] {
            assert!(pool.put(plan(n), usize::MAX).is_empty());
        }
        let total: usize = pool.plans.iter().map(Plan::bytes).sum();
        assert_eq!(pool.bytes, total);
        assert_eq!(pool.take(50).map(|p| p.pieces.capacity()), Some(100));
        assert_eq!(pool.take(5000).map(|p| p.pieces.capacity()), Some(1000));
        assert_eq!(pool.take(0).map(|p| p.pieces.capacity()), Some(10));
        assert!(pool.take(0).is_none());
        assert_eq!(pool.bytes, 0);
    }

    #[test]
    fn pool_stays_within_its_budget_and_plan_count() {
        let mut pool = Pool::default();
        let one = plan(1000).bytes();
        // A plan over the budget is not kept.
        assert_eq!(pool.put(plan(1000), one - 1).len(), 1);
        assert!(pool.plans.is_empty() && pool.bytes == 0);
        // The oldest go first when the budget is exceeded.
        for n in [1000, 1001, 1002] {
            pool.put(plan(n), 2 * one + 100);
        }
        assert_eq!(pool.plans.iter().map(|p| p.pieces.capacity()).collect::<Vec<_>>(), vec![1001, 1002]);
        assert!(pool.bytes <= 2 * one + 100);
        // At most POOL_PLANS plans.
        let mut pool = Pool::default();
        let freed: usize = (0..POOL_PLANS + 3).map(|_| pool.put(plan(1), usize::MAX).len()).sum();
        assert_eq!((pool.plans.len(), freed), (POOL_PLANS, 3));
    }

    #[test]
    fn recycled_plans_are_shared_between_threads() {
        // Another thread's recycled plan is taken (the global pool; other tests may take it
        // first, so only "no plan lost and none duplicated" is checked through the counts).
        let p = std::thread::spawn(|| {
            let mut p = Plan::recycled(2, 7);
            p.scratch.extend([1, 2, 3]);
            p.rows.extend([4, 5]);
            p.recycle();
        });
        p.join().unwrap();
        let q = Plan::recycled(3, 7);
        assert!(q.pieces.is_empty() && q.coords.is_empty() && q.groups.is_empty() && q.scratch.is_empty());
        let mut q = q;
        assert!(q.take_rows().is_empty() && q.take_scratch().is_empty());
        assert_eq!(q.ndim, 3);
        q.recycle();
        let g = pool();
        assert!(g.plans.len() <= POOL_PLANS && g.bytes <= RECYCLE_BUDGET_BYTES);
        assert_eq!(g.bytes, g.plans.iter().map(Plan::bytes).sum::<usize>());
    }
}
