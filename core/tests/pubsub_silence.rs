//! A waiter whose pub/sub connection silently stops delivering (a partition, a middlebox that
//! dropped it; the socket stays open, so nothing reconnects by itself) notices by the check
//! ping, subscribes on a new connection and gets the lock soon after the release, instead of
//! sleeping until the holder's lease would have run out. The waiter reaches Redis through a
//! proxy that blackholes the connection that subscribed; the holder needs no subscription.
//! One server, a cluster (every node announces its proxy, so the slot map leads through them)
//! and a Sentinel (the sentinel knows the master by its proxy).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{Cluster, Proxy, Server};
use rlock::{Client, ClientOptions};

/// Subscribers of `channel` on the server on `port`, classic and (where the server has it)
/// sharded.
fn subscribers_on(port: u16, channel: &str) -> i64 {
    let mut c = common::conn_to(port);
    ["NUMSUB", "SHARDNUMSUB"]
        .iter()
        .filter_map(|kind| redis::cmd("PUBSUB").arg(*kind).arg(channel).query::<(String, i64)>(&mut c).ok())
        .map(|(_, n)| n)
        .sum()
}

/// Script calls (EVALSHA and EVAL) the servers on `ports` have run.
fn script_calls(ports: &[u16]) -> u64 {
    ports.iter().map(|&p| common::calls_on(p, "evalsha") + common::calls_on(p, "eval")).sum()
}

