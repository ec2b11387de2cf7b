//! Lease doubt: a holder cut off from Redis is told its hold is lost before its lease can end
//! on the server, so before another owner can take the lock (the holder reaches Redis through a
//! proxy that holds back every byte; the other owner reaches it directly).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Inspect as _, Proxy, Server};
use rlock::{Client, ClientOptions, ErrorKind, LostEvent, LostReason};

/// The moments (and reasons) at which `client`'s listener heard of lost holds.
fn record_losses(client: &Client) -> Arc<Mutex<Vec<(Instant, LostReason)>>> {
    let heard = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    client.on_lost(rlock::LostFilter::all(), move |e: &LostEvent| {
        h.lock().unwrap().push((Instant::now(), e.reason));
    });
    heard
}

/// The holder's options: a command timeout far past the lease, so a renewal sent into the
/// partition fails only long after another owner could have the lock.
fn holder_options() -> ClientOptions {
    ClientOptions::default()
        .with_watchdog_timeout(Duration::from_millis(1500))
        .with_lease_doubt_margin(Duration::from_millis(300))
        .with_command_timeout(Some(Duration::from_secs(20)))
        .with_retry_attempts(0)
        .with_thread_connections(0)
}

/// Cuts the holder off once it holds `name` (with `lease`, or the watchdog's), lets another
/// owner wait for the lock directly, and checks that the holder heard `expected` before the
/// other owner got the lock.
async fn partition_holder(name: &str, lease: Option<Duration>, expected: LostReason) {
    let server = Server::start().unwrap();
    let proxy = Proxy::start(server.port()).unwrap();
    let holder = Client::connect(&proxy.url(), holder_options()).await.unwrap();
    let heard = record_losses(&holder);
    let owner = holder.new_owner();
    let lock = holder.lock(name).unwrap();
    match lease {
        Some(l) => lock.acquire_with_lease(&owner, l).await.unwrap(),
        None => lock.acquire(&owner).await.unwrap(),
    }
    proxy.cut(true);

    let other = Client::connect(&server.url(), ClientOptions::default()).await.unwrap();
    let other_owner = other.new_owner();
    let other_lock = other.lock(name).unwrap();
    let wait = other_lock.try_acquire(&other_owner, Duration::from_secs(30), None);
    assert!(wait.await.unwrap(), "the other owner never got the lock");
    let acquired = Instant::now();

    let (told, reason) = *heard.lock().unwrap().first().expect("the holder was never told");
    assert_eq!(heard.lock().unwrap().len(), 1);
    assert!(lock.is_lost(&owner));
    // Back on the network, the holder's release says it had lost the hold, and frees nothing.
    proxy.cut(false);
    assert_eq!(lock.release(&owner).await.unwrap_err().kind(), ErrorKind::Lost);
    assert!(other_lock.is_held(&other_owner).await.unwrap());
    other_lock.release(&other_owner).await.unwrap();
    assert_eq!(reason, expected);
    assert!(told < acquired, "told {:?} after the other owner acquired", told - acquired);
    eprintln!("lease-doubt margin ({name}): {:?}", acquired - told);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_watchdog_holder_hears_lease_doubt_before_another_owner_acquires() {
    partition_holder("doubt-watchdog", None, LostReason::LeaseDoubt).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_holder_with_an_explicit_lease_hears_before_another_owner_acquires() {
    partition_holder("doubt-explicit", Some(Duration::from_millis(1200)), LostReason::LeaseEnding).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_that_come_back_keep_a_hold_out_of_doubt() {
    let server = Server::start().unwrap();
    let c = Client::connect(&server.url(), holder_options()).await.unwrap();
    let heard = record_losses(&c);
    let owner = c.new_owner();
    let lock = c.lock("doubt-healthy").unwrap();
    lock.acquire(&owner).await.unwrap();
    let renewals = c.stats().renewals;
    // Four leases long: every renewal confirmed in time, the hold never in doubt.
    let until = Instant::now() + Duration::from_millis(6000);
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(heard.lock().unwrap().is_empty(), "a healthy hold was lost: {:?}", heard.lock().unwrap());
    }
    assert!(c.stats().renewals >= renewals + 8);
    assert!(lock.is_held(&owner).await.unwrap());
    lock.release(&owner).await.unwrap();
    assert!(server.calls("evalsha") > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_explicit_lease_is_signalled_before_it_ends() {
    let server = Server::start().unwrap();
    let c = Client::connect(&server.url(), holder_options()).await.unwrap();
    let heard = record_losses(&c);
    let owner = c.new_owner();
    let lock = c.lock("doubt-short").unwrap();
    // Shorter than the watchdog's sweep: the acquire asks for an early sweep.
    let sent = Instant::now();
    lock.acquire_with_lease(&owner, Duration::from_millis(80)).await.unwrap();
    let other = Client::connect(&server.url(), ClientOptions::default()).await.unwrap();
    let other_owner = other.new_owner();
    assert!(other
        .lock("doubt-short")
        .unwrap()
        .try_acquire(&other_owner, Duration::from_secs(5), None)
        .await
        .unwrap());
    let acquired = Instant::now();
    let (told, reason) = *heard.lock().unwrap().first().expect("the holder was never told");
    assert_eq!(reason, LostReason::LeaseEnding);
    // Margin: a quarter of 80 ms.
    assert!(told >= sent + Duration::from_millis(60));
    assert!(told < acquired);
    assert_eq!(lock.release(&owner).await.unwrap_err().kind(), ErrorKind::Lost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releasing_a_hold_in_doubt_frees_what_is_left_of_it_and_reports_lost() {
    let server = Server::start().unwrap();
    let proxy = Proxy::start(server.port()).unwrap();
    let holder = Client::connect(&proxy.url(), holder_options()).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    holder.on_lost(rlock::LostFilter::all(), move |e: &LostEvent| {
        let _ = tx.send(e.reason);
    });
    let owner = holder.new_owner();
    let lock = holder.lock("doubt-release").unwrap();
    lock.acquire(&owner).await.unwrap();
    proxy.cut(true);
    let reason = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.unwrap().unwrap();
    assert_eq!(reason, LostReason::LeaseDoubt);
    // Healed before the lease ran out on the server: the hold is still there, and the watchdog
    // no longer renews it. The release frees it at once (nobody waits for the lease), and says
    // the hold had been lost.
    proxy.cut(false);
    assert_eq!(lock.release(&owner).await.unwrap_err().kind(), ErrorKind::Lost);
    let direct = Client::connect(&server.url(), ClientOptions::default()).await.unwrap();
    assert!(!direct.lock("doubt-release").unwrap().is_locked().await.unwrap());
    assert!(!lock.is_lost(&owner));
}
