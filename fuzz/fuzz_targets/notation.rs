//! cargo-fuzz target: see harness/notation.rs for what it checks.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::notation::run(data));
