//! The launcher against real redis-servers: a single server (restart, AOF, SIGSTOP), a cluster,
//! a server that cannot start, and the binary's stdin protocol.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rlock_testbed::ports::{ephemeral_range, AVOID};
use rlock_testbed::resp::{self, Reply};
use rlock_testbed::{Cluster, Server};
use serde_json::Value;

fn outside_ephemeral(port: u16) {
    let (low, high) = ephemeral_range();
    assert!(port < low || port > high, "{port} is inside the ephemeral range {low}-{high}");
    assert!(port >= 10_000 && !AVOID.contains(&port), "{port}");
}

fn ping(port: u16) -> Reply {
    resp::query(port, None, &["PING"]).unwrap()
}

#[test]
fn a_single_server_answers_restarts_on_its_port_and_keeps_its_aof() {
    let mut s = Server::builder().appendonly(true).start().unwrap();
    outside_ephemeral(s.port());
    assert_eq!(ping(s.port()), Reply::Simple("PONG".into()));
    assert_eq!(s.url(), format!("redis://127.0.0.1:{}/", s.port()));
    assert!(s.log_path().starts_with(s.dir()));
    assert!(s.log_tail(60).contains("Ready to accept connections"));
    assert_eq!(resp::query(s.port(), None, &["SET", "k", "v"]).unwrap(), Reply::Simple("OK".into()));

    let (port, pid) = (s.port(), s.pid().unwrap());
    s.kill();
    assert!(!s.is_running() && s.pid().is_none());
    assert!(resp::query(port, None, &["PING"]).is_err());
    s.restart().unwrap();
    assert_eq!(s.port(), port);
    assert_ne!(s.pid(), Some(pid));
    // The append-only file brought the key back.
    assert_eq!(resp::query(port, None, &["GET", "k"]).unwrap(), Reply::Bulk(b"v".to_vec()));

    // Stopped: no answer within the timeout; continued: answers again.
    s.sigstop().unwrap();
    assert!(!resp::answers_ping(port, Duration::from_millis(300)));
    s.sigcont().unwrap();
    assert_eq!(ping(port), Reply::Simple("PONG".into()));

    let dir = s.dir().to_path_buf();
    let pid = s.pid().unwrap();
    drop(s);
    assert!(!dir.exists(), "the directory outlived the server");
    assert!(!Path::new(&format!("/proc/{pid}")).exists(), "the process outlived the server");
}

#[test]
fn a_password_server_answers_noauth_and_its_url_carries_the_password() {
    let s = Server::builder().password("pw").start().unwrap();
    assert!(matches!(ping(s.port()), Reply::Error(e) if e.starts_with("NOAUTH")));
    assert_eq!(s.url(), format!("redis://:pw@127.0.0.1:{}/", s.port()));
    let auth = resp::Auth { user: "default".into(), password: "pw".into() };
    assert_eq!(resp::query(s.port(), Some(&auth), &["PING"]).unwrap(), Reply::Simple("PONG".into()));
}

#[test]
fn a_cluster_forms_with_bus_ports_outside_the_ephemeral_range() {
    let c = Cluster::start(3, 0).unwrap();
    assert_eq!(c.nodes().len(), 3);
    for n in c.nodes() {
        outside_ephemeral(n.port());
        let bus = n.bus_port().unwrap();
        outside_ephemeral(bus);
        // Port + 10000, the default of every version (Redis 6.2 has no --cluster-port).
        assert_eq!(u32::from(bus), u32::from(n.port()) + 10_000);
        let nodes = resp::query_text(n.port(), None, &["CLUSTER", "NODES"]).unwrap();
        assert!(nodes.contains(&format!("127.0.0.1:{}@{bus}", n.port())), "{nodes}");
        let info = resp::query_text(n.port(), None, &["CLUSTER", "INFO"]).unwrap();
        assert!(info.contains("cluster_state:ok"), "{info}");
    }
    let hosts: Vec<String> = c.nodes().iter().map(|n| format!("127.0.0.1:{}", n.port())).collect();
    assert_eq!(c.url(), format!("redis+cluster://{}/", hosts.join(",")));
    let shards = c.shards_from(c.nodes()[0].port()).unwrap();
    assert_eq!(shards.iter().map(|s| u32::from(s.last) - u32::from(s.first) + 1).sum::<u32>(), 16_384);
    let shard = c.shard_of("some-key").unwrap();
    assert!(c.nodes().iter().any(|n| n.port() == shard.master));
}

#[test]
fn a_server_that_cannot_start_is_an_error_not_a_hang() {
    // A configuration redis-server rejects is not retried on other ports.
    let e = Server::builder().args(["--no-such-option", "1"]).start().unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("did not come up after 1 attempt(s)"), "{msg}");
    assert!(msg.contains("rejected its configuration"), "{msg}");
}

