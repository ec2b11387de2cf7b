//! The fuzz corpus, replayed (issue 45): every input cargo-fuzz kept under
//! `fuzz/corpus/<target>/` (seeds, what coverage found, and each crash once fixed) goes through
//! its target in `rlock::fuzz` here, on the stable toolchain, in every `cargo test`. The targets
//! of `rlock::fuzz::TARGETS` and the files of `fuzz/fuzz_targets` are one list (but the
//! command's `cli_*`, replayed by `cli/tests/fuzz_corpus.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// The names in `dir` ending in `suffix`, without it; not the command's `cli_*` targets
/// (rlock_cli::fuzz, replayed by `cli/tests/fuzz_corpus.rs`).
fn names_in(dir: &Path, suffix: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(suffix).map(str::to_owned))
        .filter(|n| !n.starts_with("cli_"))
        .collect()
}

#[test]
fn every_target_has_a_fuzz_target_file_and_a_corpus() {
    let targets: BTreeSet<String> = rlock::fuzz::TARGETS.iter().map(|(n, _)| (*n).to_owned()).collect();
    assert_eq!(names_in(&fuzz_dir().join("fuzz_targets"), ".rs"), targets);
    assert_eq!(names_in(&fuzz_dir().join("corpus"), ""), targets);
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for t in &targets {
        assert!(manifest.contains(&format!("name = \"{t}\"")), "fuzz/Cargo.toml has no [[bin]] {t}");
    }
}

#[test]
fn every_kept_input_passes_its_target() {
    rlock::fuzz::replay(&fuzz_dir().join("corpus"), rlock::fuzz::TARGETS).unwrap();
}
