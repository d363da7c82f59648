//! Many-slice transfers: slice-table geometry ([`geometry`]: validation, clipping, array
//! layouts), the strided copy engine ([`copy`]) and the orchestration of a read from HDF5
//! into a caller's array ([`read`]), of a write from a caller's array into HDF5 ([`write`])
//! and of copies between two arrays in memory ([`memcopy`]).

pub mod alloc;
pub mod chunked;
pub mod chunks;
pub mod copy;
pub mod encode;
pub mod filters;
pub mod geometry;
pub mod memcopy;
pub mod options;
pub mod plan;
pub mod rawwrite;
pub mod read;
pub mod scatter;
pub(crate) mod transfer;
pub mod write;

pub use geometry::{ArrayLayout, Row, SliceTable};
pub use read::{read_many_slices, DstArray, ReadStats, SLICES_CLIP, SLICES_CONVERT};
pub use memcopy::{copy_many_slices, copy_many_slices_within, CopyStats};
pub use write::{write_many_slices, SrcArray, WriteStats};
