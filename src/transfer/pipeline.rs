//! What the two chunk pipelines share (chunked reads in [`super::chunked`], raw writes in
//! [`super::rawwrite`]): both fetch chunks on the calling thread under the libhdf5 lock, run
//! the CPU work (decode / merge / encode / scatter) on worker threads outside it, and end
//! every chunk with a [`ChunkOutcome`]. The workers are started by [`spawn_workers`]: a thread
//! the system refuses is not an error, the calling thread does the work of the missing ones.

use std::thread::{Builder, Scope};

use crate::error::Error;

/// How the CPU work on one chunk ended.
#[derive(Debug)]
pub(crate) enum ChunkOutcome<T> {
    /// Done: for a write, the bytes to store; for a read, the pieces are scattered.
    Done(T),
    /// vh5 could not decode the stored bytes (not a corrupt-for-certain case): the calling
    /// thread reads the chunk again through libhdf5 (which decodes it or fails with its own
    /// error stack) and redoes the work. The reason is kept for the error message.
    RetryThroughLibhdf5(String),
    /// The chunk failed (corrupt for certain, memory refused, ...): the call fails with this.
    Fail(Error),
}

impl<T> From<crate::error::Result<T>> for ChunkOutcome<T> {
    fn from(r: crate::error::Result<T>) -> Self {
        match r {
            Ok(v) => ChunkOutcome::Done(v),
            Err(e) => ChunkOutcome::Fail(e),
        }
    }
}

/// Start up to `n` scoped worker threads named `name`, each running `body` until it returns;
/// stops at the first thread the system refuses. Returns how many started (maybe 0: then the
/// caller does all the work itself).
pub(crate) fn spawn_workers<'scope, 'env, F>(sc: &'scope Scope<'scope, 'env>, n: usize, name: &str, body: F) -> usize
where
    F: Fn() + Send + Sync + Clone + 'scope,
{
    let mut live = 0;
    for _ in 0..n {
        let body = body.clone();
        if Builder::new().name(name.into()).spawn_scoped(sc, body).is_err() {
            break;
        }
        live += 1;
    }
    live
}
