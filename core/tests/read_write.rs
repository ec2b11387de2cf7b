//! The read-write lock against a real redis-server: Redisson's layout, many readers or one
//! writer, downgrade, the refused upgrade, wake-ups, read renewal of our own holds only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Inspect as _, Server};
use redis::Commands;
use rlock::{Client, ClientOptions, ErrorKind, LostReason, Released};

async fn client(server: &Server) -> Client {
    Client::connect(&server.url(), ClientOptions::default()).await.unwrap()
}

fn hash(conn: &mut redis::Connection, name: &str) -> HashMap<String, String> {
    conn.hgetall(name).unwrap()
}

/// Waits until the background-deleted release latches are gone.
async fn no_latches_left(server: &Server) {
    let mut conn = server.conn();
    let gone = common::eventually(Duration::from_secs(5), || {
        conn.keys::<_, Vec<String>>("redisson_unlock_latch:*").unwrap().is_empty()
    })
    .await;
    assert!(gone);
}

/// Every key but the holder records (which outlive holds by design).
fn lock_keys(conn: &mut redis::Connection) -> Vec<String> {
    let mut keys: Vec<String> = conn.keys::<_, Vec<String>>("*").unwrap();
    keys.retain(|k| !k.starts_with(rlock::surface::RECORD_PREFIX));
    keys.sort();
    keys
}

/// Waits until only the background-deleted release latches are gone and no key is left.
async fn no_keys_left(server: &Server) {
    let mut conn = server.conn();
    let empty = common::eventually(Duration::from_secs(5), || lock_keys(&mut conn).is_empty()).await;
    assert!(empty, "{:?}", lock_keys(&mut conn));
}

