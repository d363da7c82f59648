//! Zero-copy decoding of serialized array payloads (safe Rust, no C).
