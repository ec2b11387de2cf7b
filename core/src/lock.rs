//! The lock family of Redisson's `RedissonLock`: the reentrant lock (`RLock`) and the locks
//! that share its hash, its owners and its steps' shape: the fenced lock, the read and write
//! sides of a read-write lock, and the fair lock. Each is a [`Lock`] with its [`Flavor`]: the
//! flavor picks the scripts, the channel and the kind of hold; everything else (the wait loop
//! and pub/sub waiting, the watchdog, replica sync, release bookkeeping, the cancel-safety of
//! [`crate::finish`], guards and queries) is shared, so every lock has the full `Lock` API.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::AsyncCommands;
use tokio::time::Instant;

use crate::error::{Error, ErrorKind, Result};
use crate::finish::{Finish, Undo};
use crate::keys;
use crate::latches::request_latch;
use crate::options::positive_ms;
use crate::owner::Owner;
use crate::pubsub::{Meaning, Wake};
use crate::replicas::Synced;
use crate::scripts::{self, ReleaseKind};
use crate::shared::{Acquiring, Attempt, Shared};
use crate::watchdog::{Forgotten, HoldKey, HoldKind, ListenerId, LostEvent, LostFilter};

/// The reentrant lock's hold, renewed with its renewal step (also the fenced and fair locks').
pub(crate) static REENTRANT: HoldKind = HoldKind {
    id: 0,
    name: "lock",
    renew: |mut conn, lease_ms, holds| {
        Box::pin(async move {
            let pairs: Vec<(&str, &str)> = holds.iter().map(|h| (&*h.name, h.owner.as_str())).collect();
            scripts::renew_locks(&mut conn, lease_ms, &pairs).await
        })
    },
};

/// A write hold of a read-write lock: the reentrant renewal on field `<owner>:write`.
pub(crate) static WRITE: HoldKind = HoldKind {
    id: 1,
    name: "write",
    renew: |mut conn, lease_ms, holds| {
        Box::pin(async move {
            let fields: Vec<String> = holds.iter().map(|h| write_field(&h.owner)).collect();
            let pairs: Vec<(&str, &str)> =
                holds.iter().zip(&fields).map(|(h, f)| (&*h.name, f.as_str())).collect();
            scripts::renew_locks(&mut conn, lease_ms, &pairs).await
        })
    },
};

/// The read holds of one owner on a read-write lock: the lock and only this owner's read-hold
/// keys are renewed.
pub(crate) static READ: HoldKind = HoldKind {
    id: 2,
    name: "read",
    renew: |mut conn, lease_ms, holds| {
        Box::pin(async move {
            let triples: Vec<(&str, &str, String)> = holds
                .iter()
                .map(|h| (&*h.name, h.owner.as_str(), keys::read_timeout_prefix(&h.name, h.owner.as_str())))
                .collect();
            scripts::renew_reads(&mut conn, lease_ms, &triples).await
        })
    },
};

/// The hash field of `owner`'s write hold.
fn write_field(owner: &Owner) -> String {
    format!("{}:write", owner.as_str())
}

/// Which lock of the family a [`Lock`] is: its scripts, channel and kind of hold.
pub(crate) enum Flavor {
    /// Redisson `RLock`.
    Reentrant,
    /// Redisson `RFencedLock`: every acquire also takes a token from `token_key`.
    Fenced { token_key: String },
    /// The read side of Redisson `RReadWriteLock`; `key_prefix` starts every read-hold key.
    Read { key_prefix: String },
    /// The write side of Redisson `RReadWriteLock`.
    Write,
    /// Redisson `RFairLock`: waiters queue in `queue`, with deadlines in `timeouts`.
    Fair { queue: String, timeouts: String },
}

impl Flavor {
    fn kind(&self) -> &'static HoldKind {
        match self {
            Flavor::Read { .. } => &READ,
            Flavor::Write => &WRITE,
            _ => &REENTRANT,
        }
    }
}

/// What a message on a fair-lock waiter's own channel means: its turn may have come.
fn fair_message(payload: &[u8]) -> Wake {
    if payload == scripts::UNLOCK_MESSAGE.as_bytes() {
        Wake::All
    } else {
        Wake::Nobody
    }
}

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

