//! A Redis Cluster on loopback: N masters with R replicas each, every node a private
//! redis-server with its bus port on its port + 10000, checked free (see `ports::reserve_node`), joined with
//! `redis-cli --cluster create`, ready once every node reports `cluster_state:ok`.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Duration;

use crate::resp::{self, Auth, Reply};
use crate::server::{topology_failure, Server};
use crate::tls::TlsFiles;
use crate::{poll_until, Error, Result, HOST};

/// What to start; [`ClusterBuilder::start`] starts it.
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    masters: usize,
    replicas: usize,
    node_timeout: Duration,
    args: Vec<String>,
    auth: Option<Auth>,
    tls: Option<TlsFiles>,
    die_with_parent: bool,
    ready_limit: Duration,
}

impl Default for ClusterBuilder {
    fn default() -> ClusterBuilder {
        ClusterBuilder {
            masters: 3,
            replicas: 0,
            node_timeout: Duration::from_millis(1000),
            args: Vec::new(),
            auth: None,
            tls: None,
            die_with_parent: false,
            ready_limit: Duration::from_secs(30),
        }
    }
}

impl ClusterBuilder {
    /// Number of masters (at least 3; default 3).
    pub fn masters(mut self, n: usize) -> Self {
        self.masters = n;
        self
    }

    /// Replicas per master (default 0).
    pub fn replicas(mut self, n: usize) -> Self {
        self.replicas = n;
        self
    }

    /// `cluster-node-timeout` (default 1 s, so failovers take a few seconds).
    pub fn node_timeout(mut self, limit: Duration) -> Self {
        self.node_timeout = limit;
        self
    }

    /// More `redis-server` arguments for every node, one word each.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// The ACL user the launcher logs in as (for nodes whose `default` user is off or has a
    /// password): used by `redis-cli --cluster create` and the readiness checks.
    pub fn auth(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.auth = Some(Auth { user: user.into(), password: password.into() });
        self
    }

    /// A TLS port per node with these certificates, and the cluster bus over TLS.
    pub fn tls(mut self, files: &TlsFiles) -> Self {
        self.tls = Some(files.clone());
        self
    }

    /// See [`crate::ServerBuilder::die_with_parent`].
    pub fn die_with_parent(mut self, on: bool) -> Self {
        self.die_with_parent = on;
        self
    }

    /// How long to wait for the cluster to form (default 30 s).
    pub fn ready_limit(mut self, limit: Duration) -> Self {
        self.ready_limit = limit;
        self
    }

    /// Starts the nodes, creates the cluster, and waits until every node sees all slots served,
    /// every replica is in sync and (with replicas) every node lists every replica.
    pub fn start(self) -> Result<Cluster> {
        if self.masters < 3 {
            return Err(Error::new(format!("a cluster needs at least 3 masters, not {}", self.masters)));
        }
        let total = self.masters * (1 + self.replicas);
        let mut nodes = Vec::with_capacity(total);
        for i in 0..total {
            let mut b = Server::builder()
                .name(format!("cluster node{i}"))
                .cluster_bus(true)
                .die_with_parent(self.die_with_parent)
                .args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"])
                .args(["--cluster-node-timeout".to_owned(), self.node_timeout.as_millis().to_string()])
                // A replica may take over whatever its lag (tests pause replicas).
                .args(["--cluster-replica-validity-factor", "0"]);
            if let Some(files) = &self.tls {
                b = b.tls(files).args(["--tls-cluster", "yes", "--tls-replication", "yes"]);
            }
            nodes.push(b.args(self.args.iter().cloned()).start()?);
        }
        let mut cluster = Cluster {
            nodes,
            auth: self.auth,
            tls: self.tls.is_some(),
            replicas: self.replicas,
            roles: Vec::new(),
        };
        cluster.create()?;
        cluster.wait_healthy(self.ready_limit)?;
        if self.replicas > 0 {
            cluster.wait_replicas_listed(self.ready_limit)?;
        }
        cluster.roles = cluster.roles_now()?;
        Ok(cluster)
    }
}

/// One slot range of `CLUSTER SLOTS`: its master's and replicas' ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// First slot.
    pub first: u16,
    /// Last slot.
    pub last: u16,
    /// The master's port.
    pub master: u16,
    /// The replicas' ports.
    pub replicas: Vec<u16>,
}

