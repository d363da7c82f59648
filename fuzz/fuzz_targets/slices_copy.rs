//! `vh5_copy_many_slices` (memory -> memory) through the C ABI with raw pointers. The input
//! drives a structure-aware builder (`arbitrary::Unstructured` -> `vh5_fuzz`'s slices oracle,
//! fuzz/src/slices.rs): random rank, shapes (0-size and huge axes), dtypes / item sizes,
//! source and destination layouts (proper, NULL, wild and negative byte strides, offsets,
//! buffer lengths around the exact minimum), one shared buffer or two, slice tables with
//! huge / zero values and NULL tables, flags with unknown bits and CLIP. Every buffer is
//! allocated at EXACTLY its declared length, so AddressSanitizer reports any byte vh5 touches
//! outside it. The oracle's expected status, message and bytes must match.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

#[path = "../src/slices.rs"]
mod slices_oracle;

struct U<'a, 'b>(&'b mut Unstructured<'a>);
impl slices_oracle::Pick for U<'_, '_> {
    fn raw(&mut self) -> u8 {
        self.0.arbitrary::<u8>().unwrap_or(0)
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let case = slices_oracle::gen_copy(&mut U(&mut u));
    slices_oracle::run_copy(&case, 0);
});
