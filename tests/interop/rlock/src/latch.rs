//! The count-down latch (`RCountDownLatch`): the `latch` scenario.

use std::time::Duration;

use redis::AsyncCommands;
use rlock::ErrorKind;

use crate::ctx::Ctx;
use crate::{check, now_us, ACQUIRE_BOUND, R, WAKE_BOUND_US, WAKE_ROUNDS};

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
pub(crate) async fn latch(ctx: &Ctx) -> R<()> {
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
