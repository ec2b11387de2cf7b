//! The fenced lock (`RFencedLock`): the `fenced` scenario.

use redis::AsyncCommands;
use rlock::Released;

use crate::ctx::{Conn, Ctx};
use crate::{check, ACQUIRE_BOUND, R};

/// Acquires per side on the fenced lock, split over two owners (two Redisson threads on the
/// Java side).
const FENCED_PER_SIDE: usize = 500;

/// 2 rlock owners and 2 Redisson threads take the fenced lock `interop:fenced` 250 times each
/// (acquire / try_acquire in turn; Java: lockAndGetToken / tryLockAndGetToken), contending. While
/// holding, each appends `<side> <token>` to `interop:fenced:tokens`, so the list is in
/// acquisition order: its 1000 tokens must strictly increase (so all are distinct), each side's
/// entries must be exactly the tokens its calls returned, and the counter must end at the last.
pub(crate) async fn fenced(ctx: &Ctx) -> R<()> {
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
