//! The non-reentrant lock and non-reentrant fair lock (Redisson 4.4's `getNonReentrantLock`
//! and `getNonReentrantFairLock`) against a real redis-server: the reentrant lock's (and fair
//! lock's) layout, a re-entry refused with `WouldDeadlock` on every way to acquire and nothing
//! changed in Redis, and everything else as the reentrant locks do it: waiting, wake-ups,
//! renewal, the fair queue.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{client, client_with, eventually, short_watchdog, Inspect as _, Server};
use redis::Commands;
use rlock::{ErrorKind, Lock, Owner, Released};

/// Every key of the server with its value and whether it expires, to show a refused acquire
/// changed nothing. Release latches are left out: an earlier release's latch is deleted in the
/// background once that release returned, so it may go at any moment (acquires make none).
fn snapshot(conn: &mut redis::Connection) -> HashMap<String, (String, bool)> {
    let keys: Vec<String> = conn.keys("*").unwrap();
    keys.into_iter()
        .filter(|k| !k.starts_with("rlock:client:") && !k.starts_with("redisson_unlock_latch:"))
        .map(|k| {
            let kind: String = redis::cmd("TYPE").arg(&k).query(conn).unwrap();
            let value = match kind.as_str() {
                "hash" => format!("{:?}", conn.hgetall::<_, Vec<(String, String)>>(&k).unwrap()),
                "list" => format!("{:?}", conn.lrange::<_, Vec<String>>(&k, 0, -1).unwrap()),
                "zset" => format!("{:?}", conn.zrange::<_, Vec<String>>(&k, 0, -1).unwrap()),
                other => other.to_owned(),
            };
            let pttl: i64 = conn.pttl(&k).unwrap();
            (k, (value, pttl > 0))
        })
        .collect()
}

/// What is left but release latches with an expiry (they end by themselves): holds, queue
/// places, latches that would never end.
fn left(conn: &mut redis::Connection) -> Vec<String> {
    let keys: Vec<String> = conn.keys("*").unwrap();
    let mut keys: Vec<String> = keys
        .into_iter()
        .filter(|k| !k.starts_with("rlock:client:"))
        // -2: deleted since KEYS listed it; -1: a latch that would never end.
        .filter(|k| !(k.starts_with("redisson_unlock_latch:") && conn.pttl::<_, i64>(k).unwrap() != -1))
        .collect();
    keys.sort();
    keys
}