fn pttl(conn: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(conn).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_in_redissons_layout_and_a_writer_excludes_them() {
    let server = Server::start().unwrap();
    let (a, b) = (client(&server).await, client(&server).await);
    let name = "rw:layout";
    let (rwa, rwb) = (a.read_write_lock(name).unwrap(), b.read_write_lock(name).unwrap());
    let (r1, r2, w) = (a.new_owner(), b.new_owner(), b.new_owner());
    let mut conn = server.conn();

    rwa.read_lock().acquire(&r1).await.unwrap();
    rwa.read_lock().acquire(&r1).await.unwrap(); // re-entry
    assert!(rwb.read_lock().try_acquire(&r2, Duration::ZERO, None).await.unwrap(), "readers share");
    let h = hash(&mut conn, name);
    assert_eq!(h.get("mode").map(String::as_str), Some("read"));
    assert_eq!(h.get(r1.as_str()).map(String::as_str), Some("2"));
    assert_eq!(h.get(r2.as_str()).map(String::as_str), Some("1"));
    for n in 1..=2 {
        let key = format!("{{rw:layout}}:{}:rwlock_timeout:{n}", r1.as_str());
        assert!(pttl(&mut conn, &key) > 0, "{key} has its own lease");
    }
    assert!(pttl(&mut conn, name) > 0);
    assert!(rwa.read_lock().is_locked().await.unwrap());
    assert!(!rwa.write_lock().is_locked().await.unwrap());
    assert_eq!(rwa.read_lock().hold_count(&r1).await.unwrap(), 2);

    // A writer of another owner waits for every reader.
    assert!(!rwb.write_lock().try_acquire(&w, Duration::from_millis(50), None).await.unwrap());
    assert_eq!(rwa.read_lock().release(&r1).await.unwrap(), Released::StillHeld);
    assert!(!conn.exists::<_, bool>(format!("{{rw:layout}}:{}:rwlock_timeout:2", r1.as_str())).unwrap());
    assert_eq!(rwa.read_lock().release(&r1).await.unwrap(), Released::StillLocked, "r2 still reads");
    assert_eq!(rwb.read_lock().release(&r2).await.unwrap(), Released::Unlocked);
    assert!(!conn.exists::<_, bool>(name).unwrap());

    rwb.write_lock().acquire(&w).await.unwrap();
    let h = hash(&mut conn, name);
    assert_eq!(h.get("mode").map(String::as_str), Some("write"));
    assert_eq!(h.get(&format!("{}:write", w.as_str())).map(String::as_str), Some("1"));
    assert!(!rwa.read_lock().try_acquire(&r1, Duration::from_millis(50), None).await.unwrap());
    assert!(!rwa.write_lock().try_acquire(&r1, Duration::ZERO, None).await.unwrap());
    assert!(rwb.write_lock().is_held(&w).await.unwrap());
    assert!(!rwb.read_lock().is_held(&w).await.unwrap(), "the write hold is not a read hold");
    assert_eq!(rwb.write_lock().release(&w).await.unwrap(), Released::Unlocked);
    assert!(!conn.exists::<_, bool>(name).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_downgrades_and_an_upgrade_is_refused_without_changes() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let name = "rw:grade";
    let rw = c.read_write_lock(name).unwrap();
    let (w, other) = (c.new_owner(), c.new_owner());
    let mut conn = server.conn();

    rw.write_lock().acquire(&w).await.unwrap();
    rw.write_lock().acquire(&w).await.unwrap(); // re-entry
    rw.read_lock().acquire(&w).await.unwrap(); // downgrade: the writer reads too
    assert!(!rw.read_lock().try_acquire(&other, Duration::ZERO, None).await.unwrap());
    assert_eq!(rw.write_lock().release(&w).await.unwrap(), Released::StillHeld);
    assert_eq!(rw.write_lock().release(&w).await.unwrap(), Released::StillLocked);
    assert_eq!(hash(&mut conn, name).get("mode").map(String::as_str), Some("read"));
    // Now other readers may join.
    assert!(rw.read_lock().try_acquire(&other, Duration::ZERO, None).await.unwrap());
    rw.read_lock().release(&other).await.unwrap();

    // w holds only a read hold: asking for the write lock is an upgrade, refused at once.
    no_latches_left(&server).await;
    let before = hash(&mut conn, name);
    let keys_before = lock_keys(&mut conn);
    for wait in [None, Some(Duration::from_secs(5)), Some(Duration::ZERO)] {
        let e = match wait {
            None => rw.write_lock().acquire(&w).await.unwrap_err(),
            Some(d) => rw.write_lock().try_acquire(&w, d, None).await.unwrap_err(),
        };
        assert_eq!(e.kind(), ErrorKind::WouldDeadlock, "{e}");
        assert!(e.to_string().contains("release the read holds first"), "{e}");
    }
    assert_eq!(hash(&mut conn, name), before, "nothing changed");
    assert_eq!(lock_keys(&mut conn), keys_before);
    assert!(!server.pubsub_channels().iter().any(|c| c.contains("rwlock")), "no waiter left");

    assert_eq!(rw.read_lock().release(&w).await.unwrap(), Released::Unlocked);
    no_keys_left(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_releases_change_nothing() {
    let server = Server::start().unwrap();
    let c = client(&server).await;
    let rw = c.read_write_lock("rw:bad").unwrap();
    let (r, w) = (c.new_owner(), c.new_owner());
    let mut conn = server.conn();
    assert_eq!(rw.read_lock().release(&r).await.unwrap_err().kind(), ErrorKind::NotHeld);
    assert_eq!(rw.write_lock().release(&w).await.unwrap_err().kind(), ErrorKind::NotHeld);
    rw.read_lock().acquire(&r).await.unwrap();
    let before = hash(&mut conn, "rw:bad");
    // r reads: releasing its (absent) write hold, or w's read hold, is refused.
    assert_eq!(rw.write_lock().release(&r).await.unwrap_err().kind(), ErrorKind::NotHeld);
    assert_eq!(rw.read_lock().release(&w).await.unwrap_err().kind(), ErrorKind::NotHeld);
    assert_eq!(hash(&mut conn, "rw:bad"), before);
    assert!(c.read_write_lock("").is_err());
    // Force unlock of the other side changes nothing either.
    assert!(!rw.write_lock().force_unlock().await.unwrap());
    assert_eq!(hash(&mut conn, "rw:bad"), before);
    rw.read_lock().release(&r).await.unwrap();
    no_keys_left(&server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_release_wakes_a_writer_and_a_write_release_wakes_every_reader() {
    let server = Server::start().unwrap();
    let (a, b) = (client(&server).await, client(&server).await);
    let name = "rw:wake";
    let channel = "redisson_rwlock:{rw:wake}";
    let (rwa, rwb) = (a.read_write_lock(name).unwrap(), b.read_write_lock(name).unwrap());

    let reader = a.new_owner();
    rwa.read_lock().acquire(&reader).await.unwrap();
    let writer = b.new_owner();
    let waiting = {
        let (l, o) = (rwb.write_lock(), writer.clone());
        tokio::spawn(async move { l.acquire(&o).await })
    };
    assert!(common::eventually(Duration::from_secs(5), || server.numsub(channel) == 1).await);
    rwa.read_lock().release(&reader).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), waiting).await.unwrap().unwrap().unwrap();

    // Three readers on the other client wait for the writer; one write release wakes them all.
    let spawned = server.calls("evalsha");
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (l, o) = (rwa.read_lock(), a.new_owner());
            tokio::spawn(async move {
                l.acquire(&o).await?;
                Ok::<_, rlock::Error>((l, o))
            })
        })
        .collect();
    assert!(common::eventually(Duration::from_secs(5), || server.numsub(channel) == 1).await);
    // Each reader tries once, subscribes, tries again and sleeps: six calls, then quiet.
    assert!(common::eventually(Duration::from_secs(5), || server.calls("evalsha") - spawned == 6).await);
    let before = server.calls("evalsha");
    assert_eq!(rwb.write_lock().release(&writer).await.unwrap(), Released::Unlocked);
    for r in readers {
        let (l, o) = tokio::time::timeout(Duration::from_secs(5), r).await.unwrap().unwrap().unwrap();
        assert!(l.is_held(&o).await.unwrap());
        l.release(&o).await.unwrap();
    }
    // Woken by the message, not by a lease-bound poll: one acquire each plus the releases.
    assert!(server.calls("evalsha") - before <= 7, "{}", server.calls("evalsha") - before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_renews_our_read_holds_only() {
    let server = Server::start().unwrap();
    let c = Client::connect(
        &server.url(),
        ClientOptions::default().with_watchdog_timeout(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let name = "rw:renew";
    let rw = c.read_write_lock(name).unwrap();
    let (r, w) = (c.new_owner(), c.new_owner());
    let mut conn = server.conn();
    rw.read_lock().acquire(&r).await.unwrap();
    rw.read_lock().acquire(&r).await.unwrap();
    // A reader of some other client (as Java would write it), with a 1.5 s lease.
    let foreign = "0b7e1d0e-0000-4000-8000-000000000000:7";
    let foreign_key = format!("{{rw:renew}}:{foreign}:rwlock_timeout:1");
    let _: () = conn.hset(name, foreign, 1).unwrap();
    let _: () = redis::cmd("SET").arg(&foreign_key).arg(1).arg("PX").arg(1500).query(&mut conn).unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(!conn.exists::<_, bool>(&foreign_key).unwrap(), "another client's read key is not renewed");
    for n in 1..=2 {
        let key = format!("{{rw:renew}}:{}:rwlock_timeout:{n}", r.as_str());
        assert!(pttl(&mut conn, &key) > 0, "our read hold {n} is renewed");
    }
    assert!(rw.read_lock().is_held(&r).await.unwrap());
    let _: () = conn.hdel(name, foreign).unwrap();
    // The write side: held across several leases too, then released.
    rw.read_lock().release(&r).await.unwrap();
    rw.read_lock().release(&r).await.unwrap();
    rw.write_lock().acquire(&w).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(rw.write_lock().is_held(&w).await.unwrap());
    assert_eq!(rw.write_lock().release(&w).await.unwrap(), Released::Unlocked);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_unlock_of_each_side_reports_the_loss() {
    let server = Server::start().unwrap();
    let fast = ClientOptions::default().with_watchdog_timeout(Duration::from_secs(1));
    let (a, b) = (Client::connect(&server.url(), fast).await.unwrap(), client(&server).await);
    let name = "rw:force";
    let (rwa, rwb) = (a.read_write_lock(name).unwrap(), b.read_write_lock(name).unwrap());
    let events = Arc::new(Mutex::new(Vec::new()));
    let e = events.clone();
    let _id = a.on_lost(rlock::LostFilter::all(), move |ev| {
        e.lock().unwrap().push((ev.kind, ev.reason));
    });
    // A listener of the write side hears only of write holds.
    let write_losses = Arc::new(Mutex::new(0));
    let wl = write_losses.clone();
    rwa.write_lock().on_lost(None, move |_| *wl.lock().unwrap() += 1);
    let r = a.new_owner();
    let ra = rwa.read_lock();
    ra.acquire(&r).await.unwrap();
    assert!(rwb.read_lock().force_unlock().await.unwrap());
    assert!(common::eventually(Duration::from_secs(10), || !events.lock().unwrap().is_empty()).await);
    assert_eq!(events.lock().unwrap()[0], ("read", LostReason::Gone));
    assert_eq!(*write_losses.lock().unwrap(), 0);
    assert_eq!(ra.release(&r).await.unwrap_err().kind(), ErrorKind::Lost);

    let w = a.new_owner();
    rwa.write_lock().acquire(&w).await.unwrap();
    assert!(!rwb.read_lock().force_unlock().await.unwrap(), "the read side does not unlock a writer");
    assert!(rwb.write_lock().force_unlock().await.unwrap());
    assert!(common::eventually(Duration::from_secs(10), || events.lock().unwrap().len() == 2).await);
    assert_eq!(events.lock().unwrap()[1], ("write", LostReason::Gone));
    assert!(common::eventually(Duration::from_secs(5), || *write_losses.lock().unwrap() == 1).await);
}
