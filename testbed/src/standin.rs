//! Stand-ins for managed endpoints (see shared/spec/services.md): private servers that refuse
//! what a managed service's endpoint refuses, so rlock's suites can meet each restriction on
//! loopback.

use std::time::Duration;

use crate::server::{Server, ServerBuilder};
use crate::{poll_until, resp, Error, Result};

/// The name `CLUSTER` is renamed to on the proxy-endpoint stand-in: only the testbed uses it.
pub const CLUSTER_SECRET: &str = "rlock-testbed-cluster";

/// How long a stand-in may take to be ready after its server answers PING.
const READY: Duration = Duration::from_secs(10);

/// A proxy in front of a sharded cluster (Azure Managed Redis with the Enterprise cluster
/// policy, ElastiCache Serverless, Redis Software with the OSS cluster API off): one server with
/// `cluster-enabled yes` that owns all 16384 slots, with `CLUSTER` renamed away, reached as
/// `redis://`. Every key is local, yet a script or command whose keys lie in two hash slots
/// is refused with `CROSSSLOT`, and `CLUSTER` is an unknown command.
pub fn proxy_endpoint(builder: ServerBuilder) -> Result<Server> {
    let server = builder
        .cluster_bus(true)
        .args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"])
        .args(["--rename-command", "CLUSTER", CLUSTER_SECRET])
        .start()?;
    let port = server.port();
    // ADDSLOTS with every slot, not ADDSLOTSRANGE, which Redis 6.2 lacks.
    let slots: Vec<String> = (0..16384).map(|s: u16| s.to_string()).collect();
    let mut add = vec![CLUSTER_SECRET, "ADDSLOTS"];
    add.extend(slots.iter().map(String::as_str));
    if let resp::Reply::Error(e) = resp::query(port, None, &add)? {
        return Err(Error::new(format!("the proxy-endpoint stand-in on port {port}: ADDSLOTS: {e}")));
    }
    let ok = || {
        resp::query_text(port, None, &[CLUSTER_SECRET, "INFO"]).is_ok_and(|t| t.contains("cluster_state:ok"))
    };
    if !poll_until(READY, Duration::from_millis(20), ok) {
        return Err(Error::new(format!(
            "the proxy-endpoint stand-in on port {port} did not reach cluster_state:ok within {READY:?}; \
             its log:\n{}",
            server.log_tail(crate::server::LOG_LINES)
        )));
    }
    Ok(server)
}

/// The arguments that take from a server what endpoints without replication waits or admin
/// commands refuse (ElastiCache Serverless, restricted managed services): `WAIT`, `WAITAOF`
/// (where the server has it), `CONFIG` and `CLIENT` renamed to nothing.
pub fn restricted_args(has_waitaof: bool) -> Vec<String> {
    let mut names = vec!["WAIT", "CONFIG", "CLIENT"];
    if has_waitaof {
        names.push("WAITAOF");
    }
    names.into_iter().flat_map(|n| ["--rename-command".to_owned(), n.to_owned(), String::new()]).collect()
}

/// Whether the server binary the testbed starts has `command` (asked of a throwaway server
/// with `COMMAND INFO`).
pub fn has_command(command: &str) -> Result<bool> {
    let probe = Server::builder().name("command probe").start()?;
    let known = resp::query(probe.port(), None, &["COMMAND", "INFO", command])
        .ok()
        .and_then(|r| r.array().and_then(|a| a.first().map(|x| x.array().is_some())));
    Ok(known.unwrap_or(false))
}

/// A server without what [`restricted_args`] takes away (`WAITAOF` too where the binary has
/// it), started from `builder`.
pub fn restricted(builder: ServerBuilder) -> Result<Server> {
    builder.args(restricted_args(has_command("WAITAOF")?)).start()
}

/// A server that evicts under memory pressure ([`eviction_args`]), started from `builder`.
pub fn evicting(builder: ServerBuilder) -> Result<Server> {
    builder.args(eviction_args()).start()
}

/// The arguments of a server that evicts under memory pressure: `maxmemory` and
/// `volatile-lru` (keys with a TTL, held locks among them, are evicted first).
pub fn eviction_args() -> Vec<String> {
    ["--maxmemory", "4mb", "--maxmemory-policy", "volatile-lru"].map(str::to_owned).to_vec()
}

