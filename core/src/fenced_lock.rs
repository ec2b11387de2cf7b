//! The fenced lock (Redisson `RFencedLock`): the reentrant lock, whose every acquire (re-entries
//! included) also returns a fencing token, strictly larger than any token given before for that
//! name by any client, Redisson included. A storage layer that remembers the largest token it
//! has seen and refuses writes with smaller ones is safe even against a holder that was paused
//! past its lease.
//!
//! On the wire: the reentrant lock's hash, channel, release and renewal, plus the counter
//! `redisson_lock_token:{name}`, which never expires (deleting it would restart tokens at 1).

use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;

use crate::error::{Error, Result};
use crate::keys;
use crate::lock::{Flavor, Lock, Released, Ttl};
use crate::owner::Owner;
use crate::shared::Shared;

/// A handle on one fenced lock. Cheap to clone; holds belong to [`Owner`]s.
#[derive(Clone)]
pub struct FencedLock {
    lock: Lock,
    shared: Arc<Shared>,
    token_key: Arc<str>,
}

impl std::fmt::Debug for FencedLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FencedLock").field("name", &self.lock.name()).finish()
    }
}

impl FencedLock {
    pub(crate) fn new(shared: Arc<Shared>, name: &str) -> FencedLock {
        FencedLock {
            lock: Lock::with_flavor(
                shared.clone(),
                name,
                Flavor::Fenced { token_key: keys::token_key(name) },
            ),
            shared,
            token_key: keys::token_key(name).into(),
        }
    }

    /// The lock name (also its Redis key).
    pub fn name(&self) -> &str {
        self.lock.name()
    }

    /// The lock underneath, for its queries (`is_locked`, `is_held`, `hold_count`,
    /// `remaining_ttl`, `is_lost`, `valid_for`, `on_lost`, `force_unlock`).
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    fn got(token: Option<u64>) -> Result<u64> {
        token.ok_or_else(|| {
            Error::new(
                crate::error::ErrorKind::Redis,
                "internal: an acquire without a wait bound ended without the lock",
            )
        })
    }

    /// Waits until `owner` holds the lock (watchdog-renewed, re-entering when it holds it) and
    /// returns the new fencing token. Cancel-safe as [`Lock::acquire`].
    ///
    /// ```no_run
    /// # async fn demo() -> rlock::Result<()> {
    /// # let client = rlock::Client::connect_default(Default::default()).await?;
    /// let (lock, me) = (client.fenced_lock("ledger")?, client.new_owner());
    /// let token = lock.acquire(&me).await?; // grows with every acquire, by any client
    /// // ... pass `token` along with every write, so storage can refuse older holders ...
    /// lock.release(&me).await?;
    /// assert!(lock.acquire(&me).await? > token);
    /// lock.release(&me).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self, owner: &Owner) -> Result<u64> {
        Self::got(self.lock.acquire_inner(owner, None, None).await?)
    }

    /// Like [`FencedLock::acquire`] with a fixed `lease` (no watchdog).
    pub async fn acquire_with_lease(&self, owner: &Owner, lease: Duration) -> Result<u64> {
        Self::got(self.lock.acquire_inner(owner, None, Some(lease)).await?)
    }

    /// Tries for at most `wait` (zero tries once); the new token, or `None` when the wait ran
    /// out. `lease` `None` uses the watchdog.
    pub async fn try_acquire(
        &self,
        owner: &Owner,
        wait: Duration,
        lease: Option<Duration>,
    ) -> Result<Option<u64>> {
        self.lock.acquire_inner(owner, Some(wait), lease).await
    }

    /// Releases one hold level of `owner` (see [`Lock::release`]); after the last one, `owner`
    /// has no token any more.
    pub async fn release(&self, owner: &Owner) -> Result<Released> {
        self.lock.release(owner).await
    }

    /// The latest token `owner` got while it holds the lock (through this client); `None` when
    /// it does not hold it.
    pub fn token_of(&self, owner: &Owner) -> Option<u64> {
        self.lock.token_of(owner)
    }

    /// The last token given for this name by any client (Redisson's `getToken`): the value of
    /// the counter, `None` before the first acquire.
    pub async fn last_token(&self) -> Result<Option<u64>> {
        let key = &self.token_key;
        self.shared
            .retrying(
                |mut c| async move { c.get(&**key).await.map_err(|e| Error::from_redis("GET failed", e)) },
            )
            .await
    }

    /// The remaining lease of the lock key.
    pub async fn remaining_ttl(&self) -> Result<Ttl> {
        self.lock.remaining_ttl().await
    }
}
