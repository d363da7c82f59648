//! Chunk-grid planning (pure, safe Rust, no libhdf5): the pieces of a row inside each chunk
//! ([`grid`]) and the pieces of a call grouped by chunk, plus the rows whose destinations
//! overlap ([`pieces`]), and the read cost model ([`mod@decide`]).

pub mod decide;
pub mod grid;
pub mod pieces;

pub use decide::{decide, PlannerMode};
pub use grid::ChunkGrid;
pub use pieces::{overlapping_rows, push_dst_box, PieceBlock, PieceKey, Plan};
