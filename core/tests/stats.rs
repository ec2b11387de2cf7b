//! Client stats against a real redis-server: every figure matches what the test did.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::Server;
use rlock::{Client, ClientOptions, ErrorKind, LostFilter};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_what_happened() {
    let server = Server::start().unwrap();
    let options = ClientOptions::default()
        .with_watchdog_timeout(Duration::from_millis(300))
        .with_app_name(Some("stats-test".into()));
    let c = Client::connect(&server.url(), options).await.unwrap();
    let (a, b) = (c.new_owner(), c.new_owner());
    let lock = c.lock("s").unwrap();

    // Three uncontended pairs.
    for _ in 0..3 {
        lock.acquire(&a).await.unwrap();
        lock.release(&a).await.unwrap();
    }
    // One contended acquire, woken by the release message.
    lock.acquire(&a).await.unwrap();
    let waiter = {
        let (l, o) = (lock.clone(), b.clone());
        tokio::spawn(async move { l.acquire(&o).await })
    };
    assert!(common::eventually(Duration::from_secs(5), || c.waited_channels() == 1).await);
    // Held across a renewal period so the watchdog renews it at least once.
    assert!(!lock.try_acquire(&c.new_owner(), Duration::from_millis(250), None).await.unwrap());
    lock.release(&a).await.unwrap();
    waiter.await.unwrap().unwrap();
    lock.release(&b).await.unwrap();
    // A release of what is not held.
    assert_eq!(lock.release(&a).await.unwrap_err().kind(), ErrorKind::NotHeld);
    // A lost hold: force-unlocked, then found gone by the watchdog.
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = std::sync::Mutex::new(Some(tx));
    c.on_lost(LostFilter::all(), move |_| {
        if let Some(tx) = tx.lock().unwrap().take() {
            let _ = tx.send(());
        }
    });
    lock.acquire(&a).await.unwrap();
    let other = Client::connect(&server.url(), ClientOptions::default()).await.unwrap();
    assert!(other.lock("s").unwrap().force_unlock().await.unwrap());
    tokio::time::timeout(Duration::from_secs(5), rx).await.unwrap().unwrap();
    assert_eq!(lock.release(&a).await.unwrap_err().kind(), ErrorKind::Lost);

    let s = c.stats();
    // 3 + holder + waiter + the lost one; the try_acquire ran out.
    assert_eq!(s.acquires, 6, "{s:?}");
    assert_eq!(s.contended_acquires, 1, "{s:?}");
    assert_eq!(s.acquire_timeouts, 1, "{s:?}");
    assert_eq!(s.releases, 5, "{s:?}");
    assert_eq!(s.lost_holds, 1, "{s:?}");
    assert!(s.renewals >= 1, "{s:?}");
    assert_eq!(s.renewal_failures, 0, "{s:?}");
    assert_eq!(s.wakeups, 1, "{s:?}");
    assert_eq!((s.errors["not_held"], s.errors["lost"], s.errors["timeout"]), (1, 1, 0), "{s:?}");
    assert_eq!(s.wait.count, 6);
    assert!(s.wait.max >= Duration::from_millis(250), "the contended acquire waited over 250 ms: {s:?}");
    assert!(s.wait.p50 < s.wait.max);
    assert_eq!(s.hold.count, 5);
    assert!(s.hold.max >= Duration::from_millis(250), "{s:?}");

    let text = c.prometheus_text();
    assert!(text.contains("rlock_acquires_total{app=\"stats-test\"} 6\n"), "{text}");
    assert!(text.contains("rlock_errors_total{app=\"stats-test\",kind=\"not_held\"} 1\n"), "{text}");
    assert!(text.contains("rlock_wait_seconds_count{app=\"stats-test\"} 6\n"), "{text}");
    assert!(!text.contains(&server.url()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_stay_zero_with_metrics_off() {
    let server = Server::start().unwrap();
    let c = Client::connect(&server.url(), ClientOptions::default().with_metrics(false)).await.unwrap();
    let o = c.new_owner();
    let lock = c.lock("off").unwrap();
    lock.acquire(&o).await.unwrap();
    lock.release(&o).await.unwrap();
    assert_eq!(lock.release(&o).await.unwrap_err().kind(), ErrorKind::NotHeld);
    let s = c.stats();
    assert_eq!((s.acquires, s.releases, s.wait.count), (0, 0, 0));
    assert!(s.errors.values().all(|v| *v == 0));
}
