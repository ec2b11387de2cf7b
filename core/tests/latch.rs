//! The count-down latch against a real redis-server: Redisson's layout and messages, waiters
//! woken by the zero message (also one sent by Redisson's own script), timed waits, retries
//! that never count twice, bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::{eventually, Inspect as _, Server};
use redis::Commands;
use rlock::{Client, ClientOptions, ErrorKind};

async fn client(server: &Server) -> Client {
    Client::connect(&server.url(), ClientOptions::default()).await.unwrap()
}

fn channel(name: &str) -> String {
    format!("redisson_countdownlatch__channel__{{{name}}}")
}

/// Redisson 3.52's `countDownAsync` script, verbatim (RedissonCountDownLatch.java).
const REDISSON_COUNT_DOWN: &str = "local v = redis.call('decr', KEYS[1]);\
    if v <= 0 then redis.call('del', KEYS[1]) end;\
    if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;";

/// Runs Redisson's count-down script on `name`, as a Java client would.
fn java_count_down(server: &Server, name: &str) {
    let _: redis::Value = redis::cmd("EVAL")
        .arg(REDISSON_COUNT_DOWN)
        .arg(2)
        .arg(name)
        .arg(channel(name))
        .arg(0)
        .arg("PUBLISH")
        .query(&mut server.conn())
        .unwrap();
}