#[test]
fn a_server_that_does_not_answer_in_time_is_killed_and_tried_on_other_ports() {
    // No time to answer at all: every attempt times out.
    let e = Server::builder().ready_timeout(Duration::ZERO).attempts(3).start().unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("did not come up after 3 attempt(s)"), "{msg}");
    assert!(msg.contains("did not answer PING"), "{msg}");
}

#[test]
fn the_binary_prints_the_log_and_the_command_line_when_it_gives_up() {
    let out = Command::new(env!("CARGO_BIN_EXE_rlock-testbed"))
        .args(["single", "--", "--no-such-option", "1"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "printed a description: {}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did not come up"), "{err}");
    // redis-server, or the binary RLOCK_SERVER names.
    assert!(err.contains("command line: ") && err.contains("-server --port"), "{err}");
    assert!(err.contains("--no-such-option 1"), "{err}");
    // redis-server's own words about the bad option.
    assert!(err.contains("FATAL CONFIG FILE ERROR"), "{err}");
}

#[test]
fn the_binary_serves_commands_and_stops_everything_at_stdin_eof() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlock-testbed"))
        .args(["single", "--appendonly"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut read = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()
    };
    let info = read();
    assert_eq!(info["kind"], "single");
    let port = u16::try_from(info["port"].as_u64().unwrap()).unwrap();
    outside_ephemeral(port);
    assert_eq!(info["url"], format!("redis://127.0.0.1:{port}/"));
    assert_eq!(info["nodes"][0]["name"], "server");
    let dir = info["dir"].as_str().unwrap().to_owned();
    assert!(Path::new(info["log"].as_str().unwrap()).exists());
    resp::query(port, None, &["SET", "k", "v"]).unwrap();

    let mut send = |line: &str| writeln!(stdin, "{line}").unwrap();
    send("kill");
    let r = read();
    assert_eq!(
        (r["ok"].as_bool(), r["command"].as_str(), &r["pid"]),
        (Some(true), Some("kill"), &Value::Null)
    );
    assert!(resp::query(port, None, &["PING"]).is_err());
    send("restart server");
    let r = read();
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["port"], port);
    assert_eq!(resp::query(port, None, &["GET", "k"]).unwrap(), Reply::Bulk(b"v".to_vec()));
    send("stop");
    assert_eq!(read()["ok"], true);
    assert!(!resp::answers_ping(port, Duration::from_millis(300)));
    send("cont");
    assert_eq!(read()["ok"], true);
    assert!(resp::answers_ping(port, Duration::from_secs(2)));
    send("log server 5");
    let r = read();
    assert!(r["log"].as_str().unwrap().contains("Ready to accept connections"), "{r}");
    send("kill node7");
    let r = read();
    assert_eq!(r["ok"], false);
    assert!(r["error"].as_str().unwrap().contains("no node"), "{r}");
    send("frobnicate");
    assert_eq!(read()["ok"], false);

    drop(stdin); // EOF: everything stops
    assert!(child.wait().unwrap().success());
    assert!(!resp::answers_ping(port, Duration::from_millis(300)));
    assert!(!Path::new(&dir).exists(), "{dir} outlived the testbed");
}

#[test]
fn the_binary_starts_a_cluster_and_quits_on_command() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rlock-testbed"))
        .args(["cluster", "--masters", "3"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let info: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(info["kind"], "cluster");
    let ports: Vec<u64> = info["ports"].as_array().unwrap().iter().map(|p| p.as_u64().unwrap()).collect();
    assert_eq!(ports.len(), 3);
    let hosts: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    assert_eq!(info["url"], format!("redis+cluster://{}/", hosts.join(",")));
    for n in info["nodes"].as_array().unwrap() {
        assert_eq!(n["role"], "master");
        let bus = u16::try_from(n["bus_port"].as_u64().unwrap()).unwrap();
        outside_ephemeral(bus);
        let port = u16::try_from(n["port"].as_u64().unwrap()).unwrap();
        assert!(resp::query_text(port, None, &["CLUSTER", "INFO"]).unwrap().contains("cluster_state:ok"));
    }
    writeln!(stdin, "quit").unwrap();
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"ok\":true"), "{line}");
    assert!(child.wait().unwrap().success());
    for p in ports {
        assert!(!resp::answers_ping(u16::try_from(p).unwrap(), Duration::from_millis(300)));
    }
}

#[test]
fn the_binarys_port_names_a_lock_file_a_caller_can_claim() {
    let out = Command::new(env!("CARGO_BIN_EXE_rlock-testbed")).arg("port").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let port = u16::try_from(v["port"].as_u64().unwrap()).unwrap();
    outside_ephemeral(port);
    assert_eq!(Path::new(v["lock"].as_str().unwrap()), rlock_testbed::ports::lock_path(port));
    let held = rlock_testbed::ports::claim(port);
    assert!(matches!(held, rlock_testbed::ports::Claim::Held(_)), "{held:?}");
}
