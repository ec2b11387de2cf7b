//! The Lua scripts of the lock steps (wire-format.md). Each is hashed once per process and sent
//! as EVALSHA. When a server answers NOSCRIPT (a restart, `SCRIPT FLUSH`, or a replica just
//! promoted: Redis 7 does not replicate scripts) the same call is sent again as EVAL with the
//! source, which the server caches for the next EVALSHA. EVAL routes by its keys like any
//! command; a separate `SCRIPT LOAD` would not: the `redis` crate sends it to every cluster
//! node (failing while one is down, exactly during the failover that left the new master
//! without the script), and routed by slot it can reach another node than the redirected
//! EVALSHA while the slot map is in flux.

use std::sync::LazyLock;

use redis::{Cmd, FromRedisValue, RedisResult, Script};

use crate::conn::Commands;

/// One lock script: its source and its SHA1.
struct Lua {
    code: &'static str,
    script: LazyLock<Script>,
}

macro_rules! lua {
    // The script's file, with the files of shared functions it uses in front (lua/publish.lua,
    // lua/fair_common.lua, lua/pes_common.lua).
    ($($part:literal),+) => {
        Lua {
            code: concat!($(include_str!($part)),+),
            script: LazyLock::new(|| Script::new(concat!($(include_str!($part)),+))),
        }
    };
}

/// Declares each script as a static and [`ALL`] as the list of them.
macro_rules! scripts {
    ($($name:ident = $def:expr;)*) => {
        $(static $name: Lua = $def;)*
        /// Every script, for [`make_all`].
        static ALL: &[&Lua] = &[$(&$name),*];
    };
}

// Every script, each a static, and ALL listing them for make_all (one list: a script added here
// is made with the others).
scripts! {
    ACQUIRE = lua!("lua/acquire.lua");
    FENCED_ACQUIRE = lua!("lua/fenced_acquire.lua");
    RELEASE = lua!("lua/publish.lua", "lua/release.lua");
    FORCE_UNLOCK = lua!("lua/publish.lua", "lua/force_unlock.lua");
    RENEW = lua!("lua/renew.lua");
    READ_ACQUIRE = lua!("lua/read_acquire.lua");
    WRITE_ACQUIRE = lua!("lua/write_acquire.lua");
    READ_RELEASE = lua!("lua/publish.lua", "lua/read_release.lua");
    WRITE_RELEASE = lua!("lua/publish.lua", "lua/write_release.lua");
    RW_FORCE_UNLOCK = lua!("lua/publish.lua", "lua/rw_force_unlock.lua");
    RENEW_READS = lua!("lua/renew_reads.lua");
    FAIR_ACQUIRE = lua!("lua/publish.lua", "lua/fair_common.lua", "lua/fair_acquire.lua");
    FAIR_RELEASE = lua!("lua/publish.lua", "lua/fair_common.lua", "lua/fair_release.lua");
    FAIR_FORCE_UNLOCK = lua!("lua/publish.lua", "lua/fair_common.lua", "lua/fair_force_unlock.lua");
    FAIR_GIVE_UP = lua!("lua/publish.lua", "lua/fair_common.lua", "lua/fair_give_up.lua");
    LATCH_TRY_SET = lua!("lua/publish.lua", "lua/latch_try_set.lua");
    LATCH_COUNT_DOWN = lua!("lua/publish.lua", "lua/latch_count_down.lua");
    LATCH_DELETE = lua!("lua/publish.lua", "lua/latch_delete.lua");
    SEM_ACQUIRE = lua!("lua/sem_acquire.lua");
    SEM_RELEASE = lua!("lua/publish.lua", "lua/sem_release.lua");
    SEM_UNDO = lua!("lua/publish.lua", "lua/sem_undo.lua");
    SEM_TRY_SET = lua!("lua/publish.lua", "lua/sem_try_set.lua");
    SEM_ADD = lua!("lua/publish.lua", "lua/sem_add.lua");
    SEM_DRAIN = lua!("lua/sem_drain.lua");
    PES_ACQUIRE = lua!("lua/publish.lua", "lua/pes_common.lua", "lua/pes_acquire.lua");
    PES_RELEASE = lua!("lua/publish.lua", "lua/pes_common.lua", "lua/pes_release.lua");
    PES_RENEW = lua!("lua/publish.lua", "lua/pes_common.lua", "lua/pes_renew.lua");
    PES_COUNTS = lua!("lua/publish.lua", "lua/pes_common.lua", "lua/pes_counts.lua");
    TOKEN_RAISE = lua!("lua/token_raise.lua");
    DESCRIBE = lua!("lua/describe.lua");
    SWEEP = lua!("lua/publish.lua", "lua/fair_common.lua", "lua/pes_common.lua", "lua/sweep.lua");
}

