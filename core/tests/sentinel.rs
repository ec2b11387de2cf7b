//! rlock behind Sentinel on loopback: a master, a replica and three sentinels (quorum 2,
//! down-after 1 s), and the master killed mid-run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{eventually, numsub_on as numsub, wait_for, Inspect as _, SentinelSet};
use redis::Commands as _;
use rlock::{Client, ClientOptions, ErrorKind, LostEvent, LostReason, Topology};

fn lost_events(client: &Client) -> Arc<Mutex<Vec<LostEvent>>> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let e = events.clone();
    client.on_lost(rlock::LostFilter::all(), move |ev| e.lock().unwrap().push(ev.clone()));
    events
}

/// A 10 s lease outlasts the failover (about 3-6 s here); calls during it are retried.
fn options() -> ClientOptions {
    ClientOptions::default().with_watchdog_timeout(Duration::from_secs(10)).with_retry_attempts(10)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_follows_a_failover_with_its_holds_and_waiters() {
    let mut set = SentinelSet::start().unwrap();
    let a = Client::connect(&set.url(), options()).await.unwrap();
    assert_eq!(a.topology(), Topology::Sentinel);
    assert!(a.replica_sync(), "on by default behind Sentinel, as Redisson");
    assert!(!a.sharded_pubsub());
    let a_lost = lost_events(&a);
    let owner = a.new_owner();
    let lock = a.lock("orders").unwrap();
    lock.acquire(&owner).await.unwrap();
    // The acquire waited for the replica, which has the hold.
    assert!(set.master.calls("wait") >= 1);
    let on_replica: bool = set.replicas[0].conn().hexists("orders", owner.as_str()).unwrap();
    assert!(on_replica);

    let b = Client::connect(&set.url(), options().with_retry_attempts(30)).await.unwrap();
    let b_owner = b.new_owner();
    let b_lock = b.lock("orders").unwrap();
    let waiter = {
        let (l, o) = (b_lock.clone(), b_owner.clone());
        tokio::spawn(async move { l.acquire(&o).await.map(|_| Instant::now()) })
    };
    let channel = "redisson_lock__channel:{orders}";
    let master_port = set.master.port();
    assert!(eventually(Duration::from_secs(5), || numsub(master_port, channel) == 1).await);

    let killed = Instant::now();
    set.master.kill();
    let new_master = set.replicas[0].port();
    wait_for(Duration::from_secs(60), "the sentinels to promote the replica", || {
        set.reported_master() == Some(new_master)
    });
    let promoted = killed.elapsed();
    // The client follows: its hold is on the new master, its renewals land there, and the
    // waiter's subscription moved there too.
    let mut followed = None;
    for _ in 0..200 {
        if let Ok(true) = lock.is_held(&owner).await {
            followed = Some(killed.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let followed = followed.expect("the client reaches the new master");
    assert!(
        eventually(Duration::from_secs(10), || numsub(new_master, channel) == 1).await,
        "waiter resubscribed"
    );
    let renewed = eventually(Duration::from_secs(9), || {
        set.replicas[0].conn().pttl::<_, i64>("orders").unwrap() > 8500
    })
    .await;
    assert!(renewed, "renewed on the new master within the lease");
    assert!(a_lost.lock().unwrap().is_empty(), "lost: {:?}", a_lost.lock().unwrap());
    if waiter.is_finished() {
        panic!("the waiter finished during the failover: {:?}", waiter.await.unwrap());
    }
    assert_eq!(lock.hold_count(&owner).await.unwrap(), 1);

    let released = Instant::now();
    lock.release(&owner).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
    let handoff = got - released;
    // The waiter may be pausing between attempts that failed during the failover; an unlock
    // message ends that pause too. (A wake by expiry would take the 10 s lease.)
    assert!(handoff < Duration::from_secs(1), "woken by pub/sub on the new master: {handoff:?}");
    b_lock.release(&b_owner).await.unwrap();
    println!(
        "sentinel failover: replica promoted {promoted:?} after the master was killed; the client \
         reached it at {followed:?}; hold kept (0 lost), waiter resubscribed, hand-off on the new \
         master {handoff:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_replica_sync_a_fresh_hold_can_vanish_in_a_failover() {
    let mut set = SentinelSet::start().unwrap();
    let unsynced = Client::connect(&set.url(), options().with_replica_sync(Some(false))).await.unwrap();
    let synced = Client::connect(
        &set.url(),
        options().with_replica_sync_timeout(Duration::from_millis(300)).with_retry_attempts(0),
    )
    .await
    .unwrap();
    let u_lost = lost_events(&unsynced);
    let (u, s) = (unsynced.new_owner(), synced.new_owner());

    set.replicas[0].sigstop().unwrap();
    // With sync, no replica acknowledges: the acquire fails and is undone.
    let err = synced.lock("refunds").unwrap().acquire(&s).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let left: bool = set.master.conn().exists("refunds").unwrap();
    assert!(!left, "an unacknowledged acquire is undone");
    // The replica lags behind a big write (32 MB overflow the loopback socket buffers), so the
    // next acquire's replication waits in the master's memory; without sync it succeeds.
    let _: () = set.master.conn().set("filler", vec![b'x'; 32 << 20]).unwrap();
    unsynced.lock("payments").unwrap().acquire(&u).await.unwrap();

    let killed = Instant::now();
    set.master.kill();
    set.replicas[0].sigcont().unwrap();
    let new_master = set.replicas[0].port();
    wait_for(Duration::from_secs(60), "the sentinels to promote the replica", || {
        set.reported_master() == Some(new_master)
    });
    let promoted = killed.elapsed();
    let e = Client::connect(&set.url(), options()).await.unwrap();
    let e_owner = e.new_owner();
    let stolen =
        e.lock("payments").unwrap().try_acquire(&e_owner, Duration::from_secs(15), None).await.unwrap();
    let stolen_at = killed.elapsed();
    assert!(stolen, "the promoted replica never had the unsynced hold");
    assert!(eventually(Duration::from_secs(15), || !u_lost.lock().unwrap().is_empty()).await);
    let noticed_at = killed.elapsed();
    assert_eq!(u_lost.lock().unwrap()[0].reason, LostReason::Gone);
    println!(
        "sentinel, no replica sync, replica lagging: promoted after {promoted:?}; another client \
         held 'payments' at {stolen_at:?} while the old holder believed it held it until told at \
         {noticed_at:?}. With replica sync the acquire failed with Timeout and was undone."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_write_and_fair_locks_behind_sentinel() {
    let set = SentinelSet::start().unwrap();
    let a = Client::connect(&set.url(), options()).await.unwrap();
    let b = Client::connect(&set.url(), options()).await.unwrap();
    let (rwa, rwb) = (a.read_write_lock("rw").unwrap(), b.read_write_lock("rw").unwrap());
    let (w, r) = (a.new_owner(), b.new_owner());
    rwa.write_lock().acquire(&w).await.unwrap();
    // The acquire waited for the replica, which has the write hold.
    let on_replica: bool = set.replicas[0].conn().hexists("rw", format!("{}:write", w.as_str())).unwrap();
    assert!(on_replica);
    let reader = {
        let (l, r) = (rwb.read_lock(), r.clone());
        tokio::spawn(async move { l.acquire(&r).await })
    };
    let port = set.master.port();
    assert!(eventually(Duration::from_secs(5), || numsub(port, "redisson_rwlock:{rw}") == 1).await);
    rwa.write_lock().release(&w).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), reader).await.unwrap().unwrap().unwrap();
    rwb.read_lock().release(&r).await.unwrap();

    let (fa, fb) = (a.fair_lock("fair").unwrap(), b.fair_lock("fair").unwrap());
    fa.acquire(&w).await.unwrap();
    let waiter = {
        let (l, r) = (fb.clone(), r.clone());
        tokio::spawn(async move { l.acquire(&r).await })
    };
    let channel = format!("redisson_lock__channel:{{fair}}:{}", r.as_str());
    assert!(eventually(Duration::from_secs(5), || numsub(port, &channel) == 1).await);
    fa.release(&w).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
    fb.release(&r).await.unwrap();
    let queued: bool = set.master.conn().exists("redisson_lock_queue:{fair}").unwrap();
    assert!(!queued);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphores_behind_sentinel() {
    let set = SentinelSet::start().unwrap();
    let a = Client::connect(&set.url(), options()).await.unwrap();
    let b = Client::connect(&set.url(), options()).await.unwrap();
    let port = set.master.port();
    let (sa, sb) = (a.semaphore("sem").unwrap(), b.semaphore("sem").unwrap());
    sa.try_set_permits(0, None).await.unwrap();
    let waiter = tokio::spawn(async move { sb.acquire(1).await });
    assert!(eventually(Duration::from_secs(5), || numsub(port, "redisson_sc:{sem}") == 1).await);
    sa.release(1).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();

    let (pa, pb) =
        (a.permit_expirable_semaphore("pes").unwrap(), b.permit_expirable_semaphore("pes").unwrap());
    pa.try_set_permits(1, None).await.unwrap();
    let id = pa.acquire(None).await.unwrap().keep();
    let waiter = tokio::spawn(async move { pb.acquire(None).await.map(|p| p.keep()) });
    assert!(eventually(Duration::from_secs(5), || numsub(port, "redisson_sc:{pes}") == 1).await);
    // Any client may release a permit by its id.
    b.permit_expirable_semaphore("pes").unwrap().release(&id).await.unwrap();
    let other = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
    assert_ne!(other, id);
    pa.release(&other).await.unwrap();
    assert_eq!(pa.available_permits().await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_down_latch_behind_sentinel() {
    let set = SentinelSet::start().unwrap();
    let a = Client::connect(&set.url(), options()).await.unwrap();
    let b = Client::connect(&set.url(), options()).await.unwrap();
    let (la, lb) = (a.count_down_latch("latch").unwrap(), b.count_down_latch("latch").unwrap());
    assert!(la.try_set_count(2).await.unwrap());
    let waiter = tokio::spawn(async move { lb.wait(Some(Duration::from_secs(30))).await });
    let port = set.master.port();
    let channel = "redisson_countdownlatch__channel__{latch}";
    assert!(eventually(Duration::from_secs(5), || numsub(port, channel) == 1).await);
    la.count_down().await.unwrap();
    assert!(!waiter.is_finished());
    la.count_down().await.unwrap();
    assert!(tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap());
    let left: bool = set.master.conn().exists("latch").unwrap();
    assert!(!left);
    assert_eq!(la.count().await.unwrap(), 0);
}
