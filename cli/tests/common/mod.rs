//! What the CLI's test files share: running the real `rlock` binary as a user would, with no
//! `REDIS_URL` or `RUST_LOG` of the environment leaking in, and reading its `--json` output.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

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

/// A job holding lock `name` through `rlock run --app-name APP` against `url`, returned once it
/// runs (its first line is out, so the lock is held). It ends when a line reaches its stdin.
pub fn running_holder(url: &str, name: &str, app: &str) -> Child {
    let mut holder = Command::new(RLOCK)
        .env_remove("RUST_LOG")
        .env("REDIS_URL", url)
        .args(["run", name, "--app-name", app, "--", "sh", "-c", "echo running; read _"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(holder.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "running");
    holder
}
