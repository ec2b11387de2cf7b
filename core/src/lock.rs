//! The reentrant lock (Redisson `RLock`): acquire with pub/sub waiting, release, queries.
//! Built on the shared machinery: the wait loop and pub/sub waiting, the watchdog (through
//! [`REENTRANT`], its renewal step), replica sync and the cancel-safety of [`crate::finish`].

use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;
use tokio::time::Instant;

use crate::error::{Error, ErrorKind, Result};
use crate::finish::{Finish, Undo};
use crate::keys;
use crate::latches::request_latch;
use crate::options::{check_duration, positive_ms};
use crate::owner::Owner;
use crate::pubsub::Wake;
use crate::replicas::Synced;
use crate::scripts;
use crate::shared::{Attempt, Shared};
use crate::watchdog::{Forgotten, HoldKey, HoldKind, ListenerId, LostEvent, LostFilter};

/// The reentrant lock's hold, renewed with its renewal step (also used by the fenced lock and
/// the write lock in Redisson's layout).
pub(crate) static REENTRANT: HoldKind = HoldKind {
    id: 0,
    name: "lock",
    renew: |mut conn, lease_ms, holds| {
        Box::pin(async move {
            let pairs: Vec<(&str, &str)> = holds.iter().map(|(n, o)| (&**n, o.as_str())).collect();
            scripts::renew_locks(&mut conn, lease_ms, &pairs).await
        })
    },
};

/// What a message on a lock channel means: `0` (unlock) wakes one waiter per client, `1` (a
/// read unlock) wakes every waiter.
pub(crate) fn lock_message(payload: &[u8]) -> Wake {
    if payload == scripts::UNLOCK_MESSAGE.as_bytes() {
        Wake::One
    } else if payload == scripts::READ_UNLOCK_MESSAGE.as_bytes() {
        Wake::All
    } else {
        Wake::Nobody
    }
}

/// A handle on one reentrant lock. Cheap to clone; holds belong to [`Owner`]s, not to handles.
#[derive(Clone)]
pub struct Lock {
    inner: Arc<LockInner>,
}

struct LockInner {
    shared: Arc<Shared>,
    name: Arc<str>,
    /// The fencing-token counter, for a fenced lock (whose acquire step also takes a token).
    token_key: Option<String>,
    channel: String,
    latch_prefix: String,
    group: u16,
}

/// What a successful release did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// The owner's last hold level was released: the lock is free and a waiter was woken.
    Unlocked,
    /// The owner still holds the lock (it had re-entered it); the count went down by one.
    StillHeld,
}

impl Released {
    /// Whether the lock became free (what every surface's release returns).
    pub fn is_unlocked(self) -> bool {
        self == Released::Unlocked
    }
}

/// The remaining lease of a lock key (`PTTL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    /// The key does not exist (the lock is free).
    Absent,
    /// The key exists without expiry (not made by rlock or Redisson).
    NoExpiry,
    /// The lease left.
    Remaining(Duration),
}

impl Ttl {
    /// As Redis reports it: milliseconds, -2 absent, -1 no expiry.
    pub fn as_millis_i64(self) -> i64 {
        match self {
            Ttl::Absent => -2,
            Ttl::NoExpiry => -1,
            Ttl::Remaining(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
        }
    }
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock").field("name", &self.inner.name).finish()
    }
}

