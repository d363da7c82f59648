//! Many-slice transfers: slice-table geometry ([`geometry`]: validation, clipping, array
//! layouts), the strided copy engine ([`copy`]) and the orchestration of a read from HDF5
//! into a caller's array ([`read`]).

pub mod chunked;
pub mod chunks;
pub mod copy;
pub mod filters;
pub mod geometry;
pub mod options;
pub mod plan;
pub mod read;
pub mod scatter;

pub use geometry::{ArrayLayout, Row, SliceTable};
pub use read::{read_many_slices, DstArray, ReadStats, SLICES_CLIP, SLICES_CONVERT};
