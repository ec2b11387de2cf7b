//! The fuzz corpus, replayed (issue 45): every input cargo-fuzz kept under
//! `fuzz/corpus/<target>/` (seeds, what coverage found, and each crash once fixed) goes through
//! its target in `rlock::fuzz` here, on the stable toolchain, in every `cargo test`. The targets
//! of `rlock::fuzz::TARGETS` and the files of `fuzz/fuzz_targets` are one list.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

fn names_in(dir: &Path, suffix: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter_map(|n| n.strip_suffix(suffix).map(str::to_owned))
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
    for (name, target) in rlock::fuzz::TARGETS {
        let dir = fuzz_dir().join("corpus").join(name);
        let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        inputs.sort();
        assert!(!inputs.is_empty(), "{}: no inputs", dir.display());
        for path in inputs {
            let data = std::fs::read(&path).unwrap();
            if std::panic::catch_unwind(|| target(&data)).is_err() {
                panic!("{name}: {} breaks a rule (the panic above says which)", path.display());
            }
        }
    }
}
