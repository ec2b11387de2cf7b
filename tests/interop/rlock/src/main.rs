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
//!
//! This file holds the command line, the dispatch and the bounds every scenario shares;
//! `ctx` the connections and the message lists; the other modules one primitive's scenarios
//! each (the Java side has the same split in `tests/interop/redisson`).
#![allow(clippy::print_stdout)]

mod ctx;
mod fair;
mod fenced;
mod latch;
mod lock;
mod multi_lock;
mod non_reentrant;
mod red_lock;
mod rwlock;
mod semaphore;
mod spin;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rlock::ClientOptions;

use crate::ctx::Ctx;

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
        "mutex" => lock::mutex(&ctx).await,
        "wake-to-java" => lock::wake_to_java(&ctx).await,
        "wake-to-rust" => lock::wake_to_rust(&ctx).await,
        "holds" => lock::holds(&ctx).await,
        "force" => lock::force(&ctx).await,
        "watchdog" => lock::watchdog(&ctx).await,
        "fenced" => fenced::fenced(&ctx).await,
        "semaphore" => semaphore::semaphore(&ctx).await,
        "latch" => latch::latch(&ctx).await,
        "rwlock" => rwlock::rwlock(&ctx).await,
        "fair" => fair::fair(&ctx).await,
        "spin" => spin::spin(&ctx).await,
        "non-reentrant" => non_reentrant::non_reentrant(&ctx).await,
        "permit-semaphore" => semaphore::permit_semaphore(&ctx).await,
        "multi-lock" => multi_lock::multi_lock(&ctx).await,
        "redlock" => red_lock::red_lock(&ctx, &urls).await,
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
