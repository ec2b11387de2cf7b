//! The fair lock (`RFairLock`): the `fair` scenario.

use std::time::Duration;

use redis::AsyncCommands;
use rlock::Released;

use crate::ctx::Ctx;
use crate::{check, now_us, HANDSHAKE, R};

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
pub(crate) async fn fair(ctx: &Ctx) -> R<()> {
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
