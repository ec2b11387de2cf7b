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
    ($path:literal) => {
        Lua { code: include_str!($path), script: LazyLock::new(|| Script::new(include_str!($path))) }
    };
}

static ACQUIRE: Lua = lua!("lua/acquire.lua");
static FENCED_ACQUIRE: Lua = lua!("lua/fenced_acquire.lua");
static RELEASE: Lua = lua!("lua/release.lua");
static FORCE_UNLOCK: Lua = lua!("lua/force_unlock.lua");
static RENEW: Lua = lua!("lua/renew.lua");

impl Lua {
    /// `EVALSHA <sha>` (or `EVAL <source>` when `source`) `<number of keys> <keys...>`.
    fn cmd<K: AsRef<str>>(&self, keys: &[K], source: bool) -> Cmd {
        let mut cmd = if source { redis::cmd("EVAL") } else { redis::cmd("EVALSHA") };
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
        match cmd.query_async(conn).await {
            Err(e) if e.code() == Some("NOSCRIPT") => {
                let mut cmd = self.cmd(keys, true);
                args(&mut cmd);
                cmd.query_async(conn).await
            }
            other => other,
        }
    }
}

/// Payload of an unlock message: wakes one waiter per subscribed client.
pub(crate) const UNLOCK_MESSAGE: &str = "0";
/// Payload of a read-unlock message: wakes every waiter.
pub(crate) const READ_UNLOCK_MESSAGE: &str = "1";

/// The reentrant lock's acquire step (Redisson `tryLockInnerAsync`): takes or re-enters lock
/// `name` for `owner` with a lease of `lease_ms`. `None` when `owner` holds it now, else the
/// holder's PTTL in ms (-1: a key without expiry).
pub(crate) async fn acquire(
    conn: &mut Commands,
    name: &str,
    lease_ms: u64,
    owner: &str,
) -> RedisResult<Option<i64>> {
    ACQUIRE
        .run(
            &[name],
            |c| {
                c.arg(lease_ms).arg(owner);
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
}

impl Release<'_> {
    /// Runs the step: `None` when `owner` does not hold the lock, `Some(0)` when it still holds
    /// it (re-entered), `Some(1)` when the lock is free now (a waiter was woken).
    pub(crate) async fn run(&self, conn: &mut Commands) -> RedisResult<Option<i64>> {
        let keys = [self.name, self.channel, self.latch];
        RELEASE
            .run(
                &keys,
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