/// A handle on one lock of the family: reentrant ([`Client::lock`](crate::Client::lock)), fenced,
/// read or write side of a read-write lock, or fair. Cheap to clone; holds belong to
/// [`Owner`]s, not to handles.
#[derive(Clone)]
pub struct Lock {
    inner: Arc<LockInner>,
}

struct LockInner {
    shared: Arc<Shared>,
    name: Arc<str>,
    flavor: Flavor,
    /// The lock's channel (a fair lock's waiters listen on `<channel>:<owner>`).
    channel: String,
    latch_prefix: String,
    group: u16,
}

/// What a successful release did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Released {
    /// The owner's last hold level was released: the lock is free and a waiter was woken.
    Unlocked,
    /// The owner still holds the lock (it had re-entered it); the count went down by one.
    StillHeld,
    /// The owner's hold ended, but the lock stays locked by other holds: other readers, or
    /// the owner's own read holds after it released its write hold (a downgrade).
    StillLocked,
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
        f.debug_struct("Lock").field("name", &self.inner.name).field("kind", &self.kind()).finish()
    }
}

/// What one acquire step did: `Ok(token)` acquired (the fencing token; 0 for a lock that is not
/// fenced), `Err(pttl)` held by another owner (its PTTL in ms; -1: a key without expiry; for a
/// fair lock, how long to wait at most), or [`scripts::REFUSED_UPGRADE`].
type Step = std::result::Result<u64, i64>;

/// What [`Lock::attempt`] hands back when the lock is busy: the wait bound, and for a fair lock
/// the give-up step of the queue place it holds now.
type Busy = (i64, Option<Undo>);

