//! Real topologies on loopback, each node a private redis-server in its own temp directory:
//! a Redis Cluster (with or without replicas) and a master + replica + 3 sentinels set.

use std::process::Command;
use std::time::{Duration, Instant};

use super::{free_port, RedisServer};

/// Waits (polling every 50 ms) until `cond` holds; panics with `what` after `limit`.
pub fn wait_for(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out after {limit:?} waiting for {what}");
}

fn query<T: redis::FromRedisValue>(port: u16, cmd: &mut redis::Cmd) -> redis::RedisResult<T> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/"))?;
    let mut conn = client.get_connection_with_timeout(Duration::from_secs(2))?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    cmd.query(&mut conn)
}

fn info(port: u16, section: &str) -> String {
    query(port, redis::cmd("INFO").arg(section)).unwrap_or_default()
}

/// A Redis Cluster of `masters` masters with `replicas` replicas each.
pub struct Cluster {
    pub nodes: Vec<RedisServer>,
}

/// One slot range of `CLUSTER SLOTS`: its master's and replicas' ports.
#[derive(Debug, Clone)]
pub struct Shard {
    pub first: u16,
    pub last: u16,
    pub master: u16,
    pub replicas: Vec<u16>,
}

impl Cluster {
    /// Starts the nodes (node timeout 1 s, so failovers take a few seconds), joins them with
    /// `redis-cli --cluster create`, and waits until every node sees all slots served and
    /// every replica is in sync.
    pub fn start(masters: usize, replicas: usize) -> Cluster {
        let nodes: Vec<RedisServer> = (0..masters * (1 + replicas))
            .map(|_| {
                RedisServer::launch(None, None, &|_| {
                    [
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "1000",
                        // A replica may take over whatever its lag (tests pause replicas).
                        "--cluster-replica-validity-factor",
                        "0",
                        "--cluster-port",
                    ]
                    .iter()
                    .map(|s| s.to_string())
                    .chain([free_port().to_string()])
                    .collect()
                })
            })
            .collect();
        let mut cmd = Command::new("redis-cli");
        cmd.arg("--cluster").arg("create");
        for n in &nodes {
            cmd.arg(format!("127.0.0.1:{}", n.port));
        }
        let out = cmd
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("redis-cli must be installed");
        assert!(out.status.success(), "cluster create failed: {}", String::from_utf8_lossy(&out.stdout));
        let cluster = Cluster { nodes };
        cluster.wait_healthy(Duration::from_secs(30));
        if replicas > 0 {
            // CLUSTER SLOTS lists a replica only once it has replicated something (offset > 0):
            // write to every master, then wait until every node lists every replica.
            let masters: std::collections::HashSet<u16> =
                cluster.shards_from(cluster.nodes[0].port).iter().map(|s| s.master).collect();
            let mut written = std::collections::HashSet::new();
            for i in 0.. {
                let key = format!("warmup-{i}");
                let shard = cluster.shard_of(&key);
                if written.insert(shard.master) {
                    let _: () =
                        redis::cmd("SET").arg(&key).arg(1).query(&mut cluster.conn(shard.master)).unwrap();
                }
                if written.len() == masters.len() {
                    break;
                }
            }
            wait_for(Duration::from_secs(30), "every node to list every replica", || {
                cluster.nodes.iter().all(|n| {
                    let shards = cluster.shards_from(n.port);
                    shards.len() == masters.len() && shards.iter().all(|s| s.replicas.len() == replicas)
                })
            });
        }
        cluster
    }

    /// Waits until every running node reports the cluster ok and every replica's link is up.
    pub fn wait_healthy(&self, limit: Duration) {
        let ports: Vec<u16> = self.nodes.iter().map(|n| n.port).collect();
        wait_for(limit, "a healthy cluster", || {
            ports.iter().all(|p| {
                let cluster = query::<String>(*p, redis::cmd("CLUSTER").arg("INFO")).unwrap_or_default();
                let repl = info(*p, "replication");
                cluster.contains("cluster_state:ok")
                    && cluster.contains("cluster_slots_ok:16384")
                    && (repl.contains("role:master") || repl.contains("master_link_status:up"))
            })
        });
    }

