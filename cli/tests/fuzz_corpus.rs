//! The command's fuzz corpus, replayed (issue 45): every input kept under
//! `fuzz/corpus/<target>/` for the `cli_*` targets goes through its target in `rlock_cli::fuzz`,
//! on the stable toolchain, in every `cargo test` (core's targets: `core/tests/fuzz_corpus.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

#[test]
fn every_target_has_a_fuzz_target_file_and_a_corpus() {
    let files: BTreeSet<String> = std::fs::read_dir(fuzz_dir().join("fuzz_targets"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(".rs").filter(|n| n.starts_with("cli_")).map(str::to_owned))
        .collect();
    let targets: BTreeSet<String> = rlock_cli::fuzz::TARGETS.iter().map(|(n, _)| (*n).to_owned()).collect();
    assert_eq!(files, targets, "fuzz/fuzz_targets/cli_*.rs and rlock_cli::fuzz::TARGETS differ");
    let manifest = std::fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for t in &targets {
        assert!(fuzz_dir().join("corpus").join(t).is_dir(), "no fuzz/corpus/{t}");
        assert!(manifest.contains(&format!("name = \"{t}\"")), "fuzz/Cargo.toml has no [[bin]] {t}");
    }
}

#[test]
fn every_kept_input_passes_its_target() {
    rlock::fuzz::replay(&fuzz_dir().join("corpus"), rlock_cli::fuzz::TARGETS).unwrap();
}
