//! Slice geometry (validate, clip, plan) and the strided copy engine (safe Rust).
