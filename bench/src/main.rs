//! `make bench`, Rust part: uncontended pairs/s at several owner counts, single-pair latency,
//! hand-off latency under contention, and watchdog scale. Prints one JSON object per line
//! (`{"bench": ..., ...}`) for bench/report.py to tabulate with the ceiling and the peers.
//!
//! Usage: `rlock-bench <section>...` with sections `pairs`, `latency`, `handoff`, `family`
//! (read pairs with 64 readers on one name, write- and fair-lock hand-offs), `semaphore`
//! (64 owners on one semaphore of 64 permits, a permit handed off among 16 waiters; plain and
//! permit-expirable), `observability` (pairs with metrics, tracing and holder records on and
//! off), `watchdog`, `redlock` (RedLock over the three independent servers of `REDIS_URLS`:
//! pairs at 1, 16, 64 owners and the hand-off among 16 waiters, beside the same figures of a
//! plain lock on the first of those servers);
//! Redis from `REDIS_URL`; `BENCH_SECONDS` (default 3) per pairs run. `BENCH_SHORT=1` (`make
//! bench-short`, run by CI) scales every figure down to about a second or less (see `Scale`):
//! it shows that each figure still runs, not how fast. `rlock-bench fixed` (not run by make
//! bench) does a fixed amount of work for instruction counts: `BENCH_OWNERS` owners x
//! `BENCH_PER_OWNER` pairs, e.g. `valgrind --tool=callgrind target/release/rlock-bench fixed`
//! (`BENCH_OBSERVABILITY=off` turns metrics and holder records off, to count their
//! instructions).
#![allow(clippy::print_stdout, missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use rlock::{Client, ClientOptions};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// How much work each figure does: the full run (`make bench`) or the short one (`BENCH_SHORT=1`).
struct Scale {
    /// Seconds of each pairs run (`BENCH_SECONDS`; default 3, short 0.5).
    secs: f64,
    /// Sequential pairs of the one-pair latency.
    latency_pairs: usize,
    /// Acquisitions of each hand-off bench.
    handoffs: usize,
    /// Alternating rounds (metrics on, off) of the observability bench, per owner count.
    observability_rounds: usize,
    /// Held locks of each watchdog figure.
    watchdog_locks: &'static [usize],
    /// The watchdog timeout of the watchdog bench (renewal period a third of it), how long the
    /// renewals of the acquisition burst get to pass, and how long renewals are then counted.
    watchdog_timeout: Duration,
    watchdog_settle: Duration,
    watchdog_window: Duration,
    short: bool,
}

