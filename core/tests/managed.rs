//! Behind managed endpoints (shared/spec/services.md), against the testbed's stand-ins: a proxy
//! in front of a sharded cluster refuses every command and script whose keys lie in two hash
//! slots (`CROSSSLOT`) and the `CLUSTER` command, yet it is reached as one `redis://` server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{Inspect, Server};
use rlock::{Client, ClientOptions, LostFilter};
use rlock_testbed::standin;

/// Keys of `pattern` on `server` (`SCAN` through every key).
fn keys(server: &Server, pattern: &str) -> Vec<String> {
    let mut conn = server.conn();
    let mut scan = redis::cmd("SCAN");
    scan.cursor_arg(0).arg("MATCH").arg(pattern);
    scan.iter::<String>(&mut conn).unwrap().map(Result::unwrap).collect()
}

/// One client holds locks of many names (spread over many slots) of every kind the watchdog
/// renews: each stays held across three watchdog periods, none is lost, another owner cannot
/// take any of them, and every release frees its lock and leaves no release latch behind.
/// Before renewals were grouped by hash tag, the watchdog's batches spanned slots, were refused
/// with CROSSSLOT, and every hold was lost to lease doubt within two periods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holds_of_many_names_stay_held_behind_a_proxy_endpoint() {
    let server = standin::proxy_endpoint(Server::builder().name("proxy endpoint")).unwrap();
    let options = ClientOptions::default().with_watchdog_timeout(Duration::from_millis(1500));
    let c = Client::connect(&server.url(), options).await.unwrap();
    let lost = Arc::new(AtomicU64::new(0));
    let counted = lost.clone();
    c.on_lost(LostFilter::all(), move |e| {
        counted.fetch_add(1, Ordering::SeqCst);
        eprintln!("lost: {} ({}) {:?}", e.name, e.kind, e.reason);
    });
    let owner = c.new_owner();

    let locks: Vec<_> = (0..6).map(|i| c.lock(&format!("pe:lock:{i}")).unwrap()).collect();
    let fenced: Vec<_> = (0..2).map(|i| c.fenced_lock(&format!("pe:fenced:{i}")).unwrap()).collect();
    let read = c.read_write_lock("pe:rw:read").unwrap().read_lock();
    let write = c.read_write_lock("pe:rw:write").unwrap().write_lock();
    let fair = c.fair_lock("pe:fair").unwrap();
    let pes = c.permit_expirable_semaphore("pe:pes").unwrap();
    assert!(pes.try_set_permits(2, None).await.unwrap());
    for l in locks.iter().chain([&read, &write, &fair]) {
        l.acquire(&owner).await.unwrap();
    }
    for f in &fenced {
        f.acquire(&owner).await.unwrap();
    }
    let permits = [pes.acquire(None).await.unwrap(), pes.acquire(None).await.unwrap()];
    let holds = c.tracked_holds() as u64;
    assert_eq!(holds, 13);

    // Three watchdog periods: every hold renewed three times over (renewals count holds).
    let before = c.stats().renewals;
    let renewed = common::eventually(Duration::from_secs(10), || {
        c.stats().renewals >= before + 3 * holds || lost.load(Ordering::SeqCst) > 0
    })
    .await;
    let s = c.stats();
    assert!(renewed && lost.load(Ordering::SeqCst) == 0, "holds lost or not renewed: {s:?}");
    assert_eq!(s.renewal_failures, 0, "{s:?}");

    let other = Client::connect(&server.url(), ClientOptions::default()).await.unwrap();
    let rival = other.new_owner();
    for l in locks.iter().chain([&fair]) {
        let theirs = other.lock(l.name()).unwrap();
        let theirs = if l.kind() == "fair" { other.fair_lock(l.name()).unwrap() } else { theirs };
        assert!(!theirs.try_acquire(&rival, Duration::ZERO, None).await.unwrap(), "{} was free", l.name());
    }
    for f in &fenced {
        assert!(other
            .fenced_lock(f.name())
            .unwrap()
            .try_acquire(&rival, Duration::ZERO, None)
            .await
            .unwrap()
            .is_none());
    }
    let their_write = other.read_write_lock("pe:rw:read").unwrap().write_lock();
    assert!(!their_write.try_acquire(&rival, Duration::ZERO, None).await.unwrap());
    let their_read = other.read_write_lock("pe:rw:write").unwrap().read_lock();
    assert!(!their_read.try_acquire(&rival, Duration::ZERO, None).await.unwrap());
    assert_eq!(other.permit_expirable_semaphore("pe:pes").unwrap().available_permits().await.unwrap(), 0);

    for l in locks.iter().chain([&read, &write, &fair]) {
        assert!(l.release(&owner).await.unwrap().is_unlocked(), "{}", l.name());
    }
    for f in &fenced {
        assert!(f.release(&owner).await.unwrap().is_unlocked(), "{}", f.name());
    }
    for p in permits {
        p.release().await.unwrap();
    }
    assert_eq!(c.tracked_holds(), 0);
    assert_eq!(lost.load(Ordering::SeqCst), 0);

    // The plain semaphore and the count-down latch, whose calls leave request latches too.
    let sem = c.semaphore("pe:sem").unwrap();
    assert!(sem.try_set_permits(2, None).await.unwrap());
    sem.acquire(2).await.unwrap();
    assert_eq!(sem.release(2).await.unwrap(), 2);
    let latch = c.count_down_latch("pe:latch").unwrap();
    assert!(latch.try_set_count(2).await.unwrap());
    latch.count_down().await.unwrap();
    latch.count_down().await.unwrap();
    assert!(latch.wait(Some(Duration::from_secs(5))).await.unwrap());

    // Every release latch is deleted (in DELs of one hash tag each), not left to its TTL.
    let latches = || keys(&server, "*_latch*");
    let gone = common::eventually(Duration::from_secs(5), || latches().is_empty()).await;
    assert!(gone, "release latches left: {:?}", latches());
    assert_eq!(server.calls("cluster"), 0, "CLUSTER is renamed away: a call would have failed");
}
