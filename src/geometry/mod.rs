//! Slice-table geometry (pure, safe Rust, no libhdf5): validation and clipping of the rows of
//! a many-slice transfer ([`table`]) and the caller's strided array layouts.

pub mod table;

pub use table::{axis_step, axis_stride, c_contiguous_block, check_rows, row, row_counts, row_named, row_steps, validated_row_counts, ArrayLayout, Row, SliceTable, MAX_RANK};
