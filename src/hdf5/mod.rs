//! libhdf5 access: the process-wide lock ([`lock`]), error-stack capture and silenced error
//! printing ([`error`]), RAII handles ([`handle`]), datatype mapping ([`types`]) and
//! files/datasets/hyperslab reads ([`dataset`]).
//!
//! Every libhdf5 call vh5 makes happens while holding the lock of an [`error::H5Session`].

pub mod chunk;
pub mod chunk_cache;
pub mod dataset;
pub mod error;
pub mod external;
pub mod handle;
pub mod meta;
pub mod lock;
pub mod types;
pub mod write;

pub use dataset::{close, dataset_info, list_datasets, open_dataset, open_file, DatasetInfo, HyperslabReader, Layout, FILE_READ_WRITE, MAX_RANK};
pub use error::{session, H5Session};
pub use handle::Handle;
pub use types::TypeInfo;
pub use write::{file_is_writable, HyperslabWriter};
