//! The read-write lock (`RReadWriteLock`): the `rwlock` scenario.

use std::time::Duration;

use redis::AsyncCommands;
use rlock::{ErrorKind, Released};

use crate::ctx::{Conn, Ctx};
use crate::lock::{hold_and_wake_java, wait_for_java};
use crate::{check, ACQUIRE_BOUND, R};

/// The channel both sides of a read-write lock wait on.
fn rwlock_channel(name: &str) -> String {
    format!("redisson_rwlock:{{{name}}}")
}

/// Write and read sections per worker in the mixed part of [`rwlock`].
const RW_WRITES: usize = 60;
const RW_READS: usize = 60;

/// The read-write lock across sides:
/// 1. Redisson and rlock readers hold at once, each joining the other's read hold, while writers
///    of both sides are kept out; an rlock reader asking for the write lock gets WouldDeadlock.
/// 2. 2 Redisson threads and 2 rlock owners each run 60 write and 60 read sections on one lock.
///    A write section needs the marker free (SET NX) and no reader inside, and increments a
///    counter with GET then SET; a read section counts itself in and must not see the marker.
///    The counter ends exact, with 0 violations.
/// 3. A Redisson writer's unlock wakes an rlock write waiter within 100 ms, and 4. the other way
///    round (5 measured rounds each, after a warm-up round).
pub(crate) async fn rwlock(ctx: &Ctx) -> R<()> {
    // Part 1: overlapping readers.
    let name = "interop:rwlock:shared";
    let rw = ctx.client.read_write_lock(name)?;
    let (read, write) = (rw.read_lock(), rw.write_lock());
    let java_reader = ctx.recv("reading").await?;
    let reader = ctx.client.new_owner();
    check(
        read.try_acquire(&reader, Duration::ZERO, None).await?,
        "an rlock reader could not join Redisson's read hold",
    )?;
    let fields: std::collections::HashMap<String, String> = ctx.fields(name).await?.into_iter().collect();
    check(
        fields.len() == 3
            && fields.get("mode").map(String::as_str) == Some("read")
            && fields.get(&java_reader).map(String::as_str) == Some("1")
            && fields.get(reader.as_str()).map(String::as_str) == Some("1"),
        format!("both readers should hold, the hash is {fields:?}"),
    )?;
    let writer = ctx.client.new_owner();
    check(
        !write.try_acquire(&writer, Duration::ZERO, None).await?,
        "an rlock writer got in while two readers held",
    )?;
    match write.try_acquire(&reader, Duration::ZERO, None).await {
        Err(e) if e.kind() == ErrorKind::WouldDeadlock => {}
        other => {
            return Err(format!("a reader's write acquire gave {other:?}, expected WouldDeadlock").into())
        }
    }
    ctx.send(&format!("reading {}", reader.as_str())).await?;
    ctx.recv("released").await?;
    let fields: std::collections::HashMap<String, String> = ctx.fields(name).await?.into_iter().collect();
    check(
        fields.len() == 2 && fields.get(reader.as_str()).map(String::as_str) == Some("1"),
        format!("only rlock's read hold should be left, the hash is {fields:?}"),
    )?;
    check(read.is_locked().await? && read.hold_count(&reader).await? == 1, "rlock's read hold is gone")?;
    ctx.send("alone").await?;
    ctx.recv("reading").await?;
    check(
        read.release(&reader).await? == Released::StillLocked,
        "releasing rlock's read hold while Redisson's reads should leave the lock locked",
    )?;
    ctx.send("released").await?;
    ctx.recv("free").await?;
    check(!read.is_locked().await? && !write.is_locked().await?, "the last read unlock left the lock held")?;

    // Part 2: mixed readers and writers on both sides.
    let mixed = "interop:rwlock:mixed";
    ctx.send("ready").await?;
    ctx.recv("ready").await?;
    let mut tasks = Vec::new();
    for t in 0..2 {
        let owner = ctx.client.new_owner();
        let rw = ctx.client.read_write_lock(mixed)?;
        let data = ctx.data.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..RW_WRITES + RW_READS {
                if (i + t) % 2 == 0 {
                    let lock = rw.write_lock();
                    tokio::time::timeout(ACQUIRE_BOUND, lock.acquire(&owner)).await??;
                    write_section(data.clone(), mixed, "rust").await?;
                    check(
                        lock.release(&owner).await? == Released::Unlocked,
                        "a write release should unlock",
                    )?;
                } else {
                    let lock = rw.read_lock();
                    tokio::time::timeout(ACQUIRE_BOUND, lock.acquire(&owner)).await??;
                    read_section(data.clone(), mixed).await?;
                    let released = lock.release(&owner).await?;
                    check(
                        matches!(released, Released::Unlocked | Released::StillLocked),
                        format!("a read release gave {released:?}"),
                    )?;
                }
            }
            R::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    ctx.recv("done").await?;
    let mut data = ctx.data.clone();
    let violations: Option<i64> = data.get(format!("{mixed}:violations")).await?;
    check(violations.is_none(), format!("{violations:?} sections overlapped a writer"))?;
    let counter: Option<i64> = data.get(format!("{mixed}:counter")).await?;
    let expected = (4 * RW_WRITES) as i64;
    check(counter == Some(expected), format!("{mixed}:counter is {counter:?}, expected {expected}"))?;
    let readers: Option<i64> = data.get(format!("{mixed}:readers")).await?;
    check(readers.unwrap_or(0) == 0, format!("{readers:?} readers still inside"))?;
    let exists: bool = data.exists(mixed).await?;
    check(!exists, format!("{mixed} is still locked after everyone released"))?;
    let shared: Option<i64> = data.get(format!("{mixed}:shared")).await?;
    println!(
        "rust: rwlock: {} write and {} read sections, counter exact, 0 violations, {} read sections \
         shared with another reader",
        4 * RW_WRITES,
        4 * RW_READS,
        shared.unwrap_or(0)
    );
    ctx.send("checked").await?;

    // Part 3: a Redisson writer's unlock wakes an rlock write waiter.
    let latencies = wait_for_java(ctx, "an rlock write waiter", |round| {
        Ok(ctx.client.read_write_lock(&format!("interop:rwlock:to-rust:{round}"))?.write_lock())
    })
    .await?;
    println!(
        "rust: rwlock: rlock write waiter held the lock {latencies:?} us after Redisson's write unlock began"
    );

    // Part 4: an rlock writer's release wakes a Redisson write waiter (Java measures).
    hold_and_wake_java(ctx, |round| {
        let name = format!("interop:rwlock:to-java:{round}");
        Ok((ctx.client.read_write_lock(&name)?.write_lock(), rwlock_channel(&name)))
    })
    .await
}

/// A write section of [`rwlock`]: the marker must be free and no reader inside; then a
/// GET-then-SET increment of the counter, which only mutual exclusion keeps exact.
async fn write_section(mut data: Conn, name: &str, side: &str) -> R<()> {
    let marker = format!("{name}:marker");
    let set: bool = redis::cmd("SET")
        .arg(&marker)
        .arg(side)
        .arg("NX")
        .query_async::<Option<String>>(&mut data)
        .await?
        .is_some();
    let readers: Option<i64> = data.get(format!("{name}:readers")).await?;
    if !set || readers.unwrap_or(0) != 0 {
        let _: i64 = data.incr(format!("{name}:violations"), 1).await?;
    }
    let counter = format!("{name}:counter");
    let n: Option<i64> = data.get(&counter).await?;
    let () = data.set(&counter, n.unwrap_or(0) + 1).await?;
    if set {
        let _: i64 = data.del(&marker).await?;
    }
    Ok(())
}

/// A read section of [`rwlock`]: counts itself in, and no writer's marker may be set meanwhile.
async fn read_section(mut data: Conn, name: &str) -> R<()> {
    let readers = format!("{name}:readers");
    let inside: i64 = data.incr(&readers, 1).await?;
    if inside > 1 {
        let _: i64 = data.incr(format!("{name}:shared"), 1).await?;
    }
    let writer: bool = data.exists(format!("{name}:marker")).await?;
    if writer {
        let _: i64 = data.incr(format!("{name}:violations"), 1).await?;
    }
    let _: i64 = data.decr(&readers, 1).await?;
    Ok(())
}