/// The twemproxy program: `$RLOCK_TWEMPROXY`, else `nutcracker` on PATH, else Debian's
/// `/usr/sbin/nutcracker` (package `nutcracker`, which `make deps` installs).
pub fn twemproxy_program() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("RLOCK_TWEMPROXY") {
        return p.into();
    }
    let on_path = std::env::var_os("PATH")
        .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join("nutcracker")).find(|p| p.is_file()));
    on_path.unwrap_or_else(|| "/usr/sbin/nutcracker".into())
}

/// twemproxy (`nutcracker`) sharding by `{hash tag}` over two private servers: a proxy that
/// routes each command and script by its first key, closes a connection on a command it does
/// not know (`HELLO`, `CLIENT`, `SUBSCRIBE`, `CLUSTER`), and has no pub/sub. Stopped, with its
/// servers, when dropped.
pub struct Twemproxy {
    child: std::process::Child,
    dir: tempfile::TempDir,
    ports: crate::ports::Reserved,
    shards: Vec<Server>,
}

impl std::fmt::Debug for Twemproxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Twemproxy").field("port", &self.port()).field("shards", &self.shards).finish()
    }
}

impl Twemproxy {
    /// Starts two servers and twemproxy in front of them (`hash_tag: "{}"`, ketama over
    /// fnv1a_64), and waits until the proxy answers PING.
    pub fn start() -> Result<Twemproxy> {
        let shards = (0..2)
            .map(|i| Server::builder().name(format!("twemproxy shard{i}")).die_with_parent(true).start())
            .collect::<Result<Vec<_>>>()?;
        let ports = crate::ports::reserve(2)?;
        let (listen, stats) = match ports.ports() {
            [l, s] => (*l, *s),
            _ => return Err(Error::new("two ports were not reserved")),
        };
        let dir = tempfile::Builder::new().prefix("rlock-testbed-twemproxy-").tempdir()?;
        let servers: String = shards
            .iter()
            .enumerate()
            .map(|(i, s)| format!("    - {}:{}:1 shard{i}\n", crate::HOST, s.port()))
            .collect();
        let conf = format!(
            "rlock:\n  listen: {}:{listen}\n  hash: fnv1a_64\n  hash_tag: \"{{}}\"\n  distribution: ketama\n  \
             redis: true\n  auto_eject_hosts: false\n  timeout: 10000\n  servers:\n{servers}",
            crate::HOST
        );
        let conf_path = dir.path().join("nutcracker.yml");
        std::fs::write(&conf_path, conf)?;
        let log = dir.path().join("nutcracker.log");
        let program = twemproxy_program();
        let mut command = std::process::Command::new(&program);
        crate::server::die_with_parent(&mut command);
        let child = command
            .arg("-c")
            .arg(&conf_path)
            .arg("-o")
            .arg(&log)
            .args(["-a", crate::HOST, "-s", &stats.to_string()])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| {
                Error::new(format!("could not start {} (apt-get install nutcracker): {e}", program.display()))
            })?;
        let mut proxy = Twemproxy { child, dir, ports, shards };
        let ready = poll_until(READY, Duration::from_millis(20), || {
            matches!(proxy.child.try_wait(), Ok(Some(_)))
                || resp::query(listen, None, &["PING"]).is_ok_and(|r| r.text().is_some())
        });
        if !ready || !matches!(proxy.child.try_wait(), Ok(None)) {
            return Err(Error::new(format!(
                "twemproxy on port {listen} did not answer a RESP PING within {READY:?}; its log:\n{}",
                crate::server::tail(&log, crate::server::LOG_LINES)
            )));
        }
        Ok(proxy)
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.ports.ports().first().copied().unwrap_or_default()
    }

    /// A `redis://` URL of the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}:{}/", crate::HOST, self.port())
    }

    /// The two servers behind it.
    pub fn shards(&self) -> &[Server] {
        &self.shards
    }

    /// The two servers behind it, to kill or restart.
    pub fn shards_mut(&mut self) -> &mut [Server] {
        &mut self.shards
    }

    /// The proxy's log.
    pub fn log_tail(&self, n: usize) -> String {
        crate::server::tail(&self.dir.path().join("nutcracker.log"), n)
    }
}

impl Drop for Twemproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