/// Hashes every script now. Made on first use, a `fork()` while another thread was hashing one
/// would copy its once-cell half filled, and the child's first use of that script would wait
/// for good (what pyo3's once-cells did to forked Python children); the Python module calls
/// this, through `rlock::surface::make_once_values`, when it is imported.
pub(crate) fn make_all() {
    for lua in ALL {
        LazyLock::force(&lua.script);
    }
}

impl Lua {
    /// `EVALSHA <sha>` (or `EVAL <source>` when `source`) `<number of keys> <keys...>`.
    fn cmd<K: AsRef<str>>(&self, keys: &[K], source: bool) -> Cmd {
        // Sized once for the longest of our scripts' calls (command, script, key count, keys, up
        // to 8 arguments of a few dozen bytes), instead of growing argument by argument.
        let data = keys.iter().map(|k| k.as_ref().len()).sum::<usize>() + 384;
        let mut cmd = Cmd::with_capacity(keys.len() + 11, data);
        cmd.arg(if source { "EVAL" } else { "EVALSHA" });
        cmd.arg(if source { self.code } else { self.script.get_hash() }).arg(keys.len());
        for k in keys {
            cmd.arg(k.as_ref());
        }
        cmd
    }

    /// Runs the script on `keys`, with the arguments `args` appends; once more as EVAL when
    /// the server answers NOSCRIPT.
    async fn run<T: FromRedisValue, K: AsRef<str>>(
        &self,
        keys: &[K],
        args: impl Fn(&mut Cmd),
        conn: &mut Commands,
    ) -> RedisResult<T> {
        let mut cmd = self.cmd(keys, false);
        args(&mut cmd);
        match conn.query(&cmd).await {
            Err(e) if e.code() == Some("NOSCRIPT") => {
                let mut cmd = self.cmd(keys, true);
                args(&mut cmd);
                conn.query(&cmd).await
            }
            other => other,
        }
    }

    /// Runs the script as `EVAL` with its source: for a script run rarely, and then while the
    /// network is failing, one command that cannot meet NOSCRIPT (an `EVALSHA` whose NOSCRIPT
    /// answer is lost never runs).
    async fn eval<T: FromRedisValue, K: AsRef<str>>(
        &self,
        keys: &[K],
        args: impl Fn(&mut Cmd),
        conn: &mut Commands,
    ) -> RedisResult<T> {
        let mut cmd = self.cmd(keys, true);
        args(&mut cmd);
        conn.query(&cmd).await
    }
}

/// The publish argument of a release that publishes nothing (a spin lock's: its waiters poll);
/// `lua/publish.lua` sends nothing for it.
pub(crate) const NO_PUBLISH: &str = "NONE";

/// Payload of an unlock message: wakes one waiter per subscribed client.
pub(crate) const UNLOCK_MESSAGE: &str = "0";
/// Payload of a read-unlock message: wakes every waiter.
pub(crate) const READ_UNLOCK_MESSAGE: &str = "1";