impl Scale {
    fn from_env() -> Scale {
        let short = std::env::var("BENCH_SHORT").is_ok_and(|v| !v.is_empty() && v != "0");
        let secs = std::env::var("BENCH_SECONDS").ok().and_then(|s| s.parse().ok());
        if short {
            Scale {
                secs: secs.unwrap_or(0.5),
                latency_pairs: 300,
                handoffs: 100,
                observability_rounds: 1,
                watchdog_locks: &[1000],
                watchdog_timeout: Duration::from_millis(600),
                watchdog_settle: Duration::from_millis(400),
                watchdog_window: Duration::from_millis(600),
                short,
            }
        } else {
            Scale {
                secs: secs.unwrap_or(3.0),
                latency_pairs: 5000,
                handoffs: 2000,
                observability_rounds: 3,
                watchdog_locks: &[1_000, 10_000, 100_000],
                watchdog_timeout: Duration::from_secs(3),
                watchdog_settle: Duration::from_secs(2),
                watchdog_window: Duration::from_secs(6),
                short,
            }
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}

async fn pairs(url: &str, owners: usize, secs: f64, connections: usize) -> Res<f64> {
    let options = ClientOptions::default().with_command_connections(connections);
    pairs_with(url, owners, secs, options).await
}

/// Redis' own process CPU (user + system, all its threads) in seconds, from `INFO cpu`.
async fn server_cpu(conn: &mut redis::aio::MultiplexedConnection) -> Res<f64> {
    let info: String = redis::cmd("INFO").arg("cpu").query_async(conn).await?;
    let field = |name: &str| -> f64 {
        info.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse().ok()).unwrap_or(0.0)
    };
    Ok(field("used_cpu_user:") + field("used_cpu_sys:"))
}

/// [`pairs`], and how busy Redis was meanwhile: its process CPU over the run's wall time (1.0 is
/// one core; Redis runs commands on one thread). The commandstats ceiling counts only the time
/// inside commands; this also counts Redis' reading, parsing and replying, the rest of what
/// bounds it.
async fn pairs_and_server_busy(url: &str, owners: usize, secs: f64, connections: usize) -> Res<(f64, f64)> {
    let mut conn = redis::Client::open(url)?.get_multiplexed_async_connection().await?;
    let (cpu0, t0) = (server_cpu(&mut conn).await?, Instant::now());
    let rate = pairs(url, owners, secs, connections).await?;
    let busy = (server_cpu(&mut conn).await? - cpu0) / t0.elapsed().as_secs_f64();
    Ok((rate, busy))
}

async fn pairs_with(url: &str, owners: usize, secs: f64, options: ClientOptions) -> Res<f64> {
    pairs_on(url, owners, secs, options, |client, i| client.lock(&format!("bench:pairs:{i}"))).await
}

/// What metrics, tracing (no subscriber, as most users run) and holder records cost: pairs/s
/// with them on (the default) and off, alternating three rounds each (short: one) so drift hits
/// both alike.
async fn observability(url: &str, secs: f64, rounds: usize) -> Res<()> {
    for owners in [1usize, 16, 64] {
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            on.push(pairs_with(url, owners, secs, ClientOptions::default()).await?);
            let quiet = ClientOptions::default().with_metrics(false).with_holder_record(false);
            off.push(pairs_with(url, owners, secs, quiet).await?);
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (on, off) = (median(&mut on), median(&mut off));
        let cost = (off - on) / off * 100.0;
        println!("{{\"bench\":\"observability\",\"owners\":{owners},\"on_pairs_per_s\":{on:.0},\"off_pairs_per_s\":{off:.0},\"cost_pct\":{cost:.2}}}");
    }
    Ok(())
}

/// Pairs per second of `owners` owners, owner `i` taking and releasing `lock_for(client, i)`
/// for `secs` seconds.
async fn pairs_on(
    url: &str,
    owners: usize,
    secs: f64,
    options: ClientOptions,
    lock_for: impl Fn(&Client, usize) -> rlock::Result<rlock::Lock>,
) -> Res<f64> {
    let client = Client::connect(url, options).await?;
    let rate =
        pairs_of(owners, secs, |i| Ok(Contender::lock(lock_for(&client, i)?, client.new_owner()))).await?;
    client.close();
    Ok(rate)
}

/// Pairs per second of `owners` contenders (`make(i)`) taking and giving back for `secs` seconds.
async fn pairs_of(owners: usize, secs: f64, make: impl Fn(usize) -> rlock::Result<Contender>) -> Res<f64> {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Instant::now() + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for i in 0..owners {
        let c = make(i)?;
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            while Instant::now() < stop {
                (c.take)().await?;
                (c.give)().await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), rlock::Error>(())
        }));
    }
    let start = Instant::now();
    for t in tasks {
        t.await??;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64())
}

async fn latency(url: &str, n: usize) -> Res<(f64, f64)> {
    let client = Client::connect(url, ClientOptions::default()).await?;
    let lock = client.lock("bench:latency")?;
    let owner = client.new_owner();
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        lock.acquire(&owner).await?;
        lock.release(&owner).await?;
        samples.push(t.elapsed());
    }
    samples.sort();
    client.close();
    Ok((percentile(&samples, 0.5), percentile(&samples, 0.99)))
}

/// Which lock a hand-off bench contends for.
#[derive(Clone, Copy)]
enum Kind {
    Reentrant,
    Write,
    Fair,
}

