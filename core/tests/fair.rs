//! The fair lock against a real redis-server: Redisson's queue and deadline keys, grants in
//! arrival order, and a waiter that stops waiting (wait ran out, dropped, client closed) leaves
//! the queue so nobody behind it stalls.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{Inspect as _, Server};
use redis::Commands;
use rlock::{Client, ClientOptions, Lock, Owner, Released};

const QUEUE: &str = "redisson_lock_queue:{fair}";
const TIMEOUTS: &str = "redisson_lock_timeout:{fair}";

async fn client(server: &Server) -> Client {
    Client::connect(&server.url(), ClientOptions::default()).await.unwrap()
}

fn queue(conn: &mut redis::Connection) -> Vec<String> {
    conn.lrange(QUEUE, 0, -1).unwrap()
}

/// Neither the queue nor the deadlines hold anyone.
fn nobody_queued(conn: &mut redis::Connection) -> bool {
    queue(conn).is_empty() && !conn.exists::<_, bool>(TIMEOUTS).unwrap()
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// Starts a waiter for `lock` as `owner` and waits until it is last in the queue.
async fn queue_up(
    server: &Server,
    lock: &Lock,
    owner: &Owner,
    wait: Option<Duration>,
) -> tokio::task::JoinHandle<rlock::Result<bool>> {
    let (l, o) = (lock.clone(), owner.clone());
    let task = tokio::spawn(async move {
        match wait {
            None => l.acquire(&o).await.map(|()| true),
            Some(w) => l.try_acquire(&o, w, None).await,
        }
    });
    let mut conn = server.conn();
    let id = owner.as_str().to_owned();
    assert!(
        common::eventually(Duration::from_secs(5), || queue(&mut conn).last() == Some(&id)).await,
        "{id} queued"
    );
    task
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_in_arrival_order_across_clients() {
    let server = Server::start().unwrap();
    let clients = [client(&server).await, client(&server).await];
    let holder_lock = clients[0].fair_lock("fair").unwrap();
    let holder = clients[0].new_owner();
    holder_lock.acquire(&holder).await.unwrap();
    let mut conn = server.conn();

    let order = Arc::new(Mutex::new(Vec::new()));
    let mut expected = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..6 {
        let c = &clients[i % 2];
        let (lock, owner) = (c.fair_lock("fair").unwrap(), c.new_owner());
        expected.push(i);
        let order = order.clone();
        let (l, o) = (lock.clone(), owner.clone());
        tasks.push(tokio::spawn(async move {
            l.acquire(&o).await.unwrap();
            order.lock().unwrap().push(i);
            l.release(&o).await.unwrap();
        }));
        let id = owner.as_str().to_owned();
        assert!(common::eventually(Duration::from_secs(5), || queue(&mut conn).last() == Some(&id)).await);
    }
    // Redisson's deadlines: each waiter's is the one before it plus the wait (300 s default).
    let deadlines: Vec<(String, f64)> = conn.zrange_withscores(TIMEOUTS, 0, -1).unwrap();
    assert_eq!(deadlines.len(), 6);
    let first = deadlines[0].1 as i64;
    let ttl: i64 = redis::cmd("PTTL").arg("fair").query(&mut conn).unwrap();
    assert!((first - (now_ms() + ttl + 300_000)).abs() < 2_000, "{first}");
    for w in deadlines.windows(2) {
        assert_eq!((w[1].1 - w[0].1) as i64, 300_000);
    }
    // Channels: each waiter on its own. A waiter subscribes after its first attempt queued it
    // (as Redisson does), so the last one's subscription can follow its queue entry.
    let own_channels = || {
        server.pubsub_channels().iter().filter(|c| c.starts_with("redisson_lock__channel:{fair}:")).count()
    };
    assert!(
        common::eventually(Duration::from_secs(5), || own_channels() == 6).await,
        "{} channels",
        own_channels()
    );

    assert_eq!(holder_lock.release(&holder).await.unwrap(), Released::Unlocked);
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(10), t).await.unwrap().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), expected);
    assert!(queue(&mut conn).is_empty());
    assert!(!conn.exists::<_, bool>(TIMEOUTS).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_of_giving_up_leaves_the_queue() {
    let server = Server::start().unwrap();
    let (a, b) = (client(&server).await, client(&server).await);
    let lock_a = a.fair_lock("fair").unwrap();
    let holder = a.new_owner();
    lock_a.acquire(&holder).await.unwrap();
    let mut conn = server.conn();

    // try_acquire with no wait does not queue.
    let lock_b = b.fair_lock("fair").unwrap();
    assert!(!lock_b.try_acquire(&b.new_owner(), Duration::ZERO, None).await.unwrap());
    assert!(queue(&mut conn).is_empty());

    // The wait runs out: out of the queue before the call returns.
    let o = b.new_owner();
    let t = queue_up(&server, &lock_b, &o, Some(Duration::from_millis(300))).await;
    assert!(!t.await.unwrap().unwrap());
    assert!(queue(&mut conn).is_empty(), "{:?}", queue(&mut conn));
    assert!(!conn.exists::<_, bool>(TIMEOUTS).unwrap());

    // A dropped acquire.
    let t = queue_up(&server, &lock_b, &b.new_owner(), None).await;
    t.abort();
    assert!(common::eventually(Duration::from_secs(5), || nobody_queued(&mut conn)).await);

    // A waiter whose client closes.
    let c = client(&server).await;
    let lock_c = c.fair_lock("fair").unwrap();
    let t = queue_up(&server, &lock_c, &c.new_owner(), None).await;
    c.close();
    assert_eq!(t.await.unwrap().unwrap_err().kind(), rlock::ErrorKind::Closed);
    // Both keys, polled together: an attempt still in flight when the client closed finishes
    // after the first give-up (queueing again, then giving up again), so an empty queue alone
    // can be seen in between (seen once in CI under load).
    assert!(common::eventually(Duration::from_secs(5), || nobody_queued(&mut conn)).await);

    // The waiter behind a cancelled one is not held up: it is next when the lock frees.
    let first = queue_up(&server, &lock_b, &b.new_owner(), None).await;
    let o2 = a.new_owner();
    let second = queue_up(&server, &lock_a, &o2, None).await;
    first.abort();
    assert!(common::eventually(Duration::from_secs(5), || queue(&mut conn).len() == 1).await);
    lock_a.release(&holder).await.unwrap();
    // Without the give-up step it would wait for the first waiter's deadline (300 s).
    assert!(tokio::time::timeout(Duration::from_secs(10), second).await.unwrap().unwrap().unwrap());
    lock_a.release(&o2).await.unwrap();
    assert!(!conn.exists::<_, bool>("fair").unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_waiter_holds_up_the_others_until_its_deadline_only() {
    let server = Server::start().unwrap();
    let options = ClientOptions::default().with_fair_lock_wait_timeout(Duration::from_millis(1500));
    let c = Client::connect(&server.url(), options).await.unwrap();
    let lock = c.fair_lock("fair").unwrap();
    let holder = c.new_owner();
    lock.acquire_with_lease(&holder, Duration::from_millis(500)).await.unwrap();
    let mut conn = server.conn();
    // A waiter that crashed: queued with a deadline, never re-trying, never giving up.
    let dead = "dead-client:1";
    let deadline = now_ms() + 500 + 1500;
    let _: () = conn.rpush(QUEUE, dead).unwrap();
    let _: () = conn.zadd(TIMEOUTS, dead, deadline).unwrap();
    let o = c.new_owner();
    let t = queue_up(&server, &lock, &o, None).await;
    // The live waiter's deadline is the dead one's plus its wait (1.5 s, the client option).
    let mine: f64 = conn.zscore(TIMEOUTS, o.as_str()).unwrap();
    assert_eq!(mine as i64, deadline + 1500);
    assert!(tokio::time::timeout(Duration::from_secs(15), t).await.unwrap().unwrap().unwrap());
    assert!(now_ms() >= deadline, "granted only after the dead waiter's deadline");
    assert!(queue(&mut conn).is_empty(), "the dead waiter was dropped");
    lock.release(&o).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentry_release_and_force_unlock() {
    let server = Server::start().unwrap();
    let (a, b) = (client(&server).await, client(&server).await);
    let (la, lb) = (a.fair_lock("fair").unwrap(), b.fair_lock("fair").unwrap());
    let (oa, ob) = (a.new_owner(), b.new_owner());
    la.acquire(&oa).await.unwrap();
    la.acquire(&oa).await.unwrap();
    assert_eq!(la.hold_count(&oa).await.unwrap(), 2);
    assert_eq!(la.kind(), "fair");
    assert_eq!(lb.release(&ob).await.unwrap_err().kind(), rlock::ErrorKind::NotHeld);
    assert_eq!(la.release(&oa).await.unwrap(), Released::StillHeld);
    let t = queue_up(&server, &lb, &ob, None).await;
    // Force unlock wakes the first waiter on its own channel.
    assert!(la.force_unlock().await.unwrap());
    assert!(tokio::time::timeout(Duration::from_secs(5), t).await.unwrap().unwrap().unwrap());
    assert!(lb.is_held(&ob).await.unwrap());
    assert_eq!(la.release(&oa).await.unwrap_err().kind(), rlock::ErrorKind::NotHeld);
    lb.release(&ob).await.unwrap();
}
