//! libhdf5 access: the process-wide lock ([`lock`]), error-stack capture and silenced error
//! printing ([`error`]), RAII handles and names of ids ([`handle`]), datatype mapping
//! ([`types`]), files and datasets ([`dataset`]), hyperslab reads ([`hyperslab`]) and
//! writes ([`mod@write`]), per-dataset cached facts ([`meta`]), raw chunk access ([`chunk`]) and
//! the refusal of storage in other files ([`external`]), of filter pipelines libhdf5 cannot
//! decode reliably ([`filter_support`]), of scaleoffset chunks it stores undecodable
//! ([`scaleoffset`]) and of stored chunks whose headers libhdf5 would trust
//! ([`chunk_guard`]: szip's claimed size, scaleoffset's bits per value, unfiltered chunks'
//! stored sizes from [`stored_sizes`]). Differences between libhdf5 versions (1.10 .. 2.x)
//! live in [`compat`] only.
//!
//! Every libhdf5 call vh5 makes happens while holding the lock of an [`error::H5Session`].
//!
//! Imports run one way, from the top of this list down; no module imports one above it:
//! `dataset` -> `meta` -> `chunk_guard` -> `stored_sizes` -> `chunk_index`, `filter_support` -> `scaleoffset` -> `chunk`, `external` -> `hyperslab`, `write`, `types` -> `handle` ->
//! `error` -> `lock`; any of them may import `compat`, which imports none.

pub mod chunk;
pub mod chunk_btree;
pub mod chunk_cache;
pub mod chunk_guard;
pub mod chunk_index;
pub mod chunk_tree;
#[cfg(not(hdf5_1_14))]
pub mod chunk_v4;
pub mod compat;
pub mod dataset;
pub mod dtype_peek;
pub mod error;
pub mod external;
pub mod filter_ids;
pub mod filter_support;
pub mod handle;
pub mod hyperslab;
pub mod layout_peek;
pub mod links;
pub mod lock;
pub mod mem_layout;
pub mod meta;
pub mod scaleoffset;
pub mod stored_sizes;
pub mod types;
pub mod version;
pub mod write;

pub use crate::dtype::MAX_RANK;
pub use dataset::{close, dataset_info, dataset_shape, list_datasets, open_dataset, open_file, DatasetInfo, Layout, Listed, FILE_READ_WRITE};
pub use error::{session, H5Session};
pub use handle::Handle;
pub use hyperslab::HyperslabReader;
pub use types::TypeInfo;
pub use write::{file_is_writable, HyperslabWriter};
