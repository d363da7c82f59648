//! `vh5_read_many_slices` from HDF5 datasets created once per process (fuzz/src/
//! slices_fixture.rs: contiguous, chunked with edge chunks, gzip+shuffle, unallocated chunks
//! read as the fill value, 0-d and 0-size datasets, 1-D..4-D, big-endian on disk, complex).
//! The input picks the dataset, the planner mode (auto / chunks / rows, overridden for this
//! thread only) and 1..3 threads, the destination (dtype incl. libhdf5 conversions with and
//! without VH5_SLICES_CONVERT, layout with negative / wild strides, offset, exact-length
//! allocation under AddressSanitizer) and a slice table. Oracle: fuzz/src/slices.rs against
//! the whole datasets read once with plain H5Dread.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "../src/slices_fixture.rs"]
mod slices_fixture;
#[path = "../src/slices.rs"]
mod slices_oracle;

struct U<'a, 'b>(&'b mut Unstructured<'a>);
impl slices_oracle::Pick for U<'_, '_> {
    fn raw(&mut self) -> u8 {
        self.0.arbitrary::<u8>().unwrap_or(0)
    }
}

fuzz_target!(|data: &[u8]| {
    let fx = slices_fixture::fixture();
    let mut u = Unstructured::new(data);
    let case = slices_oracle::gen_read(&mut U(&mut u), fx);
    slices_oracle::run_read(fx, &case, 0);
});