fn lock_of(client: &Client, kind: Kind) -> rlock::Result<rlock::Lock> {
    match kind {
        Kind::Reentrant => client.lock("bench:handoff"),
        Kind::Write => Ok(client.read_write_lock("bench:handoff:rw")?.write_lock()),
        Kind::Fair => client.fair_lock("bench:handoff:fair"),
    }
}

/// One contender of a hand-off bench: how it takes and gives back the contended thing (a lock
/// for an owner, a semaphore permit).
struct Contender {
    take: Box<dyn Fn() -> BoxFuture<'static, rlock::Result<()>> + Send + Sync>,
    give: Box<dyn Fn() -> BoxFuture<'static, rlock::Result<()>> + Send + Sync>,
}

impl Contender {
    /// Owner `owner` taking and releasing `lock`.
    fn lock(lock: rlock::Lock, owner: rlock::Owner) -> Contender {
        let (l2, o2) = (lock.clone(), owner.clone());
        Contender {
            take: Box::new(move || {
                let (l, o) = (lock.clone(), owner.clone());
                Box::pin(async move { l.acquire(&o).await })
            }),
            give: Box::new(move || {
                let (l, o) = (l2.clone(), o2.clone());
                Box::pin(async move { l.release(&o).await.map(drop) })
            }),
        }
    }

    /// One permit of `sem`.
    fn permit(sem: rlock::Semaphore) -> Contender {
        let s2 = sem.clone();
        Contender {
            take: Box::new(move || {
                let s = sem.clone();
                Box::pin(async move { s.acquire(1).await })
            }),
            give: Box::new(move || {
                let s = s2.clone();
                Box::pin(async move { s.release(1).await.map(drop) })
            }),
        }
    }

    /// One permit of the permit-expirable `sem` (watchdog-renewed), released by its id.
    fn expirable_permit(sem: rlock::PermitExpirableSemaphore) -> Contender {
        let held = Arc::new(std::sync::Mutex::new(None::<String>));
        let (s2, h2) = (sem.clone(), held.clone());
        Contender {
            take: Box::new(move || {
                let (s, h) = (sem.clone(), held.clone());
                Box::pin(async move {
                    let id = s.acquire(None).await?.keep();
                    *h.lock().unwrap_or_else(|p| p.into_inner()) = Some(id);
                    Ok(())
                })
            }),
            give: Box::new(move || {
                let (s, h) = (s2.clone(), h2.clone());
                Box::pin(async move {
                    let id = h.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or_default();
                    s.release(&id).await
                })
            }),
        }
    }
}

fn lock_contender(client: &Client, kind: Kind) -> rlock::Result<Contender> {
    Ok(Contender::lock(lock_of(client, kind)?, client.new_owner()))
}

/// `waiters` on one lock; see [`handoff_on`].
async fn handoff(url: &str, kind: Kind, waiters: usize, rounds: usize) -> Res<(f64, f64)> {
    let client = Client::connect(url, ClientOptions::default()).await?;
    let got = handoff_on(waiters, rounds, |_| lock_contender(&client, kind)).await?;
    // The others were stopped mid-wait or holding: free the lock for the next bench.
    let _ = lock_of(&client, kind)?.force_unlock().await;
    client.close();
    Ok(got)
}