/// What one acquire step did: `Ok(token)` acquired (the fencing token; 0 for a lock that is not
/// fenced), `Err(pttl)` held by another owner (its PTTL in ms; -1: a key without expiry).
type Step = std::result::Result<u64, i64>;

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Lock {
    /// A handle on lock `name`; `fenced` adds the fencing-token step of [`crate::FencedLock`].
    pub(crate) fn new(shared: Arc<Shared>, name: &str, fenced: bool) -> Lock {
        let group = shared.group(name);
        Lock {
            inner: Arc::new(LockInner {
                shared,
                name: name.into(),
                token_key: fenced.then(|| keys::token_key(name)),
                channel: keys::lock_channel(name),
                latch_prefix: keys::unlock_latch_prefix(name),
                group,
            }),
        }
    }

    /// The lock name (also its Redis key).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    fn key(&self, owner: &Owner) -> HoldKey {
        HoldKey { kind: REENTRANT.id, name: self.inner.name.clone(), owner: owner.id() }
    }

    /// Waits until `owner` holds the lock, with a watchdog-renewed lease. Re-entering a held
    /// lock increments its hold count. Cancel-safe: dropping the future leaves no hold,
    /// renewal or subscription behind.
    pub async fn acquire(&self, owner: &Owner) -> Result<()> {
        self.acquire_inner(owner, None, None).await.map(drop)
    }

    /// Waits until `owner` holds the lock with a fixed `lease` (no watchdog: the hold ends by
    /// itself when the lease runs out). `InvalidArgument` when `lease` is under 1 ms.
    pub async fn acquire_with_lease(&self, owner: &Owner, lease: Duration) -> Result<()> {
        self.acquire_inner(owner, None, Some(lease)).await.map(drop)
    }

    /// Tries to acquire for at most `wait` (zero tries once). `lease` `None` uses the watchdog.
    /// Returns false when the wait ran out; the bound is kept to within a command round trip.
    pub async fn try_acquire(&self, owner: &Owner, wait: Duration, lease: Option<Duration>) -> Result<bool> {
        Ok(self.acquire_inner(owner, Some(wait), lease).await?.is_some())
    }

    /// Like [`Lock::acquire`], returning a guard that releases on drop (on the client's
    /// runtime, in the background). Prefer [`Guard::release`], which reports the outcome.
    pub async fn lock(&self, owner: &Owner) -> Result<Guard> {
        self.acquire(owner).await?;
        Ok(self.guard(owner))
    }

    /// Acquires like [`Lock::acquire`] (`wait` `None`), [`Lock::acquire_with_lease`] or
    /// [`Lock::try_acquire`] (`wait` `Some`), returning the hold as a [`Guard`] (`None` when the
    /// wait ran out). For surfaces that hand the result across a boundary where the receiver
    /// may be gone (an interrupted blocking call, a cancelled awaitable): a guard nobody
    /// [`keep`](Guard::keep)s releases its hold when dropped, so no hold is left behind.
    pub async fn acquire_guard(
        &self,
        owner: &Owner,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<Guard>> {
        let got = self.acquire_inner(owner, wait, lease).await?;
        Ok(got.is_some().then(|| self.guard(owner)))
    }

    fn guard(&self, owner: &Owner) -> Guard {
        Guard { lock: Some(self.clone()), owner: owner.clone() }
    }

    /// For a fenced lock: the latest fencing token of `owner` while it holds the lock through
    /// this client (until its last release). `None` when it holds none, or the lock is not
    /// fenced.
    pub fn token_of(&self, owner: &Owner) -> Option<u64> {
        self.inner.shared.watchdog().token(&self.key(owner))
    }

    /// Acquires (see [`Lock::acquire_guard`]); the fencing token when the wait did not run out
    /// (0 for a lock that is not fenced), `None` when it did.
    pub(crate) async fn acquire_inner(
        &self,
        owner: &Owner,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<u64>> {
        let shared = &self.inner.shared;
        shared.check_owner(owner)?;
        let (lease, renew) = match lease {
            Some(l) => {
                positive_ms("lease", l)?;
                (l, false)
            }
            None => (shared.watchdog().lease(), true),
        };
        let deadline = match wait {
            Some(w) => {
                check_duration("wait", w)?;
                Some(Instant::now() + w)
            }
            None => None,
        };
        shared.check_open()?;
        shared
            .wait_until(&self.inner.channel, lock_message, deadline, || async {
                Ok(match self.attempt(owner, lease, renew).await? {
                    Ok(token) => Attempt::Done(token),
                    // Bounded by the holder's lease (a key without expiry: no bound).
                    Err(ttl) if ttl >= 0 => Attempt::Busy(Some(Duration::from_millis(ttl as u64 + 1))),
                    Err(_) => Attempt::Busy(None),
                })
            })
            .await
    }

    /// One acquire step (and, with replica sync, its WAIT). It runs in place, inside a
    /// [`Finish`]: a caller who gives up mid-call hands the call to a task that finishes it, so
    /// no untracked hold is left. The call registers the hold with the watchdog before
    /// answering, and an answer nobody takes (an [`Undo`]) releases the hold again.
    async fn attempt(&self, owner: &Owner, lease: Duration, renew: bool) -> Result<Step> {
        let lock = self.clone();
        let owner = owner.clone();
        let shared = &self.inner.shared;
        let call = Finish::new(shared.handle(), async move {
            let inner = &lock.inner;
            match lock.run_acquire(&owner, millis(lease)).await? {
                Ok(token) => {
                    let key = lock.key(&owner);
                    inner.shared.watchdog().acquired(
                        &REENTRANT,
                        key.clone(),
                        &owner,
                        lease,
                        renew,
                        inner.group,
                    );
                    if inner.token_key.is_some() {
                        inner.shared.watchdog().set_token(&key, token);
                    }
                    let undo = lock.undo(&owner);
                    Ok(Ok((undo, token)))
                }
                Err(ttl) => Ok(Err(ttl)),
            }
        });
        let answer = tokio::select! {
            a = call => a,
            _ = shared.closed() => return Err(Error::closed()),
        };
        // No await from here on: the hold is handed to the caller in the same poll.
        match answer? {
            Ok((hold, token)) => {
                hold.keep();
                Ok(Ok(token))
            }
            Err(ttl) => Ok(Err(ttl)),
        }
    }

    /// Releases `owner`'s hold on the client's runtime when dropped unkept.
    fn undo(&self, owner: &Owner) -> Undo {
        let (lock, owner) = (self.clone(), owner.clone());
        Undo::new(self.inner.shared.handle(), async move {
            if let Err(e) = lock.release_now(&owner).await {
                log::warn!("rlock: could not undo an acquire nobody took on '{}': {e}", lock.name());
            }
        })
    }

    /// The acquire step, followed by a replica `WAIT` when replica sync is on and the key's
    /// master has replicas. An acquire no replica acknowledged is undone and fails with
    /// `Timeout`, which the wait loop retries.
    async fn run_acquire(&self, owner: &Owner, lease_ms: u64) -> Result<Step> {
        let inner = &self.inner;
        let failed = |e| Error::from_redis(&format!("acquire of lock '{}' failed", inner.name), e);
        let step = |mut conn| async move {
            match &inner.token_key {
                Some(token_key) => {
                    scripts::fenced_acquire(&mut conn, &inner.name, token_key, lease_ms, owner.as_str()).await
                }
                None => scripts::acquire(&mut conn, &inner.name, lease_ms, owner.as_str())
                    .await
                    .map(|busy| busy.map_or(Ok(0), Err)),
            }
        };
        let Some(replicas) = inner.shared.replicas_for(inner.group) else {
            return step(inner.shared.conn()).await.map_err(failed);
        };
        match replicas.run(&inner.name, inner.group, step, Step::is_ok).await.map_err(failed)? {
            Synced::Acknowledged(ttl) => Ok(ttl),
            Synced::Unacknowledged(_) => {
                if let Err(e) = self.release_now(owner).await {
                    log::warn!("rlock: could not undo the unsynced acquire of '{}': {e}", inner.name);
                }
                Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "no replica acknowledged the acquire of lock '{}' within replica_sync_timeout \
                         ({:?}); the acquire was undone",
                        inner.name,
                        inner.shared.options().replica_sync_timeout
                    ),
                ))
            }
        }
    }

    /// Releases one hold level of `owner`: [`Released::Unlocked`] when the lock is free now.
    /// Errors: `NotHeld` when `owner` does not hold the lock (never did, or its lease ran out),
    /// `Lost` when the watchdog had lost the hold. Retried after connection errors with one
    /// request id, so a retry never double-releases. Runs to the end even when the returned
    /// future is dropped.
    pub async fn release(&self, owner: &Owner) -> Result<Released> {
        self.inner.shared.check_owner(owner)?;
        self.inner.shared.check_open()?;
        let lock = self.clone();
        let owner = owner.clone();
        Finish::new(self.inner.shared.handle(), async move { lock.release_now(&owner).await }).await
    }

    async fn release_now(&self, owner: &Owner) -> Result<Released> {
        let inner = &self.inner;
        let shared = &inner.shared;
        let key = self.key(owner);
        let latch = request_latch(&inner.latch_prefix, shared.id());
        let call = scripts::Release {
            name: &inner.name,
            channel: &inner.channel,
            latch: &latch,
            lease_ms: millis(shared.watchdog().release_lease(&key)),
            owner: owner.as_str(),
            publish: shared.publish_command(),
            latch_ttl_ms: shared.latch_ttl_ms(),
        };
        shared.watchdog().release_started(&key);
        let result = shared
            .retrying(|mut conn| {
                let call = &call;
                async move {
                    call.run(&mut conn).await.map_err(|e| {
                        Error::from_redis(&format!("release of lock '{}' failed", inner.name), e)
                    })
                }
            })
            .await;
        let outcome = match result {
            Ok(Some(1)) => {
                shared.watchdog().released(&key);
                Released::Unlocked
            }
            Ok(Some(_)) => {
                shared.watchdog().release_ended(&key);
                Released::StillHeld
            }
            Ok(None) => return Err(not_held(shared.watchdog().forget(&key), &inner.name, owner)),
            Err(e) => {
                shared.watchdog().release_ended(&key);
                return Err(e);
            }
        };
        // The latch only matters to retries of this call, which are over.
        shared.latches().delete(inner.group, latch);
        Ok(outcome)
    }

    /// Deletes the lock whoever holds it and wakes a waiter. Returns whether a lock was there.
    /// `Redis` error (and nothing deleted) when the key is not a lock. The holder's watchdog
    /// reports the loss and its release fails with `Lost`.
    pub async fn force_unlock(&self) -> Result<bool> {
        let inner = &self.inner;
        let shared = &inner.shared;
        shared.check_open()?;
        let deleted =
            scripts::force_unlock(&mut shared.conn(), &inner.name, &inner.channel, shared.publish_command())
                .await
                .map_err(|e| {
                    Error::from_redis(&format!("force unlock of lock '{}' failed", inner.name), e)
                })?;
        shared.watchdog().forget_name(&inner.name);
        Ok(deleted == 1)
    }

    /// Whether anyone holds the lock (`EXISTS`).
    pub async fn is_locked(&self) -> Result<bool> {
        let name = &self.inner.name;
        self.inner
            .shared
            .retrying(|mut c| async move {
                c.exists(&**name).await.map_err(|e| Error::from_redis("EXISTS failed", e))
            })
            .await
    }

    /// Whether `owner` holds the lock (`HEXISTS`).
    pub async fn is_held(&self, owner: &Owner) -> Result<bool> {
        self.inner.shared.check_owner(owner)?;
        let name = &self.inner.name;
        self.inner
            .shared
            .retrying(|mut c| async move {
                c.hexists(&**name, owner.as_str()).await.map_err(|e| Error::from_redis("HEXISTS failed", e))
            })
            .await
    }

    /// How many times `owner` holds the lock (0 when it does not).
    pub async fn hold_count(&self, owner: &Owner) -> Result<u32> {
        self.inner.shared.check_owner(owner)?;
        let name = &self.inner.name;
        let n: Option<i64> = self
            .inner
            .shared
            .retrying(|mut c| async move {
                c.hget(&**name, owner.as_str()).await.map_err(|e| Error::from_redis("HGET failed", e))
            })
            .await?;
        Ok(n.and_then(|n| u32::try_from(n).ok()).unwrap_or(0))
    }

    /// The remaining lease of the lock key.
    pub async fn remaining_ttl(&self) -> Result<Ttl> {
        let name = &self.inner.name;
        let ms: i64 = self
            .inner
            .shared
            .retrying(|mut c| async move {
                c.pttl(&**name).await.map_err(|e| Error::from_redis("PTTL failed", e))
            })
            .await?;
        Ok(match ms {
            -2 => Ttl::Absent,
            m if m < 0 => Ttl::NoExpiry,
            m => Ttl::Remaining(Duration::from_millis(m as u64)),
        })
    }

    /// Whether the watchdog lost `owner`'s hold (until its release is called).
    pub fn is_lost(&self, owner: &Owner) -> bool {
        self.inner.shared.watchdog().is_lost(&self.key(owner))
    }

    /// Calls `f` (on a library task) when the watchdog loses a hold of this lock: by `owner`
    /// only, or by any owner of this client when `owner` is `None`. A panicking listener is
    /// caught and logged. Remove it with [`Client::remove_lost_listener`](crate::Client::remove_lost_listener).
    pub fn on_lost(
        &self,
        owner: Option<&Owner>,
        f: impl Fn(&LostEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        let filter = match owner {
            Some(o) => LostFilter::hold(self.name(), o),
            None => LostFilter::name(self.name()),
        };
        self.inner.shared.watchdog().add_listener(filter, Arc::new(f))
    }

    /// Removes a listener added with [`Lock::on_lost`] (or the client's); false when it was
    /// already removed.
    pub fn remove_lost_listener(&self, id: ListenerId) -> bool {
        self.inner.shared.watchdog().remove_listener(id)
    }
}

