//! The semaphore against a real redis-server: Redisson's layout and messages, waiting on the
//! published count, cancel-safety, bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{Inspect as _, Server};
use redis::Commands;
use rlock::{Client, ClientOptions, ErrorKind};

async fn client(server: &Server) -> Client {
    Client::connect(&server.url(), ClientOptions::default()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_in_redissons_layout() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let sem = c.semaphore("slots").unwrap();
    let mut conn = server.conn();
    assert_eq!(sem.available_permits().await.unwrap(), 0, "a missing key is 0 permits");
    assert!(!sem.try_acquire(1, Duration::ZERO).await.unwrap());
    assert!(sem.try_set_permits(3, None).await.unwrap());
    assert!(!sem.try_set_permits(5, None).await.unwrap(), "only when missing");
    let v: String = conn.get("slots").unwrap();
    assert_eq!(v, "3");
    sem.acquire(2).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    assert!(!sem.try_acquire(2, Duration::from_millis(50)).await.unwrap());
    assert_eq!(sem.release(2).await.unwrap(), 3);
    assert_eq!(sem.add_permits(-1).await.unwrap(), 2);
    assert_eq!(sem.add_permits(4).await.unwrap(), 6);
    assert_eq!(sem.drain_permits().await.unwrap(), 6);
    assert_eq!(sem.available_permits().await.unwrap(), 0);
    // A TTL when asked.
    let ttl = c.semaphore("slots:ttl").unwrap();
    assert!(ttl.try_set_permits(1, Some(Duration::from_secs(60))).await.unwrap());
    let pttl: i64 = redis::cmd("PTTL").arg("slots:ttl").query(&mut conn).unwrap();
    assert!(pttl > 50_000 && pttl <= 60_000, "{pttl}");
    // No latch is left behind once the background deletes ran.
    assert!(
        common::eventually(Duration::from_secs(5), || conn
            .keys::<_, Vec<String>>("{slots}*")
            .unwrap()
            .is_empty())
        .await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_wake_on_the_published_count() {
    let server = Server::start().unwrap();
    let (a, b) = (client(&server).await, client(&server).await);
    let (sa, sb) = (a.semaphore("sem:wake").unwrap(), b.semaphore("sem:wake").unwrap());
    sa.try_set_permits(0, None).await.unwrap();
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let s = sb.clone();
            tokio::spawn(async move { s.acquire(1).await })
        })
        .collect();
    assert!(
        common::eventually(Duration::from_secs(5), || server.numsub("redisson_sc:{sem:wake}") == 1).await
    );
    let evals = server.calls("evalsha");
    // Two permits: up to two waiters wake and take them; the third keeps waiting.
    assert_eq!(sa.release(2).await.unwrap(), 2);
    let finished = || waiters.iter().filter(|w| w.is_finished()).count();
    assert!(
        common::eventually(Duration::from_secs(5), || finished() == 2).await,
        "two waiters took the two permits"
    );
    // The third waits for a permit nobody gave.
    assert!(!common::eventually(Duration::from_millis(300), || finished() == 3).await);
    assert_eq!(sa.release(1).await.unwrap(), 1);
    assert!(common::eventually(Duration::from_secs(5), || finished() == 3).await);
    for w in waiters {
        w.await.unwrap().unwrap();
    }
    assert_eq!(sa.available_permits().await.unwrap(), 0);
    // Woken by the message: a handful of script calls, not a poll per waiter per tick.
    assert!(server.calls("evalsha") - evals <= 12, "{}", server.calls("evalsha") - evals);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_acquires_keep_the_count_exact() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let sem = c.semaphore("sem:cancel").unwrap();
    sem.try_set_permits(4, None).await.unwrap();
    let held = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for t in 0..8u64 {
        let (sem, held) = (sem.clone(), held.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..150u64 {
                let delay = Duration::from_micros((t * 7919 + i * 104_729) % 3000);
                if let Ok(r) = tokio::time::timeout(delay, sem.acquire(1)).await {
                    r.unwrap();
                    let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(now <= 4, "{now} holders of 4 permits");
                    tokio::task::yield_now().await;
                    held.fetch_sub(1, Ordering::SeqCst);
                    sem.release(1).await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert!(c.settle(Duration::from_secs(10)).await);
    assert_eq!(sem.available_permits().await.unwrap(), 4, "every permit came back");
    // The latches of the acquires whose permits went back are deleted too, not left to their
    // TTL (18 s here; make chaos found them).
    let mut conn = server.conn();
    let left = common::eventually(Duration::from_secs(5), || {
        conn.keys::<_, Vec<String>>("{sem:cancel}*").unwrap().is_empty()
    })
    .await;
    assert!(left, "latches left: {:?}", conn.keys::<_, Vec<String>>("{sem:cancel}*").unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_changes_nothing() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let sem = c.semaphore("sem:bad").unwrap();
    sem.try_set_permits(2, None).await.unwrap();
    assert_eq!(sem.acquire(0).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(sem.try_acquire(0, Duration::ZERO).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(sem.release(0).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        sem.try_acquire(1, Duration::from_secs(200 * 365 * 86_400)).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        sem.try_set_permits(1, Some(Duration::ZERO)).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert!(c.semaphore("").is_err());
    assert_eq!(sem.available_permits().await.unwrap(), 2);
    // A key of another type is a Redis error.
    let _: () = server.conn().hset("sem:hash", "f", 1).unwrap();
    let wrong = c.semaphore("sem:hash").unwrap();
    assert_eq!(wrong.try_acquire(1, Duration::ZERO).await.unwrap_err().kind(), ErrorKind::Redis);
}