/// Tries every way to acquire `lock` again as `owner`, which holds it: each must fail with
/// `WouldDeadlock` at once (no wait, even an unbounded one) and change nothing.
async fn every_reentry_is_refused(server: &Server, lock: &Lock, owner: &Owner) {
    let mut conn = server.conn();
    let before = snapshot(&mut conn);
    let pttl: i64 = conn.pttl(lock.name()).unwrap();
    let lease = Some(Duration::from_secs(30));
    let tries: Vec<(&str, rlock::Result<()>)> = vec![
        ("acquire", lock.acquire(owner).await),
        ("acquire_with_lease", lock.acquire_with_lease(owner, Duration::from_secs(30)).await),
        ("try_acquire(0)", lock.try_acquire(owner, Duration::ZERO, None).await.map(drop)),
        ("try_acquire(5 s)", lock.try_acquire(owner, Duration::from_secs(5), lease).await.map(drop)),
        ("lock", lock.lock(owner).await.map(|g| g.keep())),
        (
            "acquire_guard",
            lock.acquire_guard(owner, None, None).await.map(|g| g.map(|g| g.keep()).unwrap_or(())),
        ),
    ];
    for (how, got) in tries {
        let e = got.expect_err(how);
        assert_eq!(e.kind(), ErrorKind::WouldDeadlock, "{how}: {e}");
        assert!(e.to_string().contains("not reentrant"), "{how}: {e}");
        assert!(e.to_string().contains(lock.name()), "{how}: {e}");
    }
    assert_eq!(snapshot(&mut conn), before, "a refused re-entry changed Redis");
    // The lease was not extended: a re-entry would have set it to 30 s.
    assert!(conn.pttl::<_, i64>(lock.name()).unwrap() <= pttl);
    assert_eq!(lock.hold_count(owner).await.unwrap(), 1);
    assert!(lock.is_held(owner).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_non_reentrant_lock_refuses_reentry_and_shares_the_locks_hash() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let (lock, me) = (c.non_reentrant_lock("nr").unwrap(), c.new_owner());
    assert_eq!(lock.kind(), "non_reentrant");
    lock.acquire(&me).await.unwrap();
    // RLock's layout: one hash field per owner, its value the hold count, and a lease.
    let mut conn = server.conn();
    assert_eq!(
        conn.hgetall::<_, HashMap<String, u64>>("nr").unwrap(),
        HashMap::from([(me.as_str().to_owned(), 1)])
    );
    assert!(conn.pttl::<_, i64>("nr").unwrap() > 0);
    every_reentry_is_refused(&server, &lock, &me).await;
    // Another handle of the same owner is the same owner: refused too.
    let e = c.non_reentrant_lock("nr").unwrap().acquire(&me).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldDeadlock);
    // A reentrant lock of the same name is the same lock: another owner is kept out, and the
    // reentrant handle's re-entry of a hold the non-reentrant one took is Redisson's RLock's.
    let other = c.new_owner();
    assert!(!c.lock("nr").unwrap().try_acquire(&other, Duration::ZERO, None).await.unwrap());
    assert_eq!(lock.release(&me).await.unwrap(), Released::Unlocked);
    assert!(!conn.exists::<_, bool>("nr").unwrap());
    // Free again: the owner may take it again, once.
    lock.acquire(&me).await.unwrap();
    assert_eq!(lock.release(&me).await.unwrap(), Released::Unlocked);
    assert_eq!(lock.release(&me).await.unwrap_err().kind(), ErrorKind::NotHeld);
    // Bad input is refused before Redis.
    assert_eq!(c.non_reentrant_lock("").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(c.non_reentrant_fair_lock("").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(left(&mut conn), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_is_woken_by_the_release_and_the_watchdog_renews() {
    let server = Server::start().unwrap();
    let a = client_with(&server, short_watchdog()).await;
    let b = client(&server).await;
    let (lock, holder) = (a.non_reentrant_lock("nr:wait").unwrap(), a.new_owner());
    lock.acquire(&holder).await.unwrap();
    let waiting = b.non_reentrant_lock("nr:wait").unwrap();
    let waiter = b.new_owner();
    let (l, w) = (waiting.clone(), waiter.clone());
    let task = tokio::spawn(async move { l.acquire(&w).await });
    // Subscribed: woken by the release's message, as the reentrant lock's waiters are.
    assert!(eventually(Duration::from_secs(5), || b.waited_channels() > 0).await);
    // Held across three watchdog periods of 1 s (the lease is 1 s).
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert!(lock.is_held(&holder).await.unwrap(), "the watchdog renews a non-reentrant hold");
    assert!(!task.is_finished());
    let published = server.calls("publish");
    assert_eq!(lock.release(&holder).await.unwrap(), Released::Unlocked);
    assert!(server.calls("publish") > published);
    tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap().unwrap();
    assert!(waiting.is_held(&waiter).await.unwrap());
    // The waiter, now holding, may not re-enter either.
    every_reentry_is_refused(&server, &waiting, &waiter).await;
    waiting.release(&waiter).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_non_reentrant_fair_lock_refuses_reentry_without_queueing_and_grants_in_order() {
    const QUEUE: &str = "redisson_lock_queue:{nrf}";
    const TIMEOUTS: &str = "redisson_lock_timeout:{nrf}";
    let server = Server::start().unwrap();
    let (a, b) = (client(&server).await, client(&server).await);
    let (lock, me) = (a.non_reentrant_fair_lock("nrf").unwrap(), a.new_owner());
    assert_eq!(lock.kind(), "non_reentrant_fair");
    lock.acquire(&me).await.unwrap();
    let mut conn = server.conn();
    assert_eq!(
        conn.hgetall::<_, HashMap<String, u64>>("nrf").unwrap(),
        HashMap::from([(me.as_str().to_owned(), 1)])
    );
    // Nobody waiting: the refused re-entries queue nothing.
    every_reentry_is_refused(&server, &lock, &me).await;
    assert!(!conn.exists::<_, bool>(QUEUE).unwrap() && !conn.exists::<_, bool>(TIMEOUTS).unwrap());
    // Two waiters of another client queue up in order; a refused re-entry of the holder
    // neither joins nor reorders the queue.
    let waiters: Vec<Owner> = vec![b.new_owner(), b.new_owner()];
    let mut tasks = Vec::new();
    for w in &waiters {
        let (l, w2) = (b.non_reentrant_fair_lock("nrf").unwrap(), w.clone());
        tasks.push(tokio::spawn(async move {
            l.acquire(&w2).await.unwrap();
            l
        }));
        let id = w.as_str().to_owned();
        assert!(
            eventually(Duration::from_secs(5), || conn
                .lrange::<_, Vec<String>>(QUEUE, 0, -1)
                .unwrap()
                .last()
                == Some(&id))
            .await
        );
    }
    every_reentry_is_refused(&server, &lock, &me).await;
    let order: Vec<String> = waiters.iter().map(|w| w.as_str().to_owned()).collect();
    assert_eq!(conn.lrange::<_, Vec<String>>(QUEUE, 0, -1).unwrap(), order);
    // Releases grant in arrival order.
    lock.release(&me).await.unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), tasks.remove(0)).await.unwrap().unwrap();
    assert!(first.is_held(&waiters[0]).await.unwrap());
    assert!(!tasks[0].is_finished());
    every_reentry_is_refused(&server, &first, &waiters[0]).await;
    first.release(&waiters[0]).await.unwrap();
    let second = tokio::time::timeout(Duration::from_secs(5), tasks.remove(0)).await.unwrap().unwrap();
    second.release(&waiters[1]).await.unwrap();
    assert_eq!(left(&mut conn), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_this_client_does_not_track_is_taken_afresh_not_refused() {
    // What an acquire whose reply was lost, and whose give-back failed, leaves: the owner's hold
    // in Redis that this client never heard of. The next try of that acquire must not read it
    // as a re-entry (it would fail with WouldDeadlock while holding an unrenewed lock).
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let mut conn = server.conn();
    for (name, lock) in [
        ("nr:lost", c.non_reentrant_lock("nr:lost").unwrap()),
        ("nrf:lost", c.non_reentrant_fair_lock("nrf:lost").unwrap()),
    ] {
        let me = c.new_owner();
        let _: () = conn.hset(name, me.as_str(), 1).unwrap();
        let _: () = conn.pexpire(name, 600_000).unwrap();
        lock.acquire(&me).await.unwrap();
        assert_eq!(lock.hold_count(&me).await.unwrap(), 1);
        // Taken afresh: the lease is the watchdog's (30 s), timed from this client's own send,
        // and the watchdog tracks it.
        let pttl: i64 = conn.pttl(name).unwrap();
        assert!(pttl > 0 && pttl <= 30_000, "{pttl}");
        assert!(lock.valid_for(&me) > Duration::ZERO);
        // Now it is a re-entry.
        assert_eq!(lock.acquire(&me).await.unwrap_err().kind(), ErrorKind::WouldDeadlock);
        assert_eq!(lock.release(&me).await.unwrap(), Released::Unlocked);
    }
    assert_eq!(left(&mut conn), Vec::<String>::new());
}
