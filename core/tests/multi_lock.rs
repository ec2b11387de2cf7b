//! The multi-lock against real redis-servers: all-or-nothing, no deadlock for {a, b}/{b, a},
//! members of every kind on two servers, release reporting every failure, cancels.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{Inspect as _, Server};
use rlock::{Client, ClientOptions, ErrorKind, MultiLock};

async fn client(server: &Server) -> Client {
    Client::connect(&server.url(), ClientOptions::default()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_or_nothing_across_two_servers_and_every_kind() {
    let (s1, s2) = (Server::start().unwrap(), Server::start().unwrap());
    let (c1, c2) = (client(&s1).await, client(&s2).await);
    let members = vec![
        c1.lock("m:a").unwrap(),
        c2.fair_lock("m:b").unwrap(),
        c1.read_write_lock("m:c").unwrap().write_lock(),
        c2.read_write_lock("m:d").unwrap().read_lock(),
    ];
    let multi = MultiLock::new(members.clone()).unwrap();
    let (me, other) = (c1.new_owner(), c2.new_owner());
    // Somebody else holds the fair lock on the second server: nothing is taken.
    let fair = c2.fair_lock("m:b").unwrap();
    fair.acquire(&other).await.unwrap();
    assert!(!multi.try_acquire(&me, Duration::from_millis(200), None).await.unwrap());
    for m in [&members[0], &members[2], &members[3]] {
        assert!(!m.is_locked().await.unwrap(), "{} was given back", m.name());
    }
    // A waiter gets every member once the fair lock is released.
    let waiter = {
        let (multi, me) = (multi.clone(), me.clone());
        tokio::spawn(async move { multi.acquire(&me).await })
    };
    assert!(
        common::eventually(Duration::from_secs(10), || s2
            .numsub(&format!("redisson_lock__channel:{{m:b}}:{}", c2.owner(me.id()).as_str()))
            == 1)
        .await
    );
    fair.release(&other).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), waiter).await.unwrap().unwrap().unwrap();
    assert!(multi.is_held(&me).await.unwrap());
    // Readers elsewhere may share the read member; writers of the others are excluded.
    let reader = c2.new_owner();
    assert!(members[3].try_acquire(&reader, Duration::ZERO, None).await.unwrap());
    members[3].release(&reader).await.unwrap();
    assert!(!members[0].try_acquire(&c1.new_owner(), Duration::ZERO, None).await.unwrap());
    multi.release(&me).await.unwrap();
    for m in &members {
        assert!(!m.is_locked().await.unwrap(), "{} free", m.name());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opposite_orders_never_deadlock_and_exclude() {
    let server = Server::start().unwrap();
    let (c1, c2) = (client(&server).await, client(&server).await);
    let ab = MultiLock::new(vec![c1.lock("d:a").unwrap(), c1.lock("d:b").unwrap()]).unwrap();
    let ba = MultiLock::new(vec![c2.lock("d:b").unwrap(), c2.lock("d:a").unwrap()]).unwrap();
    let inside = Arc::new(AtomicI64::new(0));
    let total = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for (multi, client) in [(ab, c1.clone()), (ba, c2.clone())] {
        for _ in 0..2 {
            let (multi, owner, inside, total) =
                (multi.clone(), client.new_owner(), inside.clone(), total.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..150 {
                    multi.acquire(&owner).await.unwrap();
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two owners inside");
                    tokio::task::yield_now().await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                    total.fetch_add(1, Ordering::SeqCst);
                    multi.release(&owner).await.unwrap();
                }
            }));
        }
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(120), t).await.expect("no deadlock").unwrap();
    }
    assert_eq!(total.load(Ordering::SeqCst), 600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn release_frees_every_member_and_reports_every_failure() {
    let server = Server::start().unwrap();
    let (c, admin) = (client(&server).await, client(&server).await);
    let names = ["r:a", "r:b", "r:c"];
    let multi = MultiLock::new(names.iter().map(|n| c.lock(n).unwrap()).collect()).unwrap();
    let me = c.new_owner();
    multi.acquire(&me).await.unwrap();
    for n in ["r:a", "r:c"] {
        assert!(admin.lock(n).unwrap().force_unlock().await.unwrap());
    }
    let err = multi.release(&me).await.unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Lost | ErrorKind::NotHeld), "{err}");
    let msg = err.message();
    assert!(
        msg.contains("2 of 3") && msg.contains("'r:a'") && msg.contains("'r:c'") && !msg.contains("'r:b'"),
        "{msg}"
    );
    assert!(!c.lock("r:b").unwrap().is_locked().await.unwrap(), "the healthy member was released too");
    assert!(MultiLock::new(Vec::new()).is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_acquire_leaves_nothing_held() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let multi = MultiLock::new(vec![c.lock("x:a").unwrap(), c.lock("x:b").unwrap()]).unwrap();
    let (me, other) = (c.new_owner(), c.new_owner());
    c.lock("x:b").unwrap().acquire(&other).await.unwrap();
    for i in 0..100u64 {
        let _ = tokio::time::timeout(Duration::from_micros(i * 97 % 4000), multi.acquire(&me)).await;
    }
    assert!(c.settle(Duration::from_secs(10)).await);
    assert!(!c.lock("x:a").unwrap().is_locked().await.unwrap(), "no member left held");
    c.lock("x:b").unwrap().release(&other).await.unwrap();
    assert!(multi.try_acquire(&me, Duration::from_secs(5), Some(Duration::from_secs(10))).await.unwrap());
    multi.release(&me).await.unwrap();
}
