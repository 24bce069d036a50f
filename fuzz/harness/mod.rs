//! The fuzz harness: one `run(&[u8])` per target, shared by the cargo-fuzz targets
//! (`fuzz/fuzz_targets/*.rs`, nightly) and the corpus replay test (`tests/fuzz_corpus.rs`,
//! stable, part of `cargo test --workspace --release`).
//!
//! Every `run` must return normally for every input: a panic (a failed invariant included) is
//! a finding. Each checks more than "no panic" where that is cheap: round trips, agreement
//! between parsers, agreement with an independent computation.

#![allow(dead_code)]

pub mod fen;
pub mod fixtures;
pub mod notation;
pub mod probe;
pub mod shard_import;
pub mod shard_input;
pub mod signature;
pub mod upload;

/// The input as text; invalid UTF-8 is replaced, so every input reaches the parser.
pub fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// Start-up of the fuzz targets that use the solved fixtures: cache them next to the binary
/// and solve (or read) them before the first input, which libFuzzer would otherwise time.
pub fn init() {
    fixtures::cache_next_to_binary();
    fixtures::fixtures();
}
