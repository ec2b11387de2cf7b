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

/// One client holds locks of many names (spread over many slots and shards) of every kind
/// the watchdog renews, on the endpoint at `url` whose data lives on `servers`: each stays held
/// across three watchdog periods, none is lost, another owner cannot take any of them, and
/// every release frees its lock and leaves no release latch behind.
async fn every_kind_stays_held(url: &str, servers: &[&Server]) {
    let options = ClientOptions::default().with_watchdog_timeout(Duration::from_millis(1500));
    let c = Client::connect(url, options).await.unwrap();
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
    let spin = c.spin_lock("pe:spin").unwrap();
    let pes = c.permit_expirable_semaphore("pe:pes").unwrap();
    assert!(pes.try_set_permits(2, None).await.unwrap());
    for l in locks.iter().chain([&read, &write, &fair, &spin]) {
        l.acquire(&owner).await.unwrap();
    }
    for f in &fenced {
        f.acquire(&owner).await.unwrap();
    }
    let permits = [pes.acquire(None).await.unwrap(), pes.acquire(None).await.unwrap()];
    let holds = c.tracked_holds() as u64;
    assert_eq!(holds, 14);

    // Three watchdog periods: every hold renewed three times over (renewals count holds).
    let before = c.stats().renewals;
    let renewed = common::eventually(Duration::from_secs(10), || {
        c.stats().renewals >= before + 3 * holds || lost.load(Ordering::SeqCst) > 0
    })
    .await;
    let s = c.stats();
    assert!(renewed && lost.load(Ordering::SeqCst) == 0, "holds lost or not renewed: {s:?}");
    assert_eq!(s.renewal_failures, 0, "{s:?}");

    let other = Client::connect(url, ClientOptions::default()).await.unwrap();
    let rival = other.new_owner();
    for l in &locks {
        assert!(!other.lock(l.name()).unwrap().try_acquire(&rival, Duration::ZERO, None).await.unwrap());
    }
    assert!(!other.fair_lock("pe:fair").unwrap().try_acquire(&rival, Duration::ZERO, None).await.unwrap());
    assert!(!other.spin_lock("pe:spin").unwrap().try_acquire(&rival, Duration::ZERO, None).await.unwrap());
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

    for l in locks.iter().chain([&read, &write, &fair, &spin]) {
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

    // Every release latch is deleted, not left to its TTL.
    let latches = || servers.iter().flat_map(|s| keys(s, "*_latch*")).collect::<Vec<_>>();
    let gone = common::eventually(Duration::from_secs(5), || latches().is_empty()).await;
    assert!(gone, "release latches left: {:?}", latches());
}

/// Behind a proxy in front of a sharded cluster (the stand-in refuses any command or script
/// whose keys lie in two slots). Before renewals were grouped by hash tag, the watchdog's
/// batches spanned slots, were refused with CROSSSLOT, and every hold was lost to lease doubt
/// within two periods; before latch DELs were, every latch was left to its TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holds_of_many_names_stay_held_behind_a_proxy_endpoint() {
    let server = standin::proxy_endpoint(Server::builder().name("proxy endpoint")).unwrap();
    every_kind_stays_held(&server.url(), &[&server]).await;
    // Nothing rlock sent was refused CROSSSLOT but the one cross-slot probe at each of its two
    // clients' connects.
    let errors = rlock_testbed::resp::query_text(server.port(), None, &["INFO", "errorstats"]).unwrap();
    let crossslot = errors.lines().find_map(|l| l.strip_prefix("errorstat_CROSSSLOT:count="));
    assert_eq!(crossslot.map(str::trim), Some("2"), "{errors}");
}

/// Behind twemproxy, which routes a script by its first key to one of two shards, closes a
/// connection on `HELLO` and `CLIENT`, and has no pub/sub. Before, `Client::connect` failed
/// ("broken pipe"); a renewal batch of names on both shards ran on one of them and lost the
/// other's holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holds_of_many_names_stay_held_behind_twemproxy() {
    let proxy = standin::Twemproxy::start().unwrap();
    let shards: Vec<&Server> = proxy.shards().iter().collect();
    every_kind_stays_held(&proxy.url(), &shards).await;
    // The names spread over both shards, so each shard's keys were renewed where they live.
    for s in &shards {
        assert!(s.calls("evalsha") + s.calls("eval") > 0, "a shard ran no script:\n{}", proxy.log_tail(20));
    }
}

