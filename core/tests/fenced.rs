//! The fenced lock against a real redis-server: Redisson's layout, strictly increasing tokens.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{Inspect as _, Server};
use redis::Commands;
use rlock::{Client, ClientOptions, ErrorKind, Released};

async fn client(server: &Server) -> Client {
    Client::connect(&server.url(), ClientOptions::default()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acquire_returns_a_larger_token_in_redissons_layout() {
    let server = Server::start().unwrap();
    let (a, b) = (client(&server).await, client(&server).await);
    let name = "fenced:layout";
    let (la, lb) = (a.fenced_lock(name).unwrap(), b.fenced_lock(name).unwrap());
    let (oa, ob) = (a.new_owner(), b.new_owner());
    let mut conn = server.conn();

    assert_eq!(la.last_token().await.unwrap(), None, "no counter before the first acquire");
    let t1 = la.acquire(&oa).await.unwrap();
    let t2 = la.acquire(&oa).await.unwrap(); // a re-entry gets a new token too
    assert!(t1 >= 1 && t2 > t1, "{t1} {t2}");
    assert_eq!(la.token_of(&oa), Some(t2));
    // Redisson's layout: the lock hash with the owner's count, and the counter key.
    let count: i64 = conn.hget(name, oa.as_str()).unwrap();
    assert_eq!(count, 2);
    let counter: u64 = conn.get("redisson_lock_token:{fenced:layout}").unwrap();
    assert_eq!(counter, t2);
    assert_eq!(la.last_token().await.unwrap(), Some(t2));

    // Another client waits; tokens keep rising across clients.
    assert_eq!(lb.try_acquire(&ob, Duration::ZERO, None).await.unwrap(), None, "held by a");
    assert_eq!(la.release(&oa).await.unwrap(), Released::StillHeld);
    assert_eq!(la.release(&oa).await.unwrap(), Released::Unlocked);
    assert_eq!(la.token_of(&oa), None, "no token once released");
    let t3 = lb.try_acquire(&ob, Duration::from_secs(5), None).await.unwrap().expect("acquired");
    assert!(t3 > t2);
    lb.release(&ob).await.unwrap();

    // The counter never expires (one key per name, as in Redisson).
    let pttl: i64 = redis::cmd("PTTL").arg("redisson_lock_token:{fenced:layout}").query(&mut conn).unwrap();
    assert_eq!(pttl, -1);
    assert!(!conn.exists::<_, bool>(name).unwrap(), "the lock itself is gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_lock_excludes_the_fenced_one_without_taking_a_token() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let name = "fenced:mixed";
    let (plain, fenced) = (c.lock(name).unwrap(), c.fenced_lock(name).unwrap());
    let (o1, o2) = (c.new_owner(), c.new_owner());
    let t1 = fenced.acquire(&o1).await.unwrap();
    assert!(!plain.try_acquire(&o2, Duration::from_millis(50), None).await.unwrap());
    fenced.release(&o1).await.unwrap();
    plain.acquire(&o2).await.unwrap();
    assert_eq!(fenced.try_acquire(&o1, Duration::ZERO, None).await.unwrap(), None);
    assert_eq!(fenced.last_token().await.unwrap(), Some(t1), "a plain acquire takes no token");
    // A fenced waiter is woken by the plain lock's release (one channel) and gets the next token.
    let waiter = {
        let (fenced, o1) = (fenced.clone(), o1.clone());
        tokio::spawn(async move { fenced.acquire(&o1).await })
    };
    common::eventually(Duration::from_secs(5), || {
        server.numsub("redisson_lock__channel:{fenced:mixed}") == 1
    })
    .await;
    plain.release(&o2).await.unwrap();
    let t2 = tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
    assert_eq!(t2, t1 + 1);
    fenced.release(&o1).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_strictly_increase_under_contention() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let lock = c.fenced_lock("fenced:contended").unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (lock, owner) = (lock.clone(), c.new_owner());
        tasks.push(tokio::spawn(async move {
            let mut tokens = Vec::new();
            for _ in 0..25 {
                tokens.push(lock.acquire(&owner).await.unwrap());
                lock.release(&owner).await.unwrap();
            }
            tokens
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        let tokens = t.await.unwrap();
        assert!(tokens.windows(2).all(|w| w[0] < w[1]), "each owner's tokens rise");
        all.extend(tokens);
    }
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 200, "no token was given twice");
    assert_eq!(lock.last_token().await.unwrap(), all.last().copied());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_changes_nothing() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    assert_eq!(c.fenced_lock("").unwrap_err().kind(), ErrorKind::InvalidArgument);
    let lock = c.fenced_lock("fenced:bad").unwrap();
    let o = c.new_owner();
    let e = lock.acquire_with_lease(&o, Duration::ZERO).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(lock.release(&o).await.unwrap_err().kind(), ErrorKind::NotHeld);
    let mut conn = server.conn();
    assert!(!conn.exists::<_, bool>("fenced:bad").unwrap());
    assert!(!conn.exists::<_, bool>("redisson_lock_token:{fenced:bad}").unwrap(), "no token taken");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_carries_the_token_of_its_own_acquire_even_after_the_hold_is_gone() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let name = "fenced:guard";
    let (fenced, owner) = (c.fenced_lock(name).unwrap(), c.new_owner());
    let held = fenced.lock().acquire_guard(&owner, None, None).await.unwrap().expect("acquired");
    let token = held.token().expect("a fenced lock's guard has a token");
    let counter: u64 = server.conn().get("redisson_lock_token:{fenced:guard}").unwrap();
    assert_eq!(token, counter);
    // The hold vanishes right after the acquire (force-unlocked by this very client, which
    // forgets its local record of the hold): a second read finds nothing, the guard's token
    // is still the acquire's.
    assert!(c.lock(name).unwrap().force_unlock().await.unwrap());
    assert_eq!(fenced.token_of(&owner), None);
    assert_eq!(held.token(), Some(token));
    held.keep();
    // A lock that is not fenced has no token.
    let plain =
        c.lock("fenced:plain").unwrap().acquire_guard(&owner, None, None).await.unwrap().expect("acquired");
    assert_eq!(plain.token(), None);
    plain.release().await.unwrap();
}
