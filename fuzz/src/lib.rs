//! kiln's fuzz targets, as plain functions.
//!
//! The bodies live in [`targets`] so that `core/tests/fuzz_regressions.rs` can include the very
//! same file (`#[path]`) and replay crash inputs on stable Rust, without libFuzzer; each
//! `fuzz_targets/*.rs` only hands libFuzzer's bytes to one of these functions.

pub mod targets;
