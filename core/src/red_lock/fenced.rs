//! The fenced RedLock: tokens from a quorum register on each server's
//! `redisson_lock_token:{name}` (see the parent module's doc for why a max of `INCR`s is not
//! enough).

use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};

use super::{RedGuard, RedLock};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::lock::{Lock, Released};
use crate::owner::Owner;
use crate::scripts;

impl RedLock {
    /// The fenced RedLock's next token, through the quorum register: the largest counter a
    /// majority reports, plus one, raised on a majority before it is returned.
    pub(super) async fn next_token(&self) -> Result<u64> {
        let key = self.inner.token_key.clone().unwrap_or_default();
        let read = |m: Lock| {
            let key = key.clone();
            async move { token_read(&m, &key).await }
        };
        let top = self.on_majority("the token read", read).await?.into_iter().max().unwrap_or(0);
        let token = top + 1;
        // A write still under way when the majority acknowledged may land later or never:
        // raise-only, so it never lowers a counter.
        let raise = |m: Lock| {
            let key = key.clone();
            async move { token_raise(&m, &key, token).await }
        };
        self.on_majority("the token write", raise).await?;
        Ok(token)
    }

    /// Runs `step` on every member at once until a majority succeeded, and returns their
    /// results; the error of `what` when more than a minority failed. Steps still under way
    /// then are dropped.
    async fn on_majority<T, F, Fut>(&self, what: &str, step: F) -> Result<Vec<T>>
    where
        F: Fn(Lock) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let inner = &self.inner;
        let (n, q) = (inner.members.len(), inner.quorum);
        let mut calls: FuturesUnordered<_> = inner
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let call = step(m.clone());
                async move { (i, call.await) }
            })
            .collect();
        let (mut done, mut failed) = (Vec::new(), Vec::new());
        while let Some((i, r)) = calls.next().await {
            match r {
                Ok(v) => done.push(v),
                Err(e) => failed.push((i, e)),
            }
            if done.len() >= q {
                return Ok(done);
            }
            if failed.len() > n - q {
                break;
            }
        }
        Err(self.no_majority(what, &failed))
    }
}

/// A RedLock whose every acquire hands out a fencing token that strictly increases across
/// successful acquires, whichever majority granted them (see the module's doc). Cheap to clone.
#[derive(Clone, Debug)]
pub struct FencedRedLock {
    red: RedLock,
}

impl FencedRedLock {
    /// A fenced RedLock on `name` over `clients` (as [`RedLock::new`]); each server keeps the
    /// counter in `redisson_lock_token:{name}`, the fenced lock's key.
    pub fn new(name: &str, clients: &[Client]) -> Result<FencedRedLock> {
        Ok(FencedRedLock { red: RedLock::build(name, clients, true)? })
    }

    /// The RedLock underneath, for its queries (`is_held`, `is_lost`, `valid_for`, `on_lost`, `members`).
    pub fn red_lock(&self) -> &RedLock {
        &self.red
    }

    /// Waits until `owner` holds a majority and returns the new token (see [`RedLock::acquire`]).
    pub async fn acquire(&self, owner: &Owner) -> Result<u64> {
        self.acquire_inner(owner, None, None).await?.ok_or_else(|| Error::not_acquired(self.describe(), None))
    }

    /// Like [`FencedRedLock::acquire`] with a fixed `lease` (no watchdog).
    pub async fn acquire_with_lease(&self, owner: &Owner, lease: Duration) -> Result<u64> {
        self.acquire_inner(owner, None, Some(lease))
            .await?
            .ok_or_else(|| Error::not_acquired(self.describe(), None))
    }

    /// Tries for at most `wait`; the new token, or `None` when the wait ran out.
    pub async fn try_acquire(
        &self,
        owner: &Owner,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<u64>> {
        self.acquire_inner(owner, Some(wait), lease).await
    }

    async fn acquire_inner(
        &self,
        owner: &Owner,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<u64>> {
        Ok(self.red.acquire_guard(owner, wait, lease).await?.and_then(RedGuard::keep))
    }

    fn describe(&self) -> String {
        format!("fenced RedLock '{}'", self.red.name())
    }

    /// Acquires as [`RedLock::acquire_guard`]; the guard carries the token.
    pub async fn acquire_guard(
        &self,
        owner: &Owner,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<RedGuard>> {
        self.red.acquire_guard(owner, wait, lease).await
    }

    /// Releases as [`RedLock::release`].
    pub async fn release(&self, owner: &Owner) -> Result<Released> {
        self.red.release(owner).await
    }
}

/// A member server's token counter (0 before the first token).
async fn token_read(member: &Lock, key: &str) -> Result<u64> {
    use redis::AsyncCommands as _;
    member
        .shared()
        .retrying(|mut c| async move {
            let v: Option<u64> = c.get(key).await.map_err(|e| Error::from_redis("token read failed", e))?;
            Ok(v.unwrap_or(0))
        })
        .await
}

/// Raises a member server's token counter to `token` (never lowers it).
async fn token_raise(member: &Lock, key: &str, token: u64) -> Result<()> {
    member
        .shared()
        .retrying(|mut c| async move {
            scripts::token_raise(&mut c, key, token)
                .await
                .map_err(|e| Error::from_redis("token write failed", e))
        })
        .await
}
