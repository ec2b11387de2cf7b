//! The multi-lock (`RedissonMultiLock`): the `multi-lock` scenario, and the critical section
//! over several names and its checks, which the RedLock's scenario reuses.

use std::time::{Duration, Instant};

use redis::AsyncCommands;
use rlock::MultiLock;

use crate::ctx::{Conn, Ctx};
use crate::{check, ACQUIRE_BOUND, R};

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
pub(crate) async fn multi_lock(ctx: &Ctx) -> R<()> {
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
pub(crate) async fn held_section(mut data: Conn, scope: &str, side: &str, names: &[&str]) -> R<()> {
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
pub(crate) async fn check_multi(ctx: &Ctx, scope: &str, names: &[&str], expected: i64) -> R<i64> {
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