/// `waiters` contenders for one thing (contender `i` made by `make(i)`), until `rounds`
/// acquisitions in all; each hand-off is measured from the moment the previous holder called
/// release to the moment another contender's acquire returned. p50 and p99 in microseconds.
async fn handoff_on(
    waiters: usize,
    rounds: usize,
    make: impl Fn(usize) -> rlock::Result<Contender>,
) -> Res<(f64, f64)> {
    let released_at = Arc::new(std::sync::Mutex::new(None::<(Instant, usize)>));
    let samples = Arc::new(std::sync::Mutex::new(Vec::new()));
    let taken = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for me in 0..waiters {
        let c = make(me)?;
        let (released_at, samples, taken) = (released_at.clone(), samples.clone(), taken.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                (c.take)().await?;
                let now = Instant::now();
                // Only hand-offs to another contender count (a releaser re-taking is not one).
                if let Some((r, by)) = released_at.lock().map(|mut g| g.take()).unwrap_or(None) {
                    if by != me {
                        if let Ok(mut s) = samples.lock() {
                            s.push(now.saturating_duration_since(r));
                        }
                    }
                }
                taken.fetch_add(1, Ordering::Relaxed);
                // Hold briefly so the others are waiting when we release.
                tokio::time::sleep(Duration::from_micros(200)).await;
                // Stamped before the call: a woken waiter often holds the lock before the
                // release's own reply is back, so "release returned" would read as zero.
                if let Ok(mut g) = released_at.lock() {
                    *g = Some((Instant::now(), me));
                }
                (c.give)().await?;
                // Work outside the lock, so a waiter (not the releaser barging back) takes it.
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            #[allow(unreachable_code)]
            Ok::<(), rlock::Error>(())
        }));
    }
    // Stop the others once the rounds are done: they may be waiting for what nobody gives.
    while taken.load(Ordering::Relaxed) < rounds as u64 {
        // A contender's loop only ends on an error: fail with it rather than wait for rounds
        // that may never come.
        if let Some(i) = tasks.iter().position(|t| t.is_finished()) {
            let failed = tasks.swap_remove(i);
            for t in &tasks {
                t.abort();
            }
            failed.await??;
            return Err("a hand-off contender stopped".into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for t in &tasks {
        t.abort();
    }
    let mut s = samples.lock().map(|g| g.clone()).unwrap_or_default();
    s.sort();
    Ok((percentile(&s, 0.5), percentile(&s, 0.99)))
}

impl Contender {
    /// Owner `owner` taking and releasing the RedLock `red`.
    fn red_lock(red: rlock::RedLock, owner: rlock::Owner) -> Contender {
        let (r2, o2) = (red.clone(), owner.clone());
        Contender {
            take: Box::new(move || {
                let (r, o) = (red.clone(), owner.clone());
                Box::pin(async move { r.acquire(&o).await })
            }),
            give: Box::new(move || {
                let (r, o) = (r2.clone(), o2.clone());
                Box::pin(async move { r.release(&o).await.map(drop) })
            }),
        }
    }
}

/// RedLock over the three servers of `urls` (one client each) against a plain lock on the
/// first of them: pairs/s with 1, 16 and 64 owners (each owner its own name) and the hand-off
/// among 16 waiters of one name. One JSON row per figure.
async fn red_lock(urls: &[String], secs: f64, handoffs: usize) -> Res<()> {
    let mut clients = Vec::new();
    for u in urls {
        clients.push(Client::connect(u, ClientOptions::default()).await?);
    }
    let n = clients.len();
    let red_label = format!("rust (RedLock, {n} servers)");
    let one_label = format!("rust (lock, 1 of the {n} servers)");
    for owners in [1usize, 16, 64] {
        let rate = pairs_of(owners, secs, |i| {
            let red = rlock::RedLock::new(&format!("bench:redlock:pairs:{i}"), &clients)?;
            let owner = red.new_owner();
            Ok(Contender::red_lock(red, owner))
        })
        .await?;
        println!("{{\"bench\":\"pairs\",\"surface\":\"{red_label}\",\"owners\":{owners},\"pairs_per_s\":{rate:.0}}}");
        let rate = pairs_of(owners, secs, |i| {
            Ok(Contender::lock(clients[0].lock(&format!("bench:redlock:one:{i}"))?, clients[0].new_owner()))
        })
        .await?;
        println!("{{\"bench\":\"pairs\",\"surface\":\"{one_label}\",\"owners\":{owners},\"pairs_per_s\":{rate:.0}}}");
    }
    let red = rlock::RedLock::new("bench:redlock:handoff", &clients)?;
    let (p50, p99) =
        handoff_on(16, handoffs, |_| Ok(Contender::red_lock(red.clone(), red.new_owner()))).await?;
    println!("{{\"bench\":\"handoff\",\"surface\":\"{red_label}\",\"waiters\":16,\"p50_us\":{p50:.0},\"p99_us\":{p99:.0}}}");
    // The contenders were stopped mid-wait or holding: free every member for the next figure.
    for m in red.members() {
        let _ = m.force_unlock().await;
    }
    let one = clients[0].lock("bench:redlock:one:handoff")?;
    let (p50, p99) =
        handoff_on(16, handoffs, |_| Ok(Contender::lock(one.clone(), clients[0].new_owner()))).await?;
    println!("{{\"bench\":\"handoff\",\"surface\":\"{one_label}\",\"waiters\":16,\"p50_us\":{p50:.0},\"p99_us\":{p99:.0}}}");
    let _ = one.force_unlock().await;
    for c in &clients {
        c.close();
    }
    Ok(())
}

/// A name no earlier run used (semaphores keep their counts between runs).
fn fresh_name(what: &str) -> String {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("bench:{what}:{t}")
}

/// 64 owners taking and giving back one permit each of one semaphore of 64 permits (pairs/s),
/// and a permit handed off among 16 waiters of a 1-permit semaphore; for the semaphore and the
/// permit-expirable semaphore (permits renewed by the watchdog). `handoffs` acquisitions each.
async fn semaphores(url: &str, secs: f64, handoffs: usize) -> Res<()> {
    let client = Client::connect(url, ClientOptions::default()).await?;
    for expirable in [false, true] {
        let label = if expirable { "rust (permit semaphore)" } else { "rust (semaphore)" };
        let (rate, (p50, p99)) = if expirable {
            let (many, one) = (fresh_name("pes"), fresh_name("pes"));
            let (many, one) =
                (client.permit_expirable_semaphore(&many)?, client.permit_expirable_semaphore(&one)?);
            many.try_set_permits(64, None).await?;
            one.try_set_permits(1, None).await?;
            let rate = pairs_of(64, secs, |_| Ok(Contender::expirable_permit(many.clone()))).await?;
            (rate, handoff_on(16, handoffs, |_| Ok(Contender::expirable_permit(one.clone()))).await?)
        } else {
            let (many, one) = (client.semaphore(&fresh_name("sem"))?, client.semaphore(&fresh_name("sem"))?);
            many.try_set_permits(64, None).await?;
            one.try_set_permits(1, None).await?;
            let rate = pairs_of(64, secs, |_| Ok(Contender::permit(many.clone()))).await?;
            (rate, handoff_on(16, handoffs, |_| Ok(Contender::permit(one.clone()))).await?)
        };
        println!("{{\"bench\":\"pairs\",\"surface\":\"{label}\",\"owners\":64,\"pairs_per_s\":{rate:.0}}}");
        println!("{{\"bench\":\"handoff\",\"surface\":\"{label}\",\"waiters\":16,\"p50_us\":{p50:.0},\"p99_us\":{p99:.0}}}");
    }
    client.close();
    Ok(())
}

/// A fixed amount of work for instruction counts (callgrind): `owners` owners, `per_owner`
/// pairs each. Returns the elapsed seconds.
async fn fixed(url: &str, owners: usize, per_owner: usize) -> Res<f64> {
    // BENCH_OBSERVABILITY=off: metrics and holder records off, to count what they cost.
    let off = std::env::var("BENCH_OBSERVABILITY").is_ok_and(|v| v == "off");
    let options = ClientOptions::default().with_metrics(!off).with_holder_record(!off);
    let client = Client::connect(url, options).await?;
    let mut tasks = Vec::new();
    let start = Instant::now();
    for i in 0..owners {
        let lock = client.lock(&format!("bench:fixed:{i}"))?;
        let owner = client.new_owner();
        tasks.push(tokio::spawn(async move {
            for _ in 0..per_owner {
                lock.acquire(&owner).await?;
                lock.release(&owner).await?;
            }
            Ok::<(), rlock::Error>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let el = start.elapsed().as_secs_f64();
    client.close();
    Ok(el)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| l.to_owned()))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn cpu_secs() -> f64 {
    // utime + stime of this process, from /proc (clock ticks of 100 Hz on Linux).
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1.to_owned();
            let f: Vec<&str> = rest.split_whitespace().collect();
            let u: f64 = f.get(11)?.parse().ok()?;
            let k: f64 = f.get(12)?.parse().ok()?;
            Some((u + k) / 100.0)
        })
        .unwrap_or(0.0)
}

async fn evalsha_calls(conn: &mut redis::aio::MultiplexedConnection) -> Res<u64> {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(conn).await?;
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0))
}

/// Watchdog scale: `locks` held by one client, on names of distinct hash tags (`one_tag`
/// false: one renewal call per lock per period, as a script never spans tags) or of one tag
/// (`{bench}:wd:i`: calls of up to `renewal_batch_size` locks, as every renewal was batched
/// before issue 41 on one server).
async fn watchdog(url: &str, locks: usize, one_tag: bool, scale: &Scale) -> Res<String> {
    let timeout = scale.watchdog_timeout; // renewal period a third of it: 1 s (short: 200 ms)
    let rss0 = rss_kib();
    let client = Client::connect(url, ClientOptions::default().with_watchdog_timeout(timeout)).await?;
    let owner = client.new_owner();
    let handles: Vec<_> = (0..locks)
        .map(|i| client.lock(&if one_tag { format!("{{bench}}:wd:{i}") } else { format!("bench:wd:{i}") }))
        .collect::<Result<_, _>>()?;
    for chunk in handles.chunks(1000) {
        futures_util::future::try_join_all(chunk.iter().map(|l| l.acquire(&owner))).await?;
    }
    let rss1 = rss_kib();
    let mut conn = redis::Client::open(url)?.get_multiplexed_async_connection().await?;
    // Let the first renewals of the acquisition burst pass, then measure whole periods.
    tokio::time::sleep(scale.watchdog_settle).await;
    let (c0, cpu0, t0) = (evalsha_calls(&mut conn).await?, cpu_secs(), Instant::now());
    tokio::time::sleep(scale.watchdog_window).await;
    let (c1, cpu1, el) = (evalsha_calls(&mut conn).await?, cpu_secs(), t0.elapsed().as_secs_f64());
    let periods = el / (timeout.as_secs_f64() / 3.0);
    let calls_per_period = (c1 - c0) as f64 / periods;
    // The short run's row says which timeout it ran with (the report's table assumes 3 s).
    let timeout_ms =
        if scale.short { format!(",\"timeout_ms\":{}", timeout.as_millis()) } else { String::new() };
    let out = format!(
        "{{\"bench\":\"watchdog\",\"locks\":{locks},\"names\":\"{}\",\"calls_per_period\":{calls_per_period:.1},\"calls_per_100_locks\":{:.2},\"cpu_pct\":{:.2},\"rss_bytes_per_lock\":{:.0}{timeout_ms}}}",
        if one_tag { "one tag" } else { "distinct tags" },
        calls_per_period * 100.0 / locks as f64,
        (cpu1 - cpu0) / el * 100.0,
        (rss1.saturating_sub(rss0)) as f64 * 1024.0 / locks as f64
    );
    for chunk in handles.chunks(1000) {
        futures_util::future::try_join_all(chunk.iter().map(|l| l.release(&owner))).await?;
    }
    client.close();
    Ok(out)
}

fn main() -> Res<()> {
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into());
    let scale = Scale::from_env();
    let secs = scale.secs;
    // The design note measured a current-thread runtime as fastest and leanest for this client.
    // BENCH_WORKERS=N (not used by make bench) runs on a multi-thread runtime of N workers.
    let workers: usize = std::env::var("BENCH_WORKERS").ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    let rt = if workers > 0 {
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build()?
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?
    };
    let sections: Vec<String> = std::env::args().skip(1).collect();
    let want = |s: &str| sections.is_empty() || sections.iter().any(|x| x == s);
    rt.block_on(async {
        if want("pairs") {
            for owners in [1usize, 16, 64, 256] {
                let (rate, busy) = pairs_and_server_busy(&url, owners, secs, 1).await?;
                println!("{{\"bench\":\"pairs\",\"surface\":\"rust\",\"owners\":{owners},\"pairs_per_s\":{rate:.0},\"server_busy\":{busy:.3}}}");
            }
        }
        // The same with `command_connections = 2` (core option; Rust surface only).
        if want("pairs2") {
            for owners in [16usize, 64, 256] {
                let (rate, busy) = pairs_and_server_busy(&url, owners, secs, 2).await?;
                println!("{{\"bench\":\"pairs\",\"surface\":\"rust (2 connections)\",\"owners\":{owners},\"pairs_per_s\":{rate:.0},\"server_busy\":{busy:.3}}}");
            }
        }
        if want("latency") {
            let (p50, p99) = latency(&url, scale.latency_pairs).await?;
            println!("{{\"bench\":\"latency\",\"surface\":\"rust\",\"p50_us\":{p50:.0},\"p99_us\":{p99:.0}}}");
        }
        if want("handoff") {
            let (p50, p99) = handoff(&url, Kind::Reentrant, 16, scale.handoffs).await?;
            println!("{{\"bench\":\"handoff\",\"surface\":\"rust\",\"waiters\":16,\"p50_us\":{p50:.0},\"p99_us\":{p99:.0}}}");
        }
        // The lock family beside the reentrant lock.
        if want("family") {
            // 64 owners taking read holds of one read-write lock at once (readers share it).
            let rate =
                pairs_on(&url, 64, secs, ClientOptions::default(), |client, _| Ok(client.read_write_lock("bench:read")?.read_lock())).await?;
            println!("{{\"bench\":\"pairs\",\"surface\":\"rust (read lock, one name)\",\"owners\":64,\"pairs_per_s\":{rate:.0}}}");
            for (kind, label) in [(Kind::Write, "rust (write lock)"), (Kind::Fair, "rust (fair lock)")] {
                let (p50, p99) = handoff(&url, kind, 16, scale.handoffs).await?;
                println!("{{\"bench\":\"handoff\",\"surface\":\"{label}\",\"waiters\":16,\"p50_us\":{p50:.0},\"p99_us\":{p99:.0}}}");
            }
        }
        // Semaphores: pairs with 64 owners, permit hand-off with 16 waiters.
        if want("semaphore") {
            semaphores(&url, secs, scale.handoffs).await?;
        }
        // Metrics, tracing and holder records on (the default) against off.
        if want("observability") {
            observability(&url, secs, scale.observability_rounds).await?;
        }
        // Not part of make bench: fixed work for profiling (BENCH_OWNERS x BENCH_PER_OWNER pairs).
        if sections.iter().any(|x| x == "fixed") {
            let env = |k: &str, d: usize| std::env::var(k).ok().and_then(|s| s.parse().ok()).unwrap_or(d);
            let (owners, per) = (env("BENCH_OWNERS", 64), env("BENCH_PER_OWNER", 500));
            let el = fixed(&url, owners, per).await?;
            let n = owners * per;
            println!("{{\"bench\":\"fixed\",\"owners\":{owners},\"pairs\":{n},\"secs\":{el:.3},\"pairs_per_s\":{:.0}}}", n as f64 / el);
            return Ok(());
        }
        // RedLock over three independent servers (REDIS_URLS), beside a plain lock on one.
        // Only when asked: it needs REDIS_URLS.
        if sections.iter().any(|x| x == "redlock") {
            let urls: Vec<String> = std::env::var("REDIS_URLS")
                .map_err(|_| "the redlock section needs REDIS_URLS (three independent servers)")?
                .split(',')
                .map(str::to_owned)
                .collect();
            red_lock(&urls, secs, scale.handoffs).await?;
        }
        if want("watchdog") {
            for &n in scale.watchdog_locks {
                for one_tag in [false, true] {
                    println!("{}", watchdog(&url, n, one_tag, &scale).await?);
                }
            }
        }
        Ok(())
    })
}
