//! `vh5_write_many_slices` into the fixture datasets of fuzz/src/slices_fixture.rs (a second
//! file opened read-write: contiguous, chunked with edge chunks, gzip+shuffle, unallocated
//! chunks, 0-d, 0-size, big-endian, complex). The input picks the dataset, 1..3 threads, the
//! source array (dtype incl. conversions with and without VH5_SLICES_CONVERT, layouts with
//! negative / zero / wild strides, offset, exact-length allocation under AddressSanitizer)
//! and a slice table. Oracle (fuzz/src/slices.rs): the dataset read back with plain H5Dread
//! equals its previous contents with the rows applied; a failure changes nothing; the
//! source is never modified.
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
    let fx = slices_fixture::write_fixture();
    let mut u = Unstructured::new(data);
    let case = slices_oracle::gen_write(&mut U(&mut u), fx);
    slices_oracle::run_write(fx, &case, 0, &slices_fixture::H5Hooks);
});