/// Milliseconds since the Unix epoch (the fair lock's deadlines use the clients' clocks, as
/// Redisson's do).
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Lock {
    /// A handle on the reentrant lock `name`.
    pub(crate) fn new(shared: Arc<Shared>, name: &str) -> Lock {
        Self::with_flavor(shared, name, Flavor::Reentrant)
    }

    /// A handle on lock `name` of the given flavor.
    pub(crate) fn with_flavor(shared: Arc<Shared>, name: &str, flavor: Flavor) -> Lock {
        let group = shared.group(name);
        let channel = match flavor {
            Flavor::Read { .. } | Flavor::Write => keys::rwlock_channel(name),
            _ => keys::lock_channel(name),
        };
        Lock {
            inner: Arc::new(LockInner {
                shared,
                name: name.into(),
                flavor,
                channel,
                latch_prefix: keys::unlock_latch_prefix(name),
                group,
            }),
        }
    }

    /// The lock name (also its Redis key).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Which lock of the family this is: `"lock"`, `"fenced"`, `"read"`, `"write"` or `"fair"`.
    pub fn kind(&self) -> &'static str {
        match self.inner.flavor {
            Flavor::Reentrant => "lock",
            Flavor::Fenced { .. } => "fenced",
            Flavor::Read { .. } => "read",
            Flavor::Write => "write",
            Flavor::Fair { .. } => "fair",
        }
    }

    fn key(&self, owner: &Owner) -> HoldKey {
        HoldKey { kind: self.inner.flavor.kind().id, name: self.inner.name.clone(), owner: owner.id() }
    }

    /// The hash field of `owner`'s hold.
    fn field<'a>(&self, owner: &'a Owner) -> Cow<'a, str> {
        match self.inner.flavor {
            Flavor::Write => Cow::Owned(write_field(owner)),
            _ => Cow::Borrowed(owner.as_str()),
        }
    }

    /// Waits until `owner` holds the lock, with a watchdog-renewed lease. Re-entering a held
    /// lock increments its hold count. Cancel-safe: dropping the future leaves no hold,
    /// renewal or subscription behind.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// # async fn demo() -> rlock::Result<()> {
    /// # let client = rlock::Client::connect_default(Default::default()).await?;
    /// let (lock, me) = (client.lock("orders")?, client.new_owner());
    /// lock.acquire(&me).await?; // waits as long as it takes
    /// lock.acquire(&me).await?; // re-entered: hold count 2
    /// assert_eq!(lock.hold_count(&me).await?, 2);
    /// lock.release(&me).await?;
    /// lock.release(&me).await?;
    /// // Or wait at most 500 ms, for a hold that ends by itself after 10 s:
    /// if lock.try_acquire(&me, Duration::from_millis(500), Some(Duration::from_secs(10))).await? {
    ///     lock.release(&me).await?;
    /// }
    /// # Ok(()) }
    /// ```
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
        let token = self.acquire_inner(owner, None, None).await?;
        Ok(self.guard(owner, token.unwrap_or_default()))
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
        Ok(got.map(|token| self.guard(owner, token)))
    }

    /// One acquire step without waiting, for primitives built over several locks (RedLock):
    /// the hold as a [`Guard`], or the holder's remaining lease when busy (`None`: no bound).
    /// `lease` `None` uses the watchdog. Cancel-safe as every acquire.
    pub(crate) async fn try_once(
        &self,
        owner: &Owner,
        lease: Option<Duration>,
    ) -> Result<std::result::Result<Guard, Option<Duration>>> {
        let shared = &self.inner.shared;
        shared.check_owner(owner)?;
        shared.check_open()?;
        let (lease, renew) = self.lease_of(lease)?;
        Ok(match self.attempt(owner, lease, renew, 0, false).await? {
            Ok(token) => Ok(self.guard(owner, token)),
            Err((bound, _)) => Err(u64::try_from(bound).ok().map(|b| Duration::from_millis(b + 1))),
        })
    }

    /// The lease an acquire sets and whether the watchdog renews it: `lease` (at least 1 ms),
    /// or the watchdog's when `None`.
    fn lease_of(&self, lease: Option<Duration>) -> Result<(Duration, bool)> {
        match lease {
            Some(l) => positive_ms("lease", l).map(|_| (l, false)),
            None => Ok((self.inner.shared.watchdog().lease(), true)),
        }
    }

    /// The client state this lock runs on.
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.inner.shared
    }

    /// The channel the lock's unlock messages come on.
    pub(crate) fn channel(&self) -> &str {
        &self.inner.channel
    }

    /// Whether this client's watchdog tracks a hold of `owner` (held, or lost and not yet
    /// released).
    pub(crate) fn is_tracked(&self, owner: &Owner) -> bool {
        self.inner.shared.watchdog().is_tracked(&self.key(owner))
    }

    /// The owner with id `id` on this lock's client.
    pub(crate) fn owner_on_client(&self, id: u64) -> Owner {
        Owner::new(self.inner.shared.id(), id)
    }

    /// A guard of `owner`'s hold, with the token its acquire's reply carried (0: not fenced).
    fn guard(&self, owner: &Owner, token: u64) -> Guard {
        let token = matches!(self.inner.flavor, Flavor::Fenced { .. }).then_some(token);
        Guard { lock: Some(self.clone()), owner: owner.clone(), token }
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
        let (lease, renew) = self.lease_of(lease)?;
        let deadline = crate::shared::deadline("wait", wait)?;
        shared.check_open()?;
        let inner = &self.inner;
        // A fair waiter listens on its own channel, and queues with a wait: the caller's, else
        // the client's fair_lock_wait_timeout (as Redisson does).
        let (channel, meaning, fair_wait_ms): (Cow<'_, str>, Meaning, u64) = match inner.flavor {
            Flavor::Fair { .. } => (
                Cow::Owned(format!("{}:{}", inner.channel, owner.as_str())),
                fair_message,
                match wait {
                    Some(w) if !w.is_zero() => millis(w).max(1),
                    _ => millis(shared.options().fair_lock_wait_timeout).max(1),
                },
            ),
            _ => (Cow::Borrowed(&inner.channel), lock_message, 0),
        };
        let queue_up = wait != Some(Duration::ZERO);
        // The give-up step of the fair-queue place this waiter holds (see `attempt`).
        let queued: Mutex<Option<Undo>> = Mutex::new(None);
        let queued = &queued;
        let poll = shared.options().poll_interval;
        let got = shared
            .acquire_until(
                Acquiring { kind: self.kind(), name: &inner.name, owner: owner.as_str() },
                &channel,
                meaning,
                deadline,
                || async move {
                    Ok(match self.attempt(owner, lease, renew, fair_wait_ms, queue_up).await? {
                        Ok(token) => Attempt::Done(token),
                        Err((bound, give_up)) => {
                            if let Some(g) = give_up {
                                let old = queued.lock().unwrap_or_else(|p| p.into_inner()).replace(g);
                                if let Some(old) = old {
                                    old.keep();
                                }
                            }
                            if bound == scripts::REFUSED_UPGRADE && matches!(inner.flavor, Flavor::Write) {
                                return Err(refused_upgrade(&inner.name, owner));
                            }
                            match inner.flavor {
                                // Free, but another waiter is first in line: it was woken, or it
                                // crashed and is dropped once its deadline passes.
                                Flavor::Fair { .. } if bound <= 0 => Attempt::Busy(Some(poll)),
                                // Bounded by the holder's lease (a key without expiry: no bound).
                                _ if bound >= 0 => {
                                    Attempt::Busy(Some(Duration::from_millis(bound as u64 + 1)))
                                }
                                _ => Attempt::Busy(None),
                            }
                        }
                    })
                },
            )
            .await;
        let give_up = queued.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(give_up) = give_up {
            match got {
                // The acquire step took this waiter out of the queue.
                Ok(Some(_)) => give_up.keep(),
                // Out of the queue before answering, so the next waiter is not held up.
                Ok(None) => give_up.now().await,
                // Dropped: given up on the client's runtime.
                Err(_) => drop(give_up),
            }
        }
        got
    }

    /// One acquire step (and, with replica sync, its WAIT). It runs in place, inside a
    /// [`Finish`]: a caller who gives up mid-call hands the call to a task that finishes it, so
    /// no untracked hold is left. The call registers the hold with the watchdog before
    /// answering, and an answer nobody takes (an [`Undo`]) releases the hold again.
    ///
    /// A fair waiter that queued up gets the give-up step of its place (an [`Undo`]) in the
    /// same way, so a caller who gives up mid-call still leaves the queue, after the call.
    async fn attempt(
        &self,
        owner: &Owner,
        lease: Duration,
        renew: bool,
        fair_wait_ms: u64,
        queue_up: bool,
    ) -> Result<std::result::Result<u64, Busy>> {
        let lock = self.clone();
        let owner = owner.clone();
        let shared = &self.inner.shared;
        let answer = shared
            .step(async move {
                let inner = &lock.inner;
                // No later than the acquire's send: the lease it sets runs from then at the
                // earliest.
                let sent = Instant::now();
                let acquired = match lock.run_acquire(&owner, millis(lease), fair_wait_ms, queue_up).await {
                    Ok(acquired) => acquired,
                    Err(e) => {
                        if e.outcome_unknown() && !lock.is_tracked(&owner) {
                            // Only the reply may be lost, and `owner` held nothing here before:
                            // release what the script may have taken before anything retries
                            // (a retry would count a second hold level). `NotHeld` when it took
                            // nothing. A reentrant acquire cannot tell its level from an older
                            // one's, so it keeps what it has.
                            // One try: retries of its own would hold up the acquire's.
                            if let Err(e) = lock.release_tries(&owner, false).await {
                                if e.kind() != ErrorKind::NotHeld {
                                    log::warn!(
                                        "rlock: could not release what an unanswered acquire of '{}' may \
                                         have taken ({e}); it ends with its lease",
                                        lock.name()
                                    );
                                }
                            }
                        }
                        return Err(e);
                    }
                };
                match acquired {
                    Ok(token) => {
                        let key = lock.key(&owner);
                        inner.shared.watchdog().acquired(
                            inner.flavor.kind(),
                            key.clone(),
                            &owner,
                            lease,
                            renew,
                            inner.group,
                            sent,
                        );
                        if matches!(inner.flavor, Flavor::Fenced { .. }) {
                            inner.shared.watchdog().set_token(&key, token);
                        }
                        let undo = lock.undo(&owner);
                        Ok(Ok((undo, token)))
                    }
                    Err(bound) => {
                        let give_up = (matches!(inner.flavor, Flavor::Fair { .. }) && queue_up)
                            .then(|| lock.give_up(&owner, fair_wait_ms));
                        Ok(Err((bound, give_up)))
                    }
                }
            })
            .await;
        // No await from here on: the hold is handed to the caller in the same poll.
        match answer? {
            Ok((hold, token)) => {
                hold.keep();
                Ok(Ok(token))
            }
            Err(busy) => Ok(Err(busy)),
        }
    }

    /// The fair lock's give-up step for `owner` (queued with `wait_ms`), run when dropped
    /// unkept or through [`Undo::now`].
    fn give_up(&self, owner: &Owner, wait_ms: u64) -> Undo {
        let (lock, owner) = (self.clone(), owner.clone());
        Undo::new(self.inner.shared.cleanups(), async move {
            let inner = &lock.inner;
            let Flavor::Fair { queue, timeouts } = &inner.flavor else { return };
            let keys = scripts::FairKeys { name: &inner.name, queue, timeouts, channel: &inner.channel };
            let publish = inner.shared.publish_command();
            let result = inner
                .shared
                .retrying_past_close(|mut conn| {
                    let keys = &keys;
                    let owner = &owner;
                    async move {
                        scripts::fair_give_up(&mut conn, keys, owner.as_str(), wait_ms, publish)
                            .await
                            .map_err(|e| Error::from_redis("fair lock give-up failed", e))
                    }
                })
                .await;
            if let Err(e) = result {
                log::warn!(
                    "rlock: a waiter of fair lock '{}' could not leave the queue ({e}); the waiters \
                     behind it wait until its deadline",
                    inner.name
                );
            }
        })
    }

    /// Releases `owner`'s hold on the client's runtime when dropped unkept.
    fn undo(&self, owner: &Owner) -> Undo {
        let (lock, owner) = (self.clone(), owner.clone());
        Undo::new(self.inner.shared.cleanups(), async move {
            match lock.release_now(&owner).await {
                // Nothing left to give back: the acquire took nothing, or the hold ended.
                Err(e) if e.kind() == ErrorKind::NotHeld || e.kind() == ErrorKind::Lost => {}
                Err(e) => {
                    log::warn!("rlock: could not undo an acquire nobody took on '{}': {e}", lock.name())
                }
                Ok(_) => {}
            }
        })
    }

    /// The acquire step, followed by a replica `WAIT` when replica sync is on and the key's
    /// master has replicas. An acquire no replica acknowledged is undone and fails with
    /// `Timeout`, which the wait loop retries.
    async fn run_acquire(
        &self,
        owner: &Owner,
        lease_ms: u64,
        fair_wait_ms: u64,
        queue_up: bool,
    ) -> Result<Step> {
        let inner = &self.inner;
        let failed = |e| Error::from_redis(&format!("acquire of lock '{}' failed", inner.name), e);
        let step = |mut conn| async move {
            let busy = match &inner.flavor {
                Flavor::Fenced { token_key } => {
                    return scripts::fenced_acquire(
                        &mut conn,
                        &inner.name,
                        token_key,
                        lease_ms,
                        owner.as_str(),
                    )
                    .await
                }
                Flavor::Reentrant => {
                    scripts::acquire(&mut conn, &inner.name, lease_ms, owner.as_str()).await?
                }
                Flavor::Read { .. } => {
                    let prefix = keys::read_timeout_prefix(&inner.name, owner.as_str());
                    let field = write_field(owner);
                    scripts::read_acquire(&mut conn, &inner.name, &prefix, lease_ms, owner.as_str(), &field)
                        .await?
                }
                Flavor::Write => {
                    let field = write_field(owner);
                    scripts::write_acquire(&mut conn, &inner.name, lease_ms, &field, owner.as_str()).await?
                }
                Flavor::Fair { queue, timeouts } => {
                    let keys =
                        scripts::FairKeys { name: &inner.name, queue, timeouts, channel: &inner.channel };
                    scripts::fair_acquire(
                        &mut conn,
                        &keys,
                        lease_ms,
                        owner.as_str(),
                        fair_wait_ms,
                        now_ms(),
                        queue_up,
                    )
                    .await?
                }
            };
            Ok(busy.map_or(Ok(0), Err))
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
    ///
    /// ```no_run
    /// use rlock::{ErrorKind, Released};
    /// # async fn demo() -> rlock::Result<()> {
    /// # let client = rlock::Client::connect_default(Default::default()).await?;
    /// let (lock, me) = (client.lock("orders")?, client.new_owner());
    /// lock.acquire(&me).await?;
    /// lock.acquire(&me).await?;
    /// assert_eq!(lock.release(&me).await?, Released::StillHeld);
    /// assert_eq!(lock.release(&me).await?, Released::Unlocked); // free: a waiter is woken
    /// let again = lock.release(&me).await;
    /// assert_eq!(again.map_err(|e| e.kind()), Err(ErrorKind::NotHeld));
    /// # Ok(()) }
    /// ```
    pub async fn release(&self, owner: &Owner) -> Result<Released> {
        self.inner.shared.check_owner(owner)?;
        self.inner.shared.check_open()?;
        let lock = self.clone();
        let owner = owner.clone();
        let r =
            Finish::new(self.inner.shared.cleanups(), async move { lock.release_now(&owner).await }).await;
        self.inner.shared.counted(r)
    }

    async fn release_now(&self, owner: &Owner) -> Result<Released> {
        self.release_tries(owner, true).await
    }

    /// [`Self::release_now`], retried after transient errors when `retry`, else tried once.
    async fn release_tries(&self, owner: &Owner, retry: bool) -> Result<Released> {
        let inner = &self.inner;
        let shared = &inner.shared;
        let key = self.key(owner);
        let latch = request_latch(&inner.latch_prefix, shared.id());
        let kind = match &inner.flavor {
            Flavor::Reentrant | Flavor::Fenced { .. } => ReleaseKind::Reentrant,
            Flavor::Read { key_prefix } => ReleaseKind::Read {
                timeout_prefix: keys::read_timeout_prefix(&inner.name, owner.as_str()),
                key_prefix,
            },
            Flavor::Write => ReleaseKind::Write { field: write_field(owner) },
            Flavor::Fair { queue, timeouts } => ReleaseKind::Fair { queue, timeouts, now_ms: now_ms() },
        };
        let call = scripts::Release {
            name: &inner.name,
            channel: &inner.channel,
            latch: &latch,
            lease_ms: millis(shared.watchdog().release_lease(&key)),
            owner: owner.as_str(),
            publish: shared.publish_command(),
            latch_ttl_ms: shared.latch_ttl_ms(),
            kind,
        };
        shared.watchdog().release_started(&key);
        let sent = Instant::now();
        let call = &call;
        let op = |mut conn: crate::conn::Commands| async move {
            call.run(&mut conn)
                .await
                .map_err(|e| Error::from_redis(&format!("release of lock '{}' failed", inner.name), e))
        };
        let result = if retry { shared.retrying(op).await } else { op(shared.conn()).await };
        let outcome = match result {
            Ok(Some(free @ (scripts::RELEASE_FREE | scripts::RELEASE_LEFT))) => {
                let lost = shared.watchdog().released(&key);
                if let Forgotten::Lost = lost {
                    shared.latches().delete(inner.group, latch);
                    return Err(not_held(lost, &inner.name, owner));
                }
                if free == scripts::RELEASE_FREE {
                    Released::Unlocked
                } else {
                    Released::StillLocked
                }
            }
            Ok(Some(_)) => {
                // A reentrant release set the lease again, from its arrival.
                shared.watchdog().lease_reset(&key, sent);
                shared.watchdog().release_ended(&key);
                Released::StillHeld
            }
            Ok(None) => return Err(not_held(shared.watchdog().forget(&key), &inner.name, owner)),
            Err(e) => {
                // It may have run and set the lease again.
                shared.watchdog().lease_reset(&key, sent);
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
    /// reports the loss and its release fails with `Lost`. The read (write) side of a
    /// read-write lock deletes the lock only while it is read (write) locked, as Redisson's.
    pub async fn force_unlock(&self) -> Result<bool> {
        let inner = &self.inner;
        let shared = &inner.shared;
        shared.check_open()?;
        let publish = shared.publish_command();
        let mut conn = shared.conn();
        let (name, channel) = (&*inner.name, inner.channel.as_str());
        let deleted = match &inner.flavor {
            Flavor::Reentrant | Flavor::Fenced { .. } => {
                scripts::force_unlock(&mut conn, name, channel, publish).await
            }
            Flavor::Read { .. } => {
                scripts::rw_force_unlock(&mut conn, name, channel, scripts::UNLOCK_MESSAGE, publish, "read")
                    .await
            }
            Flavor::Write => {
                scripts::rw_force_unlock(
                    &mut conn,
                    name,
                    channel,
                    scripts::READ_UNLOCK_MESSAGE,
                    publish,
                    "write",
                )
                .await
            }
            Flavor::Fair { queue, timeouts } => {
                let keys = scripts::FairKeys { name, queue, timeouts, channel };
                scripts::fair_force_unlock(&mut conn, &keys, now_ms(), publish).await
            }
        }
        .map_err(|e| Error::from_redis(&format!("force unlock of lock '{}' failed", inner.name), e))?;
        if deleted == 1 {
            shared.watchdog().forget_name(&inner.name);
        }
        Ok(deleted == 1)
    }

    /// Whether the lock is locked: anyone holds it (`EXISTS`); for the read side of a
    /// read-write lock, whether read holds exist; for the write side, whether it is write
    /// locked (Redisson's answers).
    pub async fn is_locked(&self) -> Result<bool> {
        let name = &self.inner.name;
        let flavor = &self.inner.flavor;
        self.inner
            .shared
            .retrying(|mut c| async move {
                let failed = |e| Error::from_redis("is_locked failed", e);
                match flavor {
                    Flavor::Read { .. } => {
                        let (mode, fields): (Option<String>, i64) = redis::pipe()
                            .hget(&**name, "mode")
                            .hlen(&**name)
                            .query_async(&mut c)
                            .await
                            .map_err(failed)?;
                        // In write mode the fields are the mode, the writer, and its read holds.
                        Ok(match mode.as_deref() {
                            Some("read") => true,
                            Some("write") => fields > 2,
                            _ => false,
                        })
                    }
                    Flavor::Write => {
                        let mode: Option<String> = c.hget(&**name, "mode").await.map_err(failed)?;
                        Ok(mode.as_deref() == Some("write"))
                    }
                    _ => c.exists(&**name).await.map_err(failed),
                }
            })
            .await
    }

    /// Whether `owner` holds the lock (`HEXISTS`; for the write side, its write hold).
    pub async fn is_held(&self, owner: &Owner) -> Result<bool> {
        self.inner.shared.check_owner(owner)?;
        let name = &self.inner.name;
        let field = self.field(owner);
        let field = &*field;
        self.inner
            .shared
            .retrying(|mut c| async move {
                c.hexists(&**name, field).await.map_err(|e| Error::from_redis("HEXISTS failed", e))
            })
            .await
    }

    /// How many times `owner` holds the lock (0 when it does not).
    pub async fn hold_count(&self, owner: &Owner) -> Result<u32> {
        self.inner.shared.check_owner(owner)?;
        let name = &self.inner.name;
        let field = self.field(owner);
        let field = &*field;
        let n: Option<i64> = self
            .inner
            .shared
            .retrying(|mut c| async move {
                c.hget(&**name, field).await.map_err(|e| Error::from_redis("HGET failed", e))
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

    /// Calls `f` (on a library task) when the watchdog loses a hold of this lock (of this
    /// side, for a read-write lock): by `owner` only, or by any owner of this client when
    /// `owner` is `None`. A panicking listener is
    /// caught and logged. Remove it with [`Client::remove_lost_listener`](crate::Client::remove_lost_listener).
    pub fn on_lost(
        &self,
        owner: Option<&Owner>,
        f: impl Fn(&LostEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        let mut filter = match owner {
            Some(o) => LostFilter::hold(self.name(), o),
            None => LostFilter::name(self.name()),
        };
        // The read and write sides of one owner are separate holds with separate listeners.
        filter.kind = Some(self.inner.flavor.kind().name);
        self.inner.shared.watchdog().add_listener(filter, Arc::new(f))
    }

    /// Removes a listener added with [`Lock::on_lost`] (or the client's); false when it was
    /// already removed.
    pub fn remove_lost_listener(&self, id: ListenerId) -> bool {
        self.inner.shared.watchdog().remove_listener(id)
    }
}

/// The error of a write acquire by an owner that holds only read holds.
fn refused_upgrade(name: &str, owner: &Owner) -> Error {
    Error::new(
        ErrorKind::WouldDeadlock,
        format!(
            "{owner} holds read locks on '{name}' and asked for its write lock: that upgrade would \
             wait forever (Redisson's does); release the read holds first"
        ),
    )
}

/// The error of a release Redis answered "not held" for.
fn not_held(forgotten: Forgotten, name: &str, owner: &Owner) -> Error {
    match forgotten {
        Forgotten::Lost => Error::new(
            ErrorKind::Lost,
            format!(
                "lock '{name}' was lost before this release: it expired, was force-unlocked, or its \
                 lease was in doubt or ending (the lost-hold listeners were told why)"
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
    token: Option<u64>,
}

impl Guard {
    /// The fencing token this hold's acquire took (fenced locks; `None` for other locks), from
    /// the acquire's own reply: never a second read, so it is there even when the hold was
    /// lost right after the acquire.
    pub fn token(&self) -> Option<u64> {
        self.token
    }

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
