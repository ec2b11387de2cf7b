//! The Rust worker of the fault suite (`make chaos`, driver `tests/chaos/run.py`).
//!
//! Usage: `chaos <redis-url> [watchdog_ms=N] [command_timeout_ms=N] [retry_attempts=N]
//! [retry_delay_ms=N] [label=S]`. It connects, prints `{"event":"ready",...}`, then reads one
//! command per line on stdin and answers each with one JSON line on stdout (the protocol every
//! worker of tests/chaos speaks, see tests/chaos/README.md). A hold the watchdog loses is
//! reported at any time as `{"event":"lost","name":...}`.
#![allow(clippy::print_stdout)]

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;
use rlock::{
    Client, ClientOptions, ErrorKind, Lock, MultiLock, Owner, Permit, PermitExpirableSemaphore, RedLock,
    Released, Semaphore,
};
use tokio::io::AsyncBufReadExt;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One JSON line on stdout, flushed at once (the driver reads events as they happen).
fn emit(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// A JSON string literal.
fn js(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The error code shared by all workers: the core kind in upper case (`NOT_HELD`, `TIMEOUT`, ...).
fn code(kind: ErrorKind) -> String {
    kind.as_str().to_ascii_uppercase()
}

/// One write to the network-fault suite's fenced store (tests/netfaults/history.py) on
/// 127.0.0.1:`port`: the lock's name (the spec without its kind), the token and this worker's
/// label; whether the store accepted it (it refuses a token below the highest it has seen).
fn store_write(port: u16, spec: &str, token: u64, label: &str) -> std::io::Result<bool> {
    use std::io::{BufRead, BufReader};
    let key = spec.split_once('@').map_or(spec, |(_, n)| n);
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port))?;
    conn.write_all(format!("write {key} {token} {label}\n").as_bytes())?;
    let mut answer = String::new();
    BufReader::new(conn).read_line(&mut answer)?;
    Ok(answer.trim() == "accepted")
}

fn error_line(op: &str, e: &rlock::Error) -> String {
    format!(
        r#"{{"event":"error","op":{},"code":{},"message":{}}}"#,
        js(op),
        js(&code(e.kind())),
        js(e.message())
    )
}

/// A small xorshift generator: the worker needs varied moments, not cryptographic randomness.
struct Rng(u64);

