//! The non-reentrant locks (Redisson 4.4's `getNonReentrantLock`, `getNonReentrantFairLock`):
//! the `non-reentrant` scenario, run against Redisson 4.x only (3.x has neither).

use std::time::Duration;

use redis::AsyncCommands;
use rlock::{ErrorKind, Released};

use crate::ctx::Ctx;
use crate::lock::exclusion_round;
use crate::{check, HANDSHAKE, R};

/// The non-reentrant locks across sides:
/// 1. 2 rlock owners and 2 Redisson threads run 100 critical sections each on one non-reentrant
///    lock (the `mutex` scenario's section): the counter ends exact, with no overlap and some
///    hand-offs across sides.
/// 2. rlock holds a non-reentrant lock and its re-entry is refused with nothing changed;
///    Redisson's non-reentrant lock and lock see it held and cannot take it.
/// 3. Redisson holds a non-reentrant fair lock and its own re-entry is refused: rlock sees one
///    hold level, cannot take it, queues, and gets it on Redisson's unlock; its own re-entry is
///    refused there too.
pub(crate) async fn non_reentrant(ctx: &Ctx) -> R<()> {
    const NAME: &str = "interop:nr";
    let handoffs = exclusion_round(ctx, NAME, || ctx.client.non_reentrant_lock(NAME)).await?;
    let mut data = ctx.data.clone();

    // Part 2: rlock's hold, its re-entry refused, seen by Redisson.
    let held = "interop:nr:held";
    let lock = ctx.client.non_reentrant_lock(held)?;
    let me = ctx.client.new_owner();
    lock.acquire(&me).await?;
    let again = lock.acquire(&me).await;
    check(
        matches!(&again, Err(e) if e.kind() == ErrorKind::WouldDeadlock),
        format!("rlock's re-entry of its non-reentrant lock answered {again:?}"),
    )?;
    let count: Option<i64> = data.hget(held, me.as_str()).await?;
    check(count == Some(1), format!("{held} hold count {count:?} after a refused re-entry"))?;
    ctx.send("held").await?;
    ctx.recv("checked").await?;
    check(lock.release(&me).await? == Released::Unlocked, "the release should unlock")?;

    // Part 3: Redisson's fair hold, its re-entry refused; rlock queues and gets it.
    let fair = "interop:nr:fair";
    ctx.recv("java-holds").await?;
    let lock = ctx.client.non_reentrant_fair_lock(fair)?;
    let waiter = ctx.client.new_owner();
    let fields: Vec<(String, i64)> = data.hgetall(fair).await?;
    check(
        fields.len() == 1 && fields[0].1 == 1,
        format!("{fair} should be held once by Redisson after its refused re-entry: {fields:?}"),
    )?;
    check(!lock.try_acquire(&waiter, Duration::ZERO, None).await?, "rlock took the lock Redisson holds")?;
    ctx.send("rust-refused").await?;
    let (l, w) = (lock.clone(), waiter.clone());
    let waiting = tokio::spawn(async move { l.acquire(&w).await });
    let queue = format!("redisson_lock_queue:{{{fair}}}");
    let mut queued = false;
    let until = tokio::time::Instant::now() + HANDSHAKE;
    while !queued && tokio::time::Instant::now() < until {
        let q: Vec<String> = data.lrange(&queue, 0, -1).await?;
        queued = q.iter().any(|o| o == waiter.as_str());
        if !queued {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    check(queued, format!("rlock's waiter never queued on {fair}"))?;
    ctx.send("rust-waits").await?;
    tokio::time::timeout(HANDSHAKE, waiting).await???;
    let again = lock.acquire(&waiter).await;
    check(
        matches!(&again, Err(e) if e.kind() == ErrorKind::WouldDeadlock),
        format!("rlock's re-entry of its non-reentrant fair lock answered {again:?}"),
    )?;
    ctx.send("rust-holds").await?;
    ctx.recv("ok").await?;
    check(lock.release(&waiter).await? == Released::Unlocked, "the waiter's release should unlock")?;
    for name in [held, fair] {
        let exists: bool = data.exists(name).await?;
        check(!exists, format!("{name} is still locked after everyone released"))?;
    }
    println!(
        "rust: non-reentrant: 400 critical sections, counter exact, 0 overlaps, {} cross-side hand-offs; \
         each side's re-entry refused with one hold level left, rlock's hold seen by Redisson, Redisson's fair hold handed to rlock's waiter",
        handoffs
    );
    Ok(())
}
