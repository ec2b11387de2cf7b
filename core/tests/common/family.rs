//! One run of the steps of every primitive (the reentrant, fenced, fair and spin locks, both
//! sides of the read-write lock, both semaphores, the count-down latch), a pub/sub wake-up and
//! a hold the watchdog renews, with a caller's action before each step: for the tests that show
//! what a server or a user is allowed is enough for all of them (script eviction, ACL rules).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use rlock::{Client, Released};

/// Runs every step on `c` (made with a 1 s watchdog timeout, so that the 3 s hold is renewed),
/// under names that start with `prefix`, calling `before()` before each step. Panics at the
/// first step that fails, naming it.
pub async fn every_step(c: &Client, prefix: &str, mut before: impl FnMut()) {
    let name = |n: &str| format!("{prefix}{n}");
    let me = c.new_owner();

    // The reentrant lock, renewed by the watchdog through 3 s of `before()`.
    let lock = c.lock(&name("lock")).unwrap();
    before();
    lock.acquire(&me).await.expect("lock: acquire");
    for _ in 0..3 {
        before();
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    assert!(!lock.is_lost(&me), "lock: the hold was lost while the watchdog renewed it");
    before();
    assert!(lock.is_held(&me).await.expect("lock: is_held"));

    // A waiter (another owner) wakes by the release's message.
    let other = c.new_owner();
    let (l, o) = (lock.clone(), other.clone());
    let waiter = tokio::spawn(async move { l.try_acquire(&o, Duration::from_secs(20), None).await });
    before();
    // The waiter is waiting once it joined the lock's channel (the event, not a sleep).
    assert!(
        super::eventually(Duration::from_secs(10), || c.waited_channels() > 0).await,
        "lock: no waiter waits"
    );
    assert!(!waiter.is_finished(), "lock: the waiter did not wait for the holder");
    assert_eq!(lock.release(&me).await.expect("lock: release"), Released::Unlocked);
    assert!(waiter.await.unwrap().expect("lock: the waiter's acquire"), "lock: the waiter did not get it");
    before();
    assert_eq!(lock.release(&other).await.expect("lock: the waiter's release"), Released::Unlocked);

    // The fenced lock.
    let fenced = c.fenced_lock(&name("fenced")).unwrap();
    before();
    let token = fenced.acquire(&me).await.expect("fenced lock: acquire");
    before();
    let second = fenced.try_acquire(&other, Duration::ZERO, None).await.expect("fenced lock: try_acquire");
    assert_eq!(second, None, "fenced lock: a second owner took a held lock");
    assert_eq!(fenced.token_of(&me), Some(token));
    before();
    fenced.release(&me).await.expect("fenced lock: release");
    // The fair and spin locks, and both sides of the read-write lock (a read hold, then the
    // write hold).
    let rw = c.read_write_lock(&name("rw")).unwrap();
    for (what, lock) in [
        ("fair lock", c.fair_lock(&name("fair")).unwrap()),
        ("spin lock", c.spin_lock(&name("spin")).unwrap()),
        ("read lock", rw.read_lock()),
        ("write lock", rw.write_lock()),
    ] {
        before();
        lock.acquire(&me).await.unwrap_or_else(|e| panic!("{what}: acquire: {e}"));
        before();
        let released = lock.release(&me).await.unwrap_or_else(|e| panic!("{what}: release: {e}"));
        assert_eq!(released, Released::Unlocked, "{what}");
    }

    // Both semaphores.
    let sem = c.semaphore(&name("sem")).unwrap();
    before();
    assert!(sem.try_set_permits(2, None).await.expect("semaphore: try_set_permits"));
    before();
    sem.acquire(2).await.expect("semaphore: acquire");
    before();
    assert_eq!(sem.available_permits().await.expect("semaphore: available_permits"), 0);
    before();
    sem.release(2).await.expect("semaphore: release");
    let pes = c.permit_expirable_semaphore(&name("pes")).unwrap();
    before();
    assert!(pes.try_set_permits(1, None).await.expect("permit semaphore: try_set_permits"));
    before();
    let permit = pes.acquire(None).await.expect("permit semaphore: acquire");
    before();
    pes.update_lease(permit.id(), Some(Duration::from_secs(30)))
        .await
        .expect("permit semaphore: update_lease");
    before();
    permit.release().await.expect("permit semaphore: release");
    assert_eq!(pes.available_permits().await.expect("permit semaphore: available_permits"), 1);

    // The count-down latch opens.
    let latch = c.count_down_latch(&name("latch")).unwrap();
    before();
    assert!(latch.try_set_count(1).await.expect("latch: try_set_count"));
    before();
    latch.count_down().await.expect("latch: count_down");
    before();
    assert!(latch.wait(Some(Duration::from_secs(5))).await.expect("latch: wait"));
}
