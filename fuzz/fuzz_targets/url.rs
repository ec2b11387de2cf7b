//! `rlock::fuzz::url`: its doc comment says what it reads and which rules it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rlock::fuzz::url(data));