/// The lock's acquire step (Redisson `tryLockInnerAsync`): takes lock `name` for `owner` with a
/// lease of `lease_ms`, or re-enters it when `reentrant`. `None` when `owner` holds it now,
/// [`REFUSED`] when it held the lock already and may not re-enter (Redisson 4.4's
/// non-reentrant lock; nothing changed), else the holder's PTTL in ms (-1: a key without expiry).
pub(crate) async fn acquire(
    conn: &mut Commands,
    name: &str,
    lease_ms: u64,
    owner: &str,
    reentrant: bool,
) -> RedisResult<Option<i64>> {
    ACQUIRE
        .run(
            &[name],
            |c| {
                c.arg(lease_ms).arg(owner).arg(if reentrant { "1" } else { "0" });
            },
            conn,
        )
        .await
}

/// The fenced lock's acquire step (Redisson `RFencedLock`): [`acquire`], plus a new token from
/// the counter `token_key` on every acquire, re-entries included. `Ok(token)` when `owner`
/// holds the lock now, `Err(pttl)` with the holder's PTTL otherwise.
pub(crate) async fn fenced_acquire(
    conn: &mut Commands,
    name: &str,
    token_key: &str,
    lease_ms: u64,
    owner: &str,
) -> RedisResult<std::result::Result<u64, i64>> {
    let (ttl, token): (i64, i64) = FENCED_ACQUIRE
        .run(
            &[name, token_key],
            |c| {
                c.arg(lease_ms).arg(owner);
            },
            conn,
        )
        .await?;
    Ok(match u64::try_from(token) {
        Ok(t) if t > 0 => Ok(t),
        _ => Err(ttl),
    })
}

/// Raises the token counter `key` to `token` unless it is there already (a fenced RedLock's
/// quorum-register write); never lowers it.
pub(crate) async fn token_raise(conn: &mut Commands, key: &str, token: u64) -> RedisResult<()> {
    let _: i64 = TOKEN_RAISE
        .run(
            &[key],
            |c| {
                c.arg(token);
            },
            conn,
        )
        .await?;
    Ok(())
}

/// One call of the reentrant lock's release step (Redisson `unlockInnerAsync`), idempotent
/// under retries through its latch key.
pub(crate) struct Release<'a> {
    /// The lock name.
    pub(crate) name: &'a str,
    /// Its unlock channel.
    pub(crate) channel: &'a str,
    /// The latch key of this release call (`redisson_unlock_latch:{name}:<request id>`).
    pub(crate) latch: &'a str,
    /// Lease to set when the owner still holds the lock after this release (re-entered).
    pub(crate) lease_ms: u64,
    /// The releasing owner.
    pub(crate) owner: &'a str,
    /// `PUBLISH` or `SPUBLISH`.
    pub(crate) publish: &'static str,
    /// How long the latch outlives the call, in ms.
    pub(crate) latch_ttl_ms: u64,
    /// Which lock's release step.
    pub(crate) kind: ReleaseKind<'a>,
}

/// The release steps of the lock family.
pub(crate) enum ReleaseKind<'a> {
    /// The reentrant (and fenced) lock's.
    Reentrant,
    /// A read hold's: `timeout_prefix` is the owner's read-hold key prefix, `key_prefix` the
    /// lock's (`{name}`).
    Read { timeout_prefix: String, key_prefix: &'a str },
    /// The write hold's: `field` is `<owner>:write`.
    Write { field: String },
    /// The fair lock's: its queue and deadline keys, and the client's clock.
    Fair { queue: &'a str, timeouts: &'a str, now_ms: u64 },
}

/// A release step's answer: the lock is free now (waiters were woken).
pub(crate) const RELEASE_FREE: i64 = 1;
/// A release step's answer: the owner's hold ended, but other holds of the lock remain (other readers, or the owner's
/// own read holds after its write hold).
pub(crate) const RELEASE_LEFT: i64 = 2;

