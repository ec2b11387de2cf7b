//! What the CLI's test files share: running the real `rlock` binary as a user would, with no
//! `REDIS_URL` or `RUST_LOG` of the environment leaking in, and reading its `--json` output.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::process::{Command, Output};

use serde_json::Value;

/// The `rlock` binary cargo built for these tests.
pub const RLOCK: &str = env!("CARGO_BIN_EXE_rlock");

/// `rlock ARGS...`, waited for; panics only when the binary cannot be run at all.
pub fn rlock(args: &[&str]) -> Output {
    Command::new(RLOCK).args(args).env_remove("REDIS_URL").env_remove("RUST_LOG").output().unwrap()
}

/// The JSON document a `--json` run printed on stdout (panics with the whole output when it is
/// not one).
pub fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"))
}
