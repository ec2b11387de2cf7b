//! The rlock side of the Redisson interop test (`make interop`, driver `tests/interop/run.sh`).
//!
//! Usage: `interop <scenario>`; Redis URL from `REDIS_URL` (`redis://host:port`, or
//! `redis+cluster://host:port,host:port/` for a Redis Cluster). The driver starts this program and
//! the Java program (`tests/interop/redisson`) with the same scenario name at the same time. The
//! two talk through two Redis lists (`interop:<scenario>:to-rust` / `:to-java`, RPUSH and BLPOP
//! with a generous timeout), so every step waits for an event, not for a sleep. A side that
//! fails pushes `abort <reason>` so the other stops at once instead of timing out.
//!
//! The `redlock` scenario runs over three independent servers: the driver passes
//! `REDIS_URLS=redis://a,redis://b,redis://c`; the first is the server of the message lists and
//! the scenario's data, and every server holds one member of the RedLock.
//!
//! Prints `rust: <scenario> ok` and exits 0, or `rust: <scenario> FAILED: <reason>` and exits 1.
#![allow(clippy::print_stdout)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncCommands, AsyncConnectionConfig, Cmd, Pipeline, RedisFuture, Value};
use rlock::{
    Client, ClientOptions, ErrorKind, Lock, MultiLock, PermitExpirableSemaphore, RedLock, Released, Ttl,
};

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

/// The channel both sides of a read-write lock wait on.
fn rwlock_channel(name: &str) -> String {
    format!("redisson_rwlock:{{{name}}}")
}

/// The queue (LIST of waiting owners) of the fair lock `name`.
fn fair_queue(name: &str) -> String {
    format!("redisson_lock_queue:{{{name}}}")
}

/// The waiters' deadlines (ZSET) of the fair lock `name`.
fn fair_timeouts(name: &str) -> String {
    format!("redisson_lock_timeout:{{{name}}}")
}

