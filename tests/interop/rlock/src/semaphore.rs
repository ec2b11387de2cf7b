//! The semaphores (`RSemaphore`, `RPermitExpirableSemaphore`): the `semaphore` and
//! `permit-semaphore` scenarios.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::AsyncCommands;
use rlock::{Client, ClientOptions, ErrorKind, PermitExpirableSemaphore};

use crate::ctx::Ctx;
use crate::{check, now_us, redis_url, ACQUIRE_BOUND, R, WAKE_BOUND_US, WAKE_ROUNDS};

/// Permits of the shared semaphore, and acquires per side (split over 4 owners / threads).
const SEM_PERMITS: u64 = 5;
const SEM_PER_SIDE: usize = 1000;

/// rlock sets up the semaphore `interop:sem` with 5 permits; 4 rlock tasks and 4 Redisson
/// threads then take a permit 250 times each. Inside, each holder increments the shared holders
/// counter `interop:sem:counter` (INCR) and counts a violation when it is above 5, then
/// decrements it. No violation; every permit is back at the end; both sides saw more than one
/// holder at once (the permits were really shared).
pub(crate) async fn semaphore(ctx: &Ctx) -> R<()> {
    const NAME: &str = "interop:sem";
    let sem = ctx.client.semaphore(NAME)?;
    check(sem.try_set_permits(SEM_PERMITS, None).await?, "the semaphore existed already")?;
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (sem, mut data) = (sem.clone(), ctx.data.clone());
        tasks.push(tokio::spawn(async move {
            let mut most = 0i64;
            for _ in 0..SEM_PER_SIDE / 4 {
                check(sem.try_acquire(1, ACQUIRE_BOUND).await?, "no permit within 30 s")?;
                let holders: i64 = data.incr(format!("{NAME}:counter"), 1).await?;
                most = most.max(holders);
                if holders > SEM_PERMITS as i64 {
                    let _: i64 = data.incr(format!("{NAME}:violations"), 1).await?;
                }
                let _: i64 = data.decr(format!("{NAME}:counter"), 1).await?;
                sem.release(1).await?;
            }
            R::Ok(most)
        }));
    }
    let mut most = 0;
    for t in tasks {
        most = most.max(t.await??);
    }
    let java_most: i64 = ctx.recv("done").await?.parse()?;
    ctx.send("done").await?;
    let mut data = ctx.data.clone();
    let violations: Option<i64> = data.get(format!("{NAME}:violations")).await?;
    check(violations.is_none(), format!("{violations:?} times more holders than the {SEM_PERMITS} permits"))?;
    let holders: Option<i64> = data.get(format!("{NAME}:counter")).await?;
    check(holders == Some(0), format!("the holders counter ends at {holders:?}, expected 0"))?;
    check(sem.available_permits().await? == SEM_PERMITS as i64, "not every permit came back")?;
    check(most.max(java_most) > 1, "never more than one holder: the permits were not shared")?;
    // Nothing of the semaphore is left for the key check (its count is data, not a hold), once
    // the Java side has checked it too.
    ctx.recv("checked").await?;
    let _: i64 = data.del(NAME).await?;
    println!(
        "rust: semaphore: {} acquires of {SEM_PERMITS} permits, 0 violations, at most {} holders at once \
         (rlock saw {most}, Redisson {java_most}), every permit back",
        2 * SEM_PER_SIDE,
        most.max(java_most)
    );
    Ok(())
}

/// The channel semaphore waiters (plain and permit-expirable; Java's and rlock's) sleep on.
fn semaphore_channel(name: &str) -> String {
    format!("redisson_sc:{{{name}}}")
}

/// A permit id as both sides show it: 32 lowercase hex characters.
fn is_permit_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Fails unless the permit-expirable semaphore has `available` free and `acquired` held
/// permits (read as Redisson reads them: expired permits are reclaimed first).
async fn check_permits(sem: &PermitExpirableSemaphore, available: i64, acquired: i64, when: &str) -> R<()> {
    let got = (sem.available_permits().await?, sem.acquired_permits().await?);
    check(
        got == (available, acquired),
        format!(
            "{when}: {} has {} free and {} held permits, expected {available} and {acquired}",
            sem.name(),
            got.0,
            got.1
        ),
    )
}

