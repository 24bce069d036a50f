//! cargo-fuzz target: see harness/shard_import.rs for what it checks.
#![no_main]

#[path = "../harness/mod.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(init: harness::init(), |data: &[u8]| harness::shard_import::run(data));
