//! `rlock status` and `rlock list` as a user runs them: the real binary against a private
//! redis-server, with a lock held by a real `rlock run` process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;

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

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {o:?}"))
}

fn conn(server: &Server) -> redis::Connection {
    redis::Client::open(server.url()).unwrap().get_connection().unwrap()
}

#[test]
fn status_shows_who_holds_and_list_finds_names() {
    let server = Server::start().unwrap();
    let mut holder = common::running_holder(&server.url(), "nightly", "billing");

    // The holder's record is written within about a second of the acquire.
    let start = Instant::now();
    let d = loop {
        let o = output(&server, &["status", "nightly", "--json"]);
        assert_eq!(o.status.code(), Some(0), "{o:?}");
        let all = json(&o);
        let d = all[0].clone();
        if d["holders"][0]["record"]["app"] == "billing" {
            break d;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no record: {d}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(d["kind"], "lock");
    assert_eq!(d["name"], "nightly");
    assert_eq!(d["holders"][0]["count"], 1);
    assert_eq!(d["holders"][0]["record"]["pid"], holder.id());
    assert!(d["ttl_ms"].as_u64().is_some_and(|t| t > 0));

    let o = output(&server, &["status", "nightly"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let table = stdout(&o);
    assert!(table.contains("kind      lock"), "{table}");
    assert!(
        table.contains("held by billing on ") && table.contains(&format!("pid {}, for ", holder.id())),
        "{table}"
    );

    // Other primitives, a foreign key, and nothing.
    let mut c = conn(&server);
    let _: () = redis::cmd("SET").arg("slots").arg(3).query(&mut c).unwrap();
    let _: () = redis::cmd("RPUSH").arg("jobs").arg("x").query(&mut c).unwrap();
    let o = output(&server, &["status", "slots", "--kind", "semaphore"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(stdout(&o).contains("permits   3 free"), "{}", stdout(&o));
    let o = output(&server, &["status", "slots", "--kind", "latch", "--json"]);
    assert_eq!(
        (json(&o)[0]["kind"].clone(), json(&o)[0]["count"].clone()),
        ("count_down_latch".into(), 3.into())
    );
    let o = output(&server, &["status", "slots", "jobs", "--json"]);
    let both = json(&o);
    assert_eq!(
        (both[0]["kind"].as_str(), both[1]["kind"].as_str()),
        (Some("semaphore_or_latch"), Some("other"))
    );
    assert_eq!(both[1]["redis_type"], "list");
    let o = output(&server, &["status", "nightly", "missing"]);
    assert_eq!(o.status.code(), Some(1), "nothing under 'missing': {o:?}");
    assert!(stdout(&o).contains("none (nothing under this name)"));

    // list: names with kinds; the holder record and latches are not listed.
    let o = output(&server, &["list", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let names: Vec<(String, String)> = json(&o)
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["name"].as_str().unwrap().to_owned(), l["kind"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(
        names,
        [("nightly".to_owned(), "lock".to_owned()), ("slots".to_owned(), "semaphore_or_latch".to_owned())]
    );
    let o = output(&server, &["list", "night*"]);
    assert_eq!(stdout(&o).trim(), "lock  nightly");
    let o = output(&server, &["list", "--limit", "1"]);
    assert_eq!(stdout(&o).lines().count(), 1);
    let o = output(&server, &["list", "nothing*"]);
    assert_eq!((o.status.code(), o.stdout.is_empty()), (Some(1), true));

    // Bad usage.
    assert_eq!(output(&server, &["status"]).status.code(), Some(2));
    assert_eq!(output(&server, &["status", "x", "--kind", "mutex"]).status.code(), Some(2));
    assert_eq!(output(&server, &["status", ""]).status.code(), Some(2));
    assert_eq!(output(&server, &["list", "--limit", "0"]).status.code(), Some(2));
    let help = stdout(&output(&server, &["status", "--help"]));
    assert!(help.contains("--kind") && help.contains("--json") && help.contains("Exit codes"), "{help}");

    holder.kill().unwrap();
    holder.wait().unwrap();
}

#[test]
fn unreachable_redis_is_69() {
    // A port on loopback where nothing listens, held so no other test's server starts there.
    let dead = rlock_testbed::ports::reserve(1).unwrap();
    let o = Command::new(RLOCK)
        .args(["status", "x", "--url", &format!("redis://127.0.0.1:{}/", dead.ports()[0])])
        .env_remove("REDIS_URL")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(69), "{o:?}");
}

/// Core's warnings reach the CLI's stderr (here: the server may evict a held lock's key), and
/// stdout keeps the command's output only.
#[test]
fn core_warnings_go_to_stderr() {
    let server = Server::builder().args(["--maxmemory-policy", "allkeys-lru"]).start().unwrap();
    let o = output(&server, &["status", "quiet", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    // The server is named (its address, never the URL's credentials), so one warning per server.
    let named = format!("rlock: warning: the server 127.0.0.1:{} may evict keys", server.port());
    assert!(err.contains(&named), "{err}");
    assert_eq!(json(&o)[0]["name"], "quiet", "stdout is the JSON alone: {o:?}");
}