/// Parses a `CLUSTER SLOTS` reply.
pub fn parse_slots(reply: &Reply) -> Result<Vec<Shard>> {
    let bad = || Error::new(format!("unexpected CLUSTER SLOTS reply: {reply:?}"));
    let int = |r: &Reply| r.int().and_then(|i| u16::try_from(i).ok()).ok_or_else(bad);
    let port = |r: &Reply| r.array().and_then(|a| a.get(1)).ok_or_else(bad).and_then(int);
    reply
        .array()
        .ok_or_else(bad)?
        .iter()
        .map(|range| {
            let r = range.array().ok_or_else(bad)?;
            let (Some(first), Some(last), Some(master)) = (r.first(), r.get(1), r.get(2)) else {
                return Err(bad());
            };
            Ok(Shard {
                first: int(first)?,
                last: int(last)?,
                master: port(master)?,
                replicas: r[3..].iter().map(port).collect::<Result<_>>()?,
            })
        })
        .collect()
}

/// A running Redis Cluster; dropping it stops every node.
#[derive(Debug)]
pub struct Cluster {
    nodes: Vec<Server>,
    auth: Option<Auth>,
    tls: bool,
    replicas: usize,
    roles: Vec<(&'static str, Option<u16>)>,
}

impl Cluster {
    /// What to start.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    /// `masters` masters with `replicas` replicas each, node timeout 1 s.
    pub fn start(masters: usize, replicas: usize) -> Result<Cluster> {
        Cluster::builder().masters(masters).replicas(replicas).start()
    }

