//! vh5: fast, safe many-hyperslab HDF5 transfers and zero-copy array payload views, with a
//! stable C ABI (`include/vh5.h`).
//!
//! Module map (imports run one way: ffi -> (payload | transfer) -> (plan, engine, codec,
//! geometry, hdf5) -> (mem, names) -> dtype/error; docs/ARCHITECTURE.md draws it):
//! - [`ffi`]: the only module with `extern "C"`: argument checks, panic guard, status codes,
//!   thread-local last-error message.
//! - [`payload`]: safe Rust decoding of Reductionist CBOR / RFC 8746 / msgpack-numpy payloads
//!   into views borrowing the caller's buffer.
//! - [`transfer`]: orchestration of many-slice reads, writes and memory copies, and the
//!   process settings (threads, planner mode, chunk memory limit).
//! - [`geometry`] (pure): slice-table validation and clipping, caller array layouts.
//! - [`plan`] (pure): chunk-grid planning (the pieces of rows inside chunks).
//! - [`engine`] (pure): the strided copy engine.
//! - [`codec`] (pure): the HDF5 filters vh5 decodes and encodes itself.
//! - [`hdf5`]: libhdf5 access behind one process-wide lock, error-stack capture, RAII handles.
//! - [`mem`]: fallible buffer growth (`NoMemory` instead of an abort).
//! - [`names`]: HDF5 names as bytes: their escaped printable form and name order.
//! - [`dtype`]: element types shared by every layer.
//! - [`error`]: the crate's error type.
//!
//! Every `unsafe` operation sits in an `unsafe` block (also inside `unsafe fn`s) with a
//! `// SAFETY:` comment saying why it holds; clippy enforces the comment.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

#[macro_use]
pub mod error;
pub mod codec;
pub mod dtype;
pub mod engine;
pub mod ffi;
pub mod geometry;
pub mod hdf5;
pub mod mem;
pub mod names;
pub mod payload;
pub mod plan;
pub mod transfer;
