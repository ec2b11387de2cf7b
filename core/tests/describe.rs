//! `Client::describe` and `Client::list` against real servers: every primitive on one server
//! (kind, holders with counts and records, TTL, waiters, the fair queue with deadlines, tokens,
//! permits with ids and expiries, counts), foreign keys, missing names, a Redisson-style holder
//! without a record, and on a private cluster (keys on every master found, sharded waiters
//! counted).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{Cluster, Inspect as _, Server};
use redis::Commands as _;
use rlock::{Client, ClientOptions, Description, ErrorKind, Kind};

async fn client(url: &str, app: &str) -> Client {
    Client::connect(url, ClientOptions::default().with_app_name(Some(app.into()))).await.unwrap()
}

/// Describes `name` until `cond` holds (a state reached in the background: a record written,
/// a waiter subscribed); panics after 10 s.
async fn described(client: &Client, name: &str, cond: impl Fn(&Description) -> bool) -> Description {
    let start = Instant::now();
    loop {
        let d = client.describe(name).await.unwrap();
        if cond(&d) {
            return d;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "timed out; last: {d:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn listed(found: &[rlock::Listed]) -> BTreeMap<String, Kind> {
    found.iter().map(|l| (l.name.clone(), l.kind)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_fenced_locks_and_what_is_not_a_lock() {
    let server = Server::start().unwrap();
    let c = client(&server.url(), "billing").await;
    let owner = c.new_owner();
    let lock = c.lock("orders").unwrap();
    lock.acquire(&owner).await.unwrap();
    lock.acquire(&owner).await.unwrap();
    // The record is written within about a second of the acquire.
    let d = described(&c, "orders", |d| d.holders.first().is_some_and(|h| h.held_for.is_some())).await;
    assert_eq!((d.kind, d.redis_type.as_str()), (Kind::Lock, "hash"));
    assert!(d.ttl.is_some_and(|t| !t.is_zero() && t <= Duration::from_secs(30)), "{d:?}");
    let h = &d.holders[0];
    assert_eq!((h.owner.as_str(), h.count, h.mode.as_deref()), (owner.as_str(), 2, None));
    assert_eq!(h.client_id, c.id().hyphenated().to_string());
    let r = h.record.as_ref().unwrap();
    assert_eq!(
        (r.app.as_deref(), r.pid, r.client_id.as_str()),
        (Some("billing"), std::process::id(), h.client_id.as_str())
    );
    assert!(!r.host.is_empty() && r.version == env!("CARGO_PKG_VERSION"));
    assert!(
        h.held_for.unwrap() < Duration::from_secs(10) && h.since.unwrap() <= d.now + Duration::from_secs(1)
    );
    assert_eq!((d.waiters, d.token, d.available_permits, d.count), (0, None, None, None));
    assert!(d.notes.iter().any(|n| n.contains("fair lock")), "a lock could be a fair lock: {:?}", d.notes);

    // The JSON shape: every documented key, always; durations and times in milliseconds.
    let json = serde_json::to_value(&d).unwrap();
    assert_eq!(json["ttl_ms"].as_u64(), d.ttl.map(|t| t.as_millis() as u64));
    assert!(json["now_ms"].as_u64().is_some_and(|t| t > 1_700_000_000_000), "{json}");
    let keys: std::collections::BTreeSet<&str> =
        json.as_object().unwrap().keys().map(String::as_str).collect();
    let documented = [
        "name",
        "kind",
        "redis_type",
        "ttl_ms",
        "now_ms",
        "holders",
        "waiters",
        "channels",
        "queue",
        "queue_length",
        "token",
        "available_permits",
        "count",
        "permits",
        "permits_held",
        "notes",
    ];
    assert_eq!(keys, documented.into_iter().collect());
    assert_eq!(json["kind"], "lock");
    assert_eq!(json["holders"][0]["record"]["app"], "billing");
    assert_eq!(json["channels"][0]["channel"], "redisson_lock__channel:{orders}");

    // A fenced lock: its token, also once free (the counter stays).
    let fenced = c.fenced_lock("ledger").unwrap();
    assert_eq!(fenced.acquire(&owner).await.unwrap(), 1);
    assert_eq!(fenced.acquire(&owner).await.unwrap(), 2);
    let d = c.describe("ledger").await.unwrap();
    assert_eq!((d.kind, d.token, d.holders[0].count), (Kind::FencedLock, Some(2), 2));
    fenced.release(&owner).await.unwrap();
    fenced.release(&owner).await.unwrap();
    let d = c.describe("ledger").await.unwrap();
    assert_eq!((d.kind, d.redis_type.as_str(), d.token, d.ttl), (Kind::FencedLock, "none", Some(2), None));
    assert!(d.holders.is_empty());

    // Nothing, foreign keys, bad names.
    let d = c.describe("nothing-here").await.unwrap();
    assert_eq!((d.kind, d.redis_type.as_str(), d.ttl, d.waiters), (Kind::None, "none", None, 0));
    let mut conn = server.conn();
    let _: () = conn.rpush("jobs-list", "a").unwrap();
    let _: () = conn.hset("user:1", "email", "a@example.com").unwrap();
    let _: () = conn.set("greeting", "hello").unwrap();
    for (name, t) in [("jobs-list", "list"), ("user:1", "hash"), ("greeting", "string")] {
        let d = c.describe(name).await.unwrap();
        assert_eq!((d.kind, d.redis_type.as_str()), (Kind::Other, t), "{name}");
        assert!(d.holders.is_empty());
    }
    // Describe sends PUBSUB after its script; nothing else here does. (Redis 7 counts it under
    // its subcommand, 6.2 under the command.)
    let pubsub_calls = || server.calls("pubsub|numsub") + server.calls("pubsub");
    let calls = pubsub_calls();
    assert!(calls > 0);
    for bad in ["", &"x".repeat(rlock::MAX_NAME_LEN + 1)] {
        assert_eq!(c.describe(bad).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    assert_eq!(pubsub_calls(), calls, "nothing sent for a bad name");
    lock.release(&owner).await.unwrap();
    lock.release(&owner).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redisson_holder_has_no_record() {
    let server = Server::start().unwrap();
    let c = client(&server.url(), "ops").await;
    let java = "0b0ec9a4-2fd9-4c3d-9a26-5b2c4e8f7d11:57";
    let mut conn = server.conn();
    let _: () = conn.hset("java-lock", java, 3).unwrap();
    let _: () = conn.pexpire("java-lock", 20_000).unwrap();
    let d = c.describe("java-lock").await.unwrap();
    assert_eq!(d.kind, Kind::Lock);
    let h = &d.holders[0];
    assert_eq!(
        (h.owner.as_str(), h.client_id.as_str(), h.count),
        (java, "0b0ec9a4-2fd9-4c3d-9a26-5b2c4e8f7d11", 3)
    );
    assert!(h.record.is_none() && h.held_for.is_none());
    assert!(d.notes.iter().any(|n| n.contains("no holder record")), "{:?}", d.notes);
    assert!(d.ttl.is_some_and(|t| t > Duration::from_secs(15)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fair_lock_queue_with_deadlines_and_subscribers() {
    let server = Server::start().unwrap();
    let a = client(&server.url(), "holder").await;
    let b = client(&server.url(), "waiter").await;
    let (holder, waiter) = (a.new_owner(), b.new_owner());
    a.fair_lock("fair").unwrap().acquire(&holder).await.unwrap();
    let lock = b.fair_lock("fair").unwrap();
    let (l, w) = (lock.clone(), waiter.clone());
    let task = tokio::spawn(async move { l.try_acquire(&w, Duration::from_secs(30), None).await });
    let own_channel = format!("redisson_lock__channel:{{fair}}:{}", waiter.as_str());
    let d =
        described(&a, "fair", |d| d.channels.iter().any(|c| c.channel == own_channel && c.subscribers == 1))
            .await;
    assert_eq!((d.kind, d.queue_length, d.waiters), (Kind::FairLock, Some(1), 1));
    let q = &d.queue[0];
    assert_eq!(q.owner, waiter.as_str());
    assert!(q.record.is_none(), "a client that only waits holds nothing, so it has no record");
    // The deadline: the holder's TTL plus the 30 s wait, from the enqueue.
    let left = q.deadline_in.unwrap();
    assert!(left > Duration::from_secs(25) && left <= Duration::from_secs(61), "deadline in {left:?}");
    assert!(q.deadline.is_some());
    assert_eq!(d.holders[0].owner, holder.as_str());
    a.fair_lock("fair").unwrap().release(&holder).await.unwrap();
    assert!(task.await.unwrap().unwrap());
    let d = c_describe(&b, "fair").await;
    assert_eq!((d.kind, d.holders[0].owner.as_str(), d.queue.len()), (Kind::Lock, waiter.as_str(), 0));
    assert_eq!(b.describe_as("fair", Kind::FairLock).await.unwrap().kind, Kind::FairLock);
    lock.release(&waiter).await.unwrap();
}

async fn c_describe(c: &Client, name: &str) -> Description {
    c.describe(name).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_lock_readers_then_a_writer() {
    let server = Server::start().unwrap();
    let c = client(&server.url(), "rw").await;
    let rw = c.read_write_lock("config").unwrap();
    let (r1, r2, w) = (c.new_owner(), c.new_owner(), c.new_owner());
    rw.read_lock().acquire(&r1).await.unwrap();
    rw.read_lock().acquire(&r1).await.unwrap();
    rw.read_lock().acquire(&r2).await.unwrap();
    let d = c_describe(&c, "config").await;
    assert_eq!(d.kind, Kind::ReadWriteLock);
    let mut holders: Vec<_> = d.holders.iter().map(|h| (h.owner.clone(), h.mode.clone(), h.count)).collect();
    holders.sort();
    let mut expected = vec![
        (r1.as_str().to_owned(), Some("read".to_owned()), 2),
        (r2.as_str().to_owned(), Some("read".to_owned()), 1),
    ];
    expected.sort();
    assert_eq!(holders, expected);
    assert!(d.holders.iter().all(|h| h.ttl.is_some_and(|t| !t.is_zero())), "read-hold leases: {d:?}");
    for o in [&r1, &r1, &r2] {
        rw.read_lock().release(o).await.unwrap();
    }
    rw.write_lock().acquire(&w).await.unwrap();
    let d = c_describe(&c, "config").await;
    assert_eq!(d.kind, Kind::ReadWriteLock);
    assert_eq!(d.holders.len(), 1);
    assert_eq!((d.holders[0].owner.as_str(), d.holders[0].mode.as_deref()), (w.as_str(), Some("write")));
    rw.write_lock().release(&w).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphores_and_latches_told_apart_by_their_waiters() {
    let server = Server::start().unwrap();
    let c = client(&server.url(), "counts").await;
    let sem = c.semaphore("slots").unwrap();
    assert!(sem.try_set_permits(3, None).await.unwrap());
    sem.acquire(1).await.unwrap();
    let d = c_describe(&c, "slots").await;
    assert_eq!((d.kind, d.available_permits, d.count), (Kind::SemaphoreOrLatch, Some(2), Some(2)));
    assert!(d.notes.iter().any(|n| n.contains("semaphore or a count-down latch")));
    let d = c.describe_as("slots", Kind::Semaphore).await.unwrap();
    assert_eq!((d.kind, d.available_permits, d.count), (Kind::Semaphore, Some(2), None));
    let s = sem.clone();
    let waiting = tokio::spawn(async move { s.acquire(5).await });
    let d = described(&c, "slots", |d| d.waiters == 1).await;
    assert_eq!((d.kind, d.available_permits), (Kind::Semaphore, Some(2)));
    waiting.abort();

    let latch = c.count_down_latch("batch").unwrap();
    assert!(latch.try_set_count(2).await.unwrap());
    assert_eq!(c_describe(&c, "batch").await.kind, Kind::SemaphoreOrLatch);
    let l = latch.clone();
    let waiter = tokio::spawn(async move { l.wait(None).await });
    let d = described(&c, "batch", |d| d.waiters == 1).await;
    assert_eq!((d.kind, d.count, d.available_permits), (Kind::CountDownLatch, Some(2), None));
    assert!(d
        .channels
        .iter()
        .any(|ch| ch.channel == "redisson_countdownlatch__channel__{batch}" && ch.subscribers == 1));
    latch.count_down().await.unwrap();
    latch.count_down().await.unwrap();
    assert!(waiter.await.unwrap().unwrap());
    assert_eq!(c_describe(&c, "batch").await.kind, Kind::None);
    assert_eq!(c.describe_as("batch", Kind::CountDownLatch).await.unwrap().count, Some(0));
    let d = c.describe_as("slots", Kind::Lock).await.unwrap();
    assert_eq!(d.kind, Kind::SemaphoreOrLatch, "not a lock");
    assert!(d.notes.iter().any(|n| n.contains("not read as a lock")), "{:?}", d.notes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permit_expirable_semaphore_permits_map_to_their_clients() {
    let server = Server::start().unwrap();
    let c = client(&server.url(), "renderer").await;
    let sem = c.permit_expirable_semaphore("gpu").unwrap();
    assert!(sem.try_set_permits(3, None).await.unwrap());
    let watched = sem.acquire(None).await.unwrap().keep();
    let leased = sem.acquire(Some(Duration::from_secs(60))).await.unwrap().keep();
    // A Redisson permit without a lease: random id, score 922337203685477, no record.
    let java = [0xabu8; 16];
    let mut conn = server.conn();
    let _: () = conn.zadd("{gpu}:timeout", &java[..], 922_337_203_685_477i64).unwrap();
    let _: () = conn.decr("gpu", 1).unwrap();
    let d = described(&c, "gpu", |d| d.permits.iter().any(|p| p.held_for.is_some())).await;
    assert_eq!(
        (d.kind, d.available_permits, d.permits_held),
        (Kind::PermitExpirableSemaphore, Some(0), Some(3))
    );
    let by_id: BTreeMap<&str, &rlock::HeldPermit> = d.permits.iter().map(|p| (p.id.as_str(), p)).collect();
    let w = by_id[watched.as_str()];
    assert!(
        w.expires_in.is_some_and(|t| !t.is_zero() && t <= Duration::from_secs(30)),
        "watchdog lease: {w:?}"
    );
    assert_eq!(w.record.as_ref().unwrap().app.as_deref(), Some("renderer"));
    assert_eq!(w.owner.as_deref(), Some(format!("{}:0", c.id().hyphenated()).as_str()));
    assert!(w.held_for.is_some());
    let l = by_id[leased.as_str()];
    assert!(
        l.expires_in.is_some_and(|t| t > Duration::from_secs(50) && t <= Duration::from_secs(60)),
        "{l:?}"
    );
    // The watchdog does not track a leased permit, so no record lists it; its id names the client.
    assert_eq!((l.owner.as_deref(), l.held_for), (None, None));
    assert_eq!(l.record.as_ref().unwrap().client_id, c.id().hyphenated().to_string());
    let j = by_id["abababababababababababababababab"];
    assert_eq!((j.expires, j.expires_in, j.record.is_none()), (None, None, true));
    sem.release(&watched).await.unwrap();
    sem.release(&leased).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_finds_each_primitive_once_under_its_name() {
    let server = Server::start().unwrap();
    let c = client(&server.url(), "lister").await;
    let o = c.new_owner();
    c.lock("l-lock").unwrap().acquire(&o).await.unwrap();
    let fenced = c.fenced_lock("l-fenced").unwrap();
    fenced.acquire(&o).await.unwrap();
    fenced.release(&o).await.unwrap(); // free: only its token counter is left
    c.fenced_lock("l-fenced-held").unwrap().acquire(&o).await.unwrap();
    c.read_write_lock("l-rw").unwrap().read_lock().acquire(&o).await.unwrap();
    assert!(c.semaphore("l-sem").unwrap().try_set_permits(2, None).await.unwrap());
    let pes = c.permit_expirable_semaphore("l-pes").unwrap();
    assert!(pes.try_set_permits(2, None).await.unwrap());
    let _permit = pes.acquire(None).await.unwrap().keep();
    assert!(c.count_down_latch("l-latch").unwrap().try_set_count(1).await.unwrap());
    let mut conn = server.conn();
    let _: () = conn.rpush("l-list", "x").unwrap();
    let _: () = conn.set("l-text", "hello").unwrap();
    // Wait for the holder record: it must not be listed.
    let record = rlock::surface::record_key(&c.id().hyphenated().to_string());
    assert!(common::eventually(Duration::from_secs(5), || conn.exists::<_, bool>(&record).unwrap()).await);

    let all = listed(&c.list(None, None).await.unwrap());
    let expected: BTreeMap<String, Kind> = [
        ("l-lock", Kind::Lock),
        ("l-fenced", Kind::FencedLock),
        ("l-fenced-held", Kind::FencedLock),
        ("l-rw", Kind::ReadWriteLock),
        ("l-sem", Kind::SemaphoreOrLatch),
        ("l-pes", Kind::PermitExpirableSemaphore),
        ("l-latch", Kind::SemaphoreOrLatch),
    ]
    .into_iter()
    .map(|(n, k)| (n.to_owned(), k))
    .collect();
    assert_eq!(all, expected);
    let some = listed(&c.list(Some("l-f*"), None).await.unwrap());
    assert_eq!(some.keys().collect::<Vec<_>>(), ["l-fenced-held"], "the free one's key does not match l-f*");
    let through_token = listed(&c.list(Some("*l-fenced*"), None).await.unwrap());
    assert_eq!(through_token.keys().collect::<Vec<_>>(), ["l-fenced", "l-fenced-held"]);
    assert_eq!(c.list(None, Some(2)).await.unwrap().len(), 2);
    assert!(c.list(Some("nomatch*"), None).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_every_master_is_scanned_and_sharded_waiters_counted() {
    let cluster = Cluster::start(3, 0).unwrap();
    let c = client(&cluster.url(), "clustered").await;
    let mut probe = common::conn_to(cluster.nodes()[0].port());
    let shardnumsub = redis::cmd("PUBSUB").arg("SHARDNUMSUB").query::<redis::Value>(&mut probe).is_ok();
    assert_eq!(c.sharded_pubsub(), shardnumsub, "sharded exactly when the cluster has it");
    let o = c.new_owner();
    // Names until every master holds one.
    let mut names = Vec::new();
    let mut masters = std::collections::BTreeSet::new();
    for i in 0.. {
        let n = format!("c-lock-{i}");
        if masters.insert(cluster.shard_of(&n).unwrap().master) {
            names.push(n);
        }
        if masters.len() == 3 {
            break;
        }
    }
    for n in &names {
        c.lock(n).unwrap().acquire(&o).await.unwrap();
    }
    let fenced = c.fenced_lock("c-fenced").unwrap();
    fenced.acquire(&o).await.unwrap();
    fenced.release(&o).await.unwrap();
    let latch = c.count_down_latch("c-latch").unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    let l = latch.clone();
    let waiter = tokio::spawn(async move { l.wait(None).await });
    let d = described(&c, "c-latch", |d| d.waiters == 1).await;
    assert_eq!((d.kind, d.count), (Kind::CountDownLatch, Some(1)));
    // A waiter on classic pub/sub (on whichever node its client picked) is counted too.
    let classic = Client::connect(&cluster.url(), ClientOptions::default().with_sharded_pubsub(Some(false)))
        .await
        .unwrap();
    let l = classic.count_down_latch("c-latch").unwrap();
    let classic_waiter = tokio::spawn(async move { l.wait(None).await });
    let d = described(&c, "c-latch", |d| d.waiters == 2).await;
    assert_eq!(d.kind, Kind::CountDownLatch);

    let d = described(&c, &names[0], |d| d.holders.first().is_some_and(|h| h.record.is_some())).await;
    assert_eq!((d.kind, d.holders[0].count), (Kind::Lock, 1));
    assert_eq!(d.holders[0].record.as_ref().unwrap().app.as_deref(), Some("clustered"));

    let found = listed(&c.list(Some("c-*"), None).await.unwrap());
    for n in &names {
        assert_eq!(found.get(n), Some(&Kind::Lock), "{n} on its master: {found:?}");
    }
    assert_eq!(found.get("c-latch"), Some(&Kind::CountDownLatch));
    assert!(!found.contains_key("c-fenced"), "its token key does not match c-*");
    let all = listed(&c.list(None, None).await.unwrap());
    assert_eq!(all.get("c-fenced"), Some(&Kind::FencedLock));
    assert_eq!(all.len(), names.len() + 2, "{all:?}");
    assert_eq!(c.describe("a{}b").await.unwrap_err().kind(), ErrorKind::InvalidArgument);

    latch.count_down().await.unwrap();
    assert!(waiter.await.unwrap().unwrap());
    // Redisson and rlock clients with classic pub/sub are woken by a classic PUBLISH only.
    classic_waiter.abort();
    for n in &names {
        c.lock(n).unwrap().release(&o).await.unwrap();
    }
}
