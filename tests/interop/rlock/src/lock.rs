//! The reentrant lock (`RLock`): `mutex`, `wake-to-java`, `wake-to-rust`, `holds`, `force`
//! and `watchdog`, and the wake-up rounds the read-write lock's scenario reuses.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::AsyncCommands;
use rlock::{ErrorKind, Lock, Released, Ttl};

use crate::ctx::{channel, Conn, Ctx};
use crate::{check, now_us, ACQUIRE_BOUND, FORCE_WAKE_BOUND_US, R, WAKE_BOUND_US, WAKE_ROUNDS};

/// 4 rlock owners and 4 Redisson threads run 200 critical sections each on two shared names.
/// Each critical section sets a marker with SET NX (finding it set means two holders overlap),
/// increments a counter with GET then SET, and notes whether the previous holder was the other
/// side. The counters must end exact, with no overlap and some hand-offs across sides.
pub(crate) async fn mutex(ctx: &Ctx) -> R<()> {
    const NAMES: [&str; 2] = ["interop:mutex:a", "interop:mutex:b"];
    const PER_OWNER: usize = 200;
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let mut tasks = Vec::new();
    for t in 0..4 {
        let owner = ctx.client.new_owner();
        let locks = [ctx.client.lock(NAMES[0])?, ctx.client.lock(NAMES[1])?];
        let data = ctx.data.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..PER_OWNER {
                let lock = &locks[(i + t) % 2];
                tokio::time::timeout(ACQUIRE_BOUND, lock.acquire(&owner)).await??;
                critical_section(data.clone(), lock.name(), "rust", "interop:mutex").await?;
                check(lock.release(&owner).await? == Released::Unlocked, "release should unlock")?;
            }
            R::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    ctx.recv("done").await?;
    let mut data = ctx.data.clone();
    let violations: Option<i64> = data.get("interop:mutex:violations").await?;
    check(violations.is_none(), format!("{violations:?} critical sections overlapped"))?;
    for name in NAMES {
        let n: Option<i64> = data.get(format!("{name}:counter")).await?;
        // 8 workers, half their sections on each name.
        check(n == Some(800), format!("{name}:counter is {n:?}, expected 800"))?;
        let exists: bool = data.exists(name).await?;
        check(!exists, format!("{name} is still locked after everyone released"))?;
    }
    let handoffs: Option<i64> = data.get("interop:mutex:handoffs").await?;
    check(handoffs.unwrap_or(0) > 0, "the lock never passed between Redisson and rlock")?;
    // rlock's holder record lived beside Redisson the whole time (written at the first acquire,
    // expiring a watchdog timeout after the last release); Redisson ignored it.
    let record = rlock::surface::record_key(&ctx.client.id().hyphenated().to_string());
    let json: Option<String> = data.get(&record).await?;
    let parsed: Option<rlock::HolderRecord> = json.as_deref().and_then(|j| serde_json::from_str(j).ok());
    check(
        parsed.is_some_and(|r| r.pid == std::process::id()),
        format!("holder record {record} missing or not ours: {json:?}"),
    )?;
    println!(
        "rust: mutex: 1600 critical sections, counters exact, 0 overlaps, {} cross-side hand-offs, holder record beside Redisson",
        handoffs.unwrap_or(0)
    );
    Ok(())
}

/// One shared name, 2 rlock owners and 2 Redisson threads, 100 critical sections each (the
/// Java side runs `Scenario.exclusionRound`), each owner's lock made by `lock_of`: the counter
/// must end at 400 with no overlap, the lock free, and some hand-offs across sides, whose count
/// it returns. Used by the lock kinds whose scenario starts with it (spin, non-reentrant).
pub(crate) async fn exclusion_round(
    ctx: &Ctx,
    name: &str,
    lock_of: impl Fn() -> rlock::Result<Lock>,
) -> R<i64> {
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let (owner, lock, data, name) =
            (ctx.client.new_owner(), lock_of()?, ctx.data.clone(), name.to_owned());
        tasks.push(tokio::spawn(async move {
            for _ in 0..100 {
                tokio::time::timeout(ACQUIRE_BOUND, lock.acquire(&owner)).await??;
                critical_section(data.clone(), &name, "rust", &name).await?;
                check(lock.release(&owner).await? == Released::Unlocked, "release should unlock")?;
            }
            R::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    ctx.recv("done").await?;
    let mut data = ctx.data.clone();
    let violations: Option<i64> = data.get(format!("{name}:violations")).await?;
    check(violations.is_none(), format!("{violations:?} critical sections overlapped"))?;
    let n: Option<i64> = data.get(format!("{name}:counter")).await?;
    check(n == Some(400), format!("{name}:counter is {n:?}, expected 400"))?;
    let exists: bool = data.exists(name).await?;
    check(!exists, format!("{name} is still locked after everyone released"))?;
    let handoffs: Option<i64> = data.get(format!("{name}:handoffs")).await?;
    check(handoffs.unwrap_or(0) > 0, format!("{name} never passed between Redisson and rlock"))?;
    Ok(handoffs.unwrap_or(0))
}

/// One critical section of [`mutex`] (and of [`exclusion_round`]), on the data connection: the
/// overlaps and cross-side hand-offs are counted in `<tally>:violations` and `<tally>:handoffs`.
pub(crate) async fn critical_section(mut data: Conn, name: &str, side: &str, tally: &str) -> R<()> {
    let marker = format!("{name}:marker");
    let set: bool = redis::cmd("SET")
        .arg(&marker)
        .arg(side)
        .arg("NX")
        .query_async::<Option<String>>(&mut data)
        .await?
        .is_some();
    if !set {
        let _: i64 = data.incr(format!("{tally}:violations"), 1).await?;
    }
    let counter = format!("{name}:counter");
    let n: Option<i64> = data.get(&counter).await?;
    let () = data.set(&counter, n.unwrap_or(0) + 1).await?;
    let prev: Option<String> = data.getset(format!("{name}:last"), side).await?;
    if prev.is_some_and(|p| p != side) {
        let _: i64 = data.incr(format!("{tally}:handoffs"), 1).await?;
    }
    if set {
        let _: i64 = data.del(&marker).await?;
    }
    Ok(())
}

/// rlock holds (30 s lease); a Redisson thread waits; rlock releases once Redisson is
/// subscribed. Java measures how long after the release its waiter held the lock.
pub(crate) async fn wake_to_java(ctx: &Ctx) -> R<()> {
    // A fresh name per round, so a subscription left from an earlier round cannot count.
    hold_and_wake_java(ctx, |round| {
        let lock = ctx.client.lock(&format!("interop:wake-to-java:{round}"))?;
        let channel = channel(lock.name());
        Ok((lock, channel))
    })
    .await
}

/// The holder's side of a wake-up measured by Java, for `WAKE_ROUNDS` + 1 rounds: holds
/// `lock_of(round)` (a lock and the channel its waiters sleep on), waits until the Redisson
/// waiter is subscribed, stamps the time and releases.
pub(crate) async fn hold_and_wake_java(ctx: &Ctx, lock_of: impl Fn(usize) -> R<(Lock, String)>) -> R<()> {
    let me = ctx.client.new_owner();
    for round in 0..=WAKE_ROUNDS {
        let (lock, channel) = lock_of(round)?;
        lock.acquire(&me).await?;
        ctx.send("held").await?;
        ctx.await_subscriber(&channel).await?;
        let t0 = now_us();
        check(lock.release(&me).await? == Released::Unlocked, "release should unlock")?;
        ctx.send(&format!("released {t0}")).await?;
        ctx.recv("unlocked").await?;
    }
    Ok(())
}

/// The waiter's side of a wake-up from a Redisson holder (30 s lease), for `WAKE_ROUNDS` + 1
/// rounds on `lock_of(round)`: the waiter must hold the lock within 100 ms of the start of
/// Redisson's release. `what` names the waiter in messages. The measured latencies (us; the
/// first round warms up).
pub(crate) async fn wait_for_java(ctx: &Ctx, what: &str, lock_of: impl Fn(usize) -> R<Lock>) -> R<Vec<i64>> {
    let me = ctx.client.new_owner();
    let mut latencies = Vec::new();
    for round in 0..=WAKE_ROUNDS {
        let lock = lock_of(round)?;
        ctx.recv("held").await?;
        let ttl = ctx.ttl_ms(&lock).await?;
        check(
            ttl > 20_000,
            format!("Redisson's hold should carry its 30 s watchdog lease, TTL is {ttl} ms"),
        )?;
        tokio::time::timeout(ACQUIRE_BOUND, lock.acquire(&me)).await??;
        let t1 = now_us();
        let t0: i64 = ctx.recv("released").await?.parse()?;
        check(lock.release(&me).await? == Released::Unlocked, "release should unlock")?;
        ctx.send("unlocked").await?;
        if round > 0 {
            latencies.push(t1 - t0);
        }
    }
    let worst = latencies.iter().copied().max().unwrap_or(i64::MAX);
    check(worst < WAKE_BOUND_US, format!("{what} took {worst} us to wake, more than 100 ms"))?;
    Ok(latencies)
}

/// Redisson holds (30 s lease); an rlock owner waits; Redisson releases once rlock is
/// subscribed. rlock's waiter must hold the lock within 100 ms of the release.
pub(crate) async fn wake_to_rust(ctx: &Ctx) -> R<()> {
    let latencies = wait_for_java(ctx, "an rlock waiter", |round| {
        Ok(ctx.client.lock(&format!("interop:wake-to-rust:{round}"))?)
    })
    .await?;
    println!("rust: wake-to-rust: rlock waiter held the lock {latencies:?} us after Redisson's unlock began");
    Ok(())
}

/// Holds never mix, and both sides read the same hold counts and TTLs.
pub(crate) async fn holds(ctx: &Ctx) -> R<()> {
    let name = "interop:holds";
    let lock = ctx.client.lock(name)?;

    // Part 1: a Redisson thread holds the lock twice.
    let msg = ctx.recv("held").await?;
    let (thread, java_ttl) = msg.split_once(' ').ok_or("bad 'held' message")?;
    let java_thread: u64 = thread.parse()?;
    let java_ttl: i64 = java_ttl.parse()?;
    // The owner with the same integer as the Java thread differs only by client UUID.
    let twin = ctx.client.owner(java_thread);
    let other = ctx.client.new_owner();
    for owner in [&twin, &other] {
        check(!lock.is_held(owner).await?, format!("{owner} reads as holding Redisson's hold"))?;
        check(lock.hold_count(owner).await? == 0, format!("{owner} has a hold count on Redisson's hold"))?;
        check(
            !lock.try_acquire(owner, Duration::ZERO, None).await?,
            format!("{owner} re-entered Redisson's hold"),
        )?;
        match lock.release(owner).await {
            Err(e) if e.kind() == ErrorKind::NotHeld => {}
            other => {
                return Err(
                    format!("releasing Redisson's hold as {owner} gave {other:?}, expected NotHeld").into()
                )
            }
        }
    }
    check(lock.is_locked().await?, "rlock does not see Redisson's hold")?;
    let fields = ctx.fields(name).await?;
    check(
        fields.len() == 1
            && fields[0].0.ends_with(&format!(":{java_thread}"))
            && fields[0].0 != twin.as_str()
            && fields[0].1 == "2",
        format!("the lock hash should be Redisson's single field with count 2, it is {fields:?}"),
    )?;
    let ttl = ctx.ttl_ms(&lock).await?;
    check(
        (ttl - java_ttl).abs() <= 1_500 && ttl <= 30_000,
        format!("rlock reads TTL {ttl} ms, Redisson read {java_ttl} ms"),
    )?;
    ctx.send(&format!("checked {ttl}")).await?;

    // Part 2: rlock holds twice, as the owner whose integer equals the Java thread id.
    ctx.recv("free").await?;
    check(!lock.is_locked().await?, "Redisson's full release left the lock held")?;
    check(lock.remaining_ttl().await? == Ttl::Absent, "a free lock has a TTL")?;
    lock.acquire(&twin).await?;
    lock.acquire(&twin).await?;
    check(lock.hold_count(&twin).await? == 2, "rlock should hold twice")?;
    let ttl = ctx.ttl_ms(&lock).await?;
    ctx.send(&format!("held {ttl}")).await?;
    ctx.recv("checked").await?;
    check(lock.hold_count(&twin).await? == 2, "Redisson's attempts changed rlock's hold count")?;
    check(lock.release(&twin).await? == Released::StillHeld, "first release should keep one hold")?;
    check(lock.hold_count(&twin).await? == 1, "hold count should be 1 after one release")?;
    ctx.send("one").await?;
    ctx.recv("seen").await?;
    check(lock.release(&twin).await? == Released::Unlocked, "second release should unlock")?;
    check(!lock.is_locked().await?, "the lock is still held")?;
    ctx.send("free").await?;
    ctx.recv("seen").await?;
    Ok(())
}

/// A force-unlock from either side wakes the other side's waiters.
pub(crate) async fn force(ctx: &Ctx) -> R<()> {
    // Part 1: rlock holds, Redisson threads wait, rlock force-releases.
    let a = ctx.client.lock("interop:force:a")?;
    let holder = ctx.client.new_owner();
    a.acquire(&holder).await?;
    ctx.send("held").await?;
    ctx.await_subscriber(&channel(a.name())).await?;
    let t0 = now_us();
    check(a.force_unlock().await?, "force_unlock found no lock")?;
    ctx.send(&format!("forced {t0}")).await?;
    // The forced-out owner's release must fail and must not touch the hold a Redisson waiter
    // may have taken meanwhile (Java checks its unlocks succeed).
    match a.release(&holder).await {
        Err(e) if matches!(e.kind(), ErrorKind::NotHeld | ErrorKind::Lost) => {}
        other => {
            return Err(format!("release after force_unlock gave {other:?}, expected NotHeld or Lost").into())
        }
    }
    ctx.recv("woken").await?;

    // Part 2: Redisson holds, rlock owners wait, Redisson force-unlocks.
    let b = ctx.client.lock("interop:force:b")?;
    ctx.recv("held").await?;
    let mut waiters = Vec::new();
    for _ in 0..2 {
        let lock = b.clone();
        let owner = ctx.client.new_owner();
        waiters.push(tokio::spawn(async move {
            tokio::time::timeout(ACQUIRE_BOUND, lock.acquire(&owner)).await??;
            let t = now_us();
            check(lock.release(&owner).await? == Released::Unlocked, "waiter release should unlock")?;
            R::Ok(t)
        }));
    }
    let t0: i64 = ctx.recv("forced").await?.parse()?;
    let mut first = i64::MAX;
    for w in waiters {
        first = first.min(w.await??);
    }
    let latency = first - t0;
    println!("rust: force: first rlock waiter held the lock {latency} us after Redisson's forceUnlock began");
    check(latency < FORCE_WAKE_BOUND_US, format!("rlock waiter woke {latency} us after forceUnlock"))?;
    ctx.send("woken").await?;
    ctx.recv("done").await?;
    check(!b.is_locked().await?, "interop:force:b is still locked")?;
    Ok(())
}

/// With a 1 s watchdog lease on both sides, each side's hold outlives four leases while the
/// other side waits for it, and the lease stays short (renewed, not long-lived).
pub(crate) async fn watchdog(ctx: &Ctx) -> R<()> {
    const WAIT: Duration = Duration::from_secs(4);
    let lost = Arc::new(AtomicBool::new(false));
    let flag = lost.clone();
    ctx.client.on_lost(rlock::LostFilter::all(), move |_| flag.store(true, Ordering::SeqCst));

    // Part 1: Redisson holds; rlock waits 4 s in vain, sampling the lease.
    let a = ctx.client.lock("interop:watchdog:a")?;
    ctx.recv("held").await?;
    let waiter = ctx.client.new_owner();
    let started = Instant::now();
    let (got, samples) = tokio::join!(a.try_acquire(&waiter, WAIT, None), sample_ttl(&a, WAIT));
    check(!got?, "rlock took the lock Redisson's watchdog should keep alive")?;
    check(started.elapsed() >= WAIT - Duration::from_millis(50), "try_acquire gave up early")?;
    check_samples(&samples?, "Redisson")?;
    ctx.send("checked").await?;
    ctx.recv("released").await?;
    check(!a.is_locked().await?, "Redisson's unlock left interop:watchdog:a held")?;

    // Part 2: rlock holds; Redisson waits 4 s in vain.
    let b = ctx.client.lock("interop:watchdog:b")?;
    let holder = ctx.client.new_owner();
    b.acquire(&holder).await?;
    let held_at = Instant::now();
    ctx.send("held").await?;
    ctx.recv("checked").await?;
    check(held_at.elapsed() >= WAIT, "Redisson stopped waiting too early")?;
    check(b.is_held(&holder).await?, "rlock's watchdog let the hold expire")?;
    check(!b.is_lost(&holder) && !lost.load(Ordering::SeqCst), "rlock reported a lost hold")?;
    check(b.release(&holder).await? == Released::Unlocked, "release should unlock")?;
    ctx.send("released").await?;
    ctx.recv("done").await?;
    Ok(())
}

/// Reads the lock's TTL every 100 ms for `for_how_long` (sampling, not synchronisation).
async fn sample_ttl(lock: &Lock, for_how_long: Duration) -> R<Vec<i64>> {
    let end = Instant::now() + for_how_long;
    let mut samples = Vec::new();
    while Instant::now() < end {
        samples.push(lock.remaining_ttl().await?.as_millis_i64());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(samples)
}

/// Every sample shows a live lease no longer than the 1 s watchdog timeout.
fn check_samples(samples: &[i64], holder: &str) -> R<()> {
    check(samples.len() >= 20, format!("only {} TTL samples", samples.len()))?;
    let bad: Vec<_> = samples.iter().filter(|&&t| t <= 0 || t > 1_000).collect();
    check(bad.is_empty(), format!("{holder}'s hold had TTLs outside (0, 1000] ms: {bad:?}"))
}
