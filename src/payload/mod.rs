//! Zero-copy decoding of serialized array payloads (safe Rust, no C).
//!
//! A payload is one message holding an n-dimensional array: a Reductionist CBOR response
//! (reductionist-rs 0.12 – 0.13.1), a bare RFC 8746 typed array (CBOR tags 64–87), an RFC 8746
//! multi-dimensional array (tags 40 / 1040), or a msgpack-numpy map. [`decode_view`] turns
//! it into a [`PayloadView`]: a slice *borrowing the caller's buffer* at the first data
//! byte, plus dtype, shape, byte order, alignment and how the per-element `count` is stored.
//! Nothing proportional to the data is allocated or copied. Companions:
//! [`decode_count`] decodes any count form into native `i64`, and [`copy_data`] copies the
//! data into a caller buffer in native byte order.
//!
//! Module map, top to bottom (imports run downwards only): [`document`] (whole documents),
//! [`copy`] (native-order copies of the data and the count), [`decode`] (format dispatch and
//! the view checks), [`cbor`] (Reductionist maps, typed arrays, multi-dimensional arrays, via
//! minicbor; count arrays), [`msgpack`] (msgpack-numpy maps, via rmp), [`detect`] (format
//! from the first byte, JSON error bodies), [`view`] (the result types and shared checks),
//! [`values`] (element access for tests and tools). All functions are pure and
//! thread-safe; they never read outside the input slice.

pub mod cbor;
pub mod copy;
pub mod decode;
pub mod detect;
pub mod document;
pub mod msgpack;
pub mod values;
pub mod view;

pub use copy::{copy_data, decode_count};
pub(crate) use decode::{count_len, data_len};
pub use decode::{decode_view, ALL_FLAGS, REQUIRE_ALIGNED, REQUIRE_NATIVE};
pub use document::{decode_document, DocFormat, Document, Item, ItemKind};
pub use values::Scalar;
pub use view::{CountForm, CountInfo, Format, Layout, PayloadView, Shape, MAX_COUNT_DEPTH, MAX_NDIM};
