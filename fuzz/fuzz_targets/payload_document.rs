//! Whole documents: arbitrary bytes (byte 0 picks auto / CBOR / msgpack) into
//! `payload::decode_document` and the C ABI `payload_decode_document`, with the invariants of
//! fuzz/src/document_oracle.rs (tree consistency, offsets inside the input, views as
//! decode_view gives them, two-call pattern, nothing written past the capacities).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../src/document_oracle.rs"]
mod oracle;

fuzz_target!(|data: &[u8]| {
    oracle::check_document(data);
});
