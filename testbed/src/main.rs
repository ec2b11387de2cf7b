//! `rlock-testbed`: private redis-servers for the test suites that are not written in Rust.
//!
//! It starts a topology, prints ONE JSON line describing it on stdout, then stays in the
//! foreground as its supervisor: it stops everything and exits when its stdin reaches EOF (so a
//! test process that dies takes its servers with it), on `quit`, or on SIGTERM/SIGINT/SIGHUP.
//! Meanwhile it takes one command per stdin line and answers each with one JSON line.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use rlock_testbed::describe::Topology;
use rlock_testbed::server::LOG_LINES;
use rlock_testbed::{ports, resp, Certs, Cluster, Error, Proxy, Result, SentinelSet, Server, TlsFiles};
use serde_json::{json, Value};

const USAGE: &str = "\
usage: rlock-testbed TOPOLOGY [OPTIONS] [-- REDIS-SERVER-ARGS...]

Starts private redis-servers on 127.0.0.1 (ports outside the kernel's ephemeral range), prints one
JSON line describing them (url, host, ports, pids, dirs, logs, nodes), and keeps them until its
stdin reaches EOF, `quit`, or SIGTERM/SIGINT/SIGHUP; then stops them and removes their directories.

topologies:
  single     one server      [--requirepass P] [--appendonly] [--tls]
             [--proxy] (a proxy in front too: proxy_url; blackhole-subscribers)
  tls        single --tls    (TLS port with a CA and certificate made by openssl)
  cluster    Redis Cluster   [--masters 3] [--replicas 0] [--node-timeout 1000] [--tls]
  tls-cluster cluster --tls
  sentinel   master + replica(s) + 3 sentinels watching 'mymaster'  [--replicas 1] [--down-after 1000]
             [--replication-proxy] (the master is known by a proxy in front of it, which can cut the
             replicas' links alone: cut-replication)
  proxy-endpoint  a stand-in for a proxy in front of a sharded cluster: one cluster-enabled
             server owning every slot, CLUSTER renamed away, reached as redis:// (CROSSSLOT on
             scripts and commands whose keys span slots)
  twemproxy  nutcracker sharding by {hash tag} over two servers (no pub/sub, no HELLO, no
             CLIENT): url is the proxy's, nodes are shard0 and shard1
  restricted one server with WAIT, WAITAOF (where it has it), CONFIG and CLIENT renamed away
  evicting   one server with maxmemory 4mb and maxmemory-policy volatile-lru
  port       print {\"port\": N, \"lock\": PATH}, a free port outside the ephemeral range and
             its lock file (flock it exclusively to keep the port from other tests), and exit
  probe      start each topology once and print what the server supports, then exit:
             {\"program\", \"server\", \"version\", \"modes\": {\"single\", \"tls\", \"cluster\",
             \"sentinel\"}, \"commands\": {\"ssubscribe\", \"waitaof\"}, \"errors\": {MODE: why}}

the server binary: $RLOCK_SERVER (a path, or NAME-VERSION from `make servers`' cache), else
redis-server on PATH.

arguments after `--` go to every data node's redis-server command line.

stdin commands (NODE: a name from \"nodes\", a port, or an index; may be left out with one node):
  kill [NODE]       SIGKILL
  restart [NODE]    start again on the same ports in the same directory (AOF data comes back)
  stop [NODE]       SIGSTOP
  cont [NODE]       SIGCONT
  log [NODE] [N]    the last N (60) lines of its log
  info              the description again (current pids)
  blackhole-subscribers   (single --proxy) silence, for good, every proxied connection that has
                    subscribed: nothing passes either way, the sockets stay open
  cut-replication on|off   (sentinel --replication-proxy) partition the replicas from the master,
                    or heal: nothing passes either way on their links meanwhile (sentinels and
                    clients still pass), connections stay open
  quit              stop everything and exit
each answered with one JSON line: {\"ok\": true, ...} or {\"ok\": false, \"error\": \"...\"}.
";

#[derive(Debug, Default, PartialEq, Eq)]
struct Args {
    kind: String,
    requirepass: Option<String>,
    appendonly: bool,
    tls: bool,
    masters: Option<usize>,
    replicas: Option<usize>,
    node_timeout_ms: Option<u64>,
    down_after_ms: Option<u64>,
    replication_proxy: bool,
    proxy: bool,
    extra: Vec<String>,
}

fn parse(argv: &[String]) -> std::result::Result<Args, String> {
    let mut it = argv.iter();
    let kind = it.next().ok_or("no topology given")?.clone();
    let mut a = Args { kind, ..Args::default() };
    match a.kind.as_str() {
        "single" | "cluster" | "sentinel" | "proxy-endpoint" | "twemproxy" | "restricted" | "evicting"
        | "port" | "probe" | "help" | "--help" | "-h" => {}
        "tls" => {
            a.kind = "single".into();
            a.tls = true;
        }
        "tls-cluster" => {
            a.kind = "cluster".into();
            a.tls = true;
        }
        other => return Err(format!("unknown topology {other:?}")),
    }
    fn value<'a, T: std::str::FromStr>(
        flag: &str,
        it: &mut impl Iterator<Item = &'a String>,
    ) -> std::result::Result<T, String> {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        v.parse().map_err(|_| format!("{flag}: bad value {v:?}"))
    }
    while let Some(arg) = it.next() {
        let k = a.kind.as_str();
        match arg.as_str() {
            "--" => {
                a.extra = it.by_ref().cloned().collect();
            }
            "--requirepass" if k == "single" => a.requirepass = Some(value("--requirepass", &mut it)?),
            "--appendonly" if k == "single" => a.appendonly = true,
            "--proxy" if k == "single" => a.proxy = true,
            "--tls" if k == "single" || k == "cluster" => a.tls = true,
            "--masters" if k == "cluster" => a.masters = Some(value("--masters", &mut it)?),
            "--replicas" if k == "cluster" || k == "sentinel" => {
                a.replicas = Some(value("--replicas", &mut it)?)
            }
            "--node-timeout" if k == "cluster" => a.node_timeout_ms = Some(value("--node-timeout", &mut it)?),
            "--down-after" if k == "sentinel" => a.down_after_ms = Some(value("--down-after", &mut it)?),
            "--replication-proxy" if k == "sentinel" => a.replication_proxy = true,
            other => return Err(format!("{k}: unknown option {other:?}")),
        }
    }
    Ok(a)
}

fn start(a: &Args, tls: Option<&TlsFiles>) -> Result<Topology> {
    Ok(match a.kind.as_str() {
        "single" => {
            let mut b = Server::builder().name("server").die_with_parent(true).appendonly(a.appendonly);
            if let Some(pw) = &a.requirepass {
                b = b.password(pw.clone());
            }
            if let Some(files) = tls {
                b = b.tls(files);
            }
            Topology::Single(b.args(a.extra.iter().cloned()).start()?)
        }
        "cluster" => {
            let mut b = Cluster::builder().die_with_parent(true).args(a.extra.iter().cloned());
            if let Some(n) = a.masters {
                b = b.masters(n);
            }
            if let Some(n) = a.replicas {
                b = b.replicas(n);
            }
            if let Some(ms) = a.node_timeout_ms {
                b = b.node_timeout(Duration::from_millis(ms));
            }
            if let Some(files) = tls {
                b = b.tls(files);
            }
            Topology::Cluster(b.start()?)
        }
        "sentinel" => {
            let mut b = SentinelSet::builder().die_with_parent(true);
            if let Some(n) = a.replicas {
                b = b.replicas(n);
            }
            if let Some(ms) = a.down_after_ms {
                b = b.down_after(Duration::from_millis(ms));
            }
            Topology::Sentinel(b.replication_proxy(a.replication_proxy).start()?)
        }
        "proxy-endpoint" => Topology::Single(rlock_testbed::standin::proxy_endpoint(
            Server::builder().name("proxy-endpoint").die_with_parent(true).args(a.extra.iter().cloned()),
        )?),
        "twemproxy" => Topology::Twemproxy(rlock_testbed::standin::Twemproxy::start()?),
        "restricted" => Topology::Single(rlock_testbed::standin::restricted(
            Server::builder().name("restricted").die_with_parent(true).args(a.extra.iter().cloned()),
        )?),
        "evicting" => Topology::Single(rlock_testbed::standin::evicting(
            Server::builder().name("evicting").die_with_parent(true).args(a.extra.iter().cloned()),
        )?),
        other => return Err(Error::new(format!("cannot start {other:?}"))),
    })
}

/// Which topologies the server binary starts in, and which commands it has: found by starting
/// each (its failures are on stderr), not read from its version.
fn probe() -> Result<Value> {
    let program = rlock_testbed::program::from_env()?;
    let single = Server::builder().name("probe").start()?;
    let (server, version) = resp::server_version(single.port(), None)?;
    let mut commands = serde_json::Map::new();
    for c in ["ssubscribe", "waitaof"] {
        let known = resp::query(single.port(), None, &["COMMAND", "INFO", c])
            .ok()
            .and_then(|r| r.array().and_then(|a| a.first().map(|x| x.array().is_some())));
        commands.insert(c.into(), json!(known.unwrap_or(false)));
    }
    let mut errors = serde_json::Map::new();
    let mut try_mode = |mode: &str, f: &dyn Fn() -> Result<()>| {
        let r = f();
        if let Err(e) = &r {
            errors.insert(mode.into(), json!(e.message()));
        }
        r.is_ok()
    };
    let tls = try_mode("tls", &|| {
        let certs = Certs::generate()?;
        let s = Server::builder().name("probe-tls").attempts(1).tls(&certs.files()).start()?;
        // It must be listening on the TLS port, not merely have started.
        let port = s.tls_port().unwrap_or_default();
        std::net::TcpStream::connect((rlock_testbed::HOST, port))
            .map(drop)
            .map_err(|e| Error::new(format!("nothing on the TLS port {port}: {e}")))
    });
    let cluster = try_mode("cluster", &|| Cluster::builder().start().map(drop));
    let sentinel = try_mode("sentinel", &|| SentinelSet::builder().start().map(drop));
    Ok(json!({
        "program": program.to_string_lossy(),
        "server": server,
        "version": version,
        "modes": {"single": true, "tls": tls, "cluster": cluster, "sentinel": sentinel},
        "commands": commands,
        "errors": errors,
    }))
}

fn fail(command: &str, e: impl std::fmt::Display) -> Value {
    json!({"ok": false, "command": command, "error": e.to_string()})
}

/// Runs one stdin command; returns its answer and whether to quit.
fn handle(topo: &mut Topology, proxy: Option<&Proxy>, tls: Option<&TlsFiles>, line: &str) -> (Value, bool) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let Some((&command, rest)) = words.split_first() else {
        return (fail("", "empty command"), false);
    };
    let node_command = |topo: &mut Topology, node: Option<&str>| -> Value {
        let (name, server) = match topo.node_mut(node) {
            Ok(x) => x,
            Err(e) => return fail(command, e),
        };
        let done = match command {
            "kill" => {
                server.kill();
                Ok(())
            }
            "restart" => server.restart(),
            "stop" => server.sigstop(),
            "cont" => server.sigcont(),
            _ => Err(Error::new("unknown command")),
        };
        match done {
            Ok(()) => {
                json!({"ok": true, "command": command, "node": name, "port": server.port(), "pid": server.pid()})
            }
            Err(e) => fail(command, e),
        }
    };
    let answer = match (command, rest) {
        ("kill" | "restart" | "stop" | "cont", [] | [_]) => node_command(topo, rest.first().copied()),
        ("log", [] | [_] | [_, _]) => {
            let (node, lines) = match rest {
                [n] if n.parse::<usize>().is_ok() && topo.nodes().len() == 1 => (None, n.parse().ok()),
                [n] => (Some(*n), None),
                [n, l] => (Some(*n), l.parse().ok()),
                _ => (None, None),
            };
            match topo.node_mut(node) {
                Ok((name, s)) => json!({
                    "ok": true, "command": "log", "node": name, "path": s.log_path(),
                    "log": s.log_tail(lines.unwrap_or(LOG_LINES)),
                }),
                Err(e) => fail(command, e),
            }
        }
        ("info", []) => {
            let mut v = topo.summary(tls).to_json();
            if let Some(m) = v.as_object_mut() {
                m.insert("ok".into(), json!(true));
                m.insert("command".into(), json!("info"));
            }
            v
        }
        ("cut-replication", [on @ ("on" | "off")]) => match topo {
            Topology::Sentinel(SentinelSet { replication: Some(proxy), .. }) => {
                proxy.cut_replicas(*on == "on");
                json!({"ok": true, "command": "cut-replication", "cut": *on == "on"})
            }
            _ => fail(command, "no replication proxy (start: sentinel --replication-proxy)"),
        },
        ("blackhole-subscribers", []) => match proxy {
            Some(p) => json!({"ok": true, "command": "blackhole-subscribers", "blackholed": p.blackhole_subscribers()}),
            None => fail(command, "no proxy (start: single --proxy)"),
        },
        ("quit", []) => return (json!({"ok": true, "command": "quit"}), true),
        ("kill" | "restart" | "stop" | "cont" | "log" | "info" | "quit" | "cut-replication" | "blackhole-subscribers", _) => {
            fail(command, format!("bad arguments: {line:?}"))
        }
        _ => {
            fail(command, format!("unknown command {command:?} (kill, restart, stop, cont, log, info, cut-replication, blackhole-subscribers, quit)"))
        }
    };
    (answer, false)
}

enum Event {
    Line(String),
    Eof,
    Signal,
}

fn say(out: &mut impl Write, v: &Value) {
    // A reader that went away is not our problem: stdin EOF will stop us.
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

fn run(argv: &[String]) -> Result<()> {
    let args = parse(argv).map_err(|e| Error::new(format!("{e}\n\n{USAGE}")))?;
    let mut stdout = std::io::stdout();
    match args.kind.as_str() {
        "help" | "--help" | "-h" => {
            let _ = stdout.write_all(USAGE.as_bytes());
            return Ok(());
        }
        "port" => {
            // The lock file lets a caller that listens on the port claim it the same way (see
            // ports::claim) before another process can: tests/testbed.py's HeldPort.
            let port = ports::free_port()?;
            say(&mut stdout, &json!({"port": port, "lock": ports::lock_path(port)}));
            return Ok(());
        }
        "probe" => {
            say(&mut stdout, &probe()?);
            return Ok(());
        }
        _ => {}
    }
    // Both listeners first: a signal or EOF during start-up still stops what was started.
    let (tx, rx) = mpsc::channel();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ])?;
    let to_main = tx.clone();
    std::thread::spawn(move || {
        for _ in signals.forever() {
            if to_main.send(Event::Signal).is_err() {
                return;
            }
        }
    });
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            match line {
                Ok(l) => {
                    if tx.send(Event::Line(l)).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = tx.send(Event::Eof);
    });

    let certs = if args.tls { Some(Certs::generate()?) } else { None };
    let files = certs.as_ref().map(Certs::files);
    let mut topo = start(&args, files.as_ref())?;
    let proxy = match (&topo, args.proxy) {
        (Topology::Single(s), true) => Some(Proxy::start(s.port())?),
        _ => None,
    };
    let mut summary = topo.summary(files.as_ref()).to_json();
    if let (Some(p), Some(m)) = (&proxy, summary.as_object_mut()) {
        m.insert("proxy_port".into(), json!(p.port()));
        m.insert("proxy_url".into(), json!(p.url()));
    }
    say(&mut stdout, &summary);
    while let Ok(event) = rx.recv() {
        match event {
            Event::Line(l) if l.trim().is_empty() => {}
            Event::Line(l) => {
                let (answer, quit) = handle(&mut topo, proxy.as_ref(), files.as_ref(), &l);
                say(&mut stdout, &answer);
                if quit {
                    break;
                }
            }
            Event::Eof | Event::Signal => break,
        }
    }
    drop(proxy);
    drop(topo); // kills every server, removes the directories
    drop(certs);
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match run(&argv) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rlock-testbed: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> std::result::Result<Args, String> {
        parse(&s.split_whitespace().map(String::from).collect::<Vec<_>>())
    }

    #[test]
    fn parses_each_topology() {
        let a = args("single --requirepass pw --appendonly -- --maxmemory 10mb").unwrap();
        assert_eq!(a.kind, "single");
        assert_eq!(a.requirepass.as_deref(), Some("pw"));
        assert!(a.appendonly && !a.tls);
        assert_eq!(a.extra, ["--maxmemory", "10mb"]);
        let a = args("cluster --masters 4 --replicas 1 --node-timeout 2000").unwrap();
        assert_eq!((a.masters, a.replicas, a.node_timeout_ms), (Some(4), Some(1), Some(2000)));
        let a = args("tls-cluster").unwrap();
        assert!(a.kind == "cluster" && a.tls);
        let a = args("tls").unwrap();
        assert!(a.kind == "single" && a.tls);
        assert_eq!(args("sentinel --replicas 2").unwrap().replicas, Some(2));
        assert!(args("").is_err());
        assert!(args("galaxy").is_err());
        assert!(args("single --masters 3").is_err());
        assert!(args("cluster --replicas").is_err());
        assert!(args("cluster --replicas x").is_err());
    }
}