impl Rng {
    fn seeded(extra: u64) -> Rng {
        let t = SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
        Rng((t ^ (u64::from(std::process::id()) << 32) ^ extra.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A random moment to cancel an acquire at: mostly within a round trip or two (before, during or
/// just after the script), sometimes while it waits for another holder.
fn cancel_delay(rng: &mut Rng) -> Duration {
    Duration::from_micros(match rng.below(10) {
        0..=2 => rng.below(300),
        3..=7 => rng.below(3_000),
        _ => rng.below(30_000),
    })
}

struct Worker {
    client: Client,
    url: String,
    label: String,
    /// Clients of the other servers of a RedLock (`red_urls`).
    others: Vec<Client>,
    me: Owner,
    locks: HashMap<String, Target>,
    /// The token each fenced lock's last acquire returned, by spec: what `write` writes with.
    tokens: HashMap<String, u64>,
    data: Option<MultiplexedConnection>,
}

/// What a lock spec names: `NAME` (the reentrant lock), `KIND@NAME` with KIND `read`, `write`,
/// `fair`, `nr` or `nrf` (that lock of the family; `nr` and `nrf` the non-reentrant locks), `sem@NAME` (one permit of semaphore NAME per acquire),
/// `pes@NAME` (one permit of permit-expirable semaphore NAME per acquire, renewed by the
/// watchdog unless given a lease) or `multi@NAME` (the multi-lock over the reentrant locks
/// `NAME:x` and `NAME:y`, taken x,y when the worker's label ends in an even digit, else y,x),
/// or `red@NAME` (the RedLock NAME over this worker's server and those of `red_urls`).
#[derive(Clone)]
enum Target {
    Lock(Lock),
    /// A kind that remembers what each acquire took (`""`, or a permit id), for `release`.
    Taking(Taker, Arc<Mutex<Vec<String>>>),
}

#[derive(Clone)]
enum Taker {
    Sem(Semaphore),
    Pes(PermitExpirableSemaphore),
    Multi(MultiLock),
    Red(RedLock),
}

/// The [`Target`] of `spec` for the worker labelled `label`.
fn family_lock(client: &Client, others: &[Client], label: &str, spec: &str) -> rlock::Result<Target> {
    let taking = |t: Taker| Ok(Target::Taking(t, Arc::default()));
    match spec.split_once('@') {
        Some(("read", name)) => Ok(Target::Lock(client.read_write_lock(name)?.read_lock())),
        Some(("write", name)) => Ok(Target::Lock(client.read_write_lock(name)?.write_lock())),
        Some(("fair", name)) => Ok(Target::Lock(client.fair_lock(name)?)),
        Some(("nr", name)) => Ok(Target::Lock(client.non_reentrant_lock(name)?)),
        Some(("nrf", name)) => Ok(Target::Lock(client.non_reentrant_fair_lock(name)?)),
        Some(("fenced", name)) => Ok(Target::Lock(client.fenced_lock(name)?.lock().clone())),
        Some(("sem", name)) => taking(Taker::Sem(client.semaphore(name)?)),
        Some(("pes", name)) => taking(Taker::Pes(client.permit_expirable_semaphore(name)?)),
        Some(("multi", name)) => {
            let (x, y) = (client.lock(&format!("{name}:x"))?, client.lock(&format!("{name}:y"))?);
            let even = label.ends_with(['0', '2', '4', '6', '8']);
            taking(Taker::Multi(MultiLock::new(if even { vec![x, y] } else { vec![y, x] })?))
        }
        Some(("red", name)) => {
            let clients: Vec<Client> =
                std::iter::once(client.clone()).chain(others.iter().cloned()).collect();
            taking(Taker::Red(RedLock::new(name, &clients)?))
        }
        _ => Ok(Target::Lock(client.lock(spec)?)),
    }
}

impl Target {
    /// Acquires for `owner` (no `wait`: as long as it takes); false when the wait ran out.
    async fn acquire(
        &self,
        owner: &Owner,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> rlock::Result<bool> {
        let (taker, taken) = match self {
            Target::Lock(l) => {
                return match (wait, lease) {
                    (None, None) => l.acquire(owner).await.map(|()| true),
                    (None, Some(d)) => l.acquire_with_lease(owner, d).await.map(|()| true),
                    (Some(w), d) => l.try_acquire(owner, w, d).await,
                }
            }
            Target::Taking(taker, taken) => (taker, taken),
        };
        let took = match (taker, wait) {
            (Taker::Sem(s), None) => s.acquire(1).await.map(|()| Some(String::new()))?,
            (Taker::Sem(s), Some(w)) => s.try_acquire(1, w).await?.then(String::new),
            (Taker::Pes(s), None) => Some(s.acquire(lease).await?.keep()),
            (Taker::Pes(s), Some(w)) => s.try_acquire(w, lease).await?.map(Permit::keep),
            (Taker::Multi(m), None) => m.acquire_guard(owner, None, lease).await?.map(|g| {
                g.keep();
                String::new()
            }),
            (Taker::Multi(m), Some(w)) => m.try_acquire(owner, w, lease).await?.then(String::new),
            (Taker::Red(r), None) => r.acquire_guard(owner, None, lease).await?.map(|g| {
                g.keep();
                String::new()
            }),
            (Taker::Red(r), Some(w)) => r.try_acquire(owner, w, lease).await?.then(String::new),
        };
        let Some(took) = took else { return Ok(false) };
        // No await since the acquire returned: what it took is remembered in the same poll.
        taken.lock().unwrap_or_else(|p| p.into_inner()).push(took);
        Ok(true)
    }

    /// Releases one hold of `owner` (a permit: one of those this worker took); true when
    /// `owner` (a permit kind: this worker) holds none any more.
    async fn release(&self, owner: &Owner) -> rlock::Result<bool> {
        let (taker, taken) = match self {
            Target::Lock(l) => return Ok(l.release(owner).await? == Released::Unlocked),
            Target::Taking(taker, taken) => (taker, taken),
        };
        let took = taken.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let took =
            took.ok_or_else(|| rlock::Error::new(ErrorKind::NotHeld, "this worker holds none of it"))?;
        match taker {
            Taker::Sem(s) => drop(s.release(1).await?),
            Taker::Pes(s) => s.release(&took).await?,
            Taker::Multi(m) => m.release(owner).await?,
            Taker::Red(r) => drop(r.release(owner).await?),
        }
        Ok(taken.lock().unwrap_or_else(|p| p.into_inner()).is_empty())
    }

    /// The lock behind `locked` and `held` (those queries are for locks only).
    fn as_lock(&self) -> rlock::Result<Lock> {
        match self {
            Target::Lock(l) => Ok(l.clone()),
            Target::Taking(..) => Err(rlock::Error::new(
                ErrorKind::InvalidArgument,
                "locked and held are for locks, not sem/pes/multi",
            )),
        }
    }
}

impl Worker {
    fn lock(&mut self, name: &str) -> rlock::Result<Target> {
        if let Some(l) = self.locks.get(name) {
            return Ok(l.clone());
        }
        let l = family_lock(&self.client, &self.others, &self.label, name)?;
        self.locks.insert(name.to_owned(), l.clone());
        Ok(l)
    }

    async fn data(&mut self) -> Result<MultiplexedConnection, BoxError> {
        if let Some(d) = &self.data {
            return Ok(d.clone());
        }
        // Patient (10 s per reply): redis-rs's default 500 ms is short for a loaded chaos run.
        let patient = redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
        let d = redis::Client::open(self.url.as_str())?
            .get_multiplexed_async_connection_with_config(&patient)
            .await?;
        self.data = Some(d.clone());
        Ok(d)
    }

    /// Runs one command line and returns its one reply line.
    async fn command(&mut self, words: &[&str]) -> Result<String, BoxError> {
        Ok(match words {
            ["acquire", name, rest @ ..] => {
                let ms =
                    |i: usize| rest.get(i).and_then(|s| s.parse::<u64>().ok()).map(Duration::from_millis);
                let (result, token) = match self.lock(name) {
                    Ok(lock) => {
                        let result = lock.acquire(&self.me, ms(0), ms(1)).await;
                        // A fenced lock's token, from its own acquire's reply.
                        let token = match &lock {
                            Target::Lock(l) => l.token_of(&self.me),
                            Target::Taking(..) => None,
                        };
                        (result, token)
                    }
                    Err(e) => (Err(e), None),
                };
                if let (Ok(true), Some(t)) = (&result, token) {
                    self.tokens.insert((*name).to_owned(), t);
                }
                match result {
                    Ok(true) => format!(
                        r#"{{"event":"acquired","name":{},"token":{}}}"#,
                        js(name),
                        token.map_or("null".to_owned(), |t| t.to_string())
                    ),
                    Ok(false) => format!(r#"{{"event":"not_acquired","name":{}}}"#, js(name)),
                    Err(e) => error_line("acquire", &e),
                }
            }
            ["release", name] => match self.lock(name) {
                Ok(lock) => match lock.release(&self.me).await {
                    Ok(free) => format!(r#"{{"event":"released","free":{free}}}"#),
                    Err(e) => error_line("release", &e),
                },
                Err(e) => error_line("release", &e),
            },
            ["locked", name] => match self.lock(name).and_then(|t| t.as_lock()) {
                Ok(lock) => match lock.is_locked().await {
                    Ok(v) => format!(r#"{{"event":"locked","value":{v}}}"#),
                    Err(e) => error_line("locked", &e),
                },
                Err(e) => error_line("locked", &e),
            },
            ["held", name] => match self.lock(name).and_then(|t| t.as_lock()) {
                Ok(lock) => match lock.is_held(&self.me).await {
                    Ok(v) => format!(r#"{{"event":"held","value":{v}}}"#),
                    Err(e) => error_line("held", &e),
                },
                Err(e) => error_line("held", &e),
            },
            ["write", spec, port] => match self.tokens.get(*spec) {
                Some(&token) => {
                    let accepted = store_write(port.parse()?, spec, token, &self.label)?;
                    format!(
                        r#"{{"event":"written","name":{},"token":{token},"accepted":{accepted}}}"#,
                        js(spec)
                    )
                }
                None => format!(
                    r#"{{"event":"error","op":"write","code":"INVALID_ARGUMENT","message":{}}}"#,
                    js(&format!("no fenced acquire of {spec} to write with"))
                ),
            },
            ["stats"] => format!(
                r#"{{"event":"stats","tracked":{},"channels":{}}}"#,
                self.client.tracked_holds(),
                self.client.waited_channels()
            ),
            ["mx", prefix, names, sections] => self.mx(prefix, names.parse()?, sections.parse()?).await?,
            ["cancel", prefix, names, count, concurrency] => {
                self.cancel(prefix, names.parse()?, count.parse()?, concurrency.parse()?).await?
            }
            _ => format!(
                r#"{{"event":"error","op":"parse","code":"UNKNOWN_COMMAND","message":{}}}"#,
                js(&words.join(" "))
            ),
        })
    }

    /// `sections` critical sections on `names` locks `<prefix>:<k>`, each checked with a marker
    /// (`SET ... NX` must succeed) and counted with a non-atomic GET-then-SET.
    async fn mx(&mut self, prefix: &str, names: usize, sections: usize) -> Result<String, BoxError> {
        let mut data = self.data().await?;
        let mut rng = Rng::seeded(7);
        let locks = (0..names)
            .map(|k| family_lock(&self.client, &self.others, &self.label, &format!("{prefix}:{k}")))
            .collect::<rlock::Result<Vec<_>>>()?;
        let (mut per_name, mut violations, mut crossings) = (vec![0u64; names], 0u64, 0u64);
        let surface = self.label.split('-').next().unwrap_or_default().to_owned();
        for _ in 0..sections {
            let k = rng.below(names as u64) as usize;
            let lock = &locks[k];
            if let Err(e) = lock.acquire(&self.me, None, None).await {
                return Ok(error_line("mx acquire", &e));
            }
            let marker = format!("{prefix}:{k}:marker");
            let set: Option<String> =
                redis::cmd("SET").arg(&marker).arg(&self.label).arg("NX").query_async(&mut data).await?;
            if set.is_none() {
                violations += 1;
            }
            let counter = format!("{prefix}:{k}:counter");
            let n: Option<u64> = data.get(&counter).await?;
            let () = data.set(&counter, n.unwrap_or(0) + 1).await?;
            let last: Option<String> = redis::cmd("SET")
                .arg(format!("{prefix}:{k}:last"))
                .arg(&self.label)
                .arg("GET")
                .query_async(&mut data)
                .await?;
            if last.is_some_and(|l| !l.starts_with(&format!("{surface}-"))) {
                crossings += 1;
            }
            if set.is_some() {
                let () = data.del(&marker).await?;
            }
            match lock.release(&self.me).await {
                Ok(true) => {}
                Ok(false) => return Ok(r#"{"event":"error","op":"mx release","code":"STILL_HELD"}"#.into()),
                Err(e) => return Ok(error_line("mx release", &e)),
            }
            per_name[k] += 1;
        }
        let per: Vec<String> = per_name.iter().map(u64::to_string).collect();
        Ok(format!(
            r#"{{"event":"mx_done","sections":{sections},"violations":{violations},"crossings":{crossings},"per_name":[{}]}}"#,
            per.join(",")
        ))
    }

    /// `count` acquires on `names` locks `<prefix>:<k>`, `concurrency` at a time, each with a
    /// fresh owner and dropped (cancelled) at a random moment; one that finished first is
    /// released, as its caller would.
    async fn cancel(
        &mut self,
        prefix: &str,
        names: usize,
        count: usize,
        concurrency: usize,
    ) -> Result<String, BoxError> {
        let locks = Arc::new(
            (0..names)
                .map(|k| family_lock(&self.client, &self.others, &self.label, &format!("{prefix}:{k}")))
                .collect::<rlock::Result<Vec<_>>>()?,
        );
        let acquired = Arc::new(AtomicU64::new(0));
        let cancelled = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for t in 0..concurrency {
            let n = count / concurrency + usize::from(t < count % concurrency);
            let (client, locks, acquired, cancelled) =
                (self.client.clone(), locks.clone(), acquired.clone(), cancelled.clone());
            tasks.push(tokio::spawn(async move {
                let mut rng = Rng::seeded(t as u64 + 1);
                for _ in 0..n {
                    let lock = &locks[rng.below(locks.len() as u64) as usize];
                    let owner = client.new_owner();
                    let delay = cancel_delay(&mut rng);
                    match tokio::time::timeout(delay, lock.acquire(&owner, None, None)).await {
                        Ok(Ok(_)) => {
                            acquired.fetch_add(1, Ordering::Relaxed);
                            lock.release(&owner).await?;
                        }
                        Ok(Err(e)) => return Err(e),
                        Err(_) => {
                            cancelled.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                Ok(())
            }));
        }
        for t in tasks {
            if let Err(e) = t.await? {
                return Ok(error_line("cancel", &e));
            }
        }
        Ok(format!(
            r#"{{"event":"cancel_done","acquired":{},"cancelled":{}}}"#,
            acquired.load(Ordering::Relaxed),
            cancelled.load(Ordering::Relaxed)
        ))
    }
}

async fn run() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: chaos <redis-url> [option=value ...]")?;
    let mut opts = ClientOptions::default();
    let mut label = "rust".to_owned();
    let mut red_urls: Vec<String> = Vec::new();
    for a in args {
        let (k, v) = a.split_once('=').ok_or("options are key=value")?;
        let ms = || v.parse::<u64>().map(Duration::from_millis);
        opts = match k {
            "watchdog_ms" => opts.with_watchdog_timeout(ms()?),
            "command_timeout_ms" => opts.with_command_timeout(Some(ms()?)),
            "retry_attempts" => opts.with_retry_attempts(v.parse()?),
            "retry_delay_ms" => opts.with_retry_delay(ms()?),
            "fair_wait_ms" => opts.with_fair_lock_wait_timeout(ms()?),
            "subscription_timeout_ms" => opts.with_subscription_timeout(ms()?),
            "replica_sync" => opts.with_replica_sync(Some(v == "1")),
            "label" => {
                label = v.to_owned();
                opts
            }
            "red_urls" => {
                red_urls = v.split(',').map(str::to_owned).collect();
                opts
            }
            other => return Err(format!("unknown option {other}").into()),
        };
    }
    let mut others = Vec::new();
    for u in &red_urls {
        others.push(Client::connect(u, opts.clone()).await?);
    }
    let client = Client::connect(&url, opts).await?;
    client.on_lost(rlock::LostFilter::all(), |e| {
        emit(&format!(r#"{{"event":"lost","name":{},"reason":{}}}"#, js(&e.name), js(e.reason.as_str())))
    });
    let me = client.new_owner();
    let mut w =
        Worker { client, url, label, others, me, locks: HashMap::new(), tokens: HashMap::new(), data: None };
    emit(&format!(r#"{{"event":"ready","surface":"rust","pid":{}}}"#, std::process::id()));
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        if words == ["exit"] {
            break;
        }
        let reply = w.command(&words).await?;
        emit(&reply);
    }
    w.client.close();
    w.others.iter().for_each(Client::close);
    emit(r#"{"event":"bye"}"#);
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // rlock's warnings on stderr, through core's sink as the CLI and the other workers get them:
    // the driver shows a worker's stderr when a case fails (an undo that could not release).
    rlock::set_log_sink(Some(Arc::new(|level, _target: &str, message: &str| {
        if level != rlock::LogLevel::Info {
            // Not eprintln!: it panics when stderr is a closed pipe.
            let _ = writeln!(std::io::stderr(), "{level:?} {message}");
        }
    })));
    if let Err(e) = run().await {
        emit(&format!(r#"{{"event":"fatal","message":{}}}"#, js(&e.to_string())));
        std::process::exit(1);
    }
}
