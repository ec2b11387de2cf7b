//! `rlock run` and `rlock force-unlock` as a user runs them: the real binary, real child
//! processes, a private redis-server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rlock_testbed::Server;

const RLOCK: &str = env!("CARGO_BIN_EXE_rlock");

fn rlock(server: &Server, args: &[&str]) -> Command {
    let mut c = Command::new(RLOCK);
    c.args(args).env("REDIS_URL", server.url()).env_remove("RUST_LOG");
    c
}

fn output(server: &Server, args: &[&str]) -> Output {
    rlock(server, args).output().unwrap()
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn conn(server: &Server) -> redis::Connection {
    redis::Client::open(server.url()).unwrap().get_connection().unwrap()
}

fn exists(server: &Server, key: &str) -> bool {
    redis::cmd("EXISTS").arg(key).query::<i64>(&mut conn(server)).unwrap() == 1
}

/// Polls `cond` (a state with no event to wait on) for up to 10 s.
fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(10), "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A background `rlock run` whose command prints a line once it runs (so the hold is known
/// to be taken), then runs `script`.
fn holder(server: &Server, args: &[&str], script: &str) -> (Child, BufReader<std::process::ChildStdout>) {
    let body = format!("echo running; {script}");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", "sh", "-c", &body]);
    let mut child = rlock(server, &all).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "running", "the command started under the lock");
    (child, out)
}

#[test]
fn the_commands_status_passes_through_and_the_lock_is_freed() {
    let server = Server::start().unwrap();
    let o = output(&server, &["run", "job", "--", "sh", "-c", "exit 7"]);
    assert_eq!(code(&o), 7, "{o:?}");
    let o = output(&server, &["run", "job", "--fair", "--wait", "1s", "--", "true"]);
    assert_eq!(code(&o), 0, "{o:?}");
    assert!(!exists(&server, "job"));
    // The spin lock: the same pass-through and release; it excludes --fair.
    let o = output(&server, &["run", "job", "--spin", "--", "sh", "-c", "exit 3"]);
    assert_eq!(code(&o), 3, "{o:?}");
    assert!(!exists(&server, "job"));
    let o = output(&server, &["run", "job", "--spin", "--fair", "--", "true"]);
    assert_eq!(code(&o), 2, "{o:?}");
    let o = output(&server, &["run", "job", "--", "no-such-command-rlock-test"]);
    assert_eq!(code(&o), 127, "{o:?}");
    assert!(!exists(&server, "job"), "released after a command that could not start");
}

#[test]
fn not_acquired_within_wait_and_signals_forwarded() {
    let server = Server::start().unwrap();
    let (mut first, _out) = holder(&server, &["run", "nightly"], "sleep 30");
    assert!(exists(&server, "nightly"));
    let started = Instant::now();
    let o = output(&server, &["run", "nightly", "--wait", "300ms", "--", "echo", "never"]);
    assert_eq!(code(&o), 75, "{o:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(o.stdout.is_empty(), "the command did not run");
    // SIGTERM to rlock reaches the command (sleep dies of it: 128 + 15), then the lock is freed.
    unsafe { libc::kill(first.id() as libc::pid_t, libc::SIGTERM) };
    let status = first.wait().unwrap();
    assert_eq!(status.code(), Some(143));
    assert!(!exists(&server, "nightly"));
}

#[test]
fn a_lost_hold_stops_the_command_and_exits_76() {
    let server = Server::start().unwrap();
    let args = ["run", "report", "--watchdog-timeout", "600ms", "--lost-grace", "5s"];
    let (child, mut out) =
        holder(&server, &args, "trap 'echo got-term; exit 0' TERM; while :; do sleep 0.05; done");
    let mut yes = rlock(&server, &["force-unlock", "report"])
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    yes.stdin.take().unwrap().write_all(b"y\n").unwrap();
    assert_eq!(yes.wait().unwrap().code(), Some(0));
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "got-term", "the command got SIGTERM");
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 76, "{o:?}");

    // A command that ignores SIGTERM is killed after the grace time.
    let args = ["run", "report", "--watchdog-timeout", "600ms", "--lost-grace", "300ms"];
    let (child, _out) = holder(&server, &args, "trap '' TERM; while :; do sleep 0.05; done");
    let o = output(&server, &["force-unlock", "report", "--yes"]);
    assert_eq!(code(&o), 0, "{o:?}");
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 76, "{o:?}");

    // A fixed lease that ran out while the command ran is found at the release: 76 too,
    // although the command succeeded.
    let o = output(&server, &["run", "report", "--lease", "200ms", "--", "sleep", "0.6"]);
    assert_eq!(code(&o), 76, "{o:?}");
}

#[test]
fn semaphore_runs_share_a_name_up_to_n() {
    let server = Server::start().unwrap();
    let args = ["run", "gpu", "--semaphore", "2"];
    // The command traps SIGINT itself: `sh -c` catches SIGINT until it execs its last command,
    // so a SIGINT that lands between `echo running` and that exec was swallowed, and a plain
    // `sleep 30` then ran to its end and exited 0 (seen once in CI).
    let script = "trap 'exit 130' INT; while :; do sleep 0.05; done";
    let (mut a, _oa) = holder(&server, &args, script);
    let (mut b, _ob) = holder(&server, &args, script);
    let o = output(&server, &["run", "gpu", "--semaphore", "2", "--wait", "200ms", "--", "true"]);
    assert_eq!(code(&o), 75, "a third run waits for a permit: {o:?}");
    for c in [&mut a, &mut b] {
        unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGINT) };
        assert_eq!(c.wait().unwrap().code(), Some(130));
    }
    until("both permits back", || {
        let v: Option<i64> = redis::cmd("GET").arg("gpu").query(&mut conn(&server)).unwrap();
        v == Some(2)
    });
}

#[test]
fn force_unlock_asks_first() {
    let server = Server::start().unwrap();
    let (mut held, _out) = holder(&server, &["run", "asked"], "sleep 30");
    let mut no = rlock(&server, &["force-unlock", "asked"])
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    no.stdin.take().unwrap().write_all(b"n\n").unwrap();
    assert_eq!(no.wait().unwrap().code(), Some(1));
    assert!(exists(&server, "asked"), "declined: nothing changed");
    held.kill().unwrap();
    held.wait().unwrap();
    let o = output(&server, &["force-unlock", "asked", "--yes"]);
    assert_eq!(code(&o), 0, "{o:?}");
    assert!(!exists(&server, "asked"));
    let o = output(&server, &["run"]);
    assert_eq!(code(&o), 2, "bad usage");
    let o = output(&server, &["run", "x", "--wait", "soon", "--", "true"]);
    assert_eq!(code(&o), 2, "a bad duration");
}
