//! The permit-expirable semaphore against a real redis-server: Redisson's layout, expiry,
//! watchdog-renewed permits that come back when their client dies, lost permits, cancels.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Inspect as _, Server};
use redis::Commands;
use rlock::{Client, ClientOptions, ErrorKind};

async fn client(server: &Server) -> Client {
    Client::connect(&server.url(), ClientOptions::default()).await.unwrap()
}

async fn client_with_watchdog(server: &Server, ms: u64) -> Client {
    let options = ClientOptions::default().with_watchdog_timeout(Duration::from_millis(ms));
    Client::connect(&server.url(), options).await.unwrap()
}

fn now_ms(conn: &mut redis::Connection) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(conn).unwrap();
    s * 1000 + us / 1000
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permits_in_redissons_layout() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let sem = c.permit_expirable_semaphore("pes").unwrap();
    let mut conn = server.conn();
    assert!(sem.try_acquire(Duration::ZERO, None).await.unwrap().is_none(), "a missing key is 0 permits");
    assert!(sem.try_set_permits(2, None).await.unwrap());
    let a = sem.acquire(Some(Duration::from_secs(60))).await.unwrap();
    let b = sem.acquire(None).await.unwrap();
    assert_eq!(a.id().len(), 32);
    assert!(a.id().bytes().all(|x| x.is_ascii_digit() || (b'a'..=b'f').contains(&x)));
    assert_ne!(a.id(), b.id());
    // Held permits: 16 raw bytes each, scored by their expiry (server clock, ms).
    let held: Vec<(Vec<u8>, i64)> = conn.zrange_withscores("{pes}:timeout", 0, -1).unwrap();
    let now = now_ms(&mut conn);
    let score = |id: &str| {
        held.iter()
            .find(|(m, _)| m.iter().map(|b| format!("{b:02x}")).collect::<String>() == id)
            .map(|(_, s)| *s - now)
            .unwrap()
    };
    assert!((55_000..=60_000).contains(&score(a.id())), "{}", score(a.id()));
    assert!((25_000..=30_000).contains(&score(b.id())), "watchdog lease: {}", score(b.id()));
    let count: String = conn.get("pes").unwrap();
    assert_eq!(count, "0");
    assert_eq!(sem.available_permits().await.unwrap(), 0);
    assert_eq!(sem.acquired_permits().await.unwrap(), 2);
    let ida = a.keep();
    sem.release(&ida).await.unwrap();
    assert_eq!(sem.release(&ida).await.unwrap_err().kind(), ErrorKind::NotHeld, "released twice");
    b.release().await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 2);
    assert_eq!(sem.acquired_permits().await.unwrap(), 0);
    // Ids in upper case name the same permit.
    let p = sem.acquire(None).await.unwrap().keep();
    sem.release(&p.to_uppercase()).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_takes_a_permit_when_it_expires() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let sem = c.permit_expirable_semaphore("pes:expiry").unwrap();
    sem.try_set_permits(1, None).await.unwrap();
    let leased = sem.acquire(Some(Duration::from_millis(300))).await.unwrap().keep();
    // No message announces an expiry: the waiter sleeps until the earliest one.
    let got = sem.try_acquire(Duration::from_secs(10), Some(Duration::from_secs(60))).await.unwrap();
    let got = got.expect("the expired permit came back to the pool");
    // The expired permit is not held any more.
    assert_eq!(sem.release(&leased).await.unwrap_err().kind(), ErrorKind::NotHeld);
    got.release().await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 1);
    assert_eq!(sem.acquired_permits().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_permits_stay_while_held_and_come_back_when_the_client_dies() {
    let server = Server::start().unwrap();
    let holder = client_with_watchdog(&server, 600).await;
    let other = client(&server).await;
    let mine = holder.permit_expirable_semaphore("pes:wd").unwrap();
    let theirs = other.permit_expirable_semaphore("pes:wd").unwrap();
    mine.try_set_permits(1, None).await.unwrap();
    let permit = mine.acquire(None).await.unwrap().keep();
    // Several leases long, the permit is still held: renewed, not expired.
    assert!(theirs.try_acquire(Duration::from_millis(2000), None).await.unwrap().is_none());
    assert_eq!(theirs.acquired_permits().await.unwrap(), 1);
    assert!(!mine.is_lost(&permit));
    // The holder's client goes away without releasing: renewals stop and the permit returns.
    holder.close();
    let started = std::time::Instant::now();
    let back = theirs.try_acquire(Duration::from_secs(10), None).await.unwrap();
    assert!(back.is_some(), "the dead client's permit came back");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    // An update on the dead permit fails: it is not held any more.
    assert_eq!(theirs.update_lease(&permit, None).await.unwrap_err().kind(), ErrorKind::NotHeld);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permit_removed_under_the_watchdog_is_reported_lost() {
    let server = Server::start().unwrap();
    let c = client_with_watchdog(&server, 300).await;
    let sem = c.permit_expirable_semaphore("pes:lost").unwrap();
    sem.try_set_permits(2, None).await.unwrap();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    sem.on_lost(move |e| {
        h.lock().unwrap().push((e.kind, e.permit_id.as_deref().map(str::to_owned), e.holder().to_owned()))
    });
    let kept = sem.acquire(None).await.unwrap().keep();
    let gone = sem.acquire(None).await.unwrap().keep();
    // Somebody deletes one permit from the ZSET.
    let raw: Vec<u8> = (0..16).map(|i| u8::from_str_radix(&gone[2 * i..2 * i + 2], 16).unwrap()).collect();
    let removed: i64 = server.conn().zrem("{pes:lost}:timeout", raw).unwrap();
    assert_eq!(removed, 1);
    assert!(common::eventually(Duration::from_secs(5), || !heard.lock().unwrap().is_empty()).await);
    let events = heard.lock().unwrap().clone();
    assert_eq!(events, [("permit", Some(gone.clone()), gone.clone())]);
    assert!(sem.is_lost(&gone) && !sem.is_lost(&kept));
    assert_eq!(sem.valid_for(&gone), Duration::ZERO);
    assert!(sem.valid_for(&kept) > Duration::ZERO);
    assert_eq!(sem.valid_for("not-an-id"), Duration::ZERO, "an id this client never held");
    assert_eq!(sem.release(&gone).await.unwrap_err().kind(), ErrorKind::Lost);
    sem.release(&kept).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_lease_moves_the_expiry() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let sem = c.permit_expirable_semaphore("pes:update").unwrap();
    let mut conn = server.conn();
    sem.try_set_permits(1, None).await.unwrap();
    let id = sem.acquire(Some(Duration::from_secs(5))).await.unwrap().keep();
    sem.update_lease(&id, Some(Duration::from_secs(100))).await.unwrap();
    let (_, score): (Vec<u8>, i64) =
        conn.zrange_withscores::<_, Vec<(Vec<u8>, i64)>>("{pes:update}:timeout", 0, 0).unwrap().remove(0);
    let left = score - now_ms(&mut conn);
    assert!((95_000..=100_000).contains(&left), "{left}");
    // Handed to the watchdog: its lease (30 s) from now.
    sem.update_lease(&id, None).await.unwrap();
    let (_, score): (Vec<u8>, i64) =
        conn.zrange_withscores::<_, Vec<(Vec<u8>, i64)>>("{pes:update}:timeout", 0, 0).unwrap().remove(0);
    let left = score - now_ms(&mut conn);
    assert!((25_000..=30_000).contains(&left), "{left}");
    sem.release(&id).await.unwrap();
    assert_eq!(sem.update_lease(&id, None).await.unwrap_err().kind(), ErrorKind::NotHeld);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_acquires_keep_the_count_exact() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let sem = c.permit_expirable_semaphore("pes:cancel").unwrap();
    sem.try_set_permits(3, None).await.unwrap();
    let held = Arc::new(AtomicI64::new(0));
    let mut tasks = Vec::new();
    for t in 0..6u64 {
        let (sem, held) = (sem.clone(), held.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..120u64 {
                let delay = Duration::from_micros((t * 7919 + i * 104_729) % 3000);
                let lease = (i % 2 == 0).then_some(Duration::from_secs(60));
                if let Ok(r) = tokio::time::timeout(delay, sem.acquire(lease)).await {
                    let permit = r.unwrap();
                    let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                    assert!(now <= 3, "{now} holders of 3 permits");
                    tokio::task::yield_now().await;
                    held.fetch_sub(1, Ordering::SeqCst);
                    permit.release().await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert!(c.settle(Duration::from_secs(10)).await);
    assert_eq!(sem.available_permits().await.unwrap(), 3, "every permit came back");
    assert_eq!(sem.acquired_permits().await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_changes_nothing() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let sem = c.permit_expirable_semaphore("pes:bad").unwrap();
    sem.try_set_permits(1, None).await.unwrap();
    let id = sem.acquire(None).await.unwrap().keep();
    let evals = server.calls("evalsha") + server.calls("eval");
    for bad in ["", "xyz", &id[..31], "+0112233445566778899aabbccddeeff", "0g112233445566778899aabbccddeeff"]
    {
        assert_eq!(sem.release(bad).await.unwrap_err().kind(), ErrorKind::InvalidArgument, "{bad:?}");
        assert_eq!(sem.update_lease(bad, None).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    assert_eq!(
        sem.update_lease(&id, Some(Duration::ZERO)).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        sem.try_acquire(Duration::ZERO, Some(Duration::ZERO)).await.unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(server.calls("evalsha") + server.calls("eval"), evals, "nothing was sent");
    // A well-formed id nobody holds.
    let unknown = "00112233445566778899aabbccddeeff";
    assert_eq!(sem.release(unknown).await.unwrap_err().kind(), ErrorKind::NotHeld);
    assert_eq!(sem.acquired_permits().await.unwrap(), 1);
    sem.release(&id).await.unwrap();
    assert_eq!(sem.available_permits().await.unwrap(), 1);
}
