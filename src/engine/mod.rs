//! The strided copy engine (pure, no libhdf5): copies a block of elements between two byte
//! buffers addressed by byte offsets and per-axis byte strides ([`copy`]), and the same over a
//! destination shared by threads writing disjoint elements ([`scatter`]).

pub mod copy;
pub mod scatter;

pub use copy::{copy_runs_unchecked, copy_strided, copy_strided_runs, dense_strides, runs_apply};
pub use scatter::DstPtr;