impl Release<'_> {
    /// Runs the step: `None` when `owner` does not hold the lock, `Some(0)` when it still
    /// holds it (re-entered), else [`RELEASE_FREE`] or [`RELEASE_LEFT`].
    pub(crate) async fn run(&self, conn: &mut Commands) -> RedisResult<Option<i64>> {
        match &self.kind {
            ReleaseKind::Reentrant => {
                RELEASE
                    .run(
                        &[self.name, self.channel, self.latch],
                        |c| {
                            c.arg(UNLOCK_MESSAGE)
                                .arg(self.lease_ms)
                                .arg(self.owner)
                                .arg(self.publish)
                                .arg(self.latch_ttl_ms);
                        },
                        conn,
                    )
                    .await
            }
            ReleaseKind::Read { timeout_prefix, key_prefix } => {
                READ_RELEASE
                    .run(
                        &[self.name, self.channel, timeout_prefix, key_prefix, self.latch],
                        |c| {
                            c.arg(UNLOCK_MESSAGE).arg(self.owner).arg(self.publish).arg(self.latch_ttl_ms);
                        },
                        conn,
                    )
                    .await
            }
            ReleaseKind::Write { field } => {
                WRITE_RELEASE
                    .run(
                        &[self.name, self.channel, self.latch],
                        |c| {
                            c.arg(READ_UNLOCK_MESSAGE)
                                .arg(self.lease_ms)
                                .arg(field)
                                .arg(self.publish)
                                .arg(self.latch_ttl_ms);
                        },
                        conn,
                    )
                    .await
            }
            ReleaseKind::Fair { queue, timeouts, now_ms } => {
                FAIR_RELEASE
                    .run(
                        &[self.name, queue, timeouts, self.channel, self.latch],
                        |c| {
                            c.arg(UNLOCK_MESSAGE)
                                .arg(self.lease_ms)
                                .arg(self.owner)
                                .arg(now_ms)
                                .arg(self.publish)
                                .arg(self.latch_ttl_ms);
                        },
                        conn,
                    )
                    .await
            }
        }
    }
}

/// What an acquire step answers when the owner's own holds make the acquire one that would wait
/// forever, refused with nothing changed: [`write_acquire`] when the owner holds only read holds
/// (an upgrade), [`acquire`] and [`fair_acquire`] when the owner holds a lock it may not
/// re-enter.
pub(crate) const REFUSED: i64 = -3;

/// The read lock's acquire step (Redisson `RReadLock`): takes or re-enters a read hold of
/// `owner` (whose read-hold keys start with `timeout_prefix`; `write_field` is its write field,
/// for the writer's downgrade). `None` when acquired, else the lock's PTTL.
pub(crate) async fn read_acquire(
    conn: &mut Commands,
    name: &str,
    timeout_prefix: &str,
    lease_ms: u64,
    owner: &str,
    write_field: &str,
) -> RedisResult<Option<i64>> {
    READ_ACQUIRE
        .run(
            &[name, timeout_prefix],
            |c| {
                c.arg(lease_ms).arg(owner).arg(write_field);
            },
            conn,
        )
        .await
}

/// The write lock's acquire step (Redisson `RWriteLock`): takes or re-enters the write hold
/// (field `write_field`). `None` when acquired, [`REFUSED`] when `owner` holds only
/// read holds, else the lock's PTTL.
pub(crate) async fn write_acquire(
    conn: &mut Commands,
    name: &str,
    lease_ms: u64,
    write_field: &str,
    owner: &str,
) -> RedisResult<Option<i64>> {
    WRITE_ACQUIRE
        .run(
            &[name],
            |c| {
                c.arg(lease_ms).arg(write_field).arg(owner);
            },
            conn,
        )
        .await
}

/// Force release of one side of a read-write lock: deletes the lock when its mode is `mode`
/// (`"read"` or `"write"`) and publishes `message`. 1 when deleted, else 0.
pub(crate) async fn rw_force_unlock(
    conn: &mut Commands,
    name: &str,
    channel: &str,
    message: &str,
    publish: &str,
    mode: &str,
) -> RedisResult<i64> {
    RW_FORCE_UNLOCK
        .run(
            &[name, channel],
            |c| {
                c.arg(message).arg(publish).arg(mode);
            },
            conn,
        )
        .await
}