    fn create(&self) -> Result<()> {
        let mut cmd = Command::new("redis-cli");
        if let Some(a) = &self.auth {
            cmd.args(["--user", &a.user, "--pass", &a.password, "--no-auth-warning"]);
        }
        cmd.args(["--cluster", "create"]);
        cmd.args(self.nodes.iter().map(|n| format!("{HOST}:{}", n.port())));
        cmd.args(["--cluster-replicas", &self.replicas.to_string(), "--cluster-yes"]);
        let out = cmd
            .output()
            .map_err(|e| Error::new(format!("cannot run redis-cli (make deps installs it): {e}")))?;
        if out.status.success() {
            return Ok(());
        }
        let detail = format!(
            "redis-cli --cluster create failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Err(topology_failure("the cluster was not created", &detail, &self.nodes.iter().collect::<Vec<_>>()))
    }

    fn query_text(&self, port: u16, args: &[&str]) -> String {
        resp::query_text(port, self.auth.as_ref(), args).unwrap_or_default()
    }

    /// Waits until every running node reports the cluster ok with all slots served and, for a
    /// replica, its link to the master up.
    pub fn wait_healthy(&self, limit: Duration) -> Result<()> {
        let ports: Vec<u16> = self.nodes.iter().filter(|n| n.is_running()).map(Server::port).collect();
        let mut last = String::new();
        let ok = poll_until(limit, Duration::from_millis(50), || {
            ports.iter().all(|p| {
                let info = self.query_text(*p, &["CLUSTER", "INFO"]);
                let repl = self.query_text(*p, &["INFO", "replication"]);
                let ok = info.contains("cluster_state:ok")
                    && info.contains("cluster_slots_ok:16384")
                    && (repl.contains("role:master") || repl.contains("master_link_status:up"));
                if !ok {
                    last =
                        format!("node on port {p}: {}", info.lines().take(3).collect::<Vec<_>>().join(", "));
                }
                ok
            })
        });
        if ok {
            Ok(())
        } else {
            let nodes: Vec<&Server> = self.nodes.iter().collect();
            Err(topology_failure(&format!("the cluster was not healthy within {limit:?}"), &last, &nodes))
        }
    }

    /// `CLUSTER SLOTS` lists a replica only once it has replicated something: a write to each
    /// master (FLUSHALL of the empty data set is replicated), then wait until every node lists
    /// every replica.
    fn wait_replicas_listed(&self, limit: Duration) -> Result<()> {
        let first = self.nodes.first().map(Server::port).unwrap_or_default();
        let masters: BTreeSet<u16> = self.shards_from(first)?.iter().map(|s| s.master).collect();
        for m in &masters {
            resp::query(*m, self.auth.as_ref(), &["FLUSHALL"])?;
        }
        let ok = poll_until(limit, Duration::from_millis(50), || {
            self.nodes.iter().all(|n| {
                self.shards_from(n.port()).is_ok_and(|shards| {
                    shards.len() == masters.len() && shards.iter().all(|s| s.replicas.len() == self.replicas)
                })
            })
        });
        if ok {
            Ok(())
        } else {
            let nodes: Vec<&Server> = self.nodes.iter().collect();
            Err(topology_failure("the replicas were not listed", &format!("within {limit:?}"), &nodes))
        }
    }

    fn roles_now(&self) -> Result<Vec<(&'static str, Option<u16>)>> {
        let first = self.nodes.first().map(Server::port).unwrap_or_default();
        let shards = self.shards_from(first)?;
        Ok(self
            .nodes
            .iter()
            .map(|n| match shards.iter().find(|s| s.replicas.contains(&n.port())) {
                Some(s) => ("replica", Some(s.master)),
                None => ("master", None),
            })
            .collect())
    }

    /// Every node, in start order.
    pub fn nodes(&self) -> &[Server] {
        &self.nodes
    }

    /// Every node, in start order.
    pub fn nodes_mut(&mut self) -> &mut [Server] {
        &mut self.nodes
    }

    /// The node listening on `port`.
    pub fn node(&mut self, port: u16) -> Option<&mut Server> {
        self.nodes.iter_mut().find(|n| n.port() == port)
    }

    /// Each node's role when the cluster was started ("master", or "replica" with its master's
    /// port); failovers change them later.
    pub fn roles_at_start(&self) -> &[(&'static str, Option<u16>)] {
        &self.roles
    }

    /// Replicas per master.
    pub fn replicas_per_master(&self) -> usize {
        self.replicas
    }

    /// The ACL user the launcher logs in as.
    pub fn auth(&self) -> Option<&Auth> {
        self.auth.as_ref()
    }

    /// `127.0.0.1:p1,127.0.0.1:p2,...` (the plain ports).
    pub fn hosts(&self) -> String {
        self.nodes.iter().map(|n| format!("{HOST}:{}", n.port())).collect::<Vec<_>>().join(",")
    }

    /// `redis+cluster://127.0.0.1:p1,.../` with every node as a seed.
    pub fn url(&self) -> String {
        format!("redis+cluster://{}/", self.hosts())
    }

    /// `rediss+cluster://127.0.0.1:t1,.../` over the TLS ports, for a TLS cluster.
    pub fn tls_url(&self) -> Option<String> {
        if !self.tls {
            return None;
        }
        let hosts: Vec<String> =
            self.nodes.iter().filter_map(|n| n.tls_port()).map(|p| format!("{HOST}:{p}")).collect();
        Some(format!("rediss+cluster://{}/", hosts.join(",")))
    }

    /// The slot map as the node on `port` reports it.
    pub fn shards_from(&self, port: u16) -> Result<Vec<Shard>> {
        parse_slots(&resp::query(port, self.auth.as_ref(), &["CLUSTER", "SLOTS"])?)
    }

    /// The shard serving `key`, asked of the first running node.
    pub fn shard_of(&self, key: &str) -> Result<Shard> {
        let alive = self
            .nodes
            .iter()
            .find(|n| n.is_running())
            .map(Server::port)
            .ok_or_else(|| Error::new("no node is running"))?;
        let slot = resp::query(alive, self.auth.as_ref(), &["CLUSTER", "KEYSLOT", key])?
            .int()
            .ok_or_else(|| Error::new("CLUSTER KEYSLOT did not answer a number"))?;
        self.shards_from(alive)?
            .into_iter()
            .find(|s| (i64::from(s.first)..=i64::from(s.last)).contains(&slot))
            .ok_or_else(|| Error::new(format!("no shard serves slot {slot}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cluster_slots() {
        let node = |p: i64| {
            Reply::Array(vec![Reply::Bulk(b"127.0.0.1".to_vec()), Reply::Int(p), Reply::Bulk(b"id".to_vec())])
        };
        let reply = Reply::Array(vec![
            Reply::Array(vec![Reply::Int(0), Reply::Int(5460), node(10_001), node(10_004)]),
            Reply::Array(vec![Reply::Int(5461), Reply::Int(16_383), node(10_002)]),
        ]);
        assert_eq!(
            parse_slots(&reply).unwrap(),
            vec![
                Shard { first: 0, last: 5460, master: 10_001, replicas: vec![10_004] },
                Shard { first: 5461, last: 16_383, master: 10_002, replicas: vec![] },
            ]
        );
        assert!(parse_slots(&Reply::Int(1)).is_err());
        assert!(parse_slots(&Reply::Array(vec![Reply::Array(vec![Reply::Int(0)])])).is_err());
    }

    #[test]
    fn fewer_than_three_masters_is_an_error() {
        assert!(Cluster::builder().masters(2).start().is_err());
    }
}
