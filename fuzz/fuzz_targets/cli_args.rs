//! `rlock_cli::fuzz::args`: its doc comment says what it reads and which rules it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rlock_cli::fuzz::args(data));
