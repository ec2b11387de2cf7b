//! `rlock doctor` as a user runs it: the real binary against private servers and the
//! managed-endpoint stand-ins, one per finding it must make.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;

use common::{json, rlock, RLOCK};
use rlock_testbed::{standin, Server};
use serde_json::Value;

/// `rlock doctor URL --json`, quick (5 pings, a 200 ms clock window).
fn doctor(url: &str) -> Output {
    rlock(&["doctor", url, "--json", "--pings", "5", "--clock-window", "200ms"])
}

/// The finding of `check`.
fn finding<'a>(report: &'a Value, check: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["check"] == check)
        .unwrap_or_else(|| panic!("no {check} finding in {report}"))
}

fn status<'a>(report: &'a Value, check: &str) -> &'a str {
    finding(report, check)["status"].as_str().unwrap()
}

fn conn(server: &Server) -> redis::Connection {
    redis::Client::open(server.url()).unwrap().get_connection().unwrap()
}

fn keys(server: &Server) -> i64 {
    redis::cmd("DBSIZE").query(&mut conn(server)).unwrap()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < until, "{what} did not happen within 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_plain_server_gets_every_check_and_nothing_changes() {
    let server = Server::start().unwrap();
    let o = doctor(&server.url());
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let r = json(&o);
    let checks: Vec<&str> =
        r["findings"].as_array().unwrap().iter().map(|f| f["check"].as_str().unwrap()).collect();
    assert_eq!(
        checks,
        ["topology", "eviction", "persistence", "replicas", "pubsub", "scripts", "latency", "clock"]
    );
    assert_eq!(r["topology"], "single");
    assert!(r["server"].as_str().unwrap().contains(' '), "name and version: {r}");
    assert_eq!(status(&r, "topology"), "ok");
    assert_eq!(finding(&r, "topology")["facts"]["spans_slots"], true);
    assert_eq!(status(&r, "eviction"), "ok");
    assert_eq!(status(&r, "replicas"), "note", "no replica: {r}");
    assert_eq!(status(&r, "pubsub"), "ok");
    let scripts = finding(&r, "scripts");
    assert_eq!(scripts["status"], "ok");
    assert_eq!(scripts["facts"]["literal"], true);
    assert_eq!(finding(&r, "latency")["facts"]["pings"], 5);
    assert!(finding(&r, "latency")["facts"]["p50_ms"].as_f64().unwrap() > 0.0);
    let clock = finding(&r, "clock");
    assert_eq!(clock["status"], "ok", "{clock}");
    assert!(clock["facts"]["window_ms"].as_f64().unwrap() >= 200.0, "{clock}");
    assert_eq!(r["worst"], "note");
    // Only commands that change nothing.
    assert_eq!(keys(&server), 0);
    // The text says the same, each finding with what rlock does.
    let text = Command::new(RLOCK)
        .args(["doctor", "--pings", "3", "--clock-window", "100ms"])
        .env("REDIS_URL", server.url())
        .output()
        .unwrap();
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("[ok] eviction: maxmemory-policy noeviction"), "{text}");
    assert!(text.contains("[note] replicas: no replica connected"), "{text}");
    assert_eq!(text.matches("    rlock: ").count(), 8, "{text}");
}

#[test]
fn an_evicting_server_warns_with_what_to_change() {
    let server = standin::evicting(Server::builder()).unwrap();
    let o = doctor(&server.url());
    assert_eq!(o.status.code(), Some(1), "a warning: {o:?}");
    let r = json(&o);
    let eviction = finding(&r, "eviction");
    assert_eq!(eviction["status"], "warn");
    assert_eq!(eviction["facts"]["maxmemory_policy"], "volatile-lru");
    assert!(eviction["advice"].as_str().unwrap().contains("noeviction"), "{eviction}");
    assert_eq!(r["worst"], "warn");
}

#[test]
fn a_policy_without_a_memory_limit_is_a_note() {
    let server = Server::with_args(&["--maxmemory-policy", "allkeys-lru"]).unwrap();
    let r = json(&doctor(&server.url()));
    assert_eq!(status(&r, "eviction"), "note", "{r}");
    assert_eq!(finding(&r, "eviction")["facts"]["maxmemory"], 0);
}