/// A fair lock's keys.
pub(crate) struct FairKeys<'a> {
    /// The lock hash.
    pub(crate) name: &'a str,
    /// The LIST of waiting owners.
    pub(crate) queue: &'a str,
    /// The ZSET of their deadlines.
    pub(crate) timeouts: &'a str,
    /// The channel prefix (each waiter listens on `<prefix>:<owner>`).
    pub(crate) channel: &'a str,
}

/// The fair lock's acquire step (Redisson `RFairLock`). `queue_up`: join the queue when the
/// lock is taken (else only try). `wait_ms` is how long this waiter may go without re-trying
/// before others drop it; `now_ms` the client's clock; `reentrant`: whether `owner` may re-enter
/// (else Redisson 4.4's non-reentrant fair lock). `None` when acquired, [`REFUSED`] when the
/// owner held the lock already and may not re-enter, else how long to wait at most (ms; <= 0
/// when the lock is free but another waiter is first in line).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn fair_acquire(
    conn: &mut Commands,
    keys: &FairKeys<'_>,
    lease_ms: u64,
    owner: &str,
    wait_ms: u64,
    now_ms: u64,
    queue_up: bool,
    reentrant: bool,
) -> RedisResult<Option<i64>> {
    let flag = |b: bool| if b { "1" } else { "0" };
    FAIR_ACQUIRE
        .run(
            &[keys.name, keys.queue, keys.timeouts],
            |c| {
                c.arg(lease_ms).arg(owner).arg(wait_ms).arg(now_ms).arg(flag(queue_up)).arg(flag(reentrant));
            },
            conn,
        )
        .await
}

/// The fair lock's force unlock: 1 when a lock was deleted (the first waiter is woken), else 0.
pub(crate) async fn fair_force_unlock(
    conn: &mut Commands,
    keys: &FairKeys<'_>,
    now_ms: u64,
    publish: &str,
) -> RedisResult<i64> {
    FAIR_FORCE_UNLOCK
        .run(
            &[keys.name, keys.queue, keys.timeouts, keys.channel],
            |c| {
                c.arg(UNLOCK_MESSAGE).arg(now_ms).arg(publish);
            },
            conn,
        )
        .await
}

/// A fair-lock waiter gives up (Redisson `acquireFailedAsync`): `owner` leaves the queue and
/// the waiters behind it move up. True when it was in the queue.
pub(crate) async fn fair_give_up(
    conn: &mut Commands,
    keys: &FairKeys<'_>,
    owner: &str,
    wait_ms: u64,
    publish: &str,
) -> RedisResult<bool> {
    let found: i64 = FAIR_GIVE_UP
        .run(
            &[keys.queue, keys.timeouts, keys.name, keys.channel],
            |c| {
                c.arg(owner).arg(wait_ms).arg(UNLOCK_MESSAGE).arg(publish);
            },
            conn,
        )
        .await?;
    Ok(found == 1)
}

/// The read lock's renewal step, batched: for each `(name, owner, timeout_prefix)` whose owner
/// still has read holds, extends the lock to at least `lease_ms` and resets that owner's
/// read-hold keys to `lease_ms`. One flag per hold. Every name in one hash slot.
pub(crate) async fn renew_reads(
    conn: &mut Commands,
    lease_ms: u64,
    holds: &[(&str, &str, String)],
) -> RedisResult<Vec<bool>> {
    let names: Vec<&str> = holds.iter().map(|h| h.0).collect();
    let flags: Vec<i64> = RENEW_READS
        .run(
            &names,
            |c| {
                c.arg(lease_ms);
                for (_, owner, prefix) in holds {
                    c.arg(*owner).arg(prefix);
                }
            },
            conn,
        )
        .await?;
    Ok(flags.into_iter().map(|f| f == 1).collect())
}

/// The force-unlock step (Redisson `forceUnlockAsync`): deletes lock `name` whoever holds it and
/// publishes an unlock message on `channel` with `publish`. 1 when a lock was deleted, 0 when
/// there was none; a `WRONGTYPE`-style error (and nothing deleted) when the key is not a lock.
pub(crate) async fn force_unlock(
    conn: &mut Commands,
    name: &str,
    channel: &str,
    publish: &str,
) -> RedisResult<i64> {
    FORCE_UNLOCK
        .run(
            &[name, channel],
            |c| {
                c.arg(UNLOCK_MESSAGE).arg(publish);
            },
            conn,
        )
        .await
}

