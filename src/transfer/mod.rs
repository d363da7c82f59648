//! Many-slice transfers (orchestration): a read from HDF5 into a caller's array ([`read`],
//! chunked datasets through [`chunked`]), a write from a caller's array into HDF5 ([`mod@write`],
//! chunked datasets through `write_chunked`, filtered chunks vh5 encodes through
//! [`rawwrite`]), copies between two arrays in memory
//! ([`memcopy`]), the checks they share (`checks`) and the process settings ([`options`]).

pub(crate) mod broken_conversions;
pub(crate) mod cached_gather;
pub(crate) mod checks;
pub(crate) mod chunk_job;
pub(crate) mod chunk_span;
pub mod chunked;
pub(crate) mod masked;
pub mod memcopy;
pub(crate) mod merge;
pub mod options;
pub(crate) mod pipeline;
pub mod rawwrite;
pub mod read;
pub(crate) mod read_pipeline;
pub(crate) mod rows;
pub(crate) mod stale_mask;
pub mod stats;
pub mod write;
pub(crate) mod write_chunked;
pub(crate) mod write_stamps;

pub use crate::geometry::{ArrayLayout, Row, SliceTable};
pub use checks::{SLICES_CLIP, SLICES_CONVERT, SLICES_SWAPPED};
pub use memcopy::{copy_many_slices, copy_many_slices_within};
pub use read::{read_many_slices, DstArray};
pub use stats::{CopyStats, ReadStats, WriteStats};
pub use write::{write_many_slices, SrcArray};