/// The error of a release Redis answered "not held" for.
fn not_held(forgotten: Forgotten, name: &str, owner: &Owner) -> Error {
    match forgotten {
        Forgotten::Lost => Error::new(
            ErrorKind::Lost,
            format!(
                "lock '{name}' was lost before this release: the watchdog could not renew it \
                 (it expired, was force-unlocked, or Redis was unreachable)"
            ),
        ),
        Forgotten::NotHeld => Error::new(
            ErrorKind::NotHeld,
            format!("lock '{name}' is not held by {owner} (never acquired, or its lease ran out)"),
        ),
    }
}

/// A held lock that releases itself when dropped (in the background, on the client's runtime).
/// [`Guard::release`] releases now and reports the outcome.
#[must_use = "dropping the guard releases the lock at once"]
pub struct Guard {
    lock: Option<Lock>,
    owner: Owner,
}

impl Guard {
    /// The lock held.
    pub fn lock(&self) -> Option<&Lock> {
        self.lock.as_ref()
    }

    /// Keeps the hold without releasing it: the owner now holds the lock until it calls
    /// [`Lock::release`] itself.
    pub fn keep(mut self) {
        self.lock = None;
    }

    /// Releases now (see [`Lock::release`]).
    pub async fn release(mut self) -> Result<Released> {
        match self.lock.take() {
            Some(lock) => lock.release(&self.owner).await,
            None => Err(Error::new(ErrorKind::NotHeld, "guard was already released")),
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            drop(lock.undo(&self.owner));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_messages() {
        assert_eq!(lock_message(b"0"), Wake::One);
        assert_eq!(lock_message(b"1"), Wake::All);
        assert_eq!(lock_message(b"2"), Wake::Nobody);
        assert_eq!(lock_message(b""), Wake::Nobody);
    }
}
