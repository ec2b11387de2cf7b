//! The connections and message lists of a scenario ([`Ctx`]) with its waits on the Java side
//! (a subscribed waiter, a fair lock's queue), and the Redisson names those waits look at.

use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncCommands, AsyncConnectionConfig, Cmd, Pipeline, RedisFuture, Value};
use rlock::{Client, ClientOptions, Lock, Ttl};

use crate::{check, HANDSHAKE, R};

/// The pub/sub channel Redisson and rlock use for the lock `name` (wire-format.md).
pub(crate) fn channel(name: &str) -> String {
    format!("redisson_lock__channel:{{{name}}}")
}

/// The queue (LIST of waiting owners) of the fair lock `name`.
fn fair_queue(name: &str) -> String {
    format!("redisson_lock_queue:{{{name}}}")
}

/// The waiters' deadlines (ZSET) of the fair lock `name`.
fn fair_timeouts(name: &str) -> String {
    format!("redisson_lock_timeout:{{{name}}}")
}

/// A connection to one server or to a cluster (each command routed by its key), for the data
/// and message commands of the scenarios.
#[derive(Clone)]
pub(crate) enum Conn {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// The connections and message lists of one scenario.
pub(crate) struct Ctx {
    pub(crate) client: Client,
    /// Data commands (counters, markers, queries, RPUSH to the Java side).
    pub(crate) data: Conn,
    /// BLPOP only: a blocked BLPOP holds its connection, so nothing else may queue behind it.
    blocking: Conn,
    /// One connection per server (every master of a cluster), for PUBSUB, which reports only
    /// the subscriptions of the node it is asked.
    pub(crate) nodes: Vec<MultiplexedConnection>,
    /// Whether Redis is a cluster (sharded subscriptions are counted too).
    pub(crate) cluster: bool,
    /// Whether the servers answer `PUBSUB SHARDNUMSUB` (not Redis 6.2, which has no sharded
    /// pub/sub): only then are sharded subscribers counted.
    counts_sharded: bool,
    inbox: String,
    outbox: String,
}

/// A multiplexed connection to `url` for the scenario's own commands, waiting up to 10 s for each
/// reply (redis-rs's default is 500 ms, too short beside other suites).
pub(crate) async fn patient_conn(url: &str) -> R<redis::aio::MultiplexedConnection> {
    let patient = AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
    Ok(redis::Client::open(url)?.get_multiplexed_async_connection_with_config(&patient).await?)
}

impl Ctx {
    pub(crate) async fn new(scenario: &str, url: &str, options: ClientOptions) -> R<Ctx> {
        let client = Client::connect(url, options).await?;
        let (data, blocking, nodes, cluster) = match url.strip_prefix("redis+cluster://") {
            Some(hosts) => {
                let urls: Vec<String> =
                    hosts.trim_end_matches('/').split(',').map(|h| format!("redis://{h}")).collect();
                let data = ClusterClient::builder(urls.clone())
                    .response_timeout(Duration::from_secs(10))
                    .build()?
                    .get_async_connection()
                    .await?;
                let blocking = ClusterClient::new(urls.clone())?.get_async_connection().await?;
                // The seed nodes are every master (rlock-testbed's cluster has no replicas). They
                // wait as long as `data` does: with redis-rs's default (500 ms) a PUBSUB NUMSUB
                // beside another suite timed out, and the holder gave up before its release
                // (2026-12-04, wake-to-java on a Redis 6.2 cluster).
                let mut nodes = Vec::new();
                for u in &urls {
                    nodes.push(patient_conn(u).await?);
                }
                (Conn::Cluster(data), Conn::Cluster(blocking), nodes, true)
            }
            None => {
                let redis = redis::Client::open(url)?;
                let data = redis
                    .get_multiplexed_async_connection_with_config(
                        &AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(10))),
                    )
                    .await?;
                let blocking = redis
                    .get_multiplexed_async_connection_with_config(
                        &AsyncConnectionConfig::new().set_response_timeout(None),
                    )
                    .await?;
                (Conn::Single(data.clone()), Conn::Single(blocking), vec![data], false)
            }
        };
        let counts_sharded = cluster
            && redis::cmd("PUBSUB")
                .arg("SHARDNUMSUB")
                .query_async::<redis::Value>(&mut nodes[0].clone())
                .await
                .is_ok();
        if cluster {
            let sharded = if client.sharded_pubsub() { "on" } else { "off" };
            println!("rust: cluster, sharded pub/sub {sharded}");
        }
        Ok(Ctx {
            client,
            data,
            blocking,
            nodes,
            cluster,
            counts_sharded,
            inbox: format!("interop:{scenario}:to-rust"),
            outbox: format!("interop:{scenario}:to-java"),
        })
    }

    /// Sends `msg` (`"<tag> [value]"`) to the Java side.
    pub(crate) async fn send(&self, msg: &str) -> R<()> {
        let _: i64 = self.data.clone().rpush(&self.outbox, msg).await?;
        Ok(())
    }

    /// Waits for the message tagged `tag` from the Java side and returns its value part.
    pub(crate) async fn recv(&self, tag: &str) -> R<String> {
        let got: Option<[String; 2]> =
            self.blocking.clone().blpop(&self.inbox, HANDSHAKE.as_secs_f64()).await?;
        let Some([_, msg]) = got else {
            return Err(format!("no '{tag}' from the Java side within {HANDSHAKE:?}").into());
        };
        if msg.starts_with("abort") {
            return Err(format!("the Java side gave up: {msg}").into());
        }
        let (got_tag, value) = msg.split_once(' ').unwrap_or((msg.as_str(), ""));
        check(got_tag == tag, format!("expected '{tag}' from the Java side, got '{msg}'"))?;
        Ok(value.to_owned())
    }

    /// Waits until some client (the Java side here) is subscribed to `channel`, i.e. a
    /// Redisson waiter is about to sleep on it. No event tells us that, so poll with a bound.
    /// Every server is asked (a cluster's classic subscriptions live on whichever node the
    /// client chose), and on a cluster with sharded pub/sub sharded subscriptions count too.
    pub(crate) async fn await_subscriber(&self, channel: &str) -> R<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut n = 0;
            for node in &self.nodes {
                let kinds: &[&str] =
                    if self.counts_sharded { &["NUMSUB", "SHARDNUMSUB"] } else { &["NUMSUB"] };
                for kind in kinds {
                    let (_, k): (String, u64) =
                        redis::cmd("PUBSUB").arg(*kind).arg(channel).query_async(&mut node.clone()).await?;
                    n += k;
                }
            }
            if n >= 1 {
                return Ok(());
            }
            check(
                Instant::now() < deadline,
                format!("no Redisson waiter subscribed to {channel} within 20 s"),
            )?;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Waits until `owner` is the last of `n` waiters in the fair lock `name`'s queue. No
    /// event tells us that, so poll with a bound.
    pub(crate) async fn await_queued(&self, name: &str, n: usize, owner: &str) -> R<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let queue = self.fair_queue(name).await?;
            if queue.len() == n && queue[n - 1] == owner {
                return Ok(());
            }
            // Nobody else queues meanwhile: a full queue without `owner` last is wrong at once.
            check(
                queue.len() < n && Instant::now() < deadline,
                format!("{owner} did not queue up as waiter {n} of {name}; the queue is {queue:?}"),
            )?;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The fair lock `name`'s queue of waiting owners.
    pub(crate) async fn fair_queue(&self, name: &str) -> R<Vec<String>> {
        Ok(self.data.clone().lrange(fair_queue(name), 0, -1).await?)
    }

    /// Fails unless the fair lock `name`'s queue and deadline keys are both gone.
    pub(crate) async fn check_fair_keys_gone(&self, name: &str) -> R<()> {
        let n: u64 = redis::cmd("EXISTS")
            .arg(fair_queue(name))
            .arg(fair_timeouts(name))
            .query_async(&mut self.data.clone())
            .await?;
        check(n == 0, format!("the queue or deadline keys of {name} are left"))
    }

    /// The remaining lease of `lock` in milliseconds, failing unless the lock is held.
    pub(crate) async fn ttl_ms(&self, lock: &Lock) -> R<i64> {
        match lock.remaining_ttl().await? {
            Ttl::Remaining(d) => Ok(d.as_millis() as i64),
            other => Err(format!("{} should be held with a lease, its TTL is {other:?}", lock.name()).into()),
        }
    }

    /// The hash of the lock key: owner -> hold count.
    pub(crate) async fn fields(&self, name: &str) -> R<Vec<(String, String)>> {
        let map: std::collections::HashMap<String, String> = self.data.clone().hgetall(name).await?;
        Ok(map.into_iter().collect())
    }
}
