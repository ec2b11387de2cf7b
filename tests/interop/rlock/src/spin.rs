//! The spin lock (`RSpinLock`): the `spin` scenario.

use std::time::Duration;

use redis::AsyncCommands;
use rlock::Released;

use crate::ctx::Ctx;
use crate::lock::critical_section;
use crate::{check, ACQUIRE_BOUND, HANDSHAKE, R};

/// The spin lock across sides, where every hand-off goes through polling (nothing is published):
/// 1. 2 rlock owners and 2 Redisson threads run 100 critical sections each on one spin lock
///    (the `mutex` scenario's section): the counter ends exact, with no overlap and some
///    hand-offs across sides.
/// 2. rlock holds a spin lock twice; Redisson's spin lock and lock see it held and cannot take
///    it; a Redisson spin waiter gets it after rlock's release, then an rlock spin waiter gets it
///    after Redisson's unlock.
pub(crate) async fn spin(ctx: &Ctx) -> R<()> {
    const NAME: &str = "interop:spin";
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let (owner, lock, data) = (ctx.client.new_owner(), ctx.client.spin_lock(NAME)?, ctx.data.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..100 {
                tokio::time::timeout(ACQUIRE_BOUND, lock.acquire(&owner)).await??;
                critical_section(data.clone(), NAME, "rust", NAME).await?;
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
    let violations: Option<i64> = data.get(format!("{NAME}:violations")).await?;
    check(violations.is_none(), format!("{violations:?} critical sections overlapped"))?;
    let n: Option<i64> = data.get(format!("{NAME}:counter")).await?;
    check(n == Some(400), format!("{NAME}:counter is {n:?}, expected 400"))?;
    let exists: bool = data.exists(NAME).await?;
    check(!exists, format!("{NAME} is still locked after everyone released"))?;
    let handoffs: Option<i64> = data.get(format!("{NAME}:handoffs")).await?;
    check(handoffs.unwrap_or(0) > 0, "the spin lock never passed between Redisson and rlock")?;

    // Part 2: the same hash both ways, hand-offs by polling.
    let held = "interop:spin:held";
    let lock = ctx.client.spin_lock(held)?;
    let (me, waiter) = (ctx.client.new_owner(), ctx.client.new_owner());
    lock.acquire(&me).await?;
    lock.acquire(&me).await?;
    ctx.send("held").await?;
    ctx.recv("checked").await?;
    check(lock.release(&me).await? == Released::StillHeld, "the first release should keep the hold")?;
    check(lock.release(&me).await? == Released::Unlocked, "the second release should unlock")?;
    ctx.recv("java-holds").await?;
    check(!lock.try_acquire(&waiter, Duration::ZERO, None).await?, "rlock took the lock Redisson holds")?;
    let (l, w) = (lock.clone(), waiter.clone());
    let waiting = tokio::spawn(async move { l.acquire(&w).await });
    ctx.send("rust-waits").await?;
    tokio::time::timeout(HANDSHAKE, waiting).await???;
    ctx.send("rust-holds").await?;
    ctx.recv("ok").await?;
    check(lock.release(&waiter).await? == Released::Unlocked, "the waiter's release should unlock")?;
    let exists: bool = data.exists(held).await?;
    check(!exists, format!("{held} is still locked after everyone released"))?;
    println!(
        "rust: spin: 400 critical sections, counter exact, 0 overlaps, {} cross-side hand-offs by polling; \
         holds seen and handed over both ways",
        handoffs.unwrap_or(0)
    );
    Ok(())
}
