//! A waiter whose pub/sub connection silently stops delivering (a partition, a middlebox that
//! dropped it; the socket stays open, so nothing reconnects by itself) notices by the check
//! ping, subscribes on a new connection and gets the lock soon after the release, instead of
//! sleeping until the holder's lease would have run out. The waiter reaches Redis through a
//! proxy that blackholes the connection that subscribed; the holder reaches it directly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{Inspect as _, Proxy, Server};
use rlock::{Client, ClientOptions};

/// Subscribers of `channel` on `server`.
fn subscribers(server: &Server, channel: &str) -> i64 {
    let (_, n): (String, i64) =
        redis::cmd("PUBSUB").arg("NUMSUB").arg(channel).query(&mut server.conn()).unwrap();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_subscription_went_silent_gets_the_lock_after_the_release() {
    let server = Server::start().unwrap();
    let proxy = Proxy::start(server.port()).unwrap();
    // A lease far past the waiter's wait: without the check, the waiter sleeps until its wait
    // runs out (its next try is due when the holder's TTL would end).
    let holder_options = ClientOptions::default().with_watchdog_timeout(Duration::from_secs(120));
    let holder = Client::connect(&server.url(), holder_options).await.unwrap();
    let h = holder.new_owner();
    let lock = holder.lock("silent").unwrap();
    lock.acquire(&h).await.unwrap();

    let waiter_options = ClientOptions::default().with_subscription_timeout(Duration::from_secs(1));
    let waiter = Client::connect(&proxy.url(), waiter_options).await.unwrap();
    let w = waiter.new_owner();
    let waiter_lock = waiter.lock("silent").unwrap();
    let waiting = {
        let (waiter_lock, w) = (waiter_lock.clone(), w.clone());
        tokio::spawn(async move { waiter_lock.try_acquire(&w, Duration::from_secs(40), None).await })
    };
    let channel = "redisson_lock__channel:{silent}";
    let subscribed = || subscribers(&server, channel) == 1;
    assert!(common::eventually(Duration::from_secs(10), subscribed).await, "the waiter subscribed");
    assert_eq!(proxy.blackhole_subscribers(), 1, "one connection had subscribed");
    let reconnects = waiter.stats().reconnects;

    assert!(lock.release(&h).await.unwrap().is_unlocked());
    let released = Instant::now();
    let got = waiting.await.unwrap().unwrap();
    let took = released.elapsed();
    assert!(got, "the waiter never got the lock: it missed the unlock and slept out its wait");
    eprintln!("the waiter got the lock {took:?} after the release");
    assert!(waiter.stats().reconnects > reconnects, "the silent connection was replaced");
    assert!(waiter_lock.is_held(&w).await.unwrap());
    waiter_lock.release(&w).await.unwrap();
}
