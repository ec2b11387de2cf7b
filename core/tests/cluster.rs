//! rlock on a real Redis Cluster on loopback (3 masters, and 3 masters + 3 replicas).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

mod common;

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{cluster_calls, conn_to, eventually, server_version, wait_for, Cluster};
use redis::Commands as _;
use rlock::{Client, ClientOptions, ErrorKind, LostEvent, LostReason, Topology};

fn slot_of(cluster: &Cluster, key: &str) -> u16 {
    let mut c = conn_to(cluster.nodes()[0].port());
    redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(&mut c).unwrap()
}

/// Whether the cluster answers `PUBSUB SHARDNUMSUB` (Redis 7 and later; not 6.2): what decides
/// sharded pub/sub, for rlock and for Redisson.
fn answers_shardnumsub(cluster: &Cluster) -> bool {
    let mut c = conn_to(cluster.nodes()[0].port());
    redis::cmd("PUBSUB").arg("SHARDNUMSUB").query::<redis::Value>(&mut c).is_ok()
}

/// A client with `sharded_pubsub` forced to `sharded`; `None` when the cluster has no sharded
/// pub/sub, after checking that the forced option is refused there (typed, at connect).
async fn forced(cluster: &Cluster, options: ClientOptions, sharded: bool) -> Option<Client> {
    let options = options.with_sharded_pubsub(Some(sharded));
    if sharded && !answers_shardnumsub(cluster) {
        let Err(err) = Client::connect(&cluster.url(), options).await else {
            panic!("sharded_pubsub forced on a cluster without it connected");
        };
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        assert!(err.to_string().contains("SHARDNUMSUB"), "{err}");
        // It names the server it refused, in the server's own words.
        let version = server_version(cluster.nodes()[0].port());
        assert!(err.to_string().contains(&version), "{err} does not name {version}");
        return None;
    }
    Some(Client::connect(&cluster.url(), options).await.unwrap())
}

