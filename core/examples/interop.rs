//! The rlock side of the Redisson interop test (`make interop`, driver `tests/interop/run.sh`).
//!
//! Usage: `interop <scenario>`; Redis URL from `REDIS_URL`. The driver starts this program and
//! the Java program (`tests/interop/redisson`) with the same scenario name at the same time. The
//! two talk through two Redis lists (`interop:<scenario>:to-rust` / `:to-java`, RPUSH and BLPOP
//! with a generous timeout), so every step waits for an event, not for a sleep. A side that
//! fails pushes `abort <reason>` so the other stops at once instead of timing out.
//!
//! Prints `rust: <scenario> ok` and exits 0, or `rust: <scenario> FAILED: <reason>` and exits 1.
#![allow(clippy::print_stdout)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::aio::MultiplexedConnection;
use redis::{AsyncCommands, AsyncConnectionConfig};
use rlock::{Client, ClientOptions, ErrorKind, Lock, Released, Ttl};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type R<T> = Result<T, BoxError>;

/// Bound on every hand-shake with the Java side; generous because a JVM on a busy 2-core machine
/// can take seconds to start.
const HANDSHAKE: Duration = Duration::from_secs(60);
/// Bound on every acquire that is expected to succeed.
const ACQUIRE_BOUND: Duration = Duration::from_secs(30);
/// A waiter must be woken by the unlock message this fast (the requirement).
const WAKE_BOUND_US: i64 = 100_000;
/// A waiter woken by a force-unlock message: far below the 30 s lease, so only a message can
/// explain it.
const FORCE_WAKE_BOUND_US: i64 = 1_000_000;
/// Wake-up rounds measured after one warm-up round (the JVM compiles its code paths in the
/// first one).
const WAKE_ROUNDS: usize = 5;

/// Fails the scenario with `msg` unless `cond`.
fn check(cond: bool, msg: impl Into<String>) -> R<()> {
    if cond {
        Ok(())
    } else {
        Err(msg.into().into())
    }
}

/// Wall-clock microseconds; both processes run on one machine, so their clocks agree.
fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

/// The pub/sub channel Redisson and rlock use for the lock `name` (wire-format.md).
fn channel(name: &str) -> String {
    format!("redisson_lock__channel:{{{name}}}")
}

/// The connections and message lists of one scenario.
struct Ctx {
    client: Client,
    /// Data commands (counters, markers, queries, RPUSH to the Java side).
    data: MultiplexedConnection,
    /// BLPOP only: a blocked BLPOP holds its connection, so nothing else may queue behind it.
    blocking: MultiplexedConnection,
    inbox: String,
    outbox: String,
}

impl Ctx {
    async fn new(scenario: &str, url: &str, options: ClientOptions) -> R<Ctx> {
        let client = Client::connect(url, options).await?;
        let redis = redis::Client::open(url)?;
        let data = redis
            .get_multiplexed_async_connection_with_config(
                &AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(10))),
            )
            .await?;
        let blocking = redis
            .get_multiplexed_async_connection_with_config(
                &AsyncConnectionConfig::new().set_response_timeout(None),
            )
            .await?;
        Ok(Ctx {
            client,
            data,
            blocking,
            inbox: format!("interop:{scenario}:to-rust"),
            outbox: format!("interop:{scenario}:to-java"),
        })
    }

    /// Sends `msg` (`"<tag> [value]"`) to the Java side.
    async fn send(&self, msg: &str) -> R<()> {
        let _: i64 = self.data.clone().rpush(&self.outbox, msg).await?;
        Ok(())
    }

    /// Waits for the message tagged `tag` from the Java side and returns its value part.
    async fn recv(&self, tag: &str) -> R<String> {
        let got: Option<[String; 2]> =
            self.blocking.clone().blpop(&self.inbox, HANDSHAKE.as_secs_f64()).await?;
        let Some([_, msg]) = got else {
            return Err(format!("no '{tag}' from the Java side within {HANDSHAKE:?}").into());
        };
        if msg.starts_with("abort") {
            return Err(format!("the Java side gave up: {msg}").into());
        }
        let (got_tag, value) = msg.split_once(' ').unwrap_or((msg.as_str(), ""));
        check(got_tag == tag, format!("expected '{tag}' from the Java side, got '{msg}'"))?;
        Ok(value.to_owned())
    }

    /// Waits until some client (the Java side here) is subscribed to the lock's channel, i.e. a
    /// Redisson waiter is about to sleep on it. No event tells us that, so poll with a bound.
    async fn await_subscriber(&self, name: &str) -> R<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (_, n): (String, u64) = redis::cmd("PUBSUB")
                .arg("NUMSUB")
                .arg(channel(name))
                .query_async(&mut self.data.clone())
                .await?;
            if n >= 1 {
                return Ok(());
            }
            check(Instant::now() < deadline, format!("no Redisson waiter subscribed to {name} within 20 s"))?;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The remaining lease of `lock` in milliseconds, failing unless the lock is held.
    async fn ttl_ms(&self, lock: &Lock) -> R<i64> {
        match lock.remaining_ttl().await? {
            Ttl::Remaining(d) => Ok(d.as_millis() as i64),
            other => Err(format!("{} should be held with a lease, its TTL is {other:?}", lock.name()).into()),
        }
    }

    /// The hash of the lock key: owner -> hold count.
    async fn fields(&self, name: &str) -> R<Vec<(String, String)>> {
        let map: std::collections::HashMap<String, String> = self.data.clone().hgetall(name).await?;
        Ok(map.into_iter().collect())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let scenario = std::env::args().nth(1).unwrap_or_default();
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    // The watchdog scenario shortens the lease on both sides so holds outlive it many times over;
    // every other scenario keeps the 30 s default, so a wake-up faster than that is a message.
    let options = if scenario == "watchdog" {
        ClientOptions::default().with_watchdog_timeout(Duration::from_secs(1))
    } else {
        ClientOptions::default()
    };
    let ctx = match Ctx::new(&scenario, &url, options).await {
        Ok(ctx) => ctx,
        Err(e) => {
            println!("rust: {scenario} FAILED: cannot connect: {e}");
            std::process::exit(1);
        }
    };
    let result = match scenario.as_str() {
        "mutex" => mutex(&ctx).await,
        "wake-to-java" => wake_to_java(&ctx).await,
        "wake-to-rust" => wake_to_rust(&ctx).await,
        "holds" => holds(&ctx).await,
        "force" => force(&ctx).await,
        "watchdog" => watchdog(&ctx).await,
        other => Err(format!("unknown scenario '{other}'").into()),
    };
    match result {
        Ok(()) => println!("rust: {scenario} ok"),
        Err(e) => {
            println!("rust: {scenario} FAILED: {e}");
            let _ = ctx.send(&format!("abort rust: {e}")).await;
            ctx.client.close();
            std::process::exit(1);
        }
    }
    ctx.client.close();
}

