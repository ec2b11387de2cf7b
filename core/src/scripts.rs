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

use crate::connection::Commands;

/// One lock script: its source and its SHA1.
pub(crate) struct Lua {
    code: &'static str,
    script: LazyLock<Script>,
}

macro_rules! lua {
    ($path:literal) => {
        Lua { code: include_str!($path), script: LazyLock::new(|| Script::new(include_str!($path))) }
    };
}

/// Acquire or re-enter: nil when held by the caller now, else the holder's PTTL.
pub(crate) static ACQUIRE: Lua = lua!("lua/acquire.lua");
/// Release one hold level, idempotent under retries through the latch key.
pub(crate) static RELEASE: Lua = lua!("lua/release.lua");
/// Delete the lock whoever holds it and wake a waiter.
pub(crate) static FORCE_RELEASE: Lua = lua!("lua/force_release.lua");
/// Reset the lease of many holds in one call (the watchdog).
pub(crate) static RENEW: Lua = lua!("lua/renew.lua");

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
    pub(crate) async fn run<T: FromRedisValue, K: AsRef<str>>(
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
