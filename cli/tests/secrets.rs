//! The `rlock` command never shows a password it was given (issue 45, item 4): not on any error
//! path it can reach (a wrong password, an unreachable server, a malformed URL, each given as
//! `REDIS_URL` or `--url`), not in `--help`, not in what its commands print when they work, and
//! not in what `rlock run` writes to Redis. The real binary against a private redis-server
//! with `requirepass`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::RLOCK;
use rlock_testbed::Server;
/// The server's password: long and odd enough that no text holds it by chance.
const PASS: &str = "Cli-s3cret-Pa55word";

/// Every subcommand that talks to Redis, with arguments that need nothing set up.
const COMMANDS: &[&[&str]] = &[
    &["status", "secrets:job"],
    &["status", "secrets:job", "--json"],
    &["list"],
    &["list", "--json"],
    &["force-unlock", "secrets:job", "-y"],
    &["doctor"],
    &["doctor", "--json"],
    &["sweep"],
    &["run", "secrets:job", "--", "true"],
];

fn with_url(url: &str, args: &[&str], flag: bool) -> Output {
    let mut c = Command::new(RLOCK);
    c.env_remove("RUST_LOG").env_remove("REDIS_URL");
    if flag {
        c.arg("--url").arg(url);
    } else {
        c.env("REDIS_URL", url);
    }
    c.args(args).stdin(Stdio::null()).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Fails when `secret` is in anything `o` printed.
fn hidden(o: &Output, secret: &str, what: &str) {
    let all = text(o);
    assert!(!all.contains(secret), "{what}: the password is in the output:\n{all}");
}

fn server() -> Server {
    Server::builder().password(PASS).start().unwrap()
}

#[test]
fn no_error_path_shows_the_password() {
    let server = server();
    let port = server.port();
    let wrong = "Wrong-s3cret-Pa55word";
    // Reserved for the whole test, so no other test's server starts there.
    let reserved = rlock_testbed::ports::reserve(1).unwrap();
    let nobody = reserved.ports()[0];
    let cases: Vec<(String, &str, &str)> = vec![
        (format!("redis://:{wrong}@127.0.0.1:{port}"), wrong, "a wrong password"),
        (format!("redis://default:{wrong}@127.0.0.1:{port}"), wrong, "a wrong password with a user"),
        (format!("redis://:{PASS}@127.0.0.1:{nobody}"), PASS, "nothing listening"),
        (format!("redis://:{PASS}@127.0.0.1:notaport"), PASS, "a port that is not a number"),
        (format!("redis://:{PASS}@"), PASS, "no host"),
        (format!("rediss://user:{PASS}@[::1"), PASS, "an unclosed address"),
        (format!("redis+sentinel://:{PASS}@127.0.0.1:{nobody}"), PASS, "a sentinel URL without its service"),
        (
            format!("redis+cluster://:{PASS}@127.0.0.1:{nobody},127.0.0.1:{port}/"),
            PASS,
            "a cluster nobody forms",
        ),
        (format!("redis://:{PASS}@127.0.0.1:{port}/99999"), PASS, "a database out of range"),
        (format!("unix://:{PASS}@/nowhere/redis.sock"), PASS, "a scheme rlock does not take"),
    ];
    for (url, secret, why) in &cases {
        // Every command through REDIS_URL; through --url, one (the flag reaches the same code).
        let runs = COMMANDS.iter().map(|a| (*a, false)).chain([(COMMANDS[0], true)]);
        for (args, flag) in runs {
            {
                let o = with_url(url, args, flag);
                let what =
                    format!("{why}, rlock {} ({})", args.join(" "), if flag { "--url" } else { "REDIS_URL" });
                hidden(&o, secret, &what);
                assert!(!o.status.success(), "{what}: succeeded: {}", text(&o));
                assert!(!text(&o).trim().is_empty(), "{what}: failed without a word");
            }
        }
    }
}

#[test]
fn help_and_working_commands_do_not_show_the_password() {
    let server = server();
    let url = server.url();
    assert!(url.contains(PASS), "the testbed's URL carries the password: {url}");

    // clap shows an option's environment value in --help unless told not to.
    for args in [&["--help"][..], &["run", "--help"], &["status", "--help"]] {
        let o = with_url(&url, args, false);
        assert!(o.status.success(), "{o:?}");
        hidden(&o, PASS, &format!("rlock {}", args.join(" ")));
    }

    // A job under the lock, held while the other commands look at it.
    let mut holder = common::running_holder(&url, "secrets:job", "billing");
    // The holder's record is written within about a second of the acquire.
    let start = Instant::now();
    loop {
        let o = with_url(&url, &["status", "secrets:job", "--json"], false);
        assert!(o.status.success(), "{o:?}");
        hidden(&o, PASS, "rlock status --json of a held lock");
        if String::from_utf8_lossy(&o.stdout).contains("billing") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no holder record: {}", text(&o));
        // The record has no event to wait on: polled, as `rlock status` users would.
        std::thread::sleep(Duration::from_millis(50));
    }
    for args in COMMANDS.iter().filter(|a| a[0] != "run" && a[0] != "force-unlock") {
        let o = with_url(&url, args, false);
        hidden(&o, PASS, &format!("rlock {} with a lock held", args.join(" ")));
    }
    // What rlock wrote to Redis: the hold, its record, anything else.
    let mut conn = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut conn).unwrap();
    assert!(keys.iter().any(|k| k == "secrets:job"), "the lock is held: {keys:?}");
    for key in &keys {
        let kind: String = redis::cmd("TYPE").arg(key).query(&mut conn).unwrap();
        let values: Vec<String> = match kind.as_str() {
            "string" => vec![redis::cmd("GET").arg(key).query(&mut conn).unwrap()],
            "hash" => redis::cmd("HGETALL").arg(key).query(&mut conn).unwrap(),
            "zset" => redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).query(&mut conn).unwrap(),
            "list" => redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query(&mut conn).unwrap(),
            "none" => vec![], // expired since KEYS (a latch, a record)
            other => panic!("{key}: a {other} rlock does not write"),
        };
        for v in values.iter().chain([key]) {
            assert!(!v.contains(PASS), "the password is in Redis, key {key}: {v}");
        }
    }

    holder.stdin.take().unwrap().write_all(b"done\n").unwrap();
    let out = holder.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    hidden(&out, PASS, "rlock run");
    let o = with_url(&url, &["force-unlock", "secrets:job", "-y"], true);
    hidden(&o, PASS, "rlock force-unlock of a free lock");
}
