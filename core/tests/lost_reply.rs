//! A reply lost after the server ran the command: the acquire fails with a typed timeout and
//! leaves nothing held (what the script took is given back before the error is returned, so
//! no retry can count it twice). The client reaches Redis through a proxy that delivers its
//! requests and holds back every reply; the test inspects Redis directly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{eventually, Inspect as _, Proxy, Server};
use redis::Commands as _;
use rlock::{Client, ClientOptions, ErrorKind};

/// A short command timeout and no retries: the first lost reply fails the call.
fn options() -> ClientOptions {
    ClientOptions::default()
        .with_command_timeout(Some(Duration::from_millis(300)))
        .with_retry_attempts(0)
        .with_thread_connections(0)
}

#[tokio::test]
async fn a_lock_acquire_whose_reply_is_lost_holds_nothing() {
    let server = Server::start().unwrap();
    let proxy = Proxy::start(server.port()).unwrap();
    let client = Client::connect(&proxy.url(), options()).await.unwrap();
    let (lock, owner) = (client.lock("lost-reply:lock").unwrap(), client.new_owner());
    // The scripts are loaded first, so the cut acquire runs (not NOSCRIPT, then nothing).
    lock.acquire(&owner).await.unwrap();
    lock.release(&owner).await.unwrap();
    proxy.cut_replies(true);
    let err = lock.try_acquire(&owner, Duration::ZERO, None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let mut conn = server.conn();
    let freed =
        eventually(Duration::from_secs(5), || !conn.exists::<_, bool>("lost-reply:lock").unwrap()).await;
    assert!(
        freed,
        "the acquire ran and its hold was left behind: {:?}",
        conn.hgetall::<_, Vec<String>>("lost-reply:lock")
    );
    proxy.cut_replies(false);
    lock.acquire(&owner).await.unwrap();
    assert_eq!(lock.release(&owner).await.unwrap(), rlock::Released::Unlocked);
}

#[tokio::test]
async fn a_permit_acquire_whose_reply_is_lost_takes_no_permit() {
    let server = Server::start().unwrap();
    let proxy = Proxy::start(server.port()).unwrap();
    let client = Client::connect(&proxy.url(), options()).await.unwrap();
    let sem = client.permit_expirable_semaphore("lost-reply:pes").unwrap();
    assert!(sem.try_set_permits(2, None).await.unwrap());
    sem.acquire(None).await.unwrap().release().await.unwrap();
    proxy.cut_replies(true);
    let err = sem.try_acquire(Duration::ZERO, None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let mut conn = server.conn();
    let back = eventually(Duration::from_secs(5), || {
        conn.zcard::<_, u64>("{lost-reply:pes}:timeout").unwrap() == 0
            && conn.get::<_, u64>("lost-reply:pes").unwrap() == 2
    })
    .await;
    assert!(back, "the acquire ran and its permit was left behind");
    proxy.cut_replies(false);
    let permit = sem.acquire(None).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    permit.release().await.unwrap();
}

#[tokio::test]
async fn a_semaphore_acquire_whose_reply_is_lost_takes_no_permits() {
    let server = Server::start().unwrap();
    let proxy = Proxy::start(server.port()).unwrap();
    let client = Client::connect(&proxy.url(), options()).await.unwrap();
    let sem = client.semaphore("lost-reply:sem").unwrap();
    assert!(sem.try_set_permits(3, None).await.unwrap());
    sem.acquire(2).await.unwrap();
    sem.release(2).await.unwrap();
    proxy.cut_replies(true);
    let err = sem.try_acquire(2, Duration::ZERO).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let mut conn = server.conn();
    let back =
        eventually(Duration::from_secs(5), || conn.get::<_, u64>("lost-reply:sem").unwrap() == 3).await;
    assert!(
        back,
        "the acquire ran and its permits were left behind: {:?}",
        conn.get::<_, u64>("lost-reply:sem")
    );
    proxy.cut_replies(false);
    sem.acquire(3).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 0);
    sem.release(3).await.unwrap();
}

/// The acquire's answer is lost and its give-back cannot get through either: the connection
/// drops, and the new one's handshake (its AUTH) gets no answer while the network is still
/// down. The permits come back once the network heals, tried again on the client's runtime
/// after the call returned (a plain semaphore's permits have no lease to end them).
#[tokio::test]
async fn a_semaphore_give_back_that_gets_no_answer_is_tried_again_after_the_heal() {
    let server = Server::builder().password("lost-reply").start().unwrap();
    let proxy = Proxy::start(server.port()).unwrap();
    let options = options().with_connect_timeout(Duration::from_millis(300));
    let url = format!("redis://:lost-reply@127.0.0.1:{}/", proxy.port());
    let client = Client::connect(&url, options).await.unwrap();
    let sem = client.semaphore("lost-reply:sem-again").unwrap();
    assert!(sem.try_set_permits(3, None).await.unwrap());
    sem.acquire(2).await.unwrap();
    sem.release(2).await.unwrap();
    proxy.cut_replies(true);
    let acquire = tokio::spawn({
        let sem = sem.clone();
        async move { sem.try_acquire(2, Duration::ZERO).await }
    });
    let mut conn = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
    let count = |conn: &mut redis::Connection| conn.get::<_, u64>("lost-reply:sem-again").unwrap();
    // The acquire ran and its answer is held back: the connection drops before the give-back.
    assert!(eventually(Duration::from_secs(5), || count(&mut conn) == 1).await, "the acquire never ran");
    proxy.drop_connections();
    let err = acquire.await.unwrap().unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Connection | ErrorKind::Timeout), "{err}");
    assert_eq!(count(&mut conn), 1, "the give-back got through before the heal");
    proxy.cut_replies(false);
    let back = eventually(Duration::from_secs(5), || count(&mut conn) == 3).await;
    assert!(back, "the permits were never given back: {} left", count(&mut conn));
}

/// A fair-lock waiter whose acquire was queued by the script but whose reply was lost: no
/// answer brought its give-up step, and before, its place stayed in the queue until its
/// deadline (300 s), holding up every waiter behind it. Seen in the chaos suite's fair-cancel
/// case under load, as hundreds of one client's places left behind.
#[tokio::test]
async fn a_fair_waiter_whose_reply_is_lost_leaves_the_queue() {
    let server = Server::start().unwrap();
    let holder_client = common::client(&server).await;
    let holder = holder_client.new_owner();
    holder_client.fair_lock("lost-reply:fair").unwrap().acquire(&holder).await.unwrap();
    let proxy = Proxy::start(server.port()).unwrap();
    let client = Client::connect(&proxy.url(), options()).await.unwrap();
    let (lock, owner) = (client.fair_lock("lost-reply:fair").unwrap(), client.new_owner());
    // The scripts are loaded first: a wait that runs out queues, then gives up.
    assert!(!lock.try_acquire(&owner, Duration::from_millis(50), None).await.unwrap());
    proxy.cut_replies(true);
    let err = lock.try_acquire(&owner, Duration::from_secs(5), None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    let mut conn = server.conn();
    let queue = "redisson_lock_queue:{lost-reply:fair}";
    let left = eventually(Duration::from_secs(5), || !conn.exists::<_, bool>(queue).unwrap()).await;
    assert!(
        left,
        "the waiter's place was left in the queue: {:?}",
        conn.lrange::<_, Vec<String>>(queue, 0, -1)
    );
    assert!(!conn.exists::<_, bool>("redisson_lock_timeout:{lost-reply:fair}").unwrap());
    proxy.cut_replies(false);
}