/// The holder (on `holder_url`) holds `name` with a lease far past the waiter's wait; the
/// waiter (on `waiter_url`, through the proxies) waits on it; once `subscribed` says it is
/// subscribed and the servers on `ports` ran its second try, `blackhole` silences its
/// subscription, and the holder releases. Without the check, the waiter would sleep until its
/// wait runs out (its next try is due when the holder's TTL would end).
async fn hand_off_over_a_silenced_subscription(
    holder_url: &str,
    waiter_url: &str,
    name: &str,
    ports: &[u16],
    subscribed: impl Fn() -> bool,
    blackhole: impl Fn() -> usize,
) {
    let holder_options = ClientOptions::default().with_watchdog_timeout(Duration::from_secs(120));
    let holder = Client::connect(holder_url, holder_options).await.unwrap();
    let h = holder.new_owner();
    let lock = holder.lock(name).unwrap();
    lock.acquire(&h).await.unwrap();

    let waiter_options = ClientOptions::default().with_subscription_timeout(Duration::from_secs(1));
    let waiter = Client::connect(waiter_url, waiter_options).await.unwrap();
    let w = waiter.new_owner();
    let waiter_lock = waiter.lock(name).unwrap();
    let scripts_before = script_calls(ports);
    let waiting = {
        let (waiter_lock, w) = (waiter_lock.clone(), w.clone());
        tokio::spawn(async move { waiter_lock.try_acquire(&w, Duration::from_secs(40), None).await })
    };
    assert!(common::eventually(Duration::from_secs(10), subscribed).await, "the waiter subscribed");
    // The waiter subscribes between its first and second try; a release before the second
    // try ran would hand it the lock by that try, not by the message this test silences.
    let second_try = || script_calls(ports) >= scripts_before + 2;
    assert!(common::eventually(Duration::from_secs(10), second_try).await, "the waiter tried again");
    assert!(blackhole() >= 1, "a connection had subscribed");
    let reconnects = waiter.stats().reconnects;

    assert!(lock.release(&h).await.unwrap().is_unlocked());
    let released = Instant::now();
    let got = waiting.await.unwrap().unwrap();
    let took = released.elapsed();
    assert!(got, "the waiter never got the lock: it missed the unlock and slept out its wait");
    eprintln!("{waiter_url}: the waiter got the lock {took:?} after the release");
    assert!(waiter.stats().reconnects > reconnects, "the silent connection was replaced");
    assert!(waiter_lock.is_held(&w).await.unwrap());
    waiter_lock.release(&w).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_subscription_went_silent_gets_the_lock_after_the_release() {
    let server = Server::start().unwrap();
    let proxy = Proxy::start(server.port()).unwrap();
    let channel = "redisson_lock__channel:{silent}";
    let subscribed = || subscribers_on(server.port(), channel) == 1;
    let blackhole = || proxy.blackhole_subscribers();
    let ports = [server.port()];
    hand_off_over_a_silenced_subscription(
        &server.url(),
        &proxy.url(),
        "silent",
        &ports,
        subscribed,
        blackhole,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_a_silent_subscription_is_replaced_by_a_rebuilt_connection() {
    let cluster = Cluster::start(3, 0).unwrap();
    let proxies: Vec<Proxy> = cluster.nodes().iter().map(|n| Proxy::start(n.port()).unwrap()).collect();
    // Every node announces its proxy (its bus stays where it is), so clients following the
    // slot map reach the masters through the proxies. Redis 6.2 takes the new port only into
    // the other nodes' maps (gossip), not into a node's own: the waiter is seeded with a node
    // that does not serve the lock, whose map then leads to the lock's master by its proxy.
    let owner = cluster.shard_of("silent").unwrap().master;
    for (node, proxy) in cluster.nodes().iter().zip(&proxies) {
        let mut c = common::conn_to(node.port());
        for (key, port) in
            [("cluster-announce-port", proxy.port()), ("cluster-announce-bus-port", node.port() + 10000)]
        {
            let _: () = redis::cmd("CONFIG").arg("SET").arg(key).arg(port).query(&mut c).unwrap();
        }
    }
    let proxy_of = |port: u16| proxies[cluster.nodes().iter().position(|n| n.port() == port).unwrap()].port();
    let announced = || {
        cluster.nodes().iter().all(|n| {
            let others = |s: &&rlock_testbed::Shard| s.master != n.port();
            cluster.shards_from(n.port()).is_ok_and(|shards| {
                shards.iter().filter(others).all(|s| proxies.iter().any(|p| p.port() == s.master))
            })
        })
    };
    assert!(common::eventually(Duration::from_secs(20), announced).await, "every node announces its proxy");
    let seed = cluster.nodes().iter().map(|n| n.port()).find(|&p| p != owner).unwrap();
    let url = format!("redis+cluster://127.0.0.1:{}/", proxy_of(seed));

    let channel = "redisson_lock__channel:{silent}";
    let subscribed = || cluster.nodes().iter().map(|n| subscribers_on(n.port(), channel)).sum::<i64>() == 1;
    let blackhole = || proxies.iter().map(Proxy::blackhole_subscribers).sum();
    let ports: Vec<u16> = cluster.nodes().iter().map(|n| n.port()).collect();
    hand_off_over_a_silenced_subscription(&cluster.url(), &url, "silent", &ports, subscribed, blackhole)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_sentinel_a_silent_subscription_is_replaced() {
    let master = Server::start().unwrap();
    let proxy = Proxy::start(master.port()).unwrap();
    // One sentinel that knows the master by its proxy, and would call it down only long after
    // the test (its own hello subscription through the proxy is silenced too).
    let conf = format!(
        "sentinel monitor mymaster 127.0.0.1 {} 1\nsentinel down-after-milliseconds mymaster 600000\n",
        proxy.port()
    );
    let sentinel = Server::builder().name("sentinel").conf(conf).arg("--sentinel").start().unwrap();
    let url = format!("redis+sentinel://127.0.0.1:{}/mymaster", sentinel.port());

    let channel = "redisson_lock__channel:{silent}";
    let subscribed = || subscribers_on(master.port(), channel) == 1;
    let blackhole = || proxy.blackhole_subscribers();
    let ports = [master.port()];
    hand_off_over_a_silenced_subscription(&master.url(), &url, "silent", &ports, subscribed, blackhole).await;
}