/// The reentrant lock's renewal step, batched: resets the lease of each `(name, owner)` hold
/// still held to `lease_ms`. One flag per hold: true when it was still held. Every name must
/// hash to one slot on a cluster (the watchdog batches per slot).
pub(crate) async fn renew_locks(
    conn: &mut Commands,
    lease_ms: u64,
    holds: &[(&str, &str)],
) -> RedisResult<Vec<bool>> {
    let names: Vec<&str> = holds.iter().map(|h| h.0).collect();
    let flags: Vec<i64> = RENEW
        .run(
            &names,
            |c| {
                c.arg(lease_ms);
                for (_, owner) in holds {
                    c.arg(*owner);
                }
            },
            conn,
        )
        .await?;
    Ok(flags.into_iter().map(|f| f == 1).collect())
}

/// Payload of a count-down latch message: the count reached zero (wakes every waiter).
pub(crate) const LATCH_ZERO_MESSAGE: &str = "0";
/// Payload of a count-down latch message: a new count was set, or the latch was deleted
/// (Redisson's `NEW_COUNT_MESSAGE`).
pub(crate) const LATCH_NEW_COUNT_MESSAGE: &str = "1";

/// A count-down latch's keys for one call: the latch, its channel and the call's request latch.
pub(crate) type LatchKeys<'a> = (&'a str, &'a str, &'a str);

/// `trySetCount`: sets the count when the latch does not exist and publishes the new-count
/// message; idempotent under retries through the request latch. True when set.
pub(crate) async fn latch_try_set(
    conn: &mut Commands,
    (name, channel, latch): LatchKeys<'_>,
    count: u64,
    publish: &str,
    latch_ttl_ms: u64,
) -> RedisResult<bool> {
    let set: i64 = LATCH_TRY_SET
        .run(
            &[name, channel, latch],
            |c| {
                c.arg(count).arg(LATCH_NEW_COUNT_MESSAGE).arg(publish).arg(latch_ttl_ms);
            },
            conn,
        )
        .await?;
    Ok(set == 1)
}

/// `countDown`: decrements, deletes the latch at zero or below and publishes the zero message
/// when it reaches zero; idempotent under retries through the request latch. The new count.
pub(crate) async fn latch_count_down(
    conn: &mut Commands,
    (name, channel, latch): LatchKeys<'_>,
    publish: &str,
    latch_ttl_ms: u64,
) -> RedisResult<i64> {
    LATCH_COUNT_DOWN
        .run(
            &[name, channel, latch],
            |c| {
                c.arg(LATCH_ZERO_MESSAGE).arg(publish).arg(latch_ttl_ms);
            },
            conn,
        )
        .await
}

/// Deletes a count-down latch and publishes the new-count message when it existed. True when
/// it existed.
pub(crate) async fn latch_delete(
    conn: &mut Commands,
    (name, channel): (&str, &str),
    publish: &str,
) -> RedisResult<bool> {
    let deleted: i64 = LATCH_DELETE
        .run(
            &[name, channel],
            |c| {
                c.arg(LATCH_NEW_COUNT_MESSAGE).arg(publish);
            },
            conn,
        )
        .await?;
    Ok(deleted == 1)
}

/// The semaphore's acquire step (Redisson `RSemaphore.tryAcquire`): takes `permits` when that
/// many are available, and sets `latch` (the step's own), which tells a give-back after a lost
/// answer ([`sem_undo`]) that they were taken. True when taken.
pub(crate) async fn sem_acquire(
    conn: &mut Commands,
    name: &str,
    latch: &str,
    permits: u64,
    latch_ttl_ms: u64,
) -> RedisResult<bool> {
    let taken: i64 = SEM_ACQUIRE
        .run(
            &[name, latch],
            |c| {
                c.arg(permits).arg(latch_ttl_ms);
            },
            conn,
        )
        .await?;
    Ok(taken == 1)
}

