//! (a) Arbitrary bytes into every safe payload entry point: decode_view (all flags),
//! decode_count (exact / one-short buffers), copy_data (exact / one-short buffers), with the
//! invariants of `vh5_fuzz::check_payload`. libFuzzer hands the input in a buffer of exactly
//! its length, so AddressSanitizer catches any read past it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    vh5_fuzz::check_payload(data);
});
