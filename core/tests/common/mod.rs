//! Thin helpers over rlock-testbed (the launcher that starts every private server, cluster,
//! sentinel set and TLS server): inspection through the `redis` crate, and polling.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

pub mod family;

#[allow(unused_imports)] // each test file uses some of them
pub use rlock_testbed::{Certs, Cluster, Proxy, SentinelSet, Server};

/// The version the server on `port` reports in `INFO server` (Valkey's own, else
/// `redis_version`): what an error naming the server must contain.
pub fn server_version(port: u16) -> String {
    rlock_testbed::resp::server_version(port, None).expect("INFO server").1
}

/// A plain synchronous connection to 127.0.0.1:`port` (for a cluster replica: in READONLY mode).
pub fn conn_to(port: u16) -> redis::Connection {
    let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap().get_connection().unwrap();
    let _: redis::RedisResult<()> = redis::cmd("READONLY").query(&mut c);
    c
}

/// A multiplexed connection for a test's own commands, waiting up to 30 s for each reply: with
/// redis-rs's default (500 ms) a test's SET behind twemproxy gave up on a loaded CI machine
/// (2026-12-04) while every lock call went through.
pub async fn patient_conn(client: &redis::Client) -> redis::aio::MultiplexedConnection {
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(30)));
    client.get_multiplexed_async_connection_with_config(&config).await.unwrap()
}

/// Calls of one command recorded in `INFO commandstats` of the server on `port`.
pub fn calls_on(port: u16, command: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(&mut conn_to(port)).unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|rest| rest.split(',').next().unwrap().parse().unwrap())
        .unwrap_or(0)
}

/// Subscribers of `channel` on the server on `port` (`PUBSUB NUMSUB`).
pub fn numsub_on(port: u16, channel: &str) -> i64 {
    let v: Vec<redis::Value> =
        redis::cmd("PUBSUB").arg("NUMSUB").arg(channel).query(&mut conn_to(port)).unwrap();
    match v.get(1) {
        Some(redis::Value::Int(n)) => *n,
        _ => 0,
    }
}

/// A client of `server` with the default options.
pub async fn client(server: &Server) -> rlock::Client {
    client_with(server, rlock::ClientOptions::default()).await
}

/// A client of `server` with `options`.
pub async fn client_with(server: &Server, options: rlock::ClientOptions) -> rlock::Client {
    rlock::Client::connect(&server.url(), options).await.unwrap()
}

/// Options with a 1 s watchdog timeout, so leases end (and renewals show) within a test.
pub fn short_watchdog() -> rlock::ClientOptions {
    rlock::ClientOptions::default().with_watchdog_timeout(Duration::from_millis(1000))
}

/// Inspection of a testbed server through the `redis` crate.
pub trait Inspect {
    /// A plain synchronous connection.
    fn conn(&self) -> redis::Connection;
    /// Calls of one command recorded in `INFO commandstats`.
    fn calls(&self, command: &str) -> u64;
    /// `PUBSUB CHANNELS`.
    fn pubsub_channels(&self) -> Vec<String>;
    /// `PUBSUB NUMSUB channel`.
    fn numsub(&self, channel: &str) -> i64;
}

impl Inspect for Server {
    fn conn(&self) -> redis::Connection {
        conn_to(self.port())
    }

    fn calls(&self, command: &str) -> u64 {
        calls_on(self.port(), command)
    }

    fn pubsub_channels(&self) -> Vec<String> {
        redis::cmd("PUBSUB").arg("CHANNELS").query(&mut self.conn()).unwrap()
    }

    fn numsub(&self, channel: &str) -> i64 {
        numsub_on(self.port(), channel)
    }
}

/// Calls of `command` summed over the running nodes of a cluster.
pub fn cluster_calls(cluster: &Cluster, command: &str) -> u64 {
    cluster.nodes().iter().filter(|n| n.is_running()).map(|n| n.calls(command)).sum()
}

/// Waits (polling every 50 ms) until `cond` holds; panics with `what` after `limit`.
pub fn wait_for(limit: Duration, what: &str, cond: impl FnMut() -> bool) {
    if !rlock_testbed::poll_until(limit, Duration::from_millis(50), cond) {
        panic!("timed out after {limit:?} waiting for {what}");
    }
}

/// Polls `cond` every 5 ms until it holds or `limit` passes; returns whether it held.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    eventually_async(limit, || std::future::ready(cond())).await
}

/// Like [`eventually`], for a condition that has to await (a call of the library).
pub async fn eventually_async<F, Fut>(limit: Duration, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cond().await
}
