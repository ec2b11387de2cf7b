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

/// The arguments of a server that evicts under memory pressure: `maxmemory` and
/// `volatile-lru` (keys with a TTL, held locks among them, are evicted first).
pub fn eviction_args() -> Vec<String> {
    ["--maxmemory", "4mb", "--maxmemory-policy", "volatile-lru"].map(str::to_owned).to_vec()
}
