//! The reentrant lock (Redisson `RLock`): acquire with pub/sub waiting, release, queries.

use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use redis::AsyncCommands;
use tokio::time::Instant;

use crate::client::{is_transient, ClientInner};
use crate::error::{Error, ErrorKind, Result};
use crate::keys;
use crate::options::{check_duration, positive_ms};
use crate::owner::Owner;
use crate::pubsub::SubState;
use crate::replicas::Synced;
use crate::scripts::{ACQUIRE, FORCE_RELEASE, RELEASE, UNLOCK_MESSAGE};
use crate::watchdog::{Forgotten, HoldKey};

/// A handle on one reentrant lock. Cheap to clone; holds belong to [`Owner`]s, not to handles.
#[derive(Clone)]
pub struct Lock {
    inner: Arc<LockInner>,
}

struct LockInner {
    client: Arc<ClientInner>,
    name: Arc<str>,
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

/// An acquired hold that releases itself when dropped unless handed to the caller: the result
/// of an acquire script whose caller may have given up (dropped future) meanwhile.
struct PendingHold {
    lock: Option<Lock>,
    owner: Owner,
}

impl PendingHold {
    fn keep(mut self) {
        self.lock = None;
    }
}

impl Drop for PendingHold {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            let owner = self.owner.clone();
            let handle = lock.inner.client.handle.clone();
            handle.spawn(async move {
                if let Err(e) = lock.release_now(&owner).await {
                    log::warn!(
                        "rlock: could not undo the acquire of a cancelled call on '{}': {e}",
                        lock.name()
                    );
                }
            });
        }
    }
}

/// A future polled in place by its caller that runs to the end even when the caller drops it:
/// dropped unfinished, it hands the rest of its work to a task on `handle` (its output is then
/// dropped there). Costs one allocation, where spawning every call up front cost a task and a
/// channel per call.
struct Finish<T: Send + 'static> {
    fut: Option<Pin<Box<dyn Future<Output = T> + Send>>>,
    handle: tokio::runtime::Handle,
}

impl<T: Send + 'static> Finish<T> {
    fn new(handle: &tokio::runtime::Handle, fut: impl Future<Output = T> + Send + 'static) -> Self {
        Finish { fut: Some(Box::pin(fut)), handle: handle.clone() }
    }
}

impl<T: Send + 'static> Future for Finish<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(fut) = self.fut.as_mut() else {
            // Only polled again after completion by a caller that ignores the contract.
            return Poll::Pending;
        };
        let out = fut.as_mut().poll(cx);
        if out.is_ready() {
            self.fut = None;
        }
        out
    }
}

