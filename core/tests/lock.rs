//! The reentrant lock against a real redis-server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{client, client_with, eventually, short_watchdog, Inspect as _, Server};
use redis::Commands;
use rlock::{Client, ClientOptions, ErrorKind, LostReason, Released, Ttl};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_release_and_reentrancy_in_redisson_layout() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let owner = c.new_owner();
    let lock = c.lock("orders").unwrap();
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(lock.remaining_ttl().await.unwrap(), Ttl::Absent);

    lock.acquire(&owner).await.unwrap();
    lock.acquire(&owner).await.unwrap();
    assert_eq!(lock.hold_count(&owner).await.unwrap(), 2);
    assert!(lock.is_held(&owner).await.unwrap());
    assert!(lock.is_locked().await.unwrap());

    // Exactly Redisson's layout: one hash field "<uuid>:<id>" -> count, lease = watchdog timeout.
    let mut conn = server.conn();
    let fields: Vec<(String, i64)> = conn.hgetall("orders").unwrap();
    assert_eq!(fields, vec![(format!("{}:{}", c.id().hyphenated(), owner.id()), 2)]);
    let pttl: i64 = conn.pttl("orders").unwrap();
    assert!(pttl > 29_000 && pttl <= 30_000, "pttl {pttl}");
    match lock.remaining_ttl().await.unwrap() {
        Ttl::Remaining(d) => assert!(d > Duration::from_secs(29)),
        other => panic!("unexpected ttl {other:?}"),
    }

    let other = c.new_owner();
    assert!(!lock.is_held(&other).await.unwrap());
    assert_eq!(lock.hold_count(&other).await.unwrap(), 0);
    assert!(!lock.try_acquire(&other, Duration::ZERO, None).await.unwrap());

    assert_eq!(lock.release(&owner).await.unwrap(), Released::StillHeld);
    assert_eq!(lock.hold_count(&owner).await.unwrap(), 1);
    assert_eq!(lock.release(&owner).await.unwrap(), Released::Unlocked);
    assert!(!lock.is_locked().await.unwrap());
    let err = lock.release(&owner).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotHeld);
    assert!(lock.try_acquire(&other, Duration::ZERO, None).await.unwrap());
    lock.release(&other).await.unwrap();
    assert_eq!(c.tracked_holds(), 0);
    // The release latches are deleted after use (in the background, batched).
    assert!(
        eventually(Duration::from_secs(5), || conn
            .keys::<_, Vec<String>>("redisson_unlock_latch*")
            .unwrap()
            .is_empty())
        .await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_publishes_unlock_message_on_redisson_channel() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let owner = c.new_owner();
    let lock = c.lock("chan").unwrap();
    let mut sub = server.conn();
    let mut ps = sub.as_pubsub();
    ps.subscribe("redisson_lock__channel:{chan}").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    lock.acquire(&owner).await.unwrap();
    lock.release(&owner).await.unwrap();
    let msg = ps.get_message().unwrap();
    assert_eq!(msg.get_channel_name(), "redisson_lock__channel:{chan}");
    assert_eq!(msg.get_payload::<String>().unwrap(), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_acquire_honours_the_wait_bound() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let (a, b) = (c.new_owner(), c.new_owner());
    let lock = c.lock("bound").unwrap();
    lock.acquire(&a).await.unwrap();
    for wait in [Duration::from_millis(50), Duration::from_millis(300)] {
        let start = Instant::now();
        assert!(!lock.try_acquire(&b, wait, None).await.unwrap());
        let took = start.elapsed();
        assert!(took >= wait, "returned early: {took:?} < {wait:?}");
        assert!(took < wait + Duration::from_millis(500), "overshot: {took:?} for {wait:?}");
    }
    assert_eq!(c.waited_channels(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_lease_lets_another_owner_in_and_late_release_is_lost() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let (a, b) = (c.new_owner(), c.new_owner());
    let lock = c.lock("lease").unwrap();
    lock.acquire_with_lease(&a, Duration::from_millis(200)).await.unwrap();
    // Proven for the lease from its send, less the margin (a quarter of the lease here).
    assert!(lock.valid_for(&a) <= Duration::from_millis(150));
    assert_eq!(lock.valid_for(&b), Duration::ZERO, "b holds nothing");
    let pttl: i64 = server.conn().pttl("lease").unwrap();
    assert!(pttl > 0 && pttl <= 200);
    // B waits and gets in once the lease runs out (no unlock message is ever sent).
    let start = Instant::now();
    assert!(lock.try_acquire(&b, Duration::from_secs(5), None).await.unwrap());
    assert!(start.elapsed() < Duration::from_secs(2));
    // The holder was told its lease was ending (lease_ending): the late release is `Lost`.
    assert!(lock.is_lost(&a));
    assert_eq!(lock.valid_for(&a), Duration::ZERO);
    assert!(lock.valid_for(&b) > Duration::ZERO, "b's hold is renewed by the watchdog");
    let err = lock.release(&a).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lost);
    assert!(lock.is_held(&b).await.unwrap());
    lock.release(&b).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_keeps_a_one_second_lease_alive_for_five_seconds() {
    let server = Server::start().unwrap();
    let c = client_with(&server, short_watchdog()).await;
    let owner = c.new_owner();
    let lock = c.lock("dog").unwrap();
    lock.acquire(&owner).await.unwrap();
    // Holding for five leases is the behaviour under test, so this sleep is the test itself.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(lock.is_held(&owner).await.unwrap());
    let pttl: i64 = server.conn().pttl("dog").unwrap();
    assert!(pttl > 0 && pttl <= 1000, "pttl {pttl}");
    assert_eq!(lock.release(&owner).await.unwrap(), Released::Unlocked);
    assert!(!lock.is_locked().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explicit_lease_is_not_renewed() {
    let server = Server::start().unwrap();
    let c = client_with(&server, short_watchdog()).await;
    let owner = c.new_owner();
    let lock = c.lock("fixed").unwrap();
    lock.acquire_with_lease(&owner, Duration::from_millis(400)).await.unwrap();
    let start = Instant::now();
    assert!(eventually(Duration::from_secs(5), || !server.conn().exists::<_, bool>("fixed").unwrap()).await);
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(lock.release(&owner).await.unwrap_err().kind(), ErrorKind::Lost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_hold_stops_renewal() {
    let server = Server::start().unwrap();
    let opts = ClientOptions::default()
        .with_watchdog_timeout(Duration::from_millis(300))
        .with_max_hold(Some(Duration::from_millis(600)));
    let c = client_with(&server, opts).await;
    let owner = c.new_owner();
    let lock = c.lock("maxhold").unwrap();
    let start = Instant::now();
    lock.acquire(&owner).await.unwrap();
    assert!(
        eventually(Duration::from_secs(5), || !server.conn().exists::<_, bool>("maxhold").unwrap()).await
    );
    let held = start.elapsed();
    assert!(held >= Duration::from_millis(600), "expired too early: {held:?}");
    assert!(held < Duration::from_millis(2000), "renewed too long: {held:?}");
    // The holder was told before the last lease ended, as for any lease nobody renews.
    assert!(lock.is_lost(&owner));
    assert_eq!(lock.release(&owner).await.unwrap_err().kind(), ErrorKind::Lost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiter_wakes_by_pubsub_and_sends_nothing_while_waiting() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let c2 = client(&server).await;
    let (a, b) = (c.new_owner(), c2.new_owner());
    let lock = c.lock("wake").unwrap();
    lock.acquire(&a).await.unwrap(); // 30 s lease: only pub/sub can wake the waiter soon
    let lock2 = c2.lock("wake").unwrap();
    let waiter = tokio::spawn(async move {
        lock2.acquire(&b).await.unwrap();
        (Instant::now(), lock2, b)
    });
    assert!(eventually(Duration::from_secs(5), || server.numsub("redisson_lock__channel:{wake}") == 1).await);
    // Let the waiter settle into its wait (its post-subscribe retry), then count.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = server.calls("evalsha") + server.calls("eval");
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let after = server.calls("evalsha") + server.calls("eval");
    assert_eq!(before, after, "the waiter sent lock commands while waiting");
    let released = Instant::now();
    lock.release(&a).await.unwrap();
    let (acquired, lock2, b) = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap();
    let handoff = acquired.duration_since(released);
    assert!(handoff < Duration::from_secs(1), "hand-off took {handoff:?}");
    assert!(lock2.is_held(&b).await.unwrap());
    lock2.release(&b).await.unwrap();
    assert!(eventually(Duration::from_secs(5), || server.pubsub_channels().is_empty()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_subscription_per_name_shared_by_local_waiters() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let holder = c.new_owner();
    let lock = c.lock("shared").unwrap();
    lock.acquire(&holder).await.unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let (lock, owner, done) = (lock.clone(), c.new_owner(), done.clone());
        tasks.push(tokio::spawn(async move {
            lock.acquire(&owner).await.unwrap();
            done.fetch_add(1, Ordering::SeqCst);
            lock.release(&owner).await.unwrap();
        }));
    }
    assert!(eventually(Duration::from_secs(5), || c.waited_channels() == 1).await);
    assert!(
        eventually(Duration::from_secs(5), || server.numsub("redisson_lock__channel:{shared}") == 1).await
    );
    lock.release(&holder).await.unwrap();
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(10), t).await.unwrap().unwrap();
    }
    assert_eq!(done.load(Ordering::SeqCst), 10);
    assert_eq!(c.waited_channels(), 0);
    assert!(eventually(Duration::from_secs(5), || server.pubsub_channels().is_empty()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_acquires_leave_no_hold_renewal_or_subscription() {
    let server = Server::start().unwrap();
    let c = client_with(&server, short_watchdog()).await;
    let holder = c.new_owner();
    let lock = c.lock("cancel").unwrap();

    // Waiters cancelled while waiting.
    lock.acquire(&holder).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (lock, owner) = (lock.clone(), c.new_owner());
        tasks.push(tokio::spawn(async move { lock.acquire(&owner).await }));
    }
    assert!(
        eventually(Duration::from_secs(5), || server.numsub("redisson_lock__channel:{cancel}") == 1).await
    );
    for t in &tasks {
        t.abort();
    }
    lock.release(&holder).await.unwrap();

    // Acquires of a free lock cancelled at varied moments, some after the script acquired.
    for i in 0..300u64 {
        let (l, owner) = (lock.clone(), c.new_owner());
        let o = owner.clone();
        let t = tokio::spawn(async move { l.acquire(&o).await });
        tokio::time::sleep(Duration::from_micros((i * 37) % 400)).await;
        t.abort();
        if let Ok(result) = t.await {
            // It finished before the abort: release it as its caller would.
            result.unwrap();
            lock.release(&owner).await.unwrap();
        }
    }
    assert!(
        eventually(Duration::from_secs(5), || c.tracked_holds() == 0).await,
        "holds left: {}",
        c.tracked_holds()
    );
    assert!(eventually(Duration::from_secs(5), || !server.conn().exists::<_, bool>("cancel").unwrap()).await);
    assert!(eventually(Duration::from_secs(5), || server.pubsub_channels().is_empty()).await);
    assert_eq!(c.waited_channels(), 0);
    // No renewal traffic remains.
    let before = server.calls("evalsha");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(server.calls("evalsha"), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_acquire_after_the_script_ran_is_undone() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let lock = c.lock("undo").unwrap();
    // The server learns the scripts first, so each call below is one EVALSHA.
    let warm = c.new_owner();
    lock.acquire(&warm).await.unwrap();
    lock.release(&warm).await.unwrap();

    // Dropped surely in flight: polled once while the server holds back scripts (CLIENT PAUSE
    // WRITE), dropped, then the server lets the script run. The hold it took is given back.
    for _ in 0..10 {
        let owner = c.new_owner();
        let before = server.calls("evalsha");
        redis::cmd("CLIENT").arg("PAUSE").arg(10_000).arg("WRITE").exec(&mut server.conn()).unwrap();
        let mut acquire = Box::pin(lock.acquire(&owner));
        assert!(futures_util::poll!(acquire.as_mut()).is_pending());
        drop(acquire);
        redis::cmd("CLIENT").arg("UNPAUSE").exec(&mut server.conn()).unwrap();
        // The acquire ran, then its undo (a release) ran: two scripts, and the lock is free.
        assert!(
            eventually(Duration::from_secs(5), || server.calls("evalsha") >= before + 2
                && !server.conn().exists::<_, bool>("undo").unwrap())
            .await,
            "scripts run: {}, lock exists: {}",
            server.calls("evalsha") - before,
            server.conn().exists::<_, bool>("undo").unwrap()
        );
    }

    // Aborted at varied moments of the round trip (some finish first, and are released).
    for i in 0..200u64 {
        let owner = c.new_owner();
        let l = lock.clone();
        let o = owner.clone();
        let t = tokio::spawn(async move { l.acquire(&o).await });
        tokio::time::sleep(Duration::from_micros((i * 53) % 600)).await;
        t.abort();
        if let Ok(result) = t.await {
            result.unwrap();
            lock.release(&owner).await.unwrap();
        }
        // Whatever the moment of cancellation, the lock ends free (the undo is in the background).
        assert!(
            eventually(Duration::from_secs(5), || !server.conn().exists::<_, bool>("undo").unwrap()).await
        );
    }
    assert!(eventually(Duration::from_secs(5), || c.tracked_holds() == 0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_owners_keep_a_non_atomic_counter_exact() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let mut tasks = Vec::new();
    for _ in 0..200 {
        let (lock, owner) = (c.lock("counter-lock").unwrap(), c.new_owner());
        let url = server.url();
        tasks.push(tokio::spawn(async move {
            let mut conn = common::patient_conn(&redis::Client::open(url).unwrap()).await;
            for _ in 0..50 {
                lock.acquire(&owner).await.unwrap();
                let v: Option<i64> = redis::AsyncCommands::get(&mut conn, "counter").await.unwrap();
                redis::AsyncCommands::set::<_, _, ()>(&mut conn, "counter", v.unwrap_or(0) + 1)
                    .await
                    .unwrap();
                lock.release(&owner).await.unwrap();
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(120), t).await.unwrap().unwrap();
    }
    let n: i64 = server.conn().get("counter").unwrap();
    assert_eq!(n, 10_000);
    assert_eq!(c.tracked_holds(), 0);
    assert!(eventually(Duration::from_secs(5), || server.pubsub_channels().is_empty()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_unlock_wakes_waiter_and_holder_learns_it_lost_the_lock() {
    let server = Server::start().unwrap();
    let holder_client = client_with(&server, short_watchdog()).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    holder_client.on_lost(rlock::LostFilter::all(), move |e| {
        let _ = tx.send((e.name.to_string(), e.owner.clone(), e.reason));
    });
    let holder = holder_client.new_owner();
    let lock = holder_client.lock("force").unwrap();
    lock.acquire(&holder).await.unwrap();

    let other = client(&server).await;
    let waiter_owner = other.new_owner();
    let waiter_lock = other.lock("force").unwrap();
    let waiter = {
        let (l, o) = (waiter_lock.clone(), waiter_owner.clone());
        tokio::spawn(async move { l.acquire(&o).await })
    };
    assert!(
        eventually(Duration::from_secs(5), || server.numsub("redisson_lock__channel:{force}") == 1).await
    );
    let start = Instant::now();
    assert!(other.lock("force").unwrap().force_unlock().await.unwrap());
    tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
    assert!(start.elapsed() < Duration::from_secs(1));

    let (name, owner, reason) =
        tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap().unwrap();
    assert_eq!((name.as_str(), owner, reason), ("force", holder.clone(), LostReason::Gone));
    assert!(lock.is_lost(&holder));
    assert_eq!(lock.release(&holder).await.unwrap_err().kind(), ErrorKind::Lost);
    assert!(!lock.is_lost(&holder));
    // The waiter's hold was untouched by the failed release.
    assert!(waiter_lock.is_held(&waiter_owner).await.unwrap());
    waiter_lock.release(&waiter_owner).await.unwrap();
    assert!(!other.lock("force").unwrap().force_unlock().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_puts_the_lease_in_doubt_and_the_hold_lost() {
    let mut server = Server::start().unwrap();
    let opts = short_watchdog().with_retry_attempts(0).with_command_timeout(Some(Duration::from_millis(200)));
    let c = client_with(&server, opts).await;
    let lost = Arc::new(AtomicUsize::new(0));
    let l2 = lost.clone();
    c.on_lost(rlock::LostFilter::all(), move |e| {
        assert_eq!(e.reason, LostReason::LeaseDoubt);
        l2.fetch_add(1, Ordering::SeqCst);
    });
    let owner = c.new_owner();
    let lock = c.lock("gone").unwrap();
    lock.acquire(&owner).await.unwrap();
    server.kill();
    assert!(eventually(Duration::from_secs(10), || lost.load(Ordering::SeqCst) == 1).await);
    assert!(lock.is_lost(&owner));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_renews_in_batches() {
    let server = Server::start().unwrap();
    let opts = ClientOptions::default()
        .with_watchdog_timeout(Duration::from_millis(1500))
        .with_renewal_batch_size(100);
    let c = client_with(&server, opts).await;
    let owner = c.new_owner();
    let mut locks = Vec::new();
    // One hash tag: a renewal script only ever touches keys of one tag (a proxy in front of a
    // sharded cluster refuses one that spans slots; see tests/managed.rs), so locks of one
    // tag are what share calls.
    let futs: Vec<_> = (0..1000).map(|i| c.lock(&format!("{{batch}}-{i}")).unwrap()).collect();
    for l in &futs {
        locks.push(l.clone());
    }
    futures_join(futs.iter().map(|l| l.acquire(&owner))).await;
    let before = server.calls("evalsha");
    let renewed_before = c.stats().renewals;
    // Held across several renewal periods of 500 ms (holding is the point, not waiting for an
    // event): every hold is renewed each period. (A 600 ms lease was too short for 1000 holds
    // on a busy 2-core machine in a debug build: renewals fell a lease behind and holds were
    // lost, with or without this session's changes.)
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let calls = server.calls("evalsha") - before;
    let renewed = c.stats().renewals - renewed_before;
    // Unbatched, each renewal would be a call of its own (1 per call). Batched, 1000 locks are
    // 10 chunks of 100 per period, plus partial chunks where locks straddle a tick (measured
    // 70-100 renewals per call; a drain cut short every 128 entries gave ~60 per call).
    // A ratio, so a loaded machine's late timers (fewer periods, split due groups) do not
    // move the bound.
    assert!(renewed >= 2000, "{renewed} renewals of 1000 locks in 2.5 s (about 5 periods)");
    assert!(calls > 0 && renewed / calls >= 70, "{calls} renewal calls for {renewed} renewals");
    for l in &locks {
        assert!(l.is_held(&owner).await.unwrap());
        l.release(&owner).await.unwrap();
    }
}

async fn futures_join<F: std::future::Future<Output = rlock::Result<()>>>(futs: impl Iterator<Item = F>) {
    let all: Vec<_> = futs.collect();
    for r in futures_util::future::join_all(all).await {
        r.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_dropped_mid_call_runs_to_the_end() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let lock = c.lock("dropped-release").unwrap();
    for i in 0..50u64 {
        let owner = c.new_owner();
        lock.acquire(&owner).await.unwrap();
        lock.acquire(&owner).await.unwrap();
        if i % 2 == 0 {
            // Polled once while the server holds back scripts (CLIENT PAUSE WRITE), so the
            // call is surely in flight when it is dropped.
            redis::cmd("CLIENT").arg("PAUSE").arg(100).arg("WRITE").exec(&mut server.conn()).unwrap();
            let mut release = Box::pin(lock.release(&owner));
            assert!(futures_util::poll!(release.as_mut()).is_pending());
            drop(release);
        } else {
            // Dropped at a varied moment of its round trip, after its first poll (a future
            // dropped before it was ever polled does nothing, by design).
            let l = lock.clone();
            let o = owner.clone();
            let (started, polled) = tokio::sync::oneshot::channel();
            let t = tokio::spawn(async move {
                let _ = started.send(());
                // Polled right away, in the same poll of this task as the send above.
                l.release(&o).await
            });
            polled.await.unwrap();
            tokio::time::sleep(Duration::from_micros(i * 11)).await;
            t.abort();
            let _ = t.await;
        }
        // The dropped release still took one hold level off, and only one.
        assert!(
            eventually(Duration::from_secs(5), || server
                .conn()
                .hget::<_, _, Option<i64>>("dropped-release", owner.as_str())
                .unwrap()
                == Some(1))
            .await
        );
        assert_eq!(lock.release(&owner).await.unwrap(), Released::Unlocked);
    }
    assert_eq!(c.tracked_holds(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guard_releases_on_drop() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let owner = c.new_owner();
    let lock = c.lock("guard").unwrap();
    {
        let _g = lock.lock(&owner).await.unwrap();
        assert!(lock.is_held(&owner).await.unwrap());
    }
    assert!(eventually(Duration::from_secs(5), || !server.conn().exists::<_, bool>("guard").unwrap()).await);
    let g = lock.lock(&owner).await.unwrap();
    assert_eq!(g.release().await.unwrap(), Released::Unlocked);

    // acquire_guard: an unclaimed guard gives its hold back; a kept one stays held.
    let g = lock.acquire_guard(&owner, Some(Duration::ZERO), None).await.unwrap().unwrap();
    drop(g);
    assert!(eventually(Duration::from_secs(5), || !server.conn().exists::<_, bool>("guard").unwrap()).await);
    let g = lock.acquire_guard(&owner, None, Some(Duration::from_secs(10))).await.unwrap().unwrap();
    g.keep();
    assert_eq!(lock.hold_count(&owner).await.unwrap(), 1);
    let other = c.new_owner();
    assert!(lock.acquire_guard(&other, Some(Duration::from_millis(20)), None).await.unwrap().is_none());
    assert_eq!(lock.release(&owner).await.unwrap(), Released::Unlocked);
    assert_eq!(c.tracked_holds(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_rejected_and_changes_nothing() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let owner = c.new_owner();
    let mut conn = server.conn();

    assert_eq!(c.lock("").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(c.lock(&"x".repeat(70_000)).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let lock = c.lock("bad").unwrap();
    let e = lock.acquire_with_lease(&owner, Duration::ZERO).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = lock.acquire_with_lease(&owner, Duration::from_micros(500)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = lock.try_acquire(&owner, Duration::MAX, None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = lock.acquire_with_lease(&owner, Duration::MAX).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(!conn.exists::<_, bool>("bad").unwrap());

    // A key of the wrong type: typed error, key untouched.
    let _: () = conn.set("str", "value").unwrap();
    let s = c.lock("str").unwrap();
    assert_eq!(s.acquire(&owner).await.unwrap_err().kind(), ErrorKind::Redis);
    assert_eq!(
        s.try_acquire(&owner, Duration::from_millis(10), None).await.unwrap_err().kind(),
        ErrorKind::Redis
    );
    assert_eq!(s.release(&owner).await.unwrap_err().kind(), ErrorKind::Redis);
    assert_eq!(s.force_unlock().await.unwrap_err().kind(), ErrorKind::Redis);
    assert_eq!(s.is_held(&owner).await.unwrap_err().kind(), ErrorKind::Redis);
    let v: String = conn.get("str").unwrap();
    assert_eq!(v, "value");
    assert_eq!(conn.ttl::<_, i64>("str").unwrap(), -1);

    // An owner of another client is refused.
    let other = client(&server).await;
    let foreign = other.new_owner();
    assert_eq!(lock.acquire(&foreign).await.unwrap_err().kind(), ErrorKind::InvalidArgument);

    // Releasing what another owner holds fails and leaves their hold alone.
    let holder = c.new_owner();
    lock.acquire(&holder).await.unwrap();
    assert_eq!(lock.release(&owner).await.unwrap_err().kind(), ErrorKind::NotHeld);
    assert_eq!(lock.hold_count(&holder).await.unwrap(), 1);

    // Bad options and URLs.
    let bad_opts = ClientOptions::default().with_watchdog_timeout(Duration::ZERO);
    assert_eq!(
        Client::connect(&server.url(), bad_opts).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let bad_batch = ClientOptions::default().with_renewal_batch_size(0);
    assert_eq!(
        Client::connect(&server.url(), bad_batch).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    for url in ["nonsense", "http://127.0.0.1/", "redis://:99999999/", ""] {
        let e = Client::connect(url, ClientOptions::default()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{url}: {e}");
    }
    // Held, so no other test's server starts there meanwhile.
    let dead = rlock_testbed::ports::reserve(1).unwrap();
    let quick = ClientOptions::default().with_retry_attempts(0).with_connect_timeout(Duration::from_secs(2));
    let e = Client::connect(&format!("redis://127.0.0.1:{}/", dead.ports()[0]), quick).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");

    // A closed client fails with Closed and releases nothing.
    c.close();
    assert_eq!(lock.acquire(&holder).await.unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(lock.release(&holder).await.unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(conn.hget::<_, _, i64>("bad", holder.as_str()).unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_password_is_a_typed_error_that_hides_the_password() {
    let server = Server::with_args(&["--requirepass", "s3cret-pw"]).unwrap();
    let url = |pw: &str| format!("redis://default:{pw}@127.0.0.1:{}/", server.port());
    let e = Client::connect(&url("wrong-pw"), ClientOptions::default()).await.unwrap_err();
    // Redis refused the login: a Redis error (RLOCK_REDIS in C, as rlock.h promises), not a
    // connection failure that callers would retry.
    assert_eq!(e.kind(), ErrorKind::Redis, "{e}");
    assert!(!e.to_string().contains("wrong-pw"), "the password leaked into: {e}");
    assert!(!format!("{e:?}").contains("wrong-pw"), "the password leaked into: {e:?}");
    let e = Client::connect(&format!("redis://127.0.0.1:{}/", server.port()), ClientOptions::default()).await;
    let e = match e {
        Ok(c) => c.lock("x").unwrap().is_locked().await.unwrap_err(),
        Err(e) => e,
    };
    assert!(e.to_string().to_uppercase().contains("NOAUTH") || e.kind() == ErrorKind::Redis, "{e}");
    let c = Client::connect(&url("s3cret-pw"), ClientOptions::default()).await.unwrap();
    let owner = c.new_owner();
    let lock = c.lock("auth").unwrap();
    lock.acquire(&owner).await.unwrap();
    lock.release(&owner).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_wakes_waiters_with_closed() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let (a, b) = (c.new_owner(), c.new_owner());
    let lock = c.lock("closing").unwrap();
    lock.acquire(&a).await.unwrap();
    let l = lock.clone();
    let waiter = tokio::spawn(async move { l.acquire(&b).await });
    assert!(eventually(Duration::from_secs(5), || c.waited_channels() == 1).await);
    c.close();
    let e = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed);
}

#[test]
fn connect_outside_a_runtime_is_an_error_not_a_panic() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // Building the future is fine anywhere; polling it outside a runtime context must not panic.
    let fut = Client::connect("redis://127.0.0.1:1/", ClientOptions::default());
    let e = futures_util::FutureExt::now_or_never(fut);
    drop(rt);
    if let Some(Err(e)) = e {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    } else {
        panic!("expected an immediate InvalidArgument error");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_socket_url_works() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("redis.sock");
    let sock_s = sock.to_str().unwrap().to_owned();
    let server = Server::with_args(&["--unixsocket", &sock_s, "--unixsocketperm", "700"]).unwrap();
    assert!(eventually(Duration::from_secs(5), || sock.exists()).await);
    let c = Client::connect(&format!("redis+unix://{sock_s}"), ClientOptions::default()).await.unwrap();
    let owner = c.new_owner();
    let lock = c.lock("unix").unwrap();
    lock.acquire(&owner).await.unwrap();
    assert!(server.conn().exists::<_, bool>("unix").unwrap());
    lock.release(&owner).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_command_connections_keep_locks_exact() {
    let server = Server::start().unwrap();
    for bad in [0, 9] {
        let e = Client::connect(&server.url(), ClientOptions::default().with_command_connections(bad))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{bad}: {e}");
    }
    let c = client_with(&server, ClientOptions::default().with_command_connections(2)).await;
    // Both connections carry commands (each shows up as a client of the server).
    let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut server.conn()).unwrap();
    assert!(clients.lines().count() >= 4, "2 command + 1 pub/sub + this one:\n{clients}");
    let counter = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (lock, owner, counter) = (c.lock("two-conns").unwrap(), c.new_owner(), counter.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                lock.acquire(&owner).await.unwrap();
                lock.acquire(&owner).await.unwrap(); // reentrant, possibly over the other connection
                let seen = counter.load(Ordering::SeqCst);
                tokio::task::yield_now().await;
                counter.store(seen + 1, Ordering::SeqCst);
                assert_eq!(lock.release(&owner).await.unwrap(), Released::StillHeld);
                assert_eq!(lock.release(&owner).await.unwrap(), Released::Unlocked);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(counter.load(Ordering::SeqCst), 32 * 25);
    assert_eq!(c.tracked_holds(), 0);
}
