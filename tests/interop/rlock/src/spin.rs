//! The spin lock (`RSpinLock`): the `spin` scenario.

use std::time::Duration;

use redis::AsyncCommands;
use rlock::Released;

use crate::ctx::Ctx;
use crate::lock::exclusion_round;
use crate::{check, HANDSHAKE, R};

/// The spin lock across sides, where every hand-off goes through polling (nothing is published):
/// 1. 2 rlock owners and 2 Redisson threads run 100 critical sections each on one spin lock
///    (the `mutex` scenario's section): the counter ends exact, with no overlap and some
///    hand-offs across sides.
/// 2. rlock holds a spin lock twice; Redisson's spin lock and lock see it held and cannot take
///    it; a Redisson spin waiter gets it after rlock's release, then an rlock spin waiter gets it
///    after Redisson's unlock.
pub(crate) async fn spin(ctx: &Ctx) -> R<()> {
    const NAME: &str = "interop:spin";
    let handoffs = exclusion_round(ctx, NAME, || ctx.client.spin_lock(NAME)).await?;
    let mut data = ctx.data.clone();

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
        handoffs
    );
    Ok(())
}