/// A connection to one server or to a cluster (each command routed by its key), for the data
/// and message commands of the scenarios.
#[derive(Clone)]
enum Conn {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// The connections and message lists of one scenario.
struct Ctx {
    client: Client,
    /// Data commands (counters, markers, queries, RPUSH to the Java side).
    data: Conn,
    /// BLPOP only: a blocked BLPOP holds its connection, so nothing else may queue behind it.
    blocking: Conn,
    /// One connection per server (every master of a cluster), for PUBSUB, which reports only
    /// the subscriptions of the node it is asked.
    nodes: Vec<MultiplexedConnection>,
    /// Whether Redis is a cluster (sharded subscriptions are counted too).
    cluster: bool,
    inbox: String,
    outbox: String,
}

impl Ctx {
    async fn new(scenario: &str, url: &str, options: ClientOptions) -> R<Ctx> {
        let client = Client::connect(url, options).await?;
        let (data, blocking, nodes, cluster) = match url.strip_prefix("redis+cluster://") {
            Some(hosts) => {
                let urls: Vec<String> =
                    hosts.trim_end_matches('/').split(',').map(|h| format!("redis://{h}")).collect();
                let data = ClusterClient::builder(urls.clone())
                    .response_timeout(Duration::from_secs(10))
                    .build()?
                    .get_async_connection()
                    .await?;
                let blocking = ClusterClient::new(urls.clone())?.get_async_connection().await?;
                // The seed nodes are every master (rlock-testbed's cluster has no replicas).
                let mut nodes = Vec::new();
                for u in &urls {
                    nodes.push(redis::Client::open(u.as_str())?.get_multiplexed_async_connection().await?);
                }
                (Conn::Cluster(data), Conn::Cluster(blocking), nodes, true)
            }
            None => {
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
                (Conn::Single(data.clone()), Conn::Single(blocking), vec![data], false)
            }
        };
        if cluster {
            let sharded = if client.sharded_pubsub() { "on" } else { "off" };
            println!("rust: cluster, sharded pub/sub {sharded}");
        }
        Ok(Ctx {
            client,
            data,
            blocking,
            nodes,
            cluster,
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

    /// Waits until some client (the Java side here) is subscribed to `channel`, i.e. a
    /// Redisson waiter is about to sleep on it. No event tells us that, so poll with a bound.
    /// Every server is asked (a cluster's classic subscriptions live on whichever node the
    /// client chose), and on a cluster sharded subscriptions count too.
    async fn await_subscriber(&self, channel: &str) -> R<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut n = 0;
            for node in &self.nodes {
                let kinds: &[&str] = if self.cluster { &["NUMSUB", "SHARDNUMSUB"] } else { &["NUMSUB"] };
                for kind in kinds {
                    let (_, k): (String, u64) =
                        redis::cmd("PUBSUB").arg(*kind).arg(channel).query_async(&mut node.clone()).await?;
                    n += k;
                }
            }
            if n >= 1 {
                return Ok(());
            }
            check(
                Instant::now() < deadline,
                format!("no Redisson waiter subscribed to {channel} within 20 s"),
            )?;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Waits until `owner` is the last of `n` waiters in the fair lock `name`'s queue. No
    /// event tells us that, so poll with a bound.
    async fn await_queued(&self, name: &str, n: usize, owner: &str) -> R<()> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let queue = self.fair_queue(name).await?;
            if queue.len() == n && queue[n - 1] == owner {
                return Ok(());
            }
            // Nobody else queues meanwhile: a full queue without `owner` last is wrong at once.
            check(
                queue.len() < n && Instant::now() < deadline,
                format!("{owner} did not queue up as waiter {n} of {name}; the queue is {queue:?}"),
            )?;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The fair lock `name`'s queue of waiting owners.
    async fn fair_queue(&self, name: &str) -> R<Vec<String>> {
        Ok(self.data.clone().lrange(fair_queue(name), 0, -1).await?)
    }

    /// Fails unless the fair lock `name`'s queue and deadline keys are both gone.
    async fn check_fair_keys_gone(&self, name: &str) -> R<()> {
        let n: u64 = redis::cmd("EXISTS")
            .arg(fair_queue(name))
            .arg(fair_timeouts(name))
            .query_async(&mut self.data.clone())
            .await?;
        check(n == 0, format!("the queue or deadline keys of {name} are left"))
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

/// The main client's Redis URL (the first of [`redis_urls`]).
fn redis_url() -> String {
    redis_urls().swap_remove(0)
}

/// Every server's URL: `REDIS_URLS` (comma-separated, three independent servers for the
/// redlock scenario) or else the one `REDIS_URL`. The first is the main client's.
fn redis_urls() -> Vec<String> {
    match std::env::var("REDIS_URLS") {
        Ok(many) if !many.is_empty() => many.split(',').map(str::to_owned).collect(),
        _ => vec![std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())],
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let scenario = std::env::args().nth(1).unwrap_or_default();
    let urls = redis_urls();
    let url = urls[0].clone();
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
        "fenced" => fenced(&ctx).await,
        "semaphore" => semaphore(&ctx).await,
        "latch" => latch(&ctx).await,
        "rwlock" => rwlock(&ctx).await,
        "fair" => fair(&ctx).await,
        "permit-semaphore" => permit_semaphore(&ctx).await,
        "multi-lock" => multi_lock(&ctx).await,
        "redlock" => red_lock(&ctx, &urls).await,
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

/// One critical section of [`mutex`], on the data connection.
async fn critical_section(mut data: Conn, name: &str, side: &str) -> R<()> {
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
async fn hold_and_wake_java(ctx: &Ctx, lock_of: impl Fn(usize) -> R<(Lock, String)>) -> R<()> {
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
async fn wait_for_java(ctx: &Ctx, what: &str, lock_of: impl Fn(usize) -> R<Lock>) -> R<Vec<i64>> {
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
async fn wake_to_rust(ctx: &Ctx) -> R<()> {
    let latencies = wait_for_java(ctx, "an rlock waiter", |round| {
        Ok(ctx.client.lock(&format!("interop:wake-to-rust:{round}"))?)
    })
    .await?;
    println!("rust: wake-to-rust: rlock waiter held the lock {latencies:?} us after Redisson's unlock began");
    Ok(())
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

/// Acquires per side on the fenced lock, split over two owners (two Redisson threads on the
/// Java side).
const FENCED_PER_SIDE: usize = 500;

/// 2 rlock owners and 2 Redisson threads take the fenced lock `interop:fenced` 250 times each
/// (acquire / try_acquire in turn; Java: lockAndGetToken / tryLockAndGetToken), contending. While
/// holding, each appends `<side> <token>` to `interop:fenced:tokens`, so the list is in
/// acquisition order: its 1000 tokens must strictly increase (so all are distinct), each side's
/// entries must be exactly the tokens its calls returned, and the counter must end at the last.
async fn fenced(ctx: &Ctx) -> R<()> {
    const NAME: &str = "interop:fenced";
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let owner = ctx.client.new_owner();
        let lock = ctx.client.fenced_lock(NAME)?;
        let data = ctx.data.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine: Vec<u64> = Vec::new();
            for i in 0..FENCED_PER_SIDE / 2 {
                let token = if i % 2 == 0 {
                    tokio::time::timeout(ACQUIRE_BOUND, lock.acquire(&owner)).await??
                } else {
                    lock.try_acquire(&owner, ACQUIRE_BOUND, None)
                        .await?
                        .ok_or("try_acquire did not get the fenced lock within 30 s")?
                };
                check(lock.token_of(&owner) == Some(token), "token_of differs from the acquired token")?;
                if let Some(&prev) = mine.last() {
                    check(token > prev, format!("token {token} after this owner's {prev}"))?;
                }
                fenced_section(data.clone(), NAME, "rust", token).await?;
                mine.push(token);
                check(lock.release(&owner).await? == Released::Unlocked, "release should unlock")?;
            }
            R::Ok(mine)
        }));
    }
    let mut mine = Vec::new();
    for task in tasks {
        mine.extend(task.await??);
    }
    ctx.send("done").await?;
    ctx.recv("done").await?;
    let mut data = ctx.data.clone();
    let entries: Vec<String> = data.lrange(format!("{NAME}:tokens"), 0, -1).await?;
    check(
        entries.len() == 2 * FENCED_PER_SIDE,
        format!("{} tokens recorded, expected {}", entries.len(), 2 * FENCED_PER_SIDE),
    )?;
    let mut prev = (String::new(), 0u64);
    let mut rust_in_list = Vec::new();
    let mut handoffs = 0;
    for e in &entries {
        let (side, token) = e.split_once(' ').ok_or("bad token entry")?;
        let token: u64 = token.parse()?;
        check(
            token > prev.1,
            format!("token {token} ({side}) was taken after token {} ({})", prev.1, prev.0),
        )?;
        if !prev.0.is_empty() && prev.0 != side {
            handoffs += 1;
        }
        if side == "rust" {
            rust_in_list.push(token);
        }
        prev = (side.to_owned(), token);
    }
    mine.sort_unstable();
    check(rust_in_list == mine, "the list's rlock tokens differ from the ones acquire returned")?;
    let last = ctx.client.fenced_lock(NAME)?.last_token().await?;
    check(last == Some(prev.1), format!("last_token is {last:?}, the last token taken was {}", prev.1))?;
    let violations: Option<i64> = data.get(format!("{NAME}:violations")).await?;
    check(violations.is_none(), format!("{violations:?} fenced critical sections overlapped"))?;
    check(handoffs > 0, "the fenced lock never passed between Redisson and rlock")?;
    let first = entries[0].split_once(' ').map_or("", |(_, t)| t);
    println!(
        "rust: fenced: {} acquires, tokens {first}..{} strictly increasing in acquisition order, \
         {handoffs} cross-side hand-offs",
        entries.len(),
        prev.1
    );
    Ok(())
}

/// One critical section of [`fenced`]: marker check, then the token into the list.
async fn fenced_section(mut data: Conn, name: &str, side: &str, token: u64) -> R<()> {
    let marker = format!("{name}:marker");
    let set: bool = redis::cmd("SET")
        .arg(&marker)
        .arg(side)
        .arg("NX")
        .query_async::<Option<String>>(&mut data)
        .await?
        .is_some();
    if !set {
        let _: i64 = data.incr(format!("{name}:violations"), 1).await?;
    }
    let _: i64 = data.rpush(format!("{name}:tokens"), format!("{side} {token}")).await?;
    if set {
        let _: i64 = data.del(&marker).await?;
    }
    Ok(())
}

/// Permits of the shared semaphore, and acquires per side (split over 4 owners / threads).
const SEM_PERMITS: u64 = 5;
const SEM_PER_SIDE: usize = 1000;

/// rlock sets up the semaphore `interop:sem` with 5 permits; 4 rlock tasks and 4 Redisson
/// threads then take a permit 250 times each. Inside, each holder increments the shared holders
/// counter `interop:sem:counter` (INCR) and counts a violation when it is above 5, then
/// decrements it. No violation; every permit is back at the end; both sides saw more than one
/// holder at once (the permits were really shared).
async fn semaphore(ctx: &Ctx) -> R<()> {
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
async fn permit_semaphore(ctx: &Ctx) -> R<()> {
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

/// Waiters per side in each wake-up round of [`latch`].
const LATCH_WAITERS: usize = 3;

/// The channel both sides' waiters on the count-down latch `name` sleep on (braces around the
/// whole name, unlike the locks' channels).
fn latch_channel(name: &str) -> String {
    format!("redisson_countdownlatch__channel__{{{name}}}")
}

/// The count-down latch across sides (Redisson `RCountDownLatch`):
/// 1. Java sets a latch to 1; 3 rlock waiters sleep on it; Java counts down once they are
///    subscribed: every rlock waiter returns true within 100 ms of the count-down.
/// 2. The other way round: rlock sets and counts down, 3 Redisson threads `await` (Java
///    measures). 5 measured rounds each, after a warm-up round.
/// 3. One latch of 4 counted down twice by each side, with a waiter on each side: neither
///    opens before the fourth count-down; Java's `trySetCount` on rlock's latch is refused, and
///    both sides read the same counts.
/// 4. On a cluster, a name with its own hash tag: Redisson's `trySetCount` fails (CROSSSLOT:
///    its channel hashes elsewhere) and rlock refuses the name up front.
async fn latch(ctx: &Ctx) -> R<()> {
    // Part 1: Java counts down, rlock waiters wake.
    let mut latencies = Vec::new();
    for round in 0..=WAKE_ROUNDS {
        let name = format!("interop:latch:to-rust:{round}");
        ctx.recv("set").await?;
        let latch = ctx.client.count_down_latch(&name)?;
        let n = latch.count().await?;
        check(n == 1, format!("rlock reads {n} on Java's latch of 1"))?;
        let waiters: Vec<_> = (0..LATCH_WAITERS)
            .map(|_| {
                let l = latch.clone();
                tokio::spawn(async move {
                    let open = l.wait(Some(ACQUIRE_BOUND)).await?;
                    R::Ok((open, now_us()))
                })
            })
            .collect();
        ctx.send("waiting").await?;
        let t0: i64 = ctx.recv("counted").await?.parse()?;
        let mut worst = 0;
        for w in waiters {
            let (open, t1) = w.await??;
            check(open, "an rlock waiter's wait ran out instead of opening")?;
            worst = worst.max(t1 - t0);
        }
        check(latch.count().await? == 0, "the latch is not open after Java's count-down")?;
        if round > 0 {
            check(worst < WAKE_BOUND_US, format!("rlock waiters took {worst} us to wake, more than 100 ms"))?;
            latencies.push(worst);
        }
        ctx.send("woken").await?;
    }
    println!(
        "rust: latch: all {LATCH_WAITERS} rlock waiters woke {latencies:?} us (the slowest of each round) after \
         Redisson's count-down began"
    );

    // Part 2: rlock counts down, Redisson waiters wake (Java measures).
    for round in 0..=WAKE_ROUNDS {
        let name = format!("interop:latch:to-java:{round}");
        let latch = ctx.client.count_down_latch(&name)?;
        check(latch.try_set_count(1).await?, format!("{name} existed already"))?;
        ctx.send("set").await?;
        ctx.recv("waiting").await?;
        ctx.await_subscriber(&latch_channel(&name)).await?;
        let t0 = now_us();
        latch.count_down().await?;
        ctx.send(&format!("counted {t0}")).await?;
        ctx.recv("woken").await?;
    }

    // Part 3: both sides count down one latch; it opens at the fourth count-down only.
    let name = "interop:latch:both";
    let latch = ctx.client.count_down_latch(name)?;
    check(latch.try_set_count(4).await?, format!("{name} existed already"))?;
    ctx.send("set").await?;
    let l = latch.clone();
    let waiter = tokio::spawn(async move { l.wait(Some(ACQUIRE_BOUND)).await });
    ctx.recv("refused").await?; // Java's trySetCount(5) was refused, Java reads 4
    latch.count_down().await?;
    ctx.send("counted").await?;
    ctx.recv("counted").await?; // Java counted down: 2 left
    let n = latch.count().await?;
    check(n == 2, format!("rlock reads {n} after two count-downs of 4"))?;
    check(!waiter.is_finished(), "the rlock waiter returned before the latch opened")?;
    latch.count_down().await?;
    ctx.send("counted").await?;
    ctx.recv("counted").await?; // Java counted down to zero; its waiter opened
    check(
        tokio::time::timeout(Duration::from_secs(5), waiter).await???,
        "the rlock waiter's wait ran out although the latch opened",
    )?;
    let exists: bool = ctx.data.clone().exists(name).await?;
    check(!exists, format!("{name} is left after the count reached zero"))?;
    ctx.send("done").await?;

    // Part 4: a name with its own hash tag on a cluster.
    if ctx.cluster {
        match ctx.client.count_down_latch("interop:latch{7}") {
            Err(e) if e.kind() == ErrorKind::InvalidArgument => {}
            other => return Err(format!("a tagged latch name on a cluster gave {other:?}").into()),
        }
        ctx.recv("refused").await?;
        println!("rust: latch: a tagged name is refused on the cluster (Redisson's trySetCount fails with CROSSSLOT)");
    }
    Ok(())
}

/// The multi-lock's names in part 1 of [`multi_lock`] (Redisson locks each alone), and the
/// pair of part 2.
const MULTI_NAMES: [&str; 3] = ["interop:multi:a", "interop:multi:b", "interop:multi:c"];
const MULTI_PAIR: [&str; 2] = ["interop:multi:x", "interop:multi:y"];
/// Sections per rlock owner (4 owners) and per Redisson thread (3 threads) in part 1, and per
/// participant (2 rlock owners, 1 Redisson multi-lock) in part 2.
const MULTI_RUST_SECTIONS: usize = 50;
const MULTI_JAVA_SECTIONS: usize = 150;
const MULTI_PAIR_SECTIONS: usize = 60;

/// rlock's multi-lock against Redisson's single locks on the same names:
/// 1. 4 rlock owners take `MultiLock`s over a, b, c (two in that order, two in the opposite
///    order) 50 times each, while 3 Redisson threads lock one name at a time (`RLock`) 150
///    times each. Every section sets a marker per name it holds (SET NX: finding one set is an
///    overlap) and increments each name's counter with GET then SET. Each counter ends at
///    exactly 150 + 200, with 0 overlaps and hand-offs between the sides.
/// 2. Two rlock multi-locks over x, y in opposite orders and a Redisson `RedissonMultiLock`
///    over y, x take the pair 60 times each: every acquire completes within 30 s (no
///    deadlock), counters exact, 0 overlaps.
async fn multi_lock(ctx: &Ctx) -> R<()> {
    // Part 1.
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let mut tasks = Vec::new();
    for t in 0..4 {
        let mut order = MULTI_NAMES.to_vec();
        if t % 2 == 1 {
            order.reverse();
        }
        tasks.push(multi_worker(ctx, "interop:multi", order, MULTI_RUST_SECTIONS)?);
    }
    let mut slowest = Duration::ZERO;
    for task in tasks {
        slowest = slowest.max(task.await??);
    }
    ctx.recv("done").await?;
    let expected = (MULTI_JAVA_SECTIONS + 4 * MULTI_RUST_SECTIONS) as i64;
    let handoffs = check_multi(ctx, "interop:multi", &MULTI_NAMES, expected).await?;
    check(handoffs > 0, "no name passed between Redisson and rlock")?;
    println!(
        "rust: multi-lock: {} multi-lock sections (2 orders) and {} single-lock sections on 3 names, \
         counters exact ({expected} each), 0 overlaps, {handoffs} cross-side hand-offs, slowest multi \
         acquire {slowest:?}",
        4 * MULTI_RUST_SECTIONS,
        3 * MULTI_JAVA_SECTIONS
    );
    ctx.send("checked").await?;

    // Part 2: opposite orders.
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let started = Instant::now();
    let (forward, backward) = (MULTI_PAIR.to_vec(), MULTI_PAIR.iter().rev().copied().collect());
    let tasks = [
        multi_worker(ctx, "interop:multi:pair", forward, MULTI_PAIR_SECTIONS)?,
        multi_worker(ctx, "interop:multi:pair", backward, MULTI_PAIR_SECTIONS)?,
    ];
    let mut slowest = Duration::ZERO;
    for task in tasks {
        slowest = slowest.max(task.await??);
    }
    let elapsed = started.elapsed();
    ctx.recv("done").await?;
    let expected = 3 * MULTI_PAIR_SECTIONS as i64;
    check_multi(ctx, "interop:multi:pair", &MULTI_PAIR, expected).await?;
    println!(
        "rust: multi-lock: multi-locks over {MULTI_PAIR:?} in both orders (2 rlock, 1 Redisson) took the pair \
         {expected} times in {elapsed:?}, slowest rlock acquire {slowest:?}, counters exact, 0 overlaps"
    );
    Ok(())
}

/// A task that takes a multi-lock over `order` (a fresh owner) `sections` times, each time
/// running [`held_section`] over the names, and returns its slowest acquire.
fn multi_worker(
    ctx: &Ctx,
    scope: &'static str,
    order: Vec<&'static str>,
    sections: usize,
) -> R<tokio::task::JoinHandle<R<Duration>>> {
    let locks = order.iter().map(|n| ctx.client.lock(n)).collect::<Result<Vec<_>, _>>()?;
    let multi = MultiLock::new(locks)?;
    let owner = multi.new_owner();
    let data = ctx.data.clone();
    Ok(tokio::spawn(async move {
        let mut slowest = Duration::ZERO;
        for _ in 0..sections {
            let start = Instant::now();
            check(
                multi.try_acquire(&owner, ACQUIRE_BOUND, None).await?,
                format!("a multi-lock over {order:?} was not taken within 30 s (deadlock?)"),
            )?;
            slowest = slowest.max(start.elapsed());
            held_section(data.clone(), scope, "rust", &order).await?;
            multi.release(&owner).await?;
        }
        R::Ok(slowest)
    }))
}

/// A section holding the locks `names`: a marker per name (SET NX; finding one set counts a
/// violation in `<scope>:violations`) kept for the whole section, a GET-then-SET increment of
/// each name's counter, and a count of the names whose previous holder was the other side.
async fn held_section(mut data: Conn, scope: &str, side: &str, names: &[&str]) -> R<()> {
    let mut marked = Vec::new();
    for name in names {
        let set: bool = redis::cmd("SET")
            .arg(format!("{name}:marker"))
            .arg(side)
            .arg("NX")
            .query_async::<Option<String>>(&mut data)
            .await?
            .is_some();
        if !set {
            let _: i64 = data.incr(format!("{scope}:violations"), 1).await?;
        }
        marked.push(set);
    }
    for name in names {
        let counter = format!("{name}:counter");
        let n: Option<i64> = data.get(&counter).await?;
        let () = data.set(&counter, n.unwrap_or(0) + 1).await?;
        let prev: Option<String> = data.getset(format!("{name}:last"), side).await?;
        if prev.is_some_and(|p| p != side) {
            let _: i64 = data.incr(format!("{scope}:handoffs"), 1).await?;
        }
    }
    for (name, set) in names.iter().zip(marked) {
        if set {
            let _: i64 = data.del(format!("{name}:marker")).await?;
        }
    }
    Ok(())
}

/// The checks after a part of [`multi_lock`]: no violation in `scope`, every name's counter at
/// `expected`, no name locked. Returns the cross-side hand-offs.
async fn check_multi(ctx: &Ctx, scope: &str, names: &[&str], expected: i64) -> R<i64> {
    let mut data = ctx.data.clone();
    let violations: Option<i64> = data.get(format!("{scope}:violations")).await?;
    check(violations.is_none(), format!("{violations:?} sections overlapped a holder of the same name"))?;
    for name in names {
        let n: Option<i64> = data.get(format!("{name}:counter")).await?;
        check(n == Some(expected), format!("{name}:counter is {n:?}, expected {expected}"))?;
        let exists: bool = data.exists(*name).await?;
        check(!exists, format!("{name} is still locked after everyone released"))?;
    }
    let handoffs: Option<i64> = data.get(format!("{scope}:handoffs")).await?;
    Ok(handoffs.unwrap_or(0))
}

/// Write and read sections per worker in the mixed part of [`rwlock`].
const RW_WRITES: usize = 60;
const RW_READS: usize = 60;

/// The read-write lock across sides:
/// 1. Redisson and rlock readers hold at once, each joining the other's read hold, while writers
///    of both sides are kept out; an rlock reader asking for the write lock gets WouldDeadlock.
/// 2. 2 Redisson threads and 2 rlock owners each run 60 write and 60 read sections on one lock.
///    A write section needs the marker free (SET NX) and no reader inside, and increments a
///    counter with GET then SET; a read section counts itself in and must not see the marker.
///    The counter ends exact, with 0 violations.
/// 3. A Redisson writer's unlock wakes an rlock write waiter within 100 ms, and 4. the other way
///    round (5 measured rounds each, after a warm-up round).
async fn rwlock(ctx: &Ctx) -> R<()> {
    // Part 1: overlapping readers.
    let name = "interop:rwlock:shared";
    let rw = ctx.client.read_write_lock(name)?;
    let (read, write) = (rw.read_lock(), rw.write_lock());
    let java_reader = ctx.recv("reading").await?;
    let reader = ctx.client.new_owner();
    check(
        read.try_acquire(&reader, Duration::ZERO, None).await?,
        "an rlock reader could not join Redisson's read hold",
    )?;
    let fields: std::collections::HashMap<String, String> = ctx.fields(name).await?.into_iter().collect();
    check(
        fields.len() == 3
            && fields.get("mode").map(String::as_str) == Some("read")
            && fields.get(&java_reader).map(String::as_str) == Some("1")
            && fields.get(reader.as_str()).map(String::as_str) == Some("1"),
        format!("both readers should hold, the hash is {fields:?}"),
    )?;
    let writer = ctx.client.new_owner();
    check(
        !write.try_acquire(&writer, Duration::ZERO, None).await?,
        "an rlock writer got in while two readers held",
    )?;
    match write.try_acquire(&reader, Duration::ZERO, None).await {
        Err(e) if e.kind() == ErrorKind::WouldDeadlock => {}
        other => {
            return Err(format!("a reader's write acquire gave {other:?}, expected WouldDeadlock").into())
        }
    }
    ctx.send(&format!("reading {}", reader.as_str())).await?;
    ctx.recv("released").await?;
    let fields: std::collections::HashMap<String, String> = ctx.fields(name).await?.into_iter().collect();
    check(
        fields.len() == 2 && fields.get(reader.as_str()).map(String::as_str) == Some("1"),
        format!("only rlock's read hold should be left, the hash is {fields:?}"),
    )?;
    check(read.is_locked().await? && read.hold_count(&reader).await? == 1, "rlock's read hold is gone")?;
    ctx.send("alone").await?;
    ctx.recv("reading").await?;
    check(
        read.release(&reader).await? == Released::StillLocked,
        "releasing rlock's read hold while Redisson's reads should leave the lock locked",
    )?;
    ctx.send("released").await?;
    ctx.recv("free").await?;
    check(!read.is_locked().await? && !write.is_locked().await?, "the last read unlock left the lock held")?;

    // Part 2: mixed readers and writers on both sides.
    let mixed = "interop:rwlock:mixed";
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let mut tasks = Vec::new();
    for t in 0..2 {
        let owner = ctx.client.new_owner();
        let rw = ctx.client.read_write_lock(mixed)?;
        let data = ctx.data.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..RW_WRITES + RW_READS {
                if (i + t) % 2 == 0 {
                    let lock = rw.write_lock();
                    tokio::time::timeout(ACQUIRE_BOUND, lock.acquire(&owner)).await??;
                    write_section(data.clone(), mixed, "rust").await?;
                    check(
                        lock.release(&owner).await? == Released::Unlocked,
                        "a write release should unlock",
                    )?;
                } else {
                    let lock = rw.read_lock();
                    tokio::time::timeout(ACQUIRE_BOUND, lock.acquire(&owner)).await??;
                    read_section(data.clone(), mixed).await?;
                    let released = lock.release(&owner).await?;
                    check(
                        matches!(released, Released::Unlocked | Released::StillLocked),
                        format!("a read release gave {released:?}"),
                    )?;
                }
            }
            R::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    ctx.recv("done").await?;
    let mut data = ctx.data.clone();
    let violations: Option<i64> = data.get(format!("{mixed}:violations")).await?;
    check(violations.is_none(), format!("{violations:?} sections overlapped a writer"))?;
    let counter: Option<i64> = data.get(format!("{mixed}:counter")).await?;
    let expected = (4 * RW_WRITES) as i64;
    check(counter == Some(expected), format!("{mixed}:counter is {counter:?}, expected {expected}"))?;
    let readers: Option<i64> = data.get(format!("{mixed}:readers")).await?;
    check(readers.unwrap_or(0) == 0, format!("{readers:?} readers still inside"))?;
    let exists: bool = data.exists(mixed).await?;
    check(!exists, format!("{mixed} is still locked after everyone released"))?;
    let shared: Option<i64> = data.get(format!("{mixed}:shared")).await?;
    println!(
        "rust: rwlock: {} write and {} read sections, counter exact, 0 violations, {} read sections \
         shared with another reader",
        4 * RW_WRITES,
        4 * RW_READS,
        shared.unwrap_or(0)
    );
    ctx.send("checked").await?;

    // Part 3: a Redisson writer's unlock wakes an rlock write waiter.
    let latencies = wait_for_java(ctx, "an rlock write waiter", |round| {
        Ok(ctx.client.read_write_lock(&format!("interop:rwlock:to-rust:{round}"))?.write_lock())
    })
    .await?;
    println!(
        "rust: rwlock: rlock write waiter held the lock {latencies:?} us after Redisson's write unlock began"
    );

    // Part 4: an rlock writer's release wakes a Redisson write waiter (Java measures).
    hold_and_wake_java(ctx, |round| {
        let name = format!("interop:rwlock:to-java:{round}");
        Ok((ctx.client.read_write_lock(&name)?.write_lock(), rwlock_channel(&name)))
    })
    .await
}

/// A write section of [`rwlock`]: the marker must be free and no reader inside; then a
/// GET-then-SET increment of the counter, which only mutual exclusion keeps exact.
async fn write_section(mut data: Conn, name: &str, side: &str) -> R<()> {
    let marker = format!("{name}:marker");
    let set: bool = redis::cmd("SET")
        .arg(&marker)
        .arg(side)
        .arg("NX")
        .query_async::<Option<String>>(&mut data)
        .await?
        .is_some();
    let readers: Option<i64> = data.get(format!("{name}:readers")).await?;
    if !set || readers.unwrap_or(0) != 0 {
        let _: i64 = data.incr(format!("{name}:violations"), 1).await?;
    }
    let counter = format!("{name}:counter");
    let n: Option<i64> = data.get(&counter).await?;
    let () = data.set(&counter, n.unwrap_or(0) + 1).await?;
    if set {
        let _: i64 = data.del(&marker).await?;
    }
    Ok(())
}

/// A read section of [`rwlock`]: counts itself in, and no writer's marker may be set meanwhile.
async fn read_section(mut data: Conn, name: &str) -> R<()> {
    let readers = format!("{name}:readers");
    let inside: i64 = data.incr(&readers, 1).await?;
    if inside > 1 {
        let _: i64 = data.incr(format!("{name}:shared"), 1).await?;
    }
    let writer: bool = data.exists(format!("{name}:marker")).await?;
    if writer {
        let _: i64 = data.incr(format!("{name}:violations"), 1).await?;
    }
    let _: i64 = data.decr(&readers, 1).await?;
    Ok(())
}

/// The fair lock across sides:
/// 1. Behind a Redisson holder, 4 Redisson (J1..J4) and 4 rlock (R1..R4) waiters queue in the
///    order J1 R1 J2 R2 ..., each only once the previous one is in the queue; after the holder's
///    unlock they are granted in exactly that order (each appends its label to a list while
///    holding).
/// 2. An rlock holder, an rlock waiter W1 and a Redisson waiter J2 behind it; W1's acquire is
///    aborted (its future dropped), then the holder releases: J2 holds within 5 s, not at W1's
///    deadline (its 300 s wait after the 30 s lease).
/// 3. A Redisson holder, W1 `try_acquire`s for 5 s, J2 queues behind; W1's wait runs out; the
///    holder unlocks: J2 holds within 5 s.
///
/// The queue and deadline keys are gone at the end of each part.
async fn fair(ctx: &Ctx) -> R<()> {
    // Part 1: arrival order.
    let name = "interop:fair";
    let order = format!("{name}:order");
    let lock = ctx.client.fair_lock(name)?;
    ctx.recv("held").await?;
    let mut waiters = Vec::new();
    for k in 1..=4 {
        ctx.recv("queued").await?;
        let owner = ctx.client.new_owner();
        let (lock, mut data, order, label) = (lock.clone(), ctx.data.clone(), order.clone(), format!("R{k}"));
        let o = owner.clone();
        waiters.push(tokio::spawn(async move {
            tokio::time::timeout(HANDSHAKE, lock.acquire(&o)).await??;
            let _: i64 = data.rpush(&order, &label).await?;
            check(lock.release(&o).await? == Released::Unlocked, "release should unlock")?;
            R::Ok(())
        }));
        ctx.await_queued(name, 2 * k, owner.as_str()).await?;
        ctx.send(&format!("queued {}", owner.as_str())).await?;
    }
    for w in waiters {
        w.await??;
    }
    ctx.send("granted").await?;
    ctx.recv("granted").await?;
    let granted: Vec<String> = ctx.data.clone().lrange(&order, 0, -1).await?;
    let arrival = ["J1", "R1", "J2", "R2", "J3", "R3", "J4", "R4"];
    check(granted == arrival, format!("granted in the order {granted:?}, they arrived as {arrival:?}"))?;
    ctx.check_fair_keys_gone(name).await?;
    check(!lock.is_locked().await?, format!("{name} is still locked"))?;
    println!("rust: fair: 8 waiters granted in arrival order {granted:?}");

    // Part 2: an aborted rlock waiter does not delay the Redisson waiter behind it.
    let a = "interop:fair:cancel";
    let la = ctx.client.fair_lock(a)?;
    let holder = ctx.client.new_owner();
    la.acquire(&holder).await?;
    let w1 = ctx.client.new_owner();
    let (lock, o) = (la.clone(), w1.clone());
    let task = tokio::spawn(async move { lock.acquire(&o).await });
    ctx.await_queued(a, 1, w1.as_str()).await?;
    ctx.send(&format!("queued {}", w1.as_str())).await?;
    let j2 = ctx.recv("queued").await?;
    task.abort();
    match task.await {
        Err(e) if e.is_cancelled() => {}
        other => return Err(format!("W1's acquire ended by itself: {other:?}").into()),
    }
    check(ctx.client.settle(Duration::from_secs(10)).await, "W1's give-up did not run within 10 s")?;
    let queue = ctx.fair_queue(a).await?;
    check(
        queue == [j2.clone()],
        format!("only J2 should be queued after W1 was cancelled, the queue is {queue:?}"),
    )?;
    let t0 = now_us();
    check(la.release(&holder).await? == Released::Unlocked, "release should unlock")?;
    ctx.send(&format!("released {t0}")).await?;
    ctx.recv("done").await?;
    ctx.check_fair_keys_gone(a).await?;

    // Part 3: an rlock waiter whose try_acquire runs out does not delay the one behind it.
    let b = "interop:fair:timeout";
    let lb = ctx.client.fair_lock(b)?;
    ctx.recv("held").await?;
    let w1 = ctx.client.new_owner();
    let (lock, o) = (lb.clone(), w1.clone());
    let task = tokio::spawn(async move { lock.try_acquire(&o, Duration::from_secs(5), None).await });
    ctx.await_queued(b, 1, w1.as_str()).await?;
    ctx.send(&format!("queued {}", w1.as_str())).await?;
    let j2 = ctx.recv("queued").await?;
    let queue = ctx.fair_queue(b).await?;
    check(
        queue == [w1.as_str().to_owned(), j2.clone()],
        format!("J2 should be queued behind W1 (did W1's 5 s run out already?), the queue is {queue:?}"),
    )?;
    check(!task.await??, "W1 got the lock Redisson holds")?;
    let queue = ctx.fair_queue(b).await?;
    check(queue == [j2], format!("only J2 should be queued after W1 gave up, the queue is {queue:?}"))?;
    ctx.send("gave-up").await?;
    ctx.recv("done").await?;
    ctx.check_fair_keys_gone(b).await?;
    Ok(())
}

/// Critical sections per rlock owner (and per Redisson thread) in part 2 of [`red_lock`].
const REDLOCK_SECTIONS: usize = 100;

/// rlock's RedLock and Redisson's `RedissonRedLock` (three `RLock`s of three Redisson clients)
/// over the same three independent servers (`REDIS_URLS`; the data lives on the first):
/// 1. Redisson's hold is its ordinary lock field on every server, which rlock's RedLock cannot
///    take (nor release); rlock's hold is one field per server, which Redisson's RedLock cannot
///    take (the Java side checks).
/// 2. 2 Redisson threads and 2 rlock owners run critical sections on the same name: a `SET NX`
///    marker (finding it set is an overlap), a GET-then-SET counter increment and a note of
///    cross-side hand-offs. The counter ends exact, 0 overlaps, hand-offs > 0, the lock key gone
///    from every server.
async fn red_lock(ctx: &Ctx, urls: &[String]) -> R<()> {
    const NAME: &str = "interop:redlock";
    check(
        urls.len() == 3,
        format!("the redlock scenario needs REDIS_URLS with three servers, got {urls:?}"),
    )?;
    let mut clients = vec![ctx.client.clone()];
    let mut servers = vec![ctx.nodes[0].clone()];
    for u in &urls[1..] {
        clients.push(Client::connect(u, ClientOptions::default()).await?);
        servers.push(redis::Client::open(u.as_str())?.get_multiplexed_async_connection().await?);
    }
    let result = red_lock_parts(ctx, &clients, &servers, NAME).await;
    for c in &clients[1..] {
        c.close();
    }
    result
}

async fn red_lock_parts(
    ctx: &Ctx,
    clients: &[Client],
    servers: &[MultiplexedConnection],
    name: &str,
) -> R<()> {
    let red = RedLock::new(name, clients)?;
    let lock_left = || async {
        let mut left = Vec::new();
        for (i, s) in servers.iter().enumerate() {
            let exists: bool = s.clone().exists(name).await?;
            if exists {
                left.push(i + 1);
            }
        }
        R::Ok(left)
    };

    // Part 1: Redisson holds, rlock looks; then rlock holds, Redisson looks.
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let owners = ctx.recv("held").await?;
    let owners: Vec<&str> = owners.split(',').collect();
    check(owners.len() == 3, format!("expected 3 Redisson owners, got {owners:?}"))?;
    for (i, (s, field)) in servers.iter().zip(&owners).enumerate() {
        let hash: std::collections::HashMap<String, String> = s.clone().hgetall(name).await?;
        let expected = std::collections::HashMap::from([((*field).to_owned(), "1".to_owned())]);
        check(
            hash == expected,
            format!("server {}: {name} is {hash:?}, expected Redisson's {field} = 1", i + 1),
        )?;
        let ttl: i64 = s.clone().pttl(name).await?;
        check(
            ttl > 20_000,
            format!("server {}: Redisson's member has a PTTL of {ttl} ms (watchdog: 30 s)", i + 1),
        )?;
    }
    let me = red.new_owner();
    check(
        !red.try_acquire(&me, Duration::ZERO, None).await?,
        "rlock's RedLock was taken while Redisson held it",
    )?;
    check(!red.is_held(&me).await?, "rlock thinks it holds Redisson's RedLock")?;
    let e = red.release(&me).await;
    check(
        matches!(&e, Err(e) if e.kind() == ErrorKind::NotHeld),
        format!("releasing Redisson's RedLock from rlock: {e:?}, expected NotHeld"),
    )?;
    ctx.send("checked").await?;
    ctx.recv("released").await?;
    let left = lock_left().await?;
    check(left.is_empty(), format!("Redisson's unlock left {name} on servers {left:?}"))?;
    tokio::time::timeout(ACQUIRE_BOUND, red.acquire(&me)).await??;
    let fields: Vec<String> = clients.iter().map(|c| c.owner(me.id()).as_str().to_owned()).collect();
    ctx.send(&format!("held {}", fields.join(","))).await?;
    ctx.recv("checked").await?;
    let released = red.release(&me).await?;
    check(
        released == Released::Unlocked,
        format!("rlock's release returned {released:?}, expected Unlocked"),
    )?;
    let left = lock_left().await?;
    check(left.is_empty(), format!("rlock's release left {name} on servers {left:?}"))?;
    ctx.send("released").await?;

    // Part 2: contention with an exact counter.
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let (red, data, owner) = (red.clone(), ctx.data.clone(), red.new_owner());
        let fields: Vec<String> = clients.iter().map(|c| c.owner(owner.id()).as_str().to_owned()).collect();
        let servers = servers.to_vec();
        tasks.push(tokio::spawn(async move {
            let mut slowest = Duration::ZERO;
            for i in 0..REDLOCK_SECTIONS {
                let start = Instant::now();
                if !red.try_acquire(&owner, ACQUIRE_BOUND, None).await? {
                    let mut holders = Vec::new();
                    for s in &servers {
                        let hash: Vec<(String, String)> = s.clone().hgetall(red.name()).await?;
                        let ttl: i64 = s.clone().pttl(red.name()).await?;
                        holders.push(format!("{hash:?} pttl {ttl}"));
                    }
                    return Err(format!(
                        "rlock's RedLock was not taken within 30 s (this owner: {fields:?}; the servers: {})",
                        holders.join(", ")
                    )
                    .into());
                }
                slowest = slowest.max(start.elapsed());
                held_section(data.clone(), red.name(), "rust", &[red.name()]).await?;
                let released = red.release(&owner).await?;
                if released != Released::Unlocked {
                    // For the report: the owner's hold count left on each server right after.
                    let mut left = Vec::new();
                    for (s, f) in servers.iter().zip(&fields) {
                        let n: Option<i64> = s.clone().hget(red.name(), f).await?;
                        left.push(n.unwrap_or(0));
                    }
                    return Err(format!(
                        "rlock's release in section {i} returned {released:?}, expected Unlocked (the owner \
                         acquired once; its hold counts on the 3 servers right after: {left:?})"
                    )
                    .into());
                }
            }
            R::Ok(slowest)
        }));
    }
    let mut slowest = Duration::ZERO;
    for task in tasks {
        slowest = slowest.max(task.await??);
    }
    ctx.recv("done").await?;
    let expected = 4 * REDLOCK_SECTIONS as i64;
    let handoffs = check_multi(ctx, name, &[name], expected).await?;
    check(handoffs > 0, "the RedLock never passed between Redisson and rlock")?;
    let left = lock_left().await?;
    check(left.is_empty(), format!("{name} is left on servers {left:?} after everyone released"))?;
    ctx.send("checked").await?;
    println!(
        "rust: redlock: each side's hold is its own layout on all 3 servers and excludes the other; \
         {expected} critical sections (2 Redisson threads, 2 rlock owners), counter exact, 0 overlaps, \
         {handoffs} cross-side hand-offs, slowest rlock acquire {slowest:?}"
    );
    Ok(())
}