/// Behind twemproxy (no pub/sub), waiters poll: a waiter on another client gets a released lock
/// long before the holder's lease would have ended, and 4 tasks x 25 critical sections on a
/// counter read and written through the proxy keep it exact (two through the lock, two through
/// the spin lock of the same name).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_poll_and_exclude_each_other_behind_twemproxy() {
    let proxy = standin::Twemproxy::start().unwrap();
    let holder = Client::connect(&proxy.url(), ClientOptions::default()).await.unwrap();
    let waiter = Client::connect(&proxy.url(), ClientOptions::default()).await.unwrap();
    let (a, b) = (holder.new_owner(), waiter.new_owner());
    holder.lock("tw:handoff").unwrap().acquire(&a).await.unwrap();
    let wait = {
        let (lock, b) = (waiter.lock("tw:handoff").unwrap(), b.clone());
        tokio::spawn(async move {
            lock.acquire(&b).await.unwrap();
            (lock, std::time::Instant::now())
        })
    };
    // The waiter is polling: its tries reach the servers while the lock is held.
    let scripts = || proxy.shards().iter().map(|s| s.calls("evalsha") + s.calls("eval")).sum::<u64>();
    let tries = scripts();
    assert!(
        common::eventually(Duration::from_secs(5), || scripts() >= tries + 3).await,
        "the waiter never polled"
    );
    let release = holder.lock("tw:handoff").unwrap();
    let released = std::time::Instant::now();
    assert!(release.release(&a).await.unwrap().is_unlocked());
    // The holder's watchdog lease is 30 s: only polling hands it over within this.
    let (got, at) = tokio::time::timeout(Duration::from_secs(5), wait).await.expect("no hand-off").unwrap();
    // Shown, not asserted (speed lives in make bench): within poll_interval (100 ms) and a trip.
    eprintln!(
        "hand-off without pub/sub: {:?} after the release was sent",
        at.saturating_duration_since(released)
    );
    assert!(got.release(&b).await.unwrap().is_unlocked());

    // No CLIENT SETINFO, which twemproxy answers by closing the connection.
    let info = redis::Client::open(proxy.url()).unwrap().get_connection_info().clone();
    let settings = info.redis_settings().clone().set_skip_set_lib_name();
    let raw = redis::Client::open(info.set_redis_settings(settings)).unwrap();
    let mut conn = common::patient_conn(&raw).await;
    let _: () = redis::cmd("SET").arg("tw:counter").arg(0).query_async(&mut conn).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..4 {
        let client = Client::connect(&proxy.url(), ClientOptions::default()).await.unwrap();
        let mut conn = conn.clone();
        tasks.push(tokio::spawn(async move {
            let owner = client.new_owner();
            // Half of them through the spin lock of the same name: the same lock.
            let lock =
                if i % 2 == 0 { client.lock("tw:counter-lock") } else { client.spin_lock("tw:counter-lock") };
            let lock = lock.unwrap();
            for _ in 0..25 {
                lock.acquire(&owner).await.unwrap();
                let n: i64 = redis::cmd("GET").arg("tw:counter").query_async(&mut conn).await.unwrap();
                tokio::task::yield_now().await;
                let _: () =
                    redis::cmd("SET").arg("tw:counter").arg(n + 1).query_async(&mut conn).await.unwrap();
                assert!(lock.release(&owner).await.unwrap().is_unlocked());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let n: i64 = redis::cmd("GET").arg("tw:counter").query_async(&mut conn).await.unwrap();
    assert_eq!(n, 100);
}

/// A server without `WAIT`, `WAITAOF`, `CONFIG` and `CLIENT` (renamed away, as services that
/// forbid them do): every kind of hold works as anywhere, and replica sync, which needs `WAIT`,
/// is refused at connect with a typed error that names it, instead of failing every acquire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_waits_or_admin_commands() {
    let server = standin::restricted(Server::builder().name("restricted")).unwrap();
    let unknown = redis::cmd("WAIT").arg(0).arg(0).query::<i64>(&mut server.conn()).unwrap_err();
    assert!(unknown.to_string().contains("unknown command"), "{unknown}");
    every_kind_stays_held(&server.url(), &[&server]).await;
    for (options, wait) in [
        (ClientOptions::default().with_replica_sync(Some(true)), "WAIT"),
        (ClientOptions::default().with_replica_sync_aof(true), "WAITAOF"),
    ] {
        let err = Client::connect(&server.url(), options).await.unwrap_err();
        assert_eq!(err.kind(), rlock::ErrorKind::InvalidArgument, "{err}");
        assert!(err.to_string().contains(&format!("does not run {wait} (")), "{err}");
    }
}

/// A server with `maxmemory` and an evicting policy can evict a held lock's key: holds work as
/// anywhere, and the policy is read at connect, logged as a warning and named in `stats()`. A
/// server that does not evict names none, and one whose `CONFIG` is refused connects all the
/// same, its policy unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_may_evict_is_named_in_stats() {
    let evicting = standin::evicting(Server::builder().name("evicting")).unwrap();
    every_kind_stays_held(&evicting.url(), &[&evicting]).await;
    let policy = |url: String| async move {
        Client::connect(&url, ClientOptions::default()).await.unwrap().stats().eviction_policy
    };
    assert_eq!(policy(evicting.url()).await.as_deref(), Some("volatile-lru"));
    let plain = Server::start().unwrap();
    assert_eq!(policy(plain.url()).await, None);
    let hidden = standin::restricted(
        Server::builder().name("evicting, CONFIG refused").args(standin::eviction_args()),
    )
    .unwrap();
    assert_eq!(policy(hidden.url()).await, None);
}

/// An endpoint that refuses `HELLO 3` but has `SUBSCRIBE` in RESP2 (Tencent Cloud's proxy, a
/// Redis Cloud database set to RESP2; here a server with `HELLO` renamed away): waiters
/// subscribe on a RESP2 connection and are woken by the release message, instead of polling.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_hello_waiters_subscribe_in_resp2() {
    let server = Server::builder().name("no HELLO").args(["--rename-command", "HELLO", ""]).start().unwrap();
    let holder = Client::connect(&server.url(), ClientOptions::default()).await.unwrap();
    let waiter = Client::connect(&server.url(), ClientOptions::default()).await.unwrap();
    let a = holder.new_owner();
    holder.lock("resp2:handoff").unwrap().acquire(&a).await.unwrap();
    let (lock, b) = (waiter.lock("resp2:handoff").unwrap(), waiter.new_owner());
    let tries = server.calls("evalsha");
    let (l, o) = (lock.clone(), b.clone());
    let wait = tokio::spawn(async move { l.acquire(&o).await });
    // Subscribed to the lock's channel, on a RESP2 connection, and its try after subscribing
    // done (its second acquire script): from then on only the message can wake it early.
    let channel = "redisson_lock__channel:{resp2:handoff}";
    assert!(
        common::eventually(Duration::from_secs(5), || server.numsub(channel) == 1).await,
        "never subscribed"
    );
    assert!(common::eventually(Duration::from_secs(5), || server.calls("evalsha") >= tries + 2).await);
    let woken = waiter.stats().wakeups;
    assert!(holder.lock("resp2:handoff").unwrap().release(&a).await.unwrap().is_unlocked());
    tokio::time::timeout(Duration::from_secs(5), wait).await.expect("no hand-off").unwrap().unwrap();
    // Woken by the message (the holder's 30 s lease bounds a sleep otherwise).
    assert_eq!(waiter.stats().wakeups, woken + 1);
    assert!(lock.release(&b).await.unwrap().is_unlocked());
    // The RESP2 connection does not reconnect by itself: killed, it is found dead while a
    // waiter waits, replaced, and the waiter's channel subscribed on the new one.
    let _: () = redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("pubsub").query(&mut server.conn()).unwrap();
    holder.lock("resp2:handoff").unwrap().acquire(&a).await.unwrap();
    let (l, o) = (lock.clone(), b.clone());
    let wait = tokio::spawn(async move { l.acquire(&o).await });
    assert!(
        common::eventually(Duration::from_secs(15), || server.numsub(channel) == 1).await,
        "not subscribed again after the kill"
    );
    assert!(holder.lock("resp2:handoff").unwrap().release(&a).await.unwrap().is_unlocked());
    tokio::time::timeout(Duration::from_secs(5), wait).await.expect("no hand-off").unwrap().unwrap();
    assert!(lock.release(&b).await.unwrap().is_unlocked());
    // Every kind of hold works there too.
    every_kind_stays_held(&server.url(), &[&server]).await;
}
