//! cargo-fuzz target: see harness/upload.rs for what it checks.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(init: harness::init(), |data: &[u8]| harness::upload::run(data));