/// The next message on a subscribed connection: (channel, payload).
fn next_message(pubsub: &mut redis::PubSub<'_>) -> (String, String) {
    let m = pubsub.get_message().unwrap();
    (m.get_channel_name().to_owned(), m.get_payload().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_and_messages_in_redissons_layout() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let latch = c.count_down_latch("jobs").unwrap();
    let mut conn = server.conn();
    let mut sub = server.conn();
    let mut pubsub = sub.as_pubsub();
    pubsub.subscribe(channel("jobs")).unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();

    assert_eq!(latch.count().await.unwrap(), 0, "a missing key is an open latch");
    assert!(latch.wait(Some(Duration::ZERO)).await.unwrap(), "an open latch needs no wait");
    assert!(latch.try_set_count(2).await.unwrap());
    assert_eq!(next_message(&mut pubsub), (channel("jobs"), "1".to_owned()), "Redisson's new-count message");
    assert!(!latch.try_set_count(5).await.unwrap(), "only when missing");
    let v: String = conn.get("jobs").unwrap();
    assert_eq!(v, "2", "the losing try_set_count changed nothing");
    assert_eq!(latch.count().await.unwrap(), 2);
    latch.count_down().await.unwrap();
    let v: String = conn.get("jobs").unwrap();
    assert_eq!(v, "1");
    latch.count_down().await.unwrap();
    assert_eq!(next_message(&mut pubsub), (channel("jobs"), "0".to_owned()), "Redisson's zero message");
    let exists: bool = conn.exists("jobs").unwrap();
    assert!(!exists, "the key goes at zero");
    assert_eq!(latch.count().await.unwrap(), 0);
    // Counting down an open latch leaves it open and missing, and publishes nothing.
    latch.count_down().await.unwrap();
    let exists: bool = conn.exists("jobs").unwrap();
    assert!(!exists);
    // delete publishes the new-count message, only when the latch existed.
    assert!(latch.try_set_count(3).await.unwrap());
    assert_eq!(next_message(&mut pubsub).1, "1");
    assert!(latch.delete().await.unwrap());
    assert_eq!(next_message(&mut pubsub).1, "1");
    assert!(!latch.delete().await.unwrap());
    pubsub.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    assert!(pubsub.get_message().is_err(), "no message for the open count-down or the second delete");
    // A count of 0 is stored, open.
    assert!(latch.try_set_count(0).await.unwrap());
    let v: String = conn.get("jobs").unwrap();
    assert_eq!(v, "0");
    assert!(latch.wait(Some(Duration::ZERO)).await.unwrap());
    latch.count_down().await.unwrap();
    let exists: bool = conn.exists("jobs").unwrap();
    assert!(!exists);
    // No request latch is left once the background deletes ran.
    assert!(
        eventually(Duration::from_secs(5), || conn.keys::<_, Vec<String>>("{jobs}*").unwrap().is_empty())
            .await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_waiter_wakes_when_another_client_counts_to_zero() {
    let server = Server::start().unwrap();
    let (a, b) = (client(&server).await, client(&server).await);
    for round in 0..3 {
        let name = format!("latch:wake:{round}");
        let (la, lb) = (a.count_down_latch(&name).unwrap(), b.count_down_latch(&name).unwrap());
        assert!(la.try_set_count(2).await.unwrap());
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                let l = lb.clone();
                tokio::spawn(async move {
                    let open = l.wait(None).await;
                    (open, Instant::now())
                })
            })
            .collect();
        assert!(eventually(Duration::from_secs(5), || server.numsub(&channel(&name)) == 1).await);
        la.count_down().await.unwrap();
        assert_eq!(lb.count().await.unwrap(), 1);
        assert!(waiters.iter().all(|w| !w.is_finished()), "one count-down of two opened nothing");
        let zero = Instant::now();
        la.count_down().await.unwrap();
        for w in waiters {
            let (open, at) = tokio::time::timeout(Duration::from_secs(5), w).await.unwrap().unwrap();
            assert!(open.unwrap());
            // The periodic re-read is 1 s apart: only the zero message wakes this fast in
            // every round.
            let woke = at - zero;
            assert!(woke < Duration::from_millis(200), "round {round}: woke {woke:?} after the count-down");
        }
        assert!(eventually(Duration::from_secs(5), || server.numsub(&channel(&name)) == 0).await);
        assert_eq!(b.waited_channels(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_wake_on_redissons_own_count_down_and_on_delete() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let latch = c.count_down_latch("latch:java").unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    let l = latch.clone();
    let waiter = tokio::spawn(async move { l.wait(Some(Duration::from_secs(30))).await });
    assert!(eventually(Duration::from_secs(5), || server.numsub(&channel("latch:java")) == 1).await);
    let zero = Instant::now();
    java_count_down(&server, "latch:java");
    assert!(tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap());
    assert!(zero.elapsed() < Duration::from_millis(200), "{:?}", zero.elapsed());

    // A delete opens the latch: rlock waiters look again on its new-count message.
    assert!(latch.try_set_count(4).await.unwrap());
    let l = latch.clone();
    let waiter = tokio::spawn(async move { l.wait(None).await });
    assert!(eventually(Duration::from_secs(5), || server.numsub(&channel("latch:java")) == 1).await);
    let deleted = Instant::now();
    assert!(latch.delete().await.unwrap());
    assert!(tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap());
    assert!(deleted.elapsed() < Duration::from_millis(200), "{:?}", deleted.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_wait_runs_out_and_leaves_nothing() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let latch = c.count_down_latch("latch:timed").unwrap();
    assert!(latch.try_set_count(1).await.unwrap());
    assert!(!latch.wait(Some(Duration::ZERO)).await.unwrap());
    let start = Instant::now();
    assert!(!latch.wait(Some(Duration::from_millis(300))).await.unwrap());
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(2), "{took:?}");
    assert_eq!(latch.count().await.unwrap(), 1, "waiting changes nothing");
    assert_eq!(c.waited_channels(), 0);
    // A wait dropped midway leaves no subscription either.
    let dropped = tokio::time::timeout(Duration::from_millis(100), latch.wait(None)).await;
    assert!(dropped.is_err());
    assert_eq!(c.waited_channels(), 0);
    assert!(eventually(Duration::from_secs(5), || server.numsub(&channel("latch:timed")) == 0).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_after_lost_replies_count_down_once() {
    let server = Server::start().unwrap();
    // Replies come after the command timeout while the server holds back scripts, so each call
    // is sent again (same request latch) before the first attempt ran.
    let opts = ClientOptions::default()
        .with_command_timeout(Some(Duration::from_millis(200)))
        .with_retry_delay(Duration::from_millis(50))
        .with_retry_attempts(20);
    let c = Client::connect(&server.url(), opts).await.unwrap();
    let latch = c.count_down_latch("latch:retry").unwrap();
    // The server learns both scripts first (a NOSCRIPT fallback would muddle the counts).
    let warm = c.count_down_latch("latch:warm").unwrap();
    assert!(warm.try_set_count(1).await.unwrap());
    warm.count_down().await.unwrap();
    let before = server.calls("evalsha");
    redis::cmd("CLIENT").arg("PAUSE").arg(700).arg("WRITE").exec(&mut server.conn()).unwrap();
    assert!(latch.try_set_count(5).await.unwrap(), "a retry of a set reads back 'set'");
    let sent = server.calls("evalsha") - before;
    assert!(sent >= 2, "the set was sent {sent} time(s): no retry happened");
    assert_eq!(latch.count().await.unwrap(), 5);

    let before = server.calls("evalsha");
    redis::cmd("CLIENT").arg("PAUSE").arg(700).arg("WRITE").exec(&mut server.conn()).unwrap();
    latch.count_down().await.unwrap();
    let sent = server.calls("evalsha") - before;
    assert!(sent >= 2, "the count-down was sent {sent} time(s): no retry happened");
    assert_eq!(latch.count().await.unwrap(), 4, "{sent} sends of one count-down took off one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_changes_nothing() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let latch = c.count_down_latch("latch:bad").unwrap();
    assert!(latch.try_set_count(2).await.unwrap());
    assert_eq!(latch.try_set_count(u64::MAX).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        latch.wait(Some(Duration::from_secs(200 * 365 * 86_400))).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(c.count_down_latch("").unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(latch.count().await.unwrap(), 2);
    // Another kind of key is a Redis error, and stays as it was.
    let _: () = server.conn().hset("latch:hash", "f", 1).unwrap();
    let wrong = c.count_down_latch("latch:hash").unwrap();
    assert_eq!(wrong.count_down().await.unwrap_err().kind(), ErrorKind::Redis);
    assert_eq!(wrong.count().await.unwrap_err().kind(), ErrorKind::Redis);
    assert_eq!(wrong.wait(Some(Duration::ZERO)).await.unwrap_err().kind(), ErrorKind::Redis);
    assert!(!wrong.try_set_count(1).await.unwrap());
    let f: i64 = server.conn().hget("latch:hash", "f").unwrap();
    assert_eq!(f, 1);
    c.close();
    assert_eq!(latch.count_down().await.unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(latch.wait(None).await.unwrap_err().kind(), ErrorKind::Closed);
}
