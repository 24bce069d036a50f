//! cargo-fuzz target: see harness/signature.rs for what it checks.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| harness::signature::run(data));
