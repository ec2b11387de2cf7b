//! The spin lock (Redisson `RSpinLock`) against a real redis-server: the reentrant lock's hash,
//! releases that publish nothing, and waiters that poll instead of subscribing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{client, eventually, short_watchdog, Inspect as _, Server};
use redis::Commands;
use rlock::Released;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shares_the_reentrant_locks_hash_and_publishes_nothing() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let (spin, me) = (c.spin_lock("spin").unwrap(), c.new_owner());
    assert_eq!(spin.kind(), "spin");
    spin.acquire(&me).await.unwrap();
    spin.acquire(&me).await.unwrap();
    let mut conn = server.conn();
    // RLock's layout: one hash field per owner, its value the hold count.
    let count: u64 = conn.hget("spin", me.as_str()).unwrap();
    assert_eq!(count, 2);
    // A reentrant lock of the same name is the same lock.
    let lock = c.lock("spin").unwrap();
    let other = c.new_owner();
    assert!(!lock.try_acquire(&other, Duration::ZERO, None).await.unwrap());
    assert!(lock.is_held(&me).await.unwrap());

    let published = server.calls("publish");
    assert_eq!(spin.release(&me).await.unwrap(), Released::StillHeld);
    assert_eq!(spin.release(&me).await.unwrap(), Released::Unlocked);
    assert!(!conn.exists::<_, bool>("spin").unwrap());
    // A force unlock publishes nothing either.
    spin.acquire(&me).await.unwrap();
    assert!(spin.force_unlock().await.unwrap());
    assert_eq!(server.calls("publish"), published, "a spin lock's release published");
    // The reentrant lock's release does: the count above would see a publish.
    lock.acquire(&other).await.unwrap();
    lock.release(&other).await.unwrap();
    assert_eq!(server.calls("publish"), published + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_polls_without_subscribing_and_gets_the_lock() {
    let server = Server::start().unwrap();
    let (a, b) = (client(&server).await, client(&server).await);
    let holder = a.new_owner();
    a.spin_lock("spin").unwrap().acquire(&holder).await.unwrap();

    let lock = b.spin_lock("spin").unwrap();
    let waiter = b.new_owner();
    // A wait that runs out, polling: no hold, no subscription.
    assert!(!lock.try_acquire(&waiter, Duration::from_millis(200), None).await.unwrap());
    let (l, w) = (lock.clone(), waiter.clone());
    let task = tokio::spawn(async move { l.acquire(&w).await });
    // It polls: the acquire script runs again and again, and no channel is subscribed.
    let before = server.calls("evalsha");
    assert!(eventually(Duration::from_secs(5), || server.calls("evalsha") >= before + 3).await);
    assert!(server.pubsub_channels().is_empty(), "{:?}", server.pubsub_channels());
    assert!(!task.is_finished());

    a.spin_lock("spin").unwrap().release(&holder).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap().unwrap();
    assert!(lock.is_held(&waiter).await.unwrap());
    lock.release(&waiter).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_renews_a_spin_hold() {
    let server = Server::start().unwrap();
    let c = common::client_with(&server, short_watchdog()).await;
    let (spin, me) = (c.spin_lock("spin").unwrap(), c.new_owner());
    spin.acquire(&me).await.unwrap();
    let watchdog = Duration::from_millis(1000);
    let mut conn = server.conn();
    // Past three leases, still held: renewed, not left to expire.
    let until = tokio::time::Instant::now() + watchdog * 3;
    while tokio::time::Instant::now() < until {
        assert!(conn.exists::<_, bool>("spin").unwrap());
        tokio::time::sleep(watchdog / 4).await;
    }
    assert!(!spin.is_lost(&me));
    assert_eq!(spin.release(&me).await.unwrap(), Released::Unlocked);
}
