//! The Lua scripts of the lock steps (wire-format.md). Each is hashed once per process and sent
//! as EVALSHA; the `redis` crate loads it and retries when the server answers NOSCRIPT.

use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, FromRedisValue, RedisResult, Script, ServerErrorKind};

/// Acquire or re-enter: nil when held by the caller now, else the holder's PTTL.
pub(crate) static ACQUIRE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/acquire.lua")));
/// Release one hold level, idempotent under retries through the latch key.
pub(crate) static RELEASE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/release.lua")));
/// Delete the lock whoever holds it and wake a waiter.
pub(crate) static FORCE_RELEASE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/force_release.lua")));
/// Reset the lease of many holds in one call (the watchdog).
pub(crate) static RENEW: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/renew.lua")));

/// Payload of an unlock message: wakes one waiter per subscribed client.
pub(crate) const UNLOCK_MESSAGE: &str = "0";
/// Payload of a read-unlock message: wakes every waiter.
pub(crate) const READ_UNLOCK_MESSAGE: &str = "1";

/// `EVALSHA <sha1 of script> <numkeys>`; the caller appends the keys, then the arguments.
pub(crate) fn evalsha(script: &Script, numkeys: usize) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.get_hash()).arg(numkeys);
    cmd
}

/// Sends `cmd` (made by [`evalsha`] for `script`); when the server does not know the script
/// (NOSCRIPT), loads it and sends `cmd` again. The same as `ScriptInvocation::invoke_async`,
/// without its per-call copies of every key and argument.
pub(crate) async fn invoke<T: FromRedisValue>(
    script: &Script,
    cmd: &Cmd,
    conn: &mut impl ConnectionLike,
) -> RedisResult<T> {
    match cmd.query_async(conn).await {
        Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
            script.load_async(conn).await?;
            cmd.query_async(conn).await
        }
        other => other,
    }
}