    /// `redis+cluster://` URL with every node as a seed.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis+cluster://{}/", hosts.join(","))
    }

    /// The slot map, as `alive` (a node still running) reports it.
    pub fn shards_from(&self, alive: u16) -> Vec<Shard> {
        let slots: Vec<Vec<redis::Value>> = query(alive, redis::cmd("CLUSTER").arg("SLOTS")).unwrap();
        slots
            .iter()
            .map(|r| {
                let int = |v: &redis::Value| match v {
                    redis::Value::Int(i) => *i as u16,
                    other => panic!("not an int: {other:?}"),
                };
                let port = |v: &redis::Value| match v {
                    redis::Value::Array(a) => int(&a[1]),
                    other => panic!("not a node: {other:?}"),
                };
                Shard {
                    first: int(&r[0]),
                    last: int(&r[1]),
                    master: port(&r[2]),
                    replicas: r[3..].iter().map(port).collect(),
                }
            })
            .collect()
    }

    /// The shard serving `key`.
    pub fn shard_of(&self, key: &str) -> Shard {
        let alive = self.nodes.iter().find(|n| n.is_running()).map(|n| n.port).unwrap();
        let slot: u16 = query(alive, redis::cmd("CLUSTER").arg("KEYSLOT").arg(key)).unwrap();
        self.shards_from(alive).into_iter().find(|s| (s.first..=s.last).contains(&slot)).unwrap()
    }

    /// A plain connection to the node on `port` (for a replica: in READONLY mode).
    pub fn conn(&self, port: u16) -> redis::Connection {
        let mut c =
            redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap();
        let _: redis::RedisResult<()> = redis::cmd("READONLY").query(&mut c);
        c
    }

    /// The node listening on `port`.
    pub fn node(&mut self, port: u16) -> &mut RedisServer {
        self.nodes.iter_mut().find(|n| n.port == port).unwrap()
    }

    /// Calls of `command` summed over the running nodes (`INFO commandstats`).
    pub fn calls(&self, command: &str) -> u64 {
        self.nodes.iter().filter(|n| n.is_running()).map(|n| n.calls(command)).sum()
    }
}

/// A master, one replica and three sentinels (quorum 2, down after 1 s) watching it as
/// `mymaster`.
pub struct SentinelSet {
    pub master: RedisServer,
    pub replica: RedisServer,
    pub sentinels: Vec<RedisServer>,
}

pub const SERVICE: &str = "mymaster";

impl SentinelSet {
    pub fn start() -> SentinelSet {
        let master = RedisServer::start();
        let mport = master.port.to_string();
        let replica = RedisServer::launch(None, None, &|_| {
            vec!["--replicaof".into(), "127.0.0.1".into(), mport.clone()]
        });
        wait_for(Duration::from_secs(20), "the replica to sync", || {
            info(replica.port, "replication").contains("master_link_status:up")
        });
        let conf = format!(
            "sentinel monitor {SERVICE} 127.0.0.1 {} 2\n\
             sentinel down-after-milliseconds {SERVICE} 1000\n\
             sentinel failover-timeout {SERVICE} 3000\n\
             sentinel parallel-syncs {SERVICE} 1\n",
            master.port
        );
        let sentinels: Vec<RedisServer> =
            (0..3).map(|_| RedisServer::launch(None, Some(&conf), &|_| vec!["--sentinel".into()])).collect();
        let set = SentinelSet { master, replica, sentinels };
        // A failover needs every sentinel to know the replica and the other sentinels.
        wait_for(Duration::from_secs(30), "the sentinels to find each other and the replica", || {
            set.sentinels.iter().all(|s| {
                let others: redis::RedisResult<Vec<redis::Value>> =
                    query(s.port, redis::cmd("SENTINEL").arg("SENTINELS").arg(SERVICE));
                let replicas: redis::RedisResult<Vec<redis::Value>> =
                    query(s.port, redis::cmd("SENTINEL").arg("REPLICAS").arg(SERVICE));
                others.is_ok_and(|o| o.len() == 2) && replicas.is_ok_and(|r| r.len() == 1)
            })
        });
        set
    }

    /// `redis+sentinel://` URL naming all three sentinels.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self.sentinels.iter().map(|s| format!("127.0.0.1:{}", s.port)).collect();
        format!("redis+sentinel://{}/{SERVICE}", hosts.join(","))
    }

    /// The master's port as a running sentinel reports it.
    pub fn reported_master(&self) -> Option<u16> {
        self.sentinels.iter().filter(|s| s.is_running()).find_map(|s| {
            let addr: redis::RedisResult<Option<(String, u16)>> =
                query(s.port, redis::cmd("SENTINEL").arg("get-master-addr-by-name").arg(SERVICE));
            addr.ok().flatten().map(|(_, p)| p)
        })
    }
}
