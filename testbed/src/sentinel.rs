//! A Sentinel set on loopback: a master, its replica(s), and three sentinels (quorum 2, down
//! after 1 s) watching it as `mymaster`; ready once the replicas are in sync and every sentinel
//! knows the others and the replicas.

use std::time::Duration;

use crate::proxy::Proxy;
use crate::resp::{self, Reply};
use crate::server::{topology_failure, Server};
use crate::{poll_until, Result, HOST};

/// The name the sentinels monitor the master under.
pub const SERVICE: &str = "mymaster";

/// What to start; [`SentinelBuilder::start`] starts it.
#[derive(Debug, Clone)]
pub struct SentinelBuilder {
    replicas: usize,
    sentinels: usize,
    quorum: usize,
    down_after: Duration,
    failover_timeout: Duration,
    die_with_parent: bool,
    ready_limit: Duration,
    replication_proxy: bool,
}

impl Default for SentinelBuilder {
    fn default() -> SentinelBuilder {
        SentinelBuilder {
            replicas: 1,
            sentinels: 3,
            quorum: 2,
            down_after: Duration::from_millis(1000),
            failover_timeout: Duration::from_millis(3000),
            die_with_parent: false,
            ready_limit: Duration::from_secs(30),
            replication_proxy: false,
        }
    }
}

impl SentinelBuilder {
    /// Replicas of the master (default 1).
    pub fn replicas(mut self, n: usize) -> Self {
        self.replicas = n;
        self
    }

    /// `down-after-milliseconds` (default 1 s).
    pub fn down_after(mut self, limit: Duration) -> Self {
        self.down_after = limit;
        self
    }

    /// See [`crate::ServerBuilder::die_with_parent`].
    pub fn die_with_parent(mut self, on: bool) -> Self {
        self.die_with_parent = on;
        self
    }

    /// Whether the master is known by a [`Proxy`] in front of it (default no): the replicas
    /// replicate through it and the sentinels monitor it there (so they never "fix" a replica
    /// whose master address differs from theirs), and clients are sent to it. A test can then
    /// cut the replicas' connections alone ([`Proxy::cut_replicas`], through
    /// [`SentinelSet::replication`]) while sentinels and clients still reach the master.
    pub fn replication_proxy(mut self, on: bool) -> Self {
        self.replication_proxy = on;
        self
    }

    /// Starts the master, the replicas (waiting until they are in sync) and the sentinels
    /// (waiting until each knows the other sentinels and the replicas, which a failover needs).
    pub fn start(self) -> Result<SentinelSet> {
        let master = Server::builder().name("master").die_with_parent(self.die_with_parent).start()?;
        let replication = if self.replication_proxy { Some(Proxy::start(master.port())?) } else { None };
        let mport = replication.as_ref().map_or(master.port(), Proxy::port).to_string();
        let mut replicas = Vec::with_capacity(self.replicas);
        for i in 0..self.replicas {
            replicas.push(
                Server::builder()
                    .name(format!("replica{i}"))
                    .die_with_parent(self.die_with_parent)
                    .args(["--replicaof", HOST, &mport])
                    .start()?,
            );
        }
        let synced = poll_until(self.ready_limit, Duration::from_millis(50), || {
            replicas.iter().all(|r| {
                resp::query_text(r.port(), None, &["INFO", "replication"])
                    .is_ok_and(|i| i.contains("master_link_status:up"))
            })
        });
        if !synced {
            let nodes: Vec<&Server> = std::iter::once(&master).chain(&replicas).collect();
            return Err(topology_failure(
                "the replicas did not sync",
                &format!("{:?}", self.ready_limit),
                &nodes,
            ));
        }
        let conf = format!(
            "sentinel monitor {SERVICE} {HOST} {} {}\n\
             sentinel down-after-milliseconds {SERVICE} {}\n\
             sentinel failover-timeout {SERVICE} {}\n\
             sentinel parallel-syncs {SERVICE} 1\n",
            mport,
            self.quorum,
            self.down_after.as_millis(),
            self.failover_timeout.as_millis()
        );
        let mut sentinels = Vec::with_capacity(self.sentinels);
        for i in 0..self.sentinels {
            sentinels.push(
                Server::builder()
                    .name(format!("sentinel{i}"))
                    .die_with_parent(self.die_with_parent)
                    .conf(conf.clone())
                    .arg("--sentinel")
                    .start()?,
            );
        }
        let set = SentinelSet { master, replicas, sentinels, replication };
        let (others, nreplicas) = (self.sentinels.saturating_sub(1), self.replicas);
        let len = |r: Result<Reply>| r.ok().and_then(|r| r.array().map(<[Reply]>::len));
        let ready = poll_until(self.ready_limit, Duration::from_millis(50), || {
            set.sentinels.iter().all(|s| {
                len(resp::query(s.port(), None, &["SENTINEL", "SENTINELS", SERVICE])) == Some(others)
                    && len(resp::query(s.port(), None, &["SENTINEL", "REPLICAS", SERVICE])) == Some(nreplicas)
            })
        });
        if !ready {
            return Err(topology_failure(
                "the sentinels did not find each other and the replicas",
                &format!("within {:?}", self.ready_limit),
                &set.nodes(),
            ));
        }
        Ok(set)
    }
}

/// A running Sentinel set; dropping it stops every process.
#[derive(Debug)]
pub struct SentinelSet {
    /// The master the sentinels were told about.
    pub master: Server,
    /// Its replicas.
    pub replicas: Vec<Server>,
    /// The sentinels.
    pub sentinels: Vec<Server>,
    /// The proxy in front of the master, when asked for ([`SentinelBuilder::replication_proxy`]):
    /// `cut_replicas(true)` partitions the replicas from the master.
    pub replication: Option<Proxy>,
}

impl SentinelSet {
    /// What to start.
    pub fn builder() -> SentinelBuilder {
        SentinelBuilder::default()
    }

    /// A master, one replica and three sentinels.
    pub fn start() -> Result<SentinelSet> {
        SentinelSet::builder().start()
    }

    /// Master, replicas, sentinels, in that order.
    pub fn nodes(&self) -> Vec<&Server> {
        std::iter::once(&self.master).chain(&self.replicas).chain(&self.sentinels).collect()
    }

    /// Master, replicas, sentinels, in that order.
    pub fn nodes_mut(&mut self) -> Vec<&mut Server> {
        std::iter::once(&mut self.master).chain(&mut self.replicas).chain(&mut self.sentinels).collect()
    }

    /// `redis+sentinel://127.0.0.1:s1,.../mymaster` naming every sentinel.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.sentinels.iter().map(|s| format!("{HOST}:{}", s.port())).collect();
        format!("redis+sentinel://{}/{SERVICE}", hosts.join(","))
    }

    /// The master's port as the first running sentinel that answers reports it.
    pub fn reported_master(&self) -> Option<u16> {
        self.sentinels.iter().filter(|s| s.is_running()).find_map(|s| {
            let r = resp::query(s.port(), None, &["SENTINEL", "get-master-addr-by-name", SERVICE]).ok()?;
            r.array()?.get(1)?.text()?.parse().ok()
        })
    }
}