/// The semaphore's release step: adds `permits` and publishes the new count on `channel`;
/// idempotent under retries through `latch`. The new count.
pub(crate) async fn sem_release(
    conn: &mut Commands,
    (name, channel, latch): (&str, &str, &str),
    permits: u64,
    publish: &str,
    latch_ttl_ms: u64,
) -> RedisResult<i64> {
    SEM_RELEASE
        .run(
            &[name, channel, latch],
            |c| {
                c.arg(permits).arg(publish).arg(latch_ttl_ms);
            },
            conn,
        )
        .await
}

/// Gives back the `permits` the acquire call of `latch` took, if its latch says it took them
/// (its answer was lost), and publishes the new count. True when given back.
pub(crate) async fn sem_undo(
    conn: &mut Commands,
    (name, channel, latch): (&str, &str, &str),
    permits: u64,
    publish: &str,
) -> RedisResult<bool> {
    SEM_UNDO
        .eval(
            &[name, channel, latch],
            |c| {
                c.arg(permits).arg(publish);
            },
            conn,
        )
        .await
}

/// `trySetPermits`: sets the count when the semaphore does not exist (with a TTL when
/// `ttl_ms` > 0) and publishes it. True when set.
pub(crate) async fn sem_try_set(
    conn: &mut Commands,
    (name, channel): (&str, &str),
    permits: u64,
    publish: &str,
    ttl_ms: u64,
) -> RedisResult<bool> {
    let set: i64 = SEM_TRY_SET
        .run(
            &[name, channel],
            |c| {
                c.arg(permits).arg(publish).arg(ttl_ms);
            },
            conn,
        )
        .await?;
    Ok(set == 1)
}

/// `addPermits`: adds `delta` (may be negative) and publishes the new count. The new count.
pub(crate) async fn sem_add(
    conn: &mut Commands,
    (name, channel): (&str, &str),
    delta: i64,
    publish: &str,
) -> RedisResult<i64> {
    SEM_ADD
        .run(
            &[name, channel],
            |c| {
                c.arg(delta).arg(publish);
            },
            conn,
        )
        .await
}

/// `drainPermits`: sets the count to 0; what it was.
pub(crate) async fn sem_drain(conn: &mut Commands, name: &str) -> RedisResult<i64> {
    SEM_DRAIN.run(&[name], |_| {}, conn).await
}

/// The keys of a permit-expirable semaphore: its count, its held permits (ZSET) and channel.
pub(crate) type PesKeys<'a> = (&'a str, &'a str, &'a str);

/// The permit-expirable semaphore's acquire step: takes one permit per id in `ids` (16 raw
/// bytes each) with an expiry `lease_ms` from now (server clock), reclaiming expired permits
/// first. `Ok(())` when taken, else `Err(Some(ms))` until the earliest held permit expires
/// (`Err(None)`: none will). A retry with the same ids takes nothing more.
pub(crate) async fn pes_acquire(
    conn: &mut Commands,
    keys: PesKeys<'_>,
    lease_ms: u64,
    publish: &str,
    ids: &[[u8; 16]],
) -> RedisResult<Result<(), Option<u64>>> {
    let (name, timeouts, channel) = keys;
    let answer: i64 = PES_ACQUIRE
        .run(
            &[name, timeouts, channel],
            |c| {
                c.arg(lease_ms).arg(publish);
                for id in ids {
                    c.arg(&id[..]);
                }
            },
            conn,
        )
        .await?;
    Ok(match answer {
        -1 => Ok(()),
        ms if ms >= 0 => Err(Some(ms as u64)),
        _ => Err(None),
    })
}

