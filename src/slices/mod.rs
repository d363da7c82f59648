//! Many-slice transfers: slice-table geometry ([`geometry`]: validation, clipping, array
//! layouts), the strided copy engine ([`copy`]) and the orchestration of a read from HDF5
//! into a caller's array ([`read`]).

pub mod chunks;
pub mod copy;
pub mod geometry;
pub mod memcopy;
pub mod read;

pub use geometry::{ArrayLayout, Row, SliceTable};
pub use read::{read_many_slices, DstArray, ReadStats, SLICES_CLIP, SLICES_CONVERT};
pub use memcopy::{copy_many_slices, copy_many_slices_within, CopyStats};