/// Fails unless releasing permit `id` gives NotHeld (`what` names the permit in messages).
async fn check_release_fails(sem: &PermitExpirableSemaphore, id: &str, what: &str) -> R<()> {
    match sem.release(id).await {
        Err(e) if e.kind() == ErrorKind::NotHeld => Ok(()),
        other => Err(format!("releasing {what} {id} gave {other:?}, expected NotHeld").into()),
    }
}

/// Splits a message value `"<id> <number>"`.
fn id_and_number(value: &str) -> R<(String, i64)> {
    let (id, n) = value.split_once(' ').ok_or_else(|| format!("bad message value '{value}'"))?;
    Ok((id.to_owned(), n.parse()?))
}

/// Lease of the permits taken for the cross-release and wake-up parts of [`permit_semaphore`]:
/// as long as the lock scenarios' leases, so only a message can explain a fast wake-up.
const PES_LEASE: Duration = Duration::from_secs(30);
/// The short lease of the expiry part of [`permit_semaphore`].
const PES_SHORT_MS: u64 = 300;
/// A waiter must hold a permit whose short lease ran out within this long after it was taken.
const PES_RECLAIM_BOUND_US: i64 = 1_000_000;

/// The permit-expirable semaphore across sides (rlock sets up each semaphore; the counts are
/// checked on both sides after every step):
/// 1. Ids cross over: rlock releases a permit Redisson took, Redisson one rlock took; a second
///    release of either fails on both sides.
/// 2. rlock's release wakes a Redisson waiter, and Redisson's release an rlock waiter, within
///    100 ms (5 measured rounds each after a warm-up; the holder's lease is 30 s or none).
/// 3. A permit taken with a 300 ms lease by one side is reclaimed by the other side's waiter
///    once it expired (not before, within 1 s), both ways; a release of the expired id fails
///    on both sides. An expired permit nobody reclaimed yet is given back exactly once by the
///    failing release.
/// 4. An rlock permit without a lease, on a client with a 1 s watchdog, stays held for 3 s
///    (Redisson's 3 s try fails; its lease reads stay in (0, 1000] ms); after that client is
///    closed without releasing, Redisson gets the permit within 1.5 s.
pub(crate) async fn permit_semaphore(ctx: &Ctx) -> R<()> {
    const NAME: &str = "interop:pes";
    // Every semaphore this scenario makes: their counts are data, deleted at the end.
    let mut names = vec![NAME.to_owned()];

    // Part 1: ids released by the other side.
    let sem = ctx.client.permit_expirable_semaphore(NAME)?;
    check(sem.try_set_permits(2, None).await?, "the semaphore existed already")?;
    ctx.send("ready").await?;
    let java_id = ctx.recv("acquired").await?;
    check(is_permit_id(&java_id), format!("Redisson's permit id '{java_id}' is not 32 hex characters"))?;
    check_permits(&sem, 1, 1, "after Redisson's acquire").await?;
    sem.release(&java_id)
        .await
        .map_err(|e| format!("rlock could not release Redisson's permit {java_id}: {e}"))?;
    check_permits(&sem, 2, 0, "after rlock released Redisson's permit").await?;
    let mine = sem.acquire(Some(PES_LEASE)).await?.keep();
    check(is_permit_id(&mine), format!("rlock's permit id '{mine}' is not 32 hex characters"))?;
    check_permits(&sem, 1, 1, "after rlock's acquire").await?;
    ctx.send(&format!("acquired {mine}")).await?;
    ctx.recv("released").await?;
    check_permits(&sem, 2, 0, "after Redisson released rlock's permit").await?;
    check_release_fails(&sem, &mine, "rlock's permit, which Redisson released,").await?;
    check_release_fails(&sem, &java_id, "Redisson's permit, which rlock released,").await?;
    check_permits(&sem, 2, 0, "after releasing released permits").await?;
    println!("rust: permit-semaphore: each side released the other's permit id; second releases failed");

    // Part 2: wake-ups. A fresh semaphore per round, so a subscription left from an earlier
    // round cannot count.
    for round in 0..=WAKE_ROUNDS {
        let name = format!("{NAME}:to-java:{round}");
        names.push(name.clone());
        let s = ctx.client.permit_expirable_semaphore(&name)?;
        check(s.try_set_permits(1, None).await?, format!("{name} existed already"))?;
        // Without a lease: the watchdog's 30 s lease, renewed; Java waits for the message.
        let id = s.acquire(None).await?.keep();
        ctx.send("held").await?;
        ctx.await_subscriber(&semaphore_channel(&name)).await?;
        let t0 = now_us();
        s.release(&id).await?;
        ctx.send(&format!("released {t0}")).await?;
        ctx.recv("unlocked").await?;
        check_permits(&s, 1, 0, "after the Redisson waiter released").await?;
    }
    let mut latencies = Vec::new();
    for round in 0..=WAKE_ROUNDS {
        let name = format!("{NAME}:to-rust:{round}");
        names.push(name.clone());
        let s = ctx.client.permit_expirable_semaphore(&name)?;
        check(s.try_set_permits(1, None).await?, format!("{name} existed already"))?;
        ctx.send("ready").await?;
        // Redisson holds the only permit without a lease (it never expires): only its
        // release's message can wake rlock's waiter.
        ctx.recv("held").await?;
        check_permits(&s, 0, 1, "while Redisson holds the only permit").await?;
        let p = s
            .try_acquire(ACQUIRE_BOUND, Some(PES_LEASE))
            .await?
            .ok_or("the rlock waiter got no permit within 30 s")?;
        let t1 = now_us();
        let t0: i64 = ctx.recv("released").await?.parse()?;
        p.release().await?;
        check_permits(&s, 1, 0, "after the rlock waiter released").await?;
        ctx.send("unlocked").await?;
        if round > 0 {
            latencies.push(t1 - t0);
        }
    }
    let worst = latencies.iter().copied().max().unwrap_or(i64::MAX);
    check(
        worst < WAKE_BOUND_US,
        format!("an rlock permit waiter took {worst} us to wake, more than 100 ms"),
    )?;
    println!(
        "rust: permit-semaphore: rlock waiter held a permit {latencies:?} us after Redisson's release began"
    );

    // Part 3: expiry.
    let name = format!("{NAME}:expiry");
    names.push(name.clone());
    let s = ctx.client.permit_expirable_semaphore(&name)?;
    check(s.try_set_permits(1, None).await?, format!("{name} existed already"))?;
    let short = Some(Duration::from_millis(PES_SHORT_MS));
    // 3a: rlock's permit expires; Redisson's waiter takes it (Java measures).
    let t_before = now_us();
    let mine = s.acquire(short).await?.keep();
    ctx.send(&format!("held {mine} {t_before}")).await?;
    let (java_id, _) = id_and_number(&ctx.recv("reclaimed").await?)?;
    check_release_fails(&s, &mine, "rlock's expired permit").await?;
    check_permits(&s, 0, 1, "after Redisson's waiter took rlock's expired permit").await?;
    s.release(&java_id)
        .await
        .map_err(|e| format!("rlock could not release Redisson's permit {java_id}: {e}"))?;
    check_permits(&s, 1, 0, "after rlock released Redisson's permit").await?;
    ctx.send("released").await?;
    // 3b: Redisson's permit expires; rlock's waiter takes it.
    let (java_id, t_before) = id_and_number(&ctx.recv("held").await?)?;
    let p = s
        .try_acquire(Duration::from_secs(10), Some(PES_LEASE))
        .await?
        .ok_or("rlock's waiter did not get Redisson's expired permit within 10 s")?;
    let reclaim = now_us() - t_before;
    let mine = p.keep();
    check(
        reclaim >= PES_SHORT_MS as i64 * 1000 - 1000,
        format!(
            "rlock took Redisson's permit {reclaim} us after it was taken, before its 300 ms lease ran out"
        ),
    )?;
    check(
        reclaim < PES_RECLAIM_BOUND_US,
        format!("rlock took Redisson's 300 ms permit only {reclaim} us after it was taken"),
    )?;
    check_release_fails(&s, &java_id, "Redisson's expired permit").await?;
    check_permits(&s, 0, 1, "after rlock's waiter took Redisson's expired permit").await?;
    ctx.send(&format!("reclaimed {mine} {reclaim}")).await?;
    ctx.recv("released").await?;
    check_permits(&s, 1, 0, "after Redisson released rlock's permit").await?;
    println!(
        "rust: permit-semaphore: rlock's waiter took Redisson's expired 300 ms permit {reclaim} us after it was \
         taken; releases of the expired id failed on both sides"
    );
    // 3c: an expired permit nobody reclaimed: the other side's release fails and gives it back
    // exactly once. Java waits past the lease first (no event tells when a lease ran out).
    let t_before = now_us();
    let mine = s.acquire(short).await?.keep();
    ctx.send(&format!("held {mine} {t_before}")).await?;
    ctx.recv("checked").await?;
    check_permits(&s, 1, 0, "after Redisson's release of rlock's expired permit").await?;
    ctx.send("seen").await?;
    let (java_id, t_before) = id_and_number(&ctx.recv("held").await?)?;
    let expired = t_before + (PES_SHORT_MS as i64 + 100) * 1000;
    tokio::time::sleep(Duration::from_micros((expired - now_us()).max(0) as u64)).await;
    check_release_fails(&s, &java_id, "Redisson's expired permit").await?;
    check_permits(&s, 1, 0, "after rlock's release of Redisson's expired permit").await?;
    ctx.send("checked").await?;

    // Part 4: a watchdog-renewed rlock permit outlives its 1 s leases and comes back when its
    // client is gone.
    let name = format!("{NAME}:watchdog");
    names.push(name.clone());
    let short_client =
        Client::connect(&redis_url(), ClientOptions::default().with_watchdog_timeout(Duration::from_secs(1)))
            .await?;
    let lost = Arc::new(AtomicBool::new(false));
    let flag = lost.clone();
    short_client.on_lost(rlock::LostFilter::all(), move |_| flag.store(true, Ordering::SeqCst));
    let s = short_client.permit_expirable_semaphore(&name)?;
    check(s.try_set_permits(1, None).await?, format!("{name} existed already"))?;
    let mine = s.acquire(None).await?.keep();
    let held_at = Instant::now();
    ctx.send(&format!("held {mine}")).await?;
    ctx.recv("checked").await?;
    check(held_at.elapsed() >= Duration::from_secs(3), "Redisson stopped waiting too early")?;
    check(!s.is_lost(&mine) && !lost.load(Ordering::SeqCst), "rlock's watchdog reported the permit lost")?;
    let view = ctx.client.permit_expirable_semaphore(&name)?;
    check_permits(&view, 0, 1, "after 3 s of 1 s leases").await?;
    let t_close = now_us();
    short_client.close();
    ctx.send(&format!("closed {t_close}")).await?;
    let back: i64 = ctx.recv("done").await?.parse()?;
    check_permits(&view, 1, 0, "after Redisson released the permit it got back").await?;
    println!(
        "rust: permit-semaphore: a watchdog permit (1 s leases) stayed held 3 s; Redisson got it back {back} us \
         after its client closed"
    );

    // The counts are data, not holds: nothing of the semaphores is left for the key check.
    let mut data = ctx.data.clone();
    for name in names {
        let _: i64 = data.del(&name).await?;
    }
    Ok(())
}
