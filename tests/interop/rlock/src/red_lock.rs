//! The RedLock (`RedissonRedLock`) over three independent servers: the `redlock` scenario.

use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::AsyncCommands;
use rlock::{Client, ClientOptions, ErrorKind, RedLock, Released};

use crate::ctx::Ctx;
use crate::multi_lock::{check_multi, held_section};
use crate::{check, ACQUIRE_BOUND, R};

/// Critical sections per rlock owner (and per Redisson thread) in part 2 of [`red_lock`].
const REDLOCK_SECTIONS: usize = 100;

/// rlock's RedLock and Redisson's `RedissonRedLock` (three `RLock`s of three Redisson clients)
/// over the same three independent servers (`REDIS_URLS`; the data lives on the first):
/// 1. Redisson's hold is its ordinary lock field on every server, which rlock's RedLock cannot
///    take (nor release); rlock's hold is one field per server, which Redisson's RedLock cannot
///    take (the Java side checks).
/// 2. 2 Redisson threads and 2 rlock owners run critical sections on the same name: a `SET NX`
///    marker (finding it set is an overlap), a GET-then-SET counter increment and a note of
///    cross-side hand-offs. The counter ends exact, 0 overlaps, hand-offs > 0, the lock key gone
///    from every server.
pub(crate) async fn red_lock(ctx: &Ctx, urls: &[String]) -> R<()> {
    const NAME: &str = "interop:redlock";
    check(
        urls.len() == 3,
        format!("the redlock scenario needs REDIS_URLS with three servers, got {urls:?}"),
    )?;
    let mut clients = vec![ctx.client.clone()];
    let mut servers = vec![ctx.nodes[0].clone()];
    for u in &urls[1..] {
        clients.push(Client::connect(u, ClientOptions::default()).await?);
        servers.push(crate::ctx::patient_conn(u).await?);
    }
    let result = red_lock_parts(ctx, &clients, &servers, NAME).await;
    for c in &clients[1..] {
        c.close();
    }
    result
}

async fn red_lock_parts(
    ctx: &Ctx,
    clients: &[Client],
    servers: &[MultiplexedConnection],
    name: &str,
) -> R<()> {
    let red = RedLock::new(name, clients)?;
    let lock_left = || async {
        let mut left = Vec::new();
        for (i, s) in servers.iter().enumerate() {
            let exists: bool = s.clone().exists(name).await?;
            if exists {
                left.push(i + 1);
            }
        }
        R::Ok(left)
    };

    // Part 1: Redisson holds, rlock looks; then rlock holds, Redisson looks.
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let owners = ctx.recv("held").await?;
    let owners: Vec<&str> = owners.split(',').collect();
    check(owners.len() == 3, format!("expected 3 Redisson owners, got {owners:?}"))?;
    for (i, (s, field)) in servers.iter().zip(&owners).enumerate() {
        let hash: std::collections::HashMap<String, String> = s.clone().hgetall(name).await?;
        let expected = std::collections::HashMap::from([((*field).to_owned(), "1".to_owned())]);
        check(
            hash == expected,
            format!("server {}: {name} is {hash:?}, expected Redisson's {field} = 1", i + 1),
        )?;
        let ttl: i64 = s.clone().pttl(name).await?;
        check(
            ttl > 20_000,
            format!("server {}: Redisson's member has a PTTL of {ttl} ms (watchdog: 30 s)", i + 1),
        )?;
    }
    let me = red.new_owner();
    check(
        !red.try_acquire(&me, Duration::ZERO, None).await?,
        "rlock's RedLock was taken while Redisson held it",
    )?;
    check(!red.is_held(&me).await?, "rlock thinks it holds Redisson's RedLock")?;
    let e = red.release(&me).await;
    check(
        matches!(&e, Err(e) if e.kind() == ErrorKind::NotHeld),
        format!("releasing Redisson's RedLock from rlock: {e:?}, expected NotHeld"),
    )?;
    ctx.send("checked").await?;
    ctx.recv("released").await?;
    let left = lock_left().await?;
    check(left.is_empty(), format!("Redisson's unlock left {name} on servers {left:?}"))?;
    tokio::time::timeout(ACQUIRE_BOUND, red.acquire(&me)).await??;
    let fields: Vec<String> = clients.iter().map(|c| c.owner(me.id()).as_str().to_owned()).collect();
    ctx.send(&format!("held {}", fields.join(","))).await?;
    ctx.recv("checked").await?;
    let released = red.release(&me).await?;
    check(
        released == Released::Unlocked,
        format!("rlock's release returned {released:?}, expected Unlocked"),
    )?;
    let left = lock_left().await?;
    check(left.is_empty(), format!("rlock's release left {name} on servers {left:?}"))?;
    ctx.send("released").await?;

    // Part 2: contention with an exact counter.
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let (red, data, owner) = (red.clone(), ctx.data.clone(), red.new_owner());
        let fields: Vec<String> = clients.iter().map(|c| c.owner(owner.id()).as_str().to_owned()).collect();
        let servers = servers.to_vec();
        tasks.push(tokio::spawn(async move {
            let mut slowest = Duration::ZERO;
            for i in 0..REDLOCK_SECTIONS {
                let start = Instant::now();
                if !red.try_acquire(&owner, ACQUIRE_BOUND, None).await? {
                    let mut holders = Vec::new();
                    for s in &servers {
                        let hash: Vec<(String, String)> = s.clone().hgetall(red.name()).await?;
                        let ttl: i64 = s.clone().pttl(red.name()).await?;
                        holders.push(format!("{hash:?} pttl {ttl}"));
                    }
                    return Err(format!(
                        "rlock's RedLock was not taken within 30 s (this owner: {fields:?}; the servers: {})",
                        holders.join(", ")
                    )
                    .into());
                }
                slowest = slowest.max(start.elapsed());
                held_section(data.clone(), red.name(), "rust", &[red.name()]).await?;
                let released = red.release(&owner).await?;
                if released != Released::Unlocked {
                    // For the report: the owner's hold count left on each server right after.
                    let mut left = Vec::new();
                    for (s, f) in servers.iter().zip(&fields) {
                        let n: Option<i64> = s.clone().hget(red.name(), f).await?;
                        left.push(n.unwrap_or(0));
                    }
                    return Err(format!(
                        "rlock's release in section {i} returned {released:?}, expected Unlocked (the owner \
                         acquired once; its hold counts on the 3 servers right after: {left:?})"
                    )
                    .into());
                }
            }
            R::Ok(slowest)
        }));
    }
    let mut slowest = Duration::ZERO;
    for task in tasks {
        slowest = slowest.max(task.await??);
    }
    ctx.recv("done").await?;
    let expected = 4 * REDLOCK_SECTIONS as i64;
    let handoffs = check_multi(ctx, name, &[name], expected).await?;
    check(handoffs > 0, "the RedLock never passed between Redisson and rlock")?;
    let left = lock_left().await?;
    check(left.is_empty(), format!("{name} is left on servers {left:?} after everyone released"))?;
    ctx.send("checked").await?;
    println!(
        "rust: redlock: each side's hold is its own layout on all 3 servers and excludes the other; \
         {expected} critical sections (2 Redisson threads, 2 rlock owners), counter exact, 0 overlaps, \
         {handoffs} cross-side hand-offs, slowest rlock acquire {slowest:?}"
    );
    Ok(())
}
