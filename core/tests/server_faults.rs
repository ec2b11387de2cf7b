//! The reentrant lock through server faults against a real redis-server: flushed scripts, a
//! killed pub/sub connection, restarts, outages and a stopped (SIGSTOP) server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{client, client_with, eventually, short_watchdog, Inspect as _, Server};
use redis::Commands;
use rlock::{ClientOptions, ErrorKind, Released};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_are_reloaded_after_script_flush() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let owner = c.new_owner();
    let lock = c.lock("flush").unwrap();
    lock.acquire(&owner).await.unwrap();
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut server.conn()).unwrap();
    assert_eq!(lock.release(&owner).await.unwrap(), Released::Unlocked);
    let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut server.conn()).unwrap();
    lock.acquire(&owner).await.unwrap();
    lock.release(&owner).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_pubsub_connection_resubscribes_and_waiters_still_wake() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let holder_client = client(&server).await;
    let holder = holder_client.new_owner();
    let hl = holder_client.lock("resub").unwrap();
    hl.acquire(&holder).await.unwrap(); // 30 s lease
    let (l, o) = (c.lock("resub").unwrap(), c.new_owner());
    let waiter = tokio::spawn(async move { l.acquire(&o).await.map(|_| Instant::now()) });
    let channel = "redisson_lock__channel:{resub}";
    assert!(eventually(Duration::from_secs(5), || server.numsub(channel) == 1).await);
    let _: i64 =
        redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("pubsub").query(&mut server.conn()).unwrap();
    // The subscription comes back by itself.
    assert!(eventually(Duration::from_secs(10), || server.numsub(channel) == 1).await, "no resubscription");
    let released = Instant::now();
    hl.release(&holder).await.unwrap();
    let acquired = tokio::time::timeout(Duration::from_secs(10), waiter).await.unwrap().unwrap().unwrap();
    let took = acquired.duration_since(released);
    assert!(took < Duration::from_secs(2), "woke after {took:?}: pub/sub did not come back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holders_and_waiters_survive_a_server_restart() {
    let mut server = Server::start().unwrap();
    let opts = short_watchdog().with_retry_delay(Duration::from_millis(200)).with_retry_attempts(20);
    let c = client_with(&server, opts.clone()).await;
    let lost = Arc::new(AtomicUsize::new(0));
    let l2 = lost.clone();
    c.on_lost(rlock::LostFilter::all(), move |_| {
        l2.fetch_add(1, Ordering::SeqCst);
    });
    let holder = c.new_owner();
    let lock = c.lock("restart").unwrap();
    lock.acquire(&holder).await.unwrap();
    let (l, o) = (lock.clone(), c.new_owner());
    let waiter = tokio::spawn(async move { l.acquire(&o).await.map(|_| o) });
    assert!(
        eventually(Duration::from_secs(5), || server.numsub("redisson_lock__channel:{restart}") == 1).await
    );
    server.kill();
    // The same port, an empty dataset: the hold is gone.
    server.restart().unwrap();
    assert!(
        eventually(Duration::from_secs(15), || lost.load(Ordering::SeqCst) == 1).await,
        "no lost notification"
    );
    let o = tokio::time::timeout(Duration::from_secs(20), waiter).await.unwrap().unwrap().unwrap();
    assert!(lock.is_held(&o).await.unwrap());
    assert_eq!(lock.release(&holder).await.unwrap_err().kind(), ErrorKind::Lost);
    lock.release(&o).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_done_after_an_outage_leaves_no_subscription_behind() {
    // Found by make chaos: the server is down for longer than the pub/sub connection's reconnect
    // attempts, so the waiter's UNSUBSCRIBE (after it acquired) fails; the crate keeps the channel
    // in its resubscription set and subscribes it again when it reconnects. The client must drop
    // that stray subscription again.
    let mut server = Server::start().unwrap();
    let c = client(&server).await;
    let holder_client = client(&server).await;
    let holder = holder_client.new_owner();
    holder_client.lock("outage").unwrap().acquire(&holder).await.unwrap();
    let (l, o) = (c.lock("outage").unwrap(), c.new_owner());
    let waiter = tokio::spawn(async move { l.acquire(&o).await.map(|_| o) });
    let channel = "redisson_lock__channel:{outage}";
    assert!(eventually(Duration::from_secs(5), || server.numsub(channel) == 1).await);
    server.kill();
    tokio::time::sleep(Duration::from_secs(2)).await; // the outage
    server.restart().unwrap(); // the same port, empty: the lock is free
    let o = tokio::time::timeout(Duration::from_secs(20), waiter).await.unwrap().unwrap().unwrap();
    assert_eq!(c.lock("outage").unwrap().release(&o).await.unwrap(), Released::Unlocked);
    assert_eq!(c.waited_channels(), 0);
    assert!(
        eventually(Duration::from_secs(10), || server.pubsub_channels().is_empty()).await,
        "subscribed after the waiter left: {:?}",
        server.pubsub_channels()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_come_back_after_an_outage_longer_than_the_reconnect_attempts() {
    // Found by make chaos: the redis crate gives up reconnecting after its retries and waits for
    // the next request, so after a long outage nothing brought the pub/sub connection back and a
    // waiter slept until the holder's lease ran out (here 30 s) instead of waking on the unlock.
    // The server keeps its data (AOF), so the hold survives the restart.
    let mut server = Server::builder().appendonly(true).start().unwrap();
    let c = client(&server).await;
    let holder_client = client(&server).await;
    let holder = holder_client.new_owner();
    let hl = holder_client.lock("kept").unwrap();
    hl.acquire(&holder).await.unwrap(); // 30 s lease
    let (l, o) = (c.lock("kept").unwrap(), c.new_owner());
    let waiter = tokio::spawn(async move { l.acquire(&o).await.map(|_| (o, Instant::now())) });
    let channel = "redisson_lock__channel:{kept}";
    assert!(eventually(Duration::from_secs(5), || server.numsub(channel) == 1).await);
    server.kill();
    tokio::time::sleep(Duration::from_secs(2)).await; // the outage
    server.restart().unwrap(); // the same port and directory: the AOF comes back
                               // The hold came back with the append-only file.
    let kept = || {
        redis::Client::open(server.url())
            .and_then(|c| c.get_connection())
            .and_then(|mut c| c.exists::<_, bool>("kept"))
            .unwrap_or(false)
    };
    assert!(eventually(Duration::from_secs(10), kept).await, "the AOF should have kept the lock");
    assert!(
        eventually(Duration::from_secs(10), || server.numsub(channel) == 1).await,
        "the waiter's subscription did not come back"
    );
    hl.release(&holder).await.unwrap();
    let released = Instant::now();
    let (o, acquired) =
        tokio::time::timeout(Duration::from_secs(40), waiter).await.unwrap().unwrap().unwrap();
    let took = acquired.saturating_duration_since(released);
    assert!(took < Duration::from_secs(1), "woke {took:?} after the release: the unlock message was lost");
    c.lock("kept").unwrap().release(&o).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_server_gives_timeouts_and_everything_recovers() {
    let server = Server::start().unwrap();
    let opts = ClientOptions::default()
        .with_command_timeout(Some(Duration::from_millis(300)))
        .with_retry_attempts(0)
        .with_watchdog_timeout(Duration::from_secs(5));
    let c = client_with(&server, opts).await;
    let (a, b) = (c.new_owner(), c.new_owner());
    let lock = c.lock("stopped").unwrap();
    lock.acquire(&a).await.unwrap();
    server.sigstop().unwrap();
    let start = Instant::now();
    assert_eq!(lock.is_locked().await.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(
        lock.try_acquire(&b, Duration::from_secs(1), None).await.unwrap_err().kind(),
        ErrorKind::Timeout
    );
    assert!(start.elapsed() < Duration::from_secs(5));
    server.sigcont().unwrap();
    // The connection comes back by itself; the hold survived the pause (lease 5 s).
    let mut ok = false;
    for _ in 0..50 {
        if let Ok(held) = lock.is_held(&a).await {
            ok = held;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ok, "the hold did not survive, or the client did not reconnect");
    assert!(!lock.try_acquire(&b, Duration::ZERO, None).await.unwrap());
    assert_eq!(lock.release(&a).await.unwrap(), Released::Unlocked);
    assert!(lock.try_acquire(&b, Duration::ZERO, None).await.unwrap());
    lock.release(&b).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undo_that_fails_leaves_no_renewed_hold_behind() {
    // A guard dropped unclaimed gives its hold back in the background; when that release fails
    // (the server is stopped), nobody is left to retry it, so the client must stop renewing
    // the hold and let its lease end it rather than keep a hold nobody owns alive.
    let server = Server::start().unwrap();
    let options = ClientOptions::default()
        .with_watchdog_timeout(Duration::from_millis(1500))
        .with_command_timeout(Some(Duration::from_millis(300)))
        .with_retry_attempts(0);
    let client = client_with(&server, options).await;
    let lock = client.lock("faults:undo").unwrap();
    let guard = lock.lock(&client.owner(1)).await.unwrap();
    assert_eq!(client.tracked_holds(), 1);
    server.sigstop().unwrap();
    drop(guard);
    let untracked = eventually(Duration::from_secs(10), || client.tracked_holds() == 0).await;
    server.sigcont().unwrap();
    assert!(untracked, "the hold whose give-back failed is still tracked (and renewed)");
    let mut conn = server.conn();
    assert!(
        eventually(Duration::from_secs(10), || !conn.exists::<_, bool>("faults:undo").unwrap()).await,
        "the hold outlived its lease"
    );
    client.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_no_acquire_returned_is_not_renewed_after_the_last_release() {
    // An acquire whose reply was lost, and whose undo failed too (its server stopped, then the
    // two commands run in the other order on two connections), leaves a level of its owner
    // that no acquire returned. The owner's next acquire re-enters it. Its release must end
    // what the owner took and stop renewing the rest, which nobody holds: renewed, it kept the
    // lock for good (a RedLock member left behind after a SIGCONT in the chaos suite).
    let server = Server::start().unwrap();
    let options = ClientOptions::default().with_watchdog_timeout(Duration::from_millis(1500));
    let client = client_with(&server, options).await;
    let (name, owner) = ("faults:orphan", client.owner(7));
    let lock = client.lock(name).unwrap();
    let mut conn = server.conn();
    let _: () = redis::pipe().hset(name, owner.as_str(), 1).pexpire(name, 1500).query(&mut conn).unwrap();
    lock.acquire(&owner).await.unwrap();
    assert_eq!(conn.hget::<_, _, u64>(name, owner.as_str()).unwrap(), 2, "the acquire re-entered the level");
    assert_eq!(lock.release(&owner).await.unwrap(), Released::StillLocked);
    assert_eq!(client.tracked_holds(), 0, "a hold whose levels nobody holds is still tracked");
    let gone = eventually(Duration::from_secs(10), || !conn.exists::<_, bool>(name).unwrap()).await;
    assert!(
        gone,
        "the level nobody holds is still renewed: pttl {:?}, {:?}",
        conn.pttl::<_, i64>(name),
        conn.hgetall::<_, Vec<String>>(name)
    );
    // Levels the client took itself are still counted: held until the last release.
    lock.acquire(&owner).await.unwrap();
    lock.acquire(&owner).await.unwrap();
    assert_eq!(lock.release(&owner).await.unwrap(), Released::StillHeld);
    assert_eq!(client.tracked_holds(), 1);
    assert_eq!(lock.release(&owner).await.unwrap(), Released::Unlocked);
    client.close();
}