#[test]
fn a_proxy_endpoint_is_found_by_what_it_refuses() {
    let server = standin::proxy_endpoint(Server::builder()).unwrap();
    let r = json(&doctor(&server.url()));
    let topology = finding(&r, "topology");
    assert_eq!(topology["status"], "note", "{topology}");
    assert_eq!(topology["facts"]["spans_slots"], false);
    assert_eq!(status(&r, "scripts"), "ok", "{r}");
}

#[test]
fn twemproxy_has_no_pubsub_and_refuses_the_admin_commands() {
    let proxy = standin::Twemproxy::start().unwrap();
    let o = doctor(&proxy.url());
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let r = json(&o);
    let pubsub = finding(&r, "pubsub");
    assert_eq!(pubsub["status"], "note", "{pubsub}");
    assert_eq!(pubsub["facts"]["available"], false);
    assert!(pubsub["advice"].as_str().unwrap().contains("SUBSCRIBE"));
    // INFO and CONFIG are not twemproxy's: not known, never an error.
    assert_eq!(status(&r, "eviction"), "unknown", "{r}");
    assert_eq!(status(&r, "persistence"), "unknown", "{r}");
    assert_eq!(status(&r, "scripts"), "ok", "{r}");
    assert!(r["server"].is_null(), "{r}");
}

#[test]
fn a_restricted_endpoint_is_unknown_where_it_refuses() {
    let server = standin::restricted(Server::builder()).unwrap();
    let r = json(&doctor(&server.url()));
    assert_eq!(status(&r, "eviction"), "unknown", "CONFIG refused: {r}");
    assert!(finding(&r, "eviction")["advice"].as_str().unwrap().contains("noeviction"));
    assert_eq!(finding(&r, "replicas")["facts"]["wait"], false, "{r}");
}

#[test]
fn append_only_always_is_ok_and_everysec_a_note() {
    let server = Server::builder().appendonly(true).start().unwrap();
    let r = json(&doctor(&server.url()));
    let p = finding(&r, "persistence");
    assert_eq!(p["status"], "ok", "the testbed's append-only servers fsync always: {p}");
    assert_eq!(p["facts"]["appendfsync"], "always");

    let server = Server::with_args(&["--appendonly", "yes", "--appendfsync", "everysec"]).unwrap();
    let r = json(&doctor(&server.url()));
    let p = finding(&r, "persistence");
    assert_eq!(p["status"], "note", "{p}");
    assert_eq!(p["facts"]["aof"], true);
    assert_eq!(p["facts"]["appendfsync"], "everysec");
}

/// A master (with `args`) and one online replica of it.
fn master_and_replica(args: &[&str]) -> (Server, Server) {
    let master = Server::with_args(args).unwrap();
    let replica =
        Server::builder().args(["--replicaof", "127.0.0.1", &master.port().to_string()]).start().unwrap();
    wait_for("the replica to come online", || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut conn(&master)).unwrap();
        info.lines().any(|l| l.starts_with("slave0:") && l.contains("state=online"))
    });
    (master, replica)
}

#[test]
fn replicas_without_wait_warn_and_with_wait_ask_for_replica_sync() {
    let (master, _replica) = master_and_replica(&[]);
    let r = json(&doctor(&master.url()));
    let replicas = finding(&r, "replicas");
    assert_eq!(replicas["status"], "note", "replica sync is off on one server by default: {replicas}");
    assert_eq!(replicas["facts"]["replicas"], 1);
    assert!(replicas["advice"].as_str().unwrap().contains("replica_sync"));

    let (master, _replica) = master_and_replica(&["--rename-command", "WAIT", ""]);
    let o = doctor(&master.url());
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let r = json(&o);
    let replicas = finding(&r, "replicas");
    assert_eq!(replicas["status"], "warn", "{replicas}");
    assert_eq!(replicas["facts"]["wait"], false);
}

#[test]
fn an_endpoint_nobody_answers_exits_69() {
    // Held, so no server of a test running beside this one starts there meanwhile.
    let dead = rlock_testbed::ports::reserve(1).unwrap();
    let o = doctor(&format!("redis://127.0.0.1:{}", dead.ports()[0]));
    assert_eq!(o.status.code(), Some(69), "{o:?}");
    assert!(o.stdout.is_empty());
}