fn lost_events(client: &Client) -> Arc<Mutex<Vec<LostEvent>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let e = events.clone();
    client.on_lost(rlock::LostFilter::all(), move |ev| e.lock().unwrap().push(ev.clone()));
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_on_many_names_across_all_slots() {
    let cluster = Cluster::start(3, 0).unwrap();
    // A 6 s lease: 2000 holds acquired at once in a debug build on 2 busy cores could starve
    // the watchdog's first renewals past a 1.5 s lease, and with 3 s (a round has 1.25 s to be
    // answered before the leases are in doubt) a loaded CI run lost one (2026-12-04).
    let options = ClientOptions::default().with_watchdog_timeout(Duration::from_millis(6000));
    let a = Client::connect(&cluster.url(), options.clone()).await.unwrap();
    let b = Client::connect(&cluster.url(), options).await.unwrap();
    assert_eq!(a.topology(), Topology::Cluster);
    assert_eq!(
        a.sharded_pubsub(),
        answers_shardnumsub(&cluster),
        "sharded pub/sub exactly when the cluster answers PUBSUB SHARDNUMSUB, as Redisson"
    );
    assert!(a.replica_sync(), "on by default off a single server");
    let lost = lost_events(&a);
    // Each connect tried WAIT once (replica sync needs it); acquires send more only with replicas.
    let probes = cluster_calls(&cluster, "wait");

    // 2000 names spread over the slots of all three masters.
    let names: Vec<String> = (0..2000).map(|i| format!("order-{i}")).collect();
    let slots: BTreeSet<u16> = names.iter().map(|n| slot_of(&cluster, n)).collect();
    assert!(slots.len() > 1500, "names cover {} slots", slots.len());
    let owner = a.new_owner();
    let locks: Vec<_> = names.iter().map(|n| a.lock(n).unwrap()).collect();
    futures_util::future::try_join_all(locks.iter().map(|l| l.acquire(&owner))).await.unwrap();

    // Each lock is a Redisson hash on the master of its slot, and another client contends.
    let field = owner.as_str().to_owned();
    let mut masters = HashSet::new();
    for n in names.iter().step_by(97) {
        let shard = cluster.shard_of(n).unwrap();
        masters.insert(shard.master);
        let count: Option<i64> = conn_to(shard.master).hget(n, &field).unwrap();
        assert_eq!(count, Some(1), "{n} on {}", shard.master);
    }
    assert_eq!(masters.len(), 3, "locks on every master");
    let other = b.new_owner();
    for l in locks.iter().step_by(199) {
        assert!(!b.lock(l.name()).unwrap().try_acquire(&other, Duration::ZERO, None).await.unwrap());
    }

    // Renewals over all slots go through (a batch never mixes slots: that would fail with
    // CROSSSLOT and lose holds); a replica-less cluster has no replicas, so no acquire waited.
    // The window is the measurement: more than two renewal periods of 2 s (a third of the lease).
    tokio::time::sleep(Duration::from_millis(4400)).await;
    assert!(lost.lock().unwrap().is_empty(), "lost: {:?}", lost.lock().unwrap());
    assert_eq!(cluster_calls(&cluster, "wait"), probes);

    futures_util::future::try_join_all(locks.iter().map(|l| l.release(&owner))).await.unwrap();
    assert_eq!(a.tracked_holds(), 0);
    for n in names.iter().step_by(97) {
        let exists: bool = conn_to(cluster.shard_of(n).unwrap().master).exists(n).unwrap();
        assert!(!exists, "{n} released");
    }
    // Release latches share their lock's slot and are deleted in per-slot batches.
    let latches_gone = eventually(Duration::from_secs(10), || {
        cluster.nodes().iter().all(|n| {
            let keys: Vec<String> = conn_to(n.port()).keys("redisson_unlock_latch*").unwrap();
            keys.is_empty()
        })
    })
    .await;
    assert!(latches_gone);

    // Locks sharing slots are renewed together: 300 locks under 3 hash tags (3 slots, batches
    // of 100) cost a few script calls per period, where one call per lock would be 300.
    let tagged: Vec<_> = (0..300).map(|i| a.lock(&format!("{{tag-{}}}:{i}", i % 3)).unwrap()).collect();
    futures_util::future::try_join_all(tagged.iter().map(|l| l.acquire(&owner))).await.unwrap();
    let before = cluster_calls(&cluster, "evalsha");
    tokio::time::sleep(Duration::from_millis(4000)).await; // the window: 2 renewal periods
    let renew_calls = cluster_calls(&cluster, "evalsha") - before;
    println!("renewal script calls for 300 locks on 3 slots over 2 periods: {renew_calls}");
    // 3 calls a period when the acquires share a tick of the timer wheel; allow 3 ticks apart
    // and slack (300, one call per lock, is far above).
    assert!((3..=3 * 3 * 5).contains(&renew_calls), "{renew_calls} renewal calls");
    assert!(lost.lock().unwrap().is_empty(), "lost: {:?}", lost.lock().unwrap());
    futures_util::future::try_join_all(tagged.iter().map(|l| l.release(&owner))).await.unwrap();

    // Names whose channel would land on another slot are refused before anything is sent.
    for bad in ["a{}b", "{open"] {
        assert_eq!(a.lock(bad).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
}

/// Waits until `client`'s waiter on `name` is subscribed (sharded or classic), on the slot's
/// master for sharded pub/sub.
async fn wait_subscribed(cluster: &Cluster, name: &str, sharded: bool) {
    let channel = format!("redisson_lock__channel:{{{name}}}");
    let master = cluster.shard_of(name).unwrap().master;
    let ok = eventually(Duration::from_secs(10), || {
        let mut c = conn_to(master);
        if sharded {
            let v: Vec<redis::Value> =
                redis::cmd("PUBSUB").arg("SHARDNUMSUB").arg(&channel).query(&mut c).unwrap();
            v.get(1) == Some(&redis::Value::Int(1))
        } else {
            // Classic subscriptions live on whichever node the client picked.
            cluster.nodes().iter().any(|n| {
                let v: Vec<redis::Value> =
                    redis::cmd("PUBSUB").arg("NUMSUB").arg(&channel).query(&mut conn_to(n.port())).unwrap();
                v.get(1) == Some(&redis::Value::Int(1))
            })
        }
    })
    .await;
    assert!(ok, "waiter on {name} subscribed (sharded: {sharded})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_off_wakes_through_sharded_and_classic_pubsub() {
    let cluster = Cluster::start(3, 0).unwrap();
    for sharded in [true, false] {
        let Some(holder) = forced(&cluster, ClientOptions::default(), sharded).await else { continue };
        let waiter = forced(&cluster, ClientOptions::default(), sharded).await.unwrap();
        assert_eq!(holder.sharded_pubsub(), sharded);
        let name = if sharded { "orders" } else { "invoices" };
        let (h, w) = (holder.new_owner(), waiter.new_owner());
        let lock = holder.lock(name).unwrap();
        lock.acquire(&h).await.unwrap(); // 30 s lease: waking by expiry would take 30 s

        let wlock = waiter.lock(name).unwrap();
        let task = tokio::spawn(async move {
            wlock.acquire(&w).await.unwrap();
            Instant::now()
        });
        wait_subscribed(&cluster, name, sharded).await;
        let publish = if sharded { "spublish" } else { "publish" };
        let published = cluster_calls(&cluster, publish);
        let released = Instant::now();
        lock.release(&h).await.unwrap();
        let woke = tokio::time::timeout(Duration::from_secs(5), task).await.unwrap().unwrap();
        let handoff = woke - released;
        println!("hand-off through {} pub/sub: {handoff:?}", if sharded { "sharded" } else { "classic" });
        assert!(handoff < Duration::from_secs(2), "{handoff:?}");
        assert!(cluster_calls(&cluster, publish) > published, "{publish} sent by the release script");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acl_user_connects_and_a_wrong_password_is_a_typed_error() {
    // Every node has an ACL user and no default user; cluster nodes talk to each other on the
    // bus without it. The testbed creates the cluster and checks it as that user.
    let cluster = Cluster::builder()
        // One word per argument: redis-server quotes each as one token.
        .args(["--user", "app", "on", ">s3cret-pass", "~*", "&*", "+@all", "--user", "default", "off"])
        .auth("app", "s3cret-pass")
        .start()
        .unwrap();
    let url = |auth: &str| format!("redis+cluster://{auth}@{}/", cluster.hosts());
    let client = Client::connect(&url("app:s3cret-pass"), ClientOptions::default()).await.unwrap();
    let owner = client.new_owner();
    let lock = client.lock("acl-lock").unwrap();
    lock.acquire(&owner).await.unwrap();
    lock.release(&owner).await.unwrap();

    let err = Client::connect(&url("app:wrong-pass"), ClientOptions::default()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Redis, "wrong password: {err}");
    for text in [err.to_string(), format!("{err:?}")] {
        assert!(!text.contains("wrong-pass") && !text.contains("s3cret"), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_master_with_and_without_replica_sync() {
    // 3 masters + 3 replicas. `cluster-require-full-coverage` stays at its default (yes): while
    // a master is down and not yet replaced, the whole cluster refuses commands, so leases
    // must outlast the failover (about 2-4 s here); a 10 s watchdog lease does.
    let mut cluster = Cluster::start(3, 1).unwrap();
    let long = ClientOptions::default().with_watchdog_timeout(Duration::from_secs(10));

    // --- A: healthy replicas, replica sync on (the default off a single server).
    let a = Client::connect(&cluster.url(), long.clone()).await.unwrap();
    assert!(a.replica_sync());
    let a_lost = lost_events(&a);
    let owner = a.new_owner();
    let names: Vec<String> = (0..60).map(|i| format!("job-{i}")).collect();
    let locks: Vec<_> = names.iter().map(|n| a.lock(n).unwrap()).collect();
    let waits = cluster_calls(&cluster, "wait");
    for l in &locks {
        l.acquire(&owner).await.unwrap();
    }
    assert!(cluster_calls(&cluster, "wait") >= waits + 60, "each acquire waited for a replica");
    // When acquire returned, a replica had the lock.
    for n in &names {
        let shard = cluster.shard_of(n).unwrap();
        let on_replica: bool = conn_to(shard.replicas[0]).hexists(n, owner.as_str()).unwrap();
        assert!(on_replica, "{n} on the replica of {}", shard.master);
    }

    // A contender waits on a lock of the shard whose master we kill.
    let victim = cluster.shard_of(&names[0]).unwrap();
    // The waiter rides out the failover: its attempts fail with Connection errors (the master
    // is gone, then CLUSTERDOWN) and are retried.
    let b = Client::connect(&cluster.url(), long.clone().with_retry_attempts(20)).await.unwrap();
    let b_owner = b.new_owner();
    let b_lock = b.lock(&names[0]).unwrap();
    let contender = {
        let (l, o) = (b_lock.clone(), b_owner.clone());
        tokio::spawn(async move { l.acquire(&o).await.map(|_| Instant::now()) })
    };
    wait_subscribed(&cluster, &names[0], a.sharded_pubsub()).await;

    let killed = Instant::now();
    cluster.node(victim.master).unwrap().kill();
    let new_master = victim.replicas[0];
    wait_for(Duration::from_secs(30), "the replica to take over", || {
        let shards = cluster.shards_from(new_master).unwrap_or_default();
        shards.iter().any(|s| s.master == new_master)
    });
    let failover = killed.elapsed();
    // Every hold survived: the promoted replica had them, renewals go on, no lost event.
    for (n, l) in names.iter().zip(&locks) {
        assert!(l.is_held(&owner).await.unwrap(), "{n} still held after failover");
    }
    // Renewals that were in flight when the master died stall until the cluster client has
    // the new topology, then are retried; one lands on the new master well inside the lease
    // (a fresh renewal puts the PTTL back near 10 s; without one it only falls).
    let renewed =
        eventually(Duration::from_secs(9), || conn_to(new_master).pttl::<_, i64>(&names[0]).unwrap() > 8500)
            .await;
    assert!(renewed, "renewed on the new master within the lease");
    assert!(a_lost.lock().unwrap().is_empty(), "lost: {:?}", a_lost.lock().unwrap());
    if contender.is_finished() {
        let result = contender.await.unwrap();
        panic!("the waiter finished during the failover (mutual exclusion or waiting broken): {result:?}");
    }
    let released = Instant::now();
    locks[0].release(&owner).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(15), contender).await.unwrap().unwrap().unwrap();
    println!(
        "A (replica sync): master killed, replica took over in {failover:?}; 60/60 holds kept, \
         0 lost; the waiter got the lock {:?} after the release on the new master",
        got - released
    );
    b_lock.release(&b_owner).await.unwrap();
    for l in &locks[1..] {
        l.release(&owner).await.unwrap();
    }

    // --- B: a replica that does not acknowledge (SIGSTOP, with a replication backlog in
    // flight), then its master dies.
    // A name on a shard that still has its replica.
    let payments = (0..)
        .map(|i| format!("payments-{i}"))
        .find(|n| {
            let s = cluster.shard_of(n).unwrap();
            s.master != victim.master && s.master != new_master && !s.replicas.is_empty()
        })
        .unwrap();
    let payments = payments.as_str();
    let shard = cluster.shard_of(payments).unwrap();
    let unsynced =
        Client::connect(&cluster.url(), long.clone().with_replica_sync(Some(false))).await.unwrap();
    let synced = Client::connect(
        &cluster.url(),
        long.clone().with_replica_sync_timeout(Duration::from_millis(300)).with_retry_attempts(0),
    )
    .await
    .unwrap();
    let u_lost = lost_events(&unsynced);
    let (u, s) = (unsynced.new_owner(), synced.new_owner());
    cluster.node(shard.replicas[0]).unwrap().sigstop().unwrap();
    // With sync the acquire fails, and is undone: the lock is not left behind. (Same slot as
    // the unsynced lock below, so the same stopped replica.)
    let refunds = format!("{{{payments}}}:refunds");
    let refunds = refunds.as_str();
    assert_eq!(slot_of(&cluster, refunds), slot_of(&cluster, payments));
    let err = synced.lock(refunds).unwrap().acquire(&s).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(err.to_string().contains("no replica acknowledged"), "{err}");
    let left: bool = conn_to(shard.master).exists(refunds).unwrap();
    assert!(!left, "an unsynced acquire is undone");
    // The replica lags behind a big write: 32 MB overflow the loopback socket buffers (about
    // 10 MB), so what the master replicates next waits in its own memory...
    let filler = format!("{{{payments}}}:filler");
    let _: () = conn_to(shard.master).set(&filler, vec![b'x'; 32 << 20]).unwrap();
    // ...and without sync the acquire succeeds although no replica has it.
    unsynced.lock(payments).unwrap().acquire(&u).await.unwrap();

    let killed = Instant::now();
    cluster.node(shard.master).unwrap().kill();
    cluster.node(shard.replicas[0]).unwrap().sigcont().unwrap();
    let promoted = shard.replicas[0];
    wait_for(Duration::from_secs(30), "the lagging replica to take over", || {
        cluster.shards_from(promoted).unwrap_or_default().iter().any(|s| s.master == promoted)
    });
    let failover = killed.elapsed();
    // The promoted replica never saw the unsynced hold: another client gets the lock, and the
    // holder learns it lost it only at its next renewal.
    let e = Client::connect(&cluster.url(), long.clone()).await.unwrap();
    let e_owner = e.new_owner();
    let stolen =
        e.lock(payments).unwrap().try_acquire(&e_owner, Duration::from_secs(10), None).await.unwrap();
    let stolen_at = killed.elapsed();
    assert!(stolen, "the unsynced hold did not survive the failover");
    let noticed = eventually(Duration::from_secs(15), || !u_lost.lock().unwrap().is_empty()).await;
    assert!(noticed, "the unsynced holder is told it lost the lock");
    let noticed_at = killed.elapsed();
    assert_eq!(u_lost.lock().unwrap()[0].reason, LostReason::Gone);
    println!(
        "B (no replica sync, replica lagging): failover in {failover:?}; another client held \
         '{payments}' {stolen_at:?} after the kill while the old holder still believed it held it; \
         the old holder was told at {noticed_at:?} (its next renewal). With replica sync the same \
         acquire failed with Timeout and was undone."
    );
    let _ = payments;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_and_fair_locks_hand_off_through_sharded_pubsub() {
    let cluster = Cluster::start(3, 0).unwrap();
    let Some(a) = forced(&cluster, ClientOptions::default(), true).await else { return };
    let b = forced(&cluster, ClientOptions::default(), true).await.unwrap();
    for name in ["rw:orders", "rw{user7}:cart"] {
        let (rwa, rwb) = (a.read_write_lock(name).unwrap(), b.read_write_lock(name).unwrap());
        let (w, r) = (a.new_owner(), b.new_owner());
        rwa.write_lock().acquire(&w).await.unwrap(); // 30 s lease: only a message wakes fast
        rwa.read_lock().acquire(&w).await.unwrap(); // downgrade: a read-hold key in the slot
        let reader = {
            let (l, r) = (rwb.read_lock(), r.clone());
            tokio::spawn(async move { l.acquire(&r).await })
        };
        let master = cluster.shard_of(name).unwrap().master;
        let channel = if name.contains('{') {
            format!("redisson_rwlock:{name}")
        } else {
            format!("redisson_rwlock:{{{name}}}")
        };
        assert!(
            eventually(Duration::from_secs(10), || {
                let v: Vec<redis::Value> = redis::cmd("PUBSUB")
                    .arg("SHARDNUMSUB")
                    .arg(&channel)
                    .query(&mut conn_to(master))
                    .unwrap();
                v.get(1) == Some(&redis::Value::Int(1))
            })
            .await
        );
        assert_eq!(rwa.write_lock().release(&w).await.unwrap(), rlock::Released::StillLocked);
        tokio::time::timeout(Duration::from_secs(5), reader).await.unwrap().unwrap().unwrap();
        rwa.read_lock().release(&w).await.unwrap();
        assert_eq!(rwb.read_lock().release(&r).await.unwrap(), rlock::Released::Unlocked);
    }

    // Fair: three waiters from two clients are granted in arrival order.
    let name = "fair:orders";
    let holder = a.new_owner();
    let lock = a.fair_lock(name).unwrap();
    lock.acquire(&holder).await.unwrap();
    let master = cluster.shard_of(name).unwrap().master;
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..3 {
        let c = if i % 2 == 0 { &b } else { &a };
        let (l, o) = (c.fair_lock(name).unwrap(), c.new_owner());
        let id = o.as_str().to_owned();
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            l.acquire(&o).await.unwrap();
            order.lock().unwrap().push(i);
            l.release(&o).await.unwrap();
        }));
        let queued = eventually(Duration::from_secs(10), || {
            let q: Vec<String> = conn_to(master).lrange("redisson_lock_queue:{fair:orders}", 0, -1).unwrap();
            q.last() == Some(&id)
        })
        .await;
        assert!(queued);
    }
    lock.release(&holder).await.unwrap();
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(10), t).await.unwrap().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![0, 1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphores_wake_through_sharded_pubsub_and_permits_renew_across_slots() {
    let cluster = Cluster::start(3, 0).unwrap();
    let options = ClientOptions::default().with_watchdog_timeout(Duration::from_millis(900));
    let Some(a) = forced(&cluster, options.clone(), true).await else { return };
    let b = forced(&cluster, options, true).await.unwrap();
    for name in ["sem:orders", "sem{user7}:cart"] {
        let (sa, sb) = (a.semaphore(name).unwrap(), b.semaphore(name).unwrap());
        sa.try_set_permits(0, None).await.unwrap();
        let waiter = tokio::spawn(async move { sb.acquire(2).await });
        let channel = if name.contains('{') {
            format!("redisson_sc:{name}")
        } else {
            format!("redisson_sc:{{{name}}}")
        };
        let master = cluster.shard_of(name).unwrap().master;
        assert!(
            eventually(Duration::from_secs(10), || {
                let v: Vec<redis::Value> = redis::cmd("PUBSUB")
                    .arg("SHARDNUMSUB")
                    .arg(&channel)
                    .query(&mut conn_to(master))
                    .unwrap();
                v.get(1) == Some(&redis::Value::Int(1))
            })
            .await
        );
        assert_eq!(sa.release(2).await.unwrap(), 2);
        tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
        assert_eq!(sa.available_permits().await.unwrap(), 0);
    }

    // Watchdog permits on names in every shard stay held for several leases, renewed in
    // per-slot batches; released, they all come back.
    let names: Vec<String> = (0..24).map(|i| format!("pes:{i}")).collect();
    let shards: BTreeSet<u16> = names.iter().map(|n| cluster.shard_of(n).unwrap().master).collect();
    assert_eq!(shards.len(), 3, "the names cover every master");
    let mut held = Vec::new();
    for n in &names {
        let sem = a.permit_expirable_semaphore(n).unwrap();
        sem.try_set_permits(1, None).await.unwrap();
        let id = sem.acquire(None).await.unwrap().keep();
        held.push((sem, id));
    }
    let events = lost_events(&a);
    let other: Vec<_> = names.iter().map(|n| b.permit_expirable_semaphore(n).unwrap()).collect();
    // Three leases later nothing expired: another client finds no free permit anywhere.
    assert!(other[0].try_acquire(Duration::from_millis(2700), None).await.unwrap().is_none());
    for sem in &other {
        assert!(sem.try_acquire(Duration::ZERO, None).await.unwrap().is_none());
    }
    assert!(events.lock().unwrap().is_empty());
    for (sem, id) in &held {
        sem.release(id).await.unwrap();
        assert_eq!(sem.available_permits().await.unwrap(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_down_latches_open_through_sharded_and_classic_pubsub() {
    let cluster = Cluster::start(3, 0).unwrap();
    for sharded in [true, false] {
        let Some(a) = forced(&cluster, ClientOptions::default(), sharded).await else { continue };
        let b = forced(&cluster, ClientOptions::default(), sharded).await.unwrap();
        let names: Vec<String> = (0..6).map(|i| format!("latch:{sharded}:{i}")).collect();
        let masters: HashSet<u16> = names.iter().map(|n| cluster.shard_of(n).unwrap().master).collect();
        assert!(masters.len() > 1, "the names spread over several masters");
        for name in &names {
            let (la, lb) = (a.count_down_latch(name).unwrap(), b.count_down_latch(name).unwrap());
            assert!(la.try_set_count(2).await.unwrap());
            let waiter = tokio::spawn(async move {
                let open = lb.wait(None).await.unwrap();
                (open, Instant::now())
            });
            let channel = format!("redisson_countdownlatch__channel__{{{name}}}");
            let master = cluster.shard_of(name).unwrap().master;
            let subscribed = eventually(Duration::from_secs(10), || {
                let nodes: Vec<u16> =
                    if sharded { vec![master] } else { cluster.nodes().iter().map(|n| n.port()).collect() };
                nodes.iter().any(|p| {
                    let kind = if sharded { "SHARDNUMSUB" } else { "NUMSUB" };
                    let v: Vec<redis::Value> =
                        redis::cmd("PUBSUB").arg(kind).arg(&channel).query(&mut conn_to(*p)).unwrap();
                    v.get(1) == Some(&redis::Value::Int(1))
                })
            })
            .await;
            assert!(subscribed, "waiter on {name} subscribed (sharded: {sharded})");
            la.count_down().await.unwrap();
            assert!(!waiter.is_finished());
            let publish = if sharded { "spublish" } else { "publish" };
            let published = cluster_calls(&cluster, publish);
            let zero = Instant::now();
            la.count_down().await.unwrap();
            let (open, at) = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap();
            assert!(open);
            assert!(
                at - zero < Duration::from_millis(300),
                "{name}: woke {:?} after the count-down",
                at - zero
            );
            assert!(cluster_calls(&cluster, publish) > published, "{publish} sent by the count-down script");
            let left: bool = conn_to(master).exists(name).unwrap();
            assert!(!left, "{name} is gone at zero");
        }
    }

    // A name with its own hash tag: Redisson's channel hashes by the text up to the first '}',
    // the key by the tag, so Redisson's trySetCount script (key and channel in one EVAL) fails
    // with CROSSSLOT there; rlock refuses the name up front.
    let name = "latch{user7}";
    let channel = format!("redisson_countdownlatch__channel__{{{name}}}");
    assert_ne!(slot_of(&cluster, name), slot_of(&cluster, &channel));
    let master = cluster.shard_of(name).unwrap().master;
    let redisson_try_set = "if redis.call('exists', KEYS[1]) == 0 then redis.call('set', KEYS[1], ARGV[2]); \
        redis.call(ARGV[3], KEYS[2], ARGV[1]); return 1 else return 0 end";
    let err = redis::cmd("EVAL")
        .arg(redisson_try_set)
        .arg(2)
        .arg(name)
        .arg(&channel)
        .arg(1)
        .arg(3)
        .arg("SPUBLISH")
        .query::<i64>(&mut conn_to(master))
        .unwrap_err();
    assert_eq!(err.code(), Some("CROSSSLOT"), "{err}");
    let a = Client::connect(&cluster.url(), ClientOptions::default()).await.unwrap();
    assert_eq!(a.count_down_latch(name).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(a.count_down_latch("a}b").unwrap_err().kind(), ErrorKind::InvalidArgument);
    a.lock(name).unwrap(); // the other primitives keep their tagged names
}