impl<T: Send + 'static> Drop for Finish<T> {
    fn drop(&mut self) {
        if let Some(fut) = self.fut.take() {
            // An unfinished call: let it finish on the client's runtime.
            self.handle.spawn(async move {
                drop(fut.await);
            });
        }
    }
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock").field("name", &self.inner.name).finish()
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Lock {
    pub(crate) fn new(client: Arc<ClientInner>, name: &str) -> Lock {
        let group = client.commands.batch_group(name);
        Lock {
            inner: Arc::new(LockInner {
                client,
                name: name.into(),
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
        HoldKey { name: self.inner.name.clone(), owner: owner.id() }
    }

    /// Waits until `owner` holds the lock, with a watchdog-renewed lease. Re-entering a held
    /// lock increments its hold count. Cancel-safe: dropping the future leaves no hold,
    /// renewal or subscription behind.
    pub async fn acquire(&self, owner: &Owner) -> Result<()> {
        self.acquire_inner(owner, None, None).await.map(|_| ())
    }

    /// Waits until `owner` holds the lock with a fixed `lease` (no watchdog: the hold ends by
    /// itself when the lease runs out). `InvalidArgument` when `lease` is under 1 ms.
    pub async fn acquire_with_lease(&self, owner: &Owner, lease: Duration) -> Result<()> {
        self.acquire_inner(owner, None, Some(lease)).await.map(|_| ())
    }

    /// Tries to acquire for at most `wait` (zero tries once). `lease` `None` uses the watchdog.
    /// Returns false when the wait ran out; the bound is kept to within a command round trip.
    pub async fn try_acquire(&self, owner: &Owner, wait: Duration, lease: Option<Duration>) -> Result<bool> {
        self.acquire_inner(owner, Some(wait), lease).await
    }

    /// Like [`Lock::acquire`], returning a guard that releases on drop (on the client's
    /// runtime, in the background). Prefer [`Guard::release`], which reports the outcome.
    pub async fn lock(&self, owner: &Owner) -> Result<Guard> {
        self.acquire(owner).await?;
        Ok(Guard { lock: Some(self.clone()), owner: owner.clone() })
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
        Ok(got.then(|| Guard { lock: Some(self.clone()), owner: owner.clone() }))
    }

    async fn acquire_inner(
        &self,
        owner: &Owner,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<bool> {
        let client = &self.inner.client;
        client.check_owner(owner)?;
        let (lease, renew) = match lease {
            Some(l) => {
                positive_ms("lease", l)?;
                (l, false)
            }
            None => (client.watchdog.lease(), true),
        };
        let deadline = match wait {
            Some(w) => {
                check_duration("wait", w)?;
                Some(Instant::now() + w)
            }
            None => None,
        };
        client.check_open()?;
        let lease_ms = millis(lease);
        let mut membership = None;
        let mut failures = 0u32;
        loop {
            let channel = membership.as_ref().map(|m: &crate::pubsub::Membership| m.channel.clone());
            // Registered before the attempt, so a message sent after the attempt's answer is
            // never missed.
            let notified = channel.as_ref().map(|c| c.notify.notified());
            tokio::pin!(notified);
            if let Some(n) = notified.as_mut().as_pin_mut() {
                n.enable();
            }
            let ttl = match self.attempt(owner, lease, lease_ms, renew).await {
                Ok(None) => return Ok(true),
                Ok(Some(ttl)) => {
                    failures = 0;
                    ttl
                }
                Err(e) if is_transient(&e) && failures < client.options.retry_attempts => {
                    failures += 1;
                    let pause = remaining(deadline)
                        .map_or(client.options.retry_delay, |r| r.min(client.options.retry_delay));
                    if pause.is_zero() {
                        return Ok(false);
                    }
                    // A subscribed waiter also ends the pause on an unlock message (a release
                    // on the master that took over, while this one was still failing).
                    sleep_or_unlock(client, notified.as_mut(), pause).await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let left = remaining(deadline);
            if left == Some(Duration::ZERO) {
                return Ok(false);
            }
            let Some(m) = membership.as_ref() else {
                // Subscribe, then try again before waiting: a release that raced the
                // subscription is caught by that retry.
                let m = client.pubsub.join(&self.inner.channel);
                let mut state = m.channel.state();
                let bound = left.map_or(client.options.subscription_timeout, |l| {
                    l.min(client.options.subscription_timeout)
                });
                tokio::select! {
                    _ = client.closed.cancelled() => return Err(Error::closed()),
                    _ = tokio::time::timeout(bound, state.wait_for(|s| *s != SubState::Pending)) => {}
                }
                membership = Some(m);
                continue;
            };
            // Bounded by the holder's lease, so a lost message costs at most that.
            let mut bound = match ttl {
                t if t > 0 => Duration::from_millis(t as u64 + 1),
                0 => Duration::from_millis(1),
                _ => Duration::from_secs(1),
            };
            if *m.channel.state().borrow() != SubState::Active {
                client.pubsub.retry_subscribe(m);
                bound = bound.min(client.options.poll_interval);
            }
            if let Some(l) = left {
                bound = bound.min(l);
            }
            sleep_or_unlock(client, notified.as_mut(), bound).await?;
        }
    }

    /// One acquire script call (and, with replica sync, its WAIT). It runs in place, inside a
    /// [`Finish`]: a caller who gives up mid-call hands the call to a task that finishes it, so
    /// no untracked hold is left. The call registers the hold with the watchdog before
    /// answering, and an answer nobody takes (a [`PendingHold`]) releases the hold again.
    async fn attempt(
        &self,
        owner: &Owner,
        lease: Duration,
        lease_ms: u64,
        renew: bool,
    ) -> Result<Option<i64>> {
        let lock = self.clone();
        let owner = owner.clone();
        let client = &self.inner.client;
        let call = Finish::new(&client.handle, async move {
            let inner = &lock.inner;
            match lock.run_acquire(&owner, lease_ms).await {
                Ok(None) => {
                    inner.client.watchdog.acquired(lock.key(&owner), &owner, lease, renew, inner.group);
                    Ok(Ok(PendingHold { lock: Some(lock.clone()), owner }))
                }
                Ok(Some(ttl)) => Ok(Err(ttl)),
                Err(e) => Err(e),
            }
        });
        let answer = tokio::select! {
            a = call => a,
            _ = client.closed.cancelled() => return Err(Error::closed()),
        };
        // No await from here on: the hold is handed to the caller in the same poll.
        match answer? {
            Ok(hold) => {
                hold.keep();
                Ok(None)
            }
            Err(ttl) => Ok(Some(ttl)),
        }
    }

    /// The acquire script, followed by a replica `WAIT` when replica sync is on and the key's
    /// master has replicas. Nil (acquired) or the holder's PTTL. An acquire no replica
    /// acknowledged is undone and fails with `Timeout`, which the acquire loop retries.
    async fn run_acquire(&self, owner: &Owner, lease_ms: u64) -> Result<Option<i64>> {
        let inner = &self.inner;
        let failed = |e| Error::from_redis(&format!("acquire of lock '{}' failed", inner.name), e);
        let replicas = inner.client.replicas.as_ref().filter(|r| r.wanted(inner.group));
        let Some(replicas) = replicas else {
            let mut conn = inner.client.commands.clone();
            return ACQUIRE
                .run(
                    &[&*inner.name],
                    |c| {
                        c.arg(lease_ms).arg(owner.as_str());
                    },
                    &mut conn,
                )
                .await
                .map_err(failed);
        };
        match replicas.acquire(&inner.name, inner.group, lease_ms, owner.as_str()).await.map_err(failed)? {
            Synced::Busy(ttl) => Ok(Some(ttl)),
            Synced::Acquired => Ok(None),
            Synced::Unacknowledged => {
                if let Err(e) = self.release_now(owner).await {
                    log::warn!("rlock: could not undo the unsynced acquire of '{}': {e}", inner.name);
                }
                Err(Error::new(
                    ErrorKind::Timeout,
                    format!(
                        "no replica acknowledged the acquire of lock '{}' within replica_sync_timeout \
                         ({:?}); the acquire was undone",
                        inner.name, inner.client.options.replica_sync_timeout
                    ),
                ))
            }
        }
    }

    /// Releases one hold level of `owner`. Errors: `NotHeld` when `owner` does not hold the lock
    /// (never did, or its lease ran out), `Lost` when the watchdog had lost the hold. Retried
    /// after connection errors with one request id, so a retry never double-releases. Runs to
    /// the end even when the returned future is dropped.
    pub async fn release(&self, owner: &Owner) -> Result<Released> {
        self.inner.client.check_owner(owner)?;
        self.inner.client.check_open()?;
        let lock = self.clone();
        let owner = owner.clone();
        Finish::new(&self.inner.client.handle, async move { lock.release_now(&owner).await }).await
    }

    async fn release_now(&self, owner: &Owner) -> Result<Released> {
        let inner = &self.inner;
        let client = &inner.client;
        let key = self.key(owner);
        let lease_ms = millis(client.watchdog.release_lease(&key));
        let latch = request_latch(&inner.latch_prefix, client.id);
        let publish = client.publish_command();
        let result = client
            .retrying(|mut conn| {
                let latch = &latch;
                async move {
                    let keys = [&*inner.name, inner.channel.as_str(), latch.as_str()];
                    let args = |c: &mut redis::Cmd| {
                        c.arg(UNLOCK_MESSAGE)
                            .arg(lease_ms)
                            .arg(owner.as_str())
                            .arg(publish)
                            .arg(client.latch_ttl_ms);
                    };
                    RELEASE.run::<Option<i64>, _>(&keys, args, &mut conn).await.map_err(|e| {
                        Error::from_redis(&format!("release of lock '{}' failed", inner.name), e)
                    })
                }
            })
            .await;
        let outcome = match result? {
            Some(1) => {
                client.watchdog.released(&key);
                Released::Unlocked
            }
            Some(_) => Released::StillHeld,
            None => {
                return Err(match client.watchdog.forget(&key) {
                    Forgotten::Lost => Error::new(
                        ErrorKind::Lost,
                        format!(
                            "lock '{}' was lost before this release: the watchdog could not renew it \
                             (it expired, was force-released, or Redis was unreachable)",
                            inner.name
                        ),
                    ),
                    Forgotten::NotHeld => Error::new(
                        ErrorKind::NotHeld,
                        format!(
                            "lock '{}' is not held by {owner} (never acquired, or its lease ran out)",
                            inner.name
                        ),
                    ),
                })
            }
        };
        // The latch only matters to retries of this call, which are over.
        client.latches.delete(inner.group, latch);
        Ok(outcome)
    }

    /// Deletes the lock whoever holds it and wakes a waiter. Returns whether a lock was there.
    /// `Redis` error (and nothing deleted) when the key is not a lock.
    pub async fn force_release(&self) -> Result<bool> {
        let inner = &self.inner;
        let client = &inner.client;
        client.check_open()?;
        let mut conn = client.commands.clone();
        let keys = [&*inner.name, &inner.channel];
        let deleted = FORCE_RELEASE
            .run::<i64, _>(
                &keys,
                |c| {
                    c.arg(UNLOCK_MESSAGE).arg(client.publish_command());
                },
                &mut conn,
            )
            .await
            .map_err(|e| Error::from_redis(&format!("force release of lock '{}' failed", inner.name), e))?;
        client.watchdog.forget_name(&inner.name);
        Ok(deleted == 1)
    }

    /// Whether anyone holds the lock (`EXISTS`).
    pub async fn is_locked(&self) -> Result<bool> {
        let name = &self.inner.name;
        self.inner
            .client
            .retrying(|mut c| async move {
                c.exists(&**name).await.map_err(|e| Error::from_redis("EXISTS failed", e))
            })
            .await
    }

    /// Whether `owner` holds the lock (`HEXISTS`).
    pub async fn is_held_by(&self, owner: &Owner) -> Result<bool> {
        self.inner.client.check_owner(owner)?;
        let name = &self.inner.name;
        self.inner
            .client
            .retrying(|mut c| async move {
                c.hexists(&**name, owner.as_str()).await.map_err(|e| Error::from_redis("HEXISTS failed", e))
            })
            .await
    }

    /// How many times `owner` holds the lock (0 when it does not).
    pub async fn hold_count(&self, owner: &Owner) -> Result<u32> {
        self.inner.client.check_owner(owner)?;
        let name = &self.inner.name;
        let n: Option<i64> = self
            .inner
            .client
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
            .client
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
        self.inner.client.watchdog.is_lost(&self.key(owner))
    }
}

/// The latch key of one release: `prefix` and a request id of 32 lowercase hex digits (16
/// bytes) that no other release call of any client uses. The first 8 bytes come from the
/// client's random UUID, the last 8 are a bijective scramble (splitmix64) of a per-process
/// sequence number keyed by the rest of that UUID, so ids of one client never repeat and look
/// random, without a `getrandom` system call per release (`Uuid::new_v4` made one).
fn request_latch(prefix: &str, client: uuid::Uuid) -> String {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let (hi, lo) = client.as_u64_pair();
    let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let mut z = lo.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let id = (u128::from(hi) << 64) | u128::from(z);
    let mut latch = String::with_capacity(prefix.len() + 32);
    latch.push_str(prefix);
    let _ = write!(latch, "{id:032x}");
    latch
}

/// Waits `d`, or less when an unlock message arrives (`notified`, when subscribed); `Closed`
/// when the client closes meanwhile.
async fn sleep_or_unlock<N: Future<Output = ()>>(
    client: &ClientInner,
    notified: Pin<&mut Option<N>>,
    d: Duration,
) -> Result<()> {
    let message = async {
        match notified.as_pin_mut() {
            Some(n) => n.await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = client.closed.cancelled() => Err(Error::closed()),
        _ = message => Ok(()),
        _ = tokio::time::sleep(d) => Ok(()),
    }
}

fn remaining(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(Instant::now()))
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
            // Dropping a PendingHold releases on the client's runtime, which is what we want.
            drop(PendingHold { lock: Some(lock), owner: self.owner.clone() });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_32_hex_digits_and_never_repeat() {
        let client = uuid::Uuid::new_v4();
        let prefix = keys::unlock_latch_prefix("orders");
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            let latch = request_latch(&prefix, client);
            let id = latch.strip_prefix(&prefix).unwrap_or_default();
            assert_eq!(id.len(), 32);
            assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            assert!(seen.insert(latch));
        }
        // Another client's ids differ in their first half.
        let other = request_latch(&prefix, uuid::Uuid::new_v4());
        assert!(seen.iter().all(|l| l[..prefix.len() + 16] != other[..prefix.len() + 16]));
    }
}