/// 4 rlock owners and 4 Redisson threads run 200 critical sections each on two shared names.
/// Each critical section sets a marker with SET NX (finding it set means two holders overlap),
/// increments a counter with GET then SET, and notes whether the previous holder was the other
/// side. The counters must end exact, with no overlap and some hand-offs across sides.
async fn mutex(ctx: &Ctx) -> R<()> {
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
                critical_section(data.clone(), lock.name(), "rust").await?;
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
    println!(
        "rust: mutex: 1600 critical sections, counters exact, 0 overlaps, {} cross-side hand-offs",
        handoffs.unwrap_or(0)
    );
    Ok(())
}

/// One critical section of [`mutex`], on the data connection.
async fn critical_section(mut data: MultiplexedConnection, name: &str, side: &str) -> R<()> {
    let marker = format!("{name}:marker");
    let set: bool = redis::cmd("SET")
        .arg(&marker)
        .arg(side)
        .arg("NX")
        .query_async::<Option<String>>(&mut data)
        .await?
        .is_some();
    if !set {
        let _: i64 = data.incr("interop:mutex:violations", 1).await?;
    }
    let counter = format!("{name}:counter");
    let n: Option<i64> = data.get(&counter).await?;
    let () = data.set(&counter, n.unwrap_or(0) + 1).await?;
    let prev: Option<String> = data.getset(format!("{name}:last"), side).await?;
    if prev.is_some_and(|p| p != side) {
        let _: i64 = data.incr("interop:mutex:handoffs", 1).await?;
    }
    if set {
        let _: i64 = data.del(&marker).await?;
    }
    Ok(())
}

/// rlock holds (30 s lease); a Redisson thread waits; rlock releases once Redisson is
/// subscribed. Java measures how long after the release its waiter held the lock.
async fn wake_to_java(ctx: &Ctx) -> R<()> {
    let me = ctx.client.new_owner();
    for round in 0..=WAKE_ROUNDS {
        // A fresh name per round, so a subscription left from an earlier round cannot count.
        let lock = ctx.client.lock(&format!("interop:wake-to-java:{round}"))?;
        lock.acquire(&me).await?;
        ctx.send("held").await?;
        ctx.await_subscriber(lock.name()).await?;
        let t0 = now_us();
        check(lock.release(&me).await? == Released::Unlocked, "release should unlock")?;
        ctx.send(&format!("released {t0}")).await?;
        ctx.recv("unlocked").await?;
    }
    Ok(())
}

/// Redisson holds (30 s lease); an rlock owner waits; Redisson releases once rlock is
/// subscribed. rlock's waiter must hold the lock within 100 ms of the release.
async fn wake_to_rust(ctx: &Ctx) -> R<()> {
    let me = ctx.client.new_owner();
    let mut latencies = Vec::new();
    for round in 0..=WAKE_ROUNDS {
        let lock = ctx.client.lock(&format!("interop:wake-to-rust:{round}"))?;
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
    println!(
        "rust: wake-to-rust: rlock waiter held the lock {:?} us after Redisson's unlock began",
        latencies
    );
    let worst = latencies.iter().copied().max().unwrap_or(i64::MAX);
    check(worst < WAKE_BOUND_US, format!("an rlock waiter took {worst} us to wake, more than 100 ms"))
}

/// Holds never mix, and both sides read the same hold counts and TTLs.
async fn holds(ctx: &Ctx) -> R<()> {
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
async fn force(ctx: &Ctx) -> R<()> {
    // Part 1: rlock holds, Redisson threads wait, rlock force-releases.
    let a = ctx.client.lock("interop:force:a")?;
    let holder = ctx.client.new_owner();
    a.acquire(&holder).await?;
    ctx.send("held").await?;
    ctx.await_subscriber(a.name()).await?;
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
async fn watchdog(ctx: &Ctx) -> R<()> {
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
