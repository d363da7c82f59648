//! vh5: fast, safe many-hyperslab HDF5 transfers and zero-copy array payload views, with a
//! stable C ABI (`include/vh5.h`).
//!
//! Module map (data flows one way: ffi -> (payload | slices -> hdf5) -> dtype):
//! - [`ffi`]: the only module with `extern "C"`: argument checks, panic guard, status codes,
//!   thread-local last-error message.
//! - [`payload`]: safe Rust decoding of Reductionist CBOR / RFC 8746 / msgpack-numpy payloads
//!   into views borrowing the caller's buffer.
//! - [`slices`]: slice-table geometry (validation, clipping, planning) and the strided copy engine.
//! - [`hdf5`]: libhdf5 access behind one process-wide lock, error-stack capture, RAII handles.
//! - [`dtype`]: element types shared by both halves.
//! - [`error`]: the crate's error type.
//!
//! Every `unsafe` operation sits in an `unsafe` block (also inside `unsafe fn`s) with a
//! `// SAFETY:` comment saying why it holds; clippy enforces the comment.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

#[macro_use]
pub mod error;
pub mod dtype;
pub mod payload;
pub mod slices;
pub mod hdf5;
pub mod ffi;