/// The permit-expirable semaphore's release step: gives permit `id` back and publishes the
/// new count; idempotent under retries through `latch`. True when released, false when the
/// permit was unknown or had expired (an expired one is given back all the same).
pub(crate) async fn pes_release(
    conn: &mut Commands,
    keys: PesKeys<'_>,
    latch: &str,
    id: &[u8; 16],
    publish: &str,
    latch_ttl_ms: u64,
) -> RedisResult<bool> {
    let (name, timeouts, channel) = keys;
    let released: i64 = PES_RELEASE
        .run(
            &[name, timeouts, channel, latch],
            |c| {
                c.arg(&id[..]).arg(publish).arg(latch_ttl_ms);
            },
            conn,
        )
        .await?;
    Ok(released == 1)
}

/// The permit-expirable semaphore's lease update, batched: each `(held-permits key, id)` not
/// yet expired gets an expiry `lease_ms` from now. One flag per permit: true when updated.
/// Every key in one hash slot.
pub(crate) async fn pes_renew(
    conn: &mut Commands,
    lease_ms: u64,
    permits: &[(&str, [u8; 16])],
) -> RedisResult<Vec<bool>> {
    let keys: Vec<&str> = permits.iter().map(|p| p.0).collect();
    let flags: Vec<i64> = PES_RENEW
        .run(
            &keys,
            |c| {
                c.arg(lease_ms);
                for (_, id) in permits {
                    c.arg(&id[..]);
                }
            },
            conn,
        )
        .await?;
    Ok(flags.into_iter().map(|f| f == 1).collect())
}

/// The permit-expirable semaphore's counts after reclaiming expired permits: (available,
/// held).
pub(crate) async fn pes_counts(
    conn: &mut Commands,
    keys: PesKeys<'_>,
    publish: &str,
) -> RedisResult<(i64, i64)> {
    let (name, timeouts, channel) = keys;
    PES_COUNTS
        .run(
            &[name, timeouts, channel],
            |c| {
                c.arg(publish);
            },
            conn,
        )
        .await
}

/// The keys one describe step reads: the name, the token counter, the fair queue and deadlines,
/// and the permit-expirable semaphore's permits ZSET (all in the name's slot).
pub(crate) type DescribeKeys<'a> = [&'a str; 5];

/// The describe step (lua/describe.lua): everything that could live under one name, read in
/// one atomic call that changes nothing; `key_prefix` is the name's `{name}` part of its
/// read-hold keys, `limit` the most items of one collection returned. The reply's layout is the
/// script's.
pub(crate) async fn describe(
    conn: &mut Commands,
    keys: DescribeKeys<'_>,
    key_prefix: &str,
    limit: usize,
) -> RedisResult<redis::Value> {
    DESCRIBE
        .run(
            &keys,
            |c| {
                c.arg(key_prefix).arg(limit);
            },
            conn,
        )
        .await
}

/// What one sweep step looks at (lua/sweep.lua): `"waiters"`, `"permits"` or `"latch"`, with
/// the keys the script names for it (all in one slot).
pub(crate) struct SweepStep<'a> {
    /// `waiters`, `permits` or `latch`.
    pub(crate) what: &'static str,
    /// The key found and its partners, in the script's order.
    pub(crate) keys: &'a [String],
    /// Remove what is stale (else only count it).
    pub(crate) remove: bool,
    /// The grace for clock skew, ms.
    pub(crate) grace_ms: u64,
    /// The sweeper's clock, Unix ms (fair-lock deadlines are on the waiters' clocks).
    pub(crate) now_ms: u64,
}

/// One sweep step: `(stale, removed)`, or `None` when the key is not what `what` says (then
/// nothing changed). Run as `EVAL` (an operator's tool: rare, and never meets NOSCRIPT).
pub(crate) async fn sweep(
    conn: &mut Commands,
    step: &SweepStep<'_>,
    publish: &str,
) -> RedisResult<Option<(u64, u64)>> {
    let (stale, removed): (i64, i64) = SWEEP
        .eval(
            step.keys,
            |c| {
                c.arg(step.what)
                    .arg(if step.remove { "1" } else { "0" })
                    .arg(step.grace_ms)
                    .arg(step.now_ms)
                    .arg(publish);
            },
            conn,
        )
        .await?;
    Ok(u64::try_from(stale).ok().map(|s| (s, u64::try_from(removed).unwrap_or(0))))
}
