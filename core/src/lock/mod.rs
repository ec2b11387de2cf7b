//! The lock family of Redisson's `RedissonLock`: the reentrant lock (`RLock`) and the locks
//! that share its hash, its owners and its steps' shape: the fenced lock, the read and write
//! sides of a read-write lock, the fair lock, the spin lock, and Redisson 4.4's non-reentrant
//! and non-reentrant fair locks. Each is a [`Lock`] with its [`Flavor`]: the
//! flavor picks the scripts, the channel and the kind of hold; everything else (the wait loop
//! and pub/sub waiting, the watchdog, replica sync, release bookkeeping, the cancel-safety of
//! [`crate::finish`], guards and queries) is shared, so every lock has the full `Lock` API.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::error::{Error, ErrorKind, Result};
use crate::finish::Undo;
use crate::keys;
use crate::options::positive_ms;
use crate::owner::Owner;
use crate::pubsub::Wake;
use crate::scripts::{self};
use crate::shared::{Shared, Strays};
use crate::watchdog::{HoldKey, HoldKind};

mod acquire;
mod query;
mod release;

/// The reentrant lock's hold, renewed with its renewal step (also the fenced, fair, spin and
/// non-reentrant locks').
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
    /// Redisson `RFairLock`: waiters queue in `queue`, with deadlines in `timeouts`; not
    /// `reentrant`: Redisson 4.4's `RedissonNonReentrantFairLock`.
    Fair { queue: String, timeouts: String, reentrant: bool },
    /// Redisson `RSpinLock`: `RLock`'s hash and steps, but a release publishes nothing and a
    /// waiter polls with back-off (for endpoints without pub/sub, or many short waits).
    Spin,
    /// Redisson 4.4's `RedissonNonReentrantLock`: `RLock`'s hash and steps, but an owner that
    /// holds it may not acquire it again (refused with `WouldDeadlock`, nothing changed).
    NonReentrant,
}

impl Flavor {
    fn kind(&self) -> &'static HoldKind {
        match self {
            Flavor::Read { .. } => &READ,
            Flavor::Write => &WRITE,
            _ => &REENTRANT,
        }
    }

    /// The fair lock `name`'s flavor, with its queue and deadline keys.
    pub(crate) fn fair(name: &str, reentrant: bool) -> Flavor {
        Flavor::Fair { queue: keys::fair_queue_key(name), timeouts: keys::fair_timeout_key(name), reentrant }
    }

    /// Whether an owner that holds the lock may acquire it again (its hold count goes up).
    fn reentrant(&self) -> bool {
        !matches!(self, Flavor::NonReentrant | Flavor::Fair { reentrant: false, .. })
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
    /// The slot by which replica sync finds this lock's master (see `Shared::master_slot`).
    slot: u16,
}

/// What a successful release did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Released {
    /// The owner's last hold level was released: the lock is free and a waiter was woken.
    Unlocked,
    /// The owner still holds the lock (it had re-entered it); the count went down by one.
    StillHeld,
    /// The owner's hold ended, but the lock stays locked by other holds: other readers, the
    /// owner's own read holds after it released its write hold (a downgrade), or levels of the
    /// owner's acquires whose reply was lost (never returned, so nobody holds them: they are
    /// not renewed, and end with their lease).
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
/// fair lock, how long to wait at most), or [`scripts::REFUSED`].
type Step = std::result::Result<u64, i64>;

/// What [`Lock::attempt`] hands back when the lock is busy: the wait bound, and for a fair lock
/// the give-up step of the queue place it holds now.
type Busy = (i64, Option<Undo>);

/// Milliseconds since the Unix epoch (the fair lock's deadlines use the clients' clocks, as
/// Redisson's do).
fn now_ms() -> u64 {
    crate::millis::unix_ms(std::time::SystemTime::now())
}

impl Lock {
    /// A handle on the reentrant lock `name`.
    pub(crate) fn new(shared: Arc<Shared>, name: &str) -> Lock {
        Self::with_flavor(shared, name, Flavor::Reentrant)
    }

    /// A handle on lock `name` of the given flavor.
    pub(crate) fn with_flavor(shared: Arc<Shared>, name: &str, flavor: Flavor) -> Lock {
        let slot = shared.master_slot(name);
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
                slot,
            }),
        }
    }

    /// How this lock's releases publish: the client's `PUBLISH` or `SPUBLISH`, or not at all
    /// (a spin lock, whose waiters poll).
    fn publish_command(&self) -> &'static str {
        match self.inner.flavor {
            Flavor::Spin => scripts::NO_PUBLISH,
            _ => self.inner.shared.publish_command(),
        }
    }

    /// The lock name (also its Redis key).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Which lock of the family this is: `"lock"`, `"fenced"`, `"read"`, `"write"`, `"fair"`,
    /// `"spin"`, `"non_reentrant"` or `"non_reentrant_fair"`.
    pub fn kind(&self) -> &'static str {
        match self.inner.flavor {
            Flavor::Reentrant => "lock",
            Flavor::Fenced { .. } => "fenced",
            Flavor::Read { .. } => "read",
            Flavor::Write => "write",
            Flavor::Fair { reentrant: true, .. } => "fair",
            Flavor::Fair { reentrant: false, .. } => "non_reentrant_fair",
            Flavor::Spin => "spin",
            Flavor::NonReentrant => "non_reentrant",
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

    /// Marks a try of `owner`'s that a RedLock round stopped waiting for (a stray, finished in
    /// the background) as under way, on this client (every handle of the lock sees it).
    /// `alone`: `owner` held nothing here when the round began, so a hold tracked here while
    /// the stray is under way is the stray's (see [`Self::stray_alone`]).
    pub(crate) fn stray_started(&self, owner: &Owner, alone: bool) {
        let mut strays = self.inner.shared.strays();
        let s = strays.entry(self.key(owner)).or_insert(Strays { count: 0, since: Instant::now(), alone });
        s.count += 1;
        s.alone &= alone;
    }

    /// Whether a stray try of `owner`'s is under way here that began while `owner` held
    /// nothing here: what is tracked for `owner` meanwhile is the stray's, which its give-back
    /// releases, not the owner's.
    pub(crate) fn stray_alone(&self, owner: &Owner) -> bool {
        self.inner.shared.strays().get(&self.key(owner)).is_some_and(|s| s.alone)
    }

    /// Takes back one [`Self::stray_started`] mark.
    pub(crate) fn stray_ended(&self, owner: &Owner) {
        let key = self.key(owner);
        let mut strays = self.inner.shared.strays();
        if let Some(s) = strays.get_mut(&key) {
            s.count -= 1;
            if s.count == 0 {
                strays.remove(&key);
            }
        }
    }

    /// A stray try of `owner`'s on this lock was answered (its give-back is what is left): the
    /// member is asked afresh from now on, not silent since the try was sent.
    pub(crate) fn stray_answered(&self, owner: &Owner) {
        if let Some(s) = self.inner.shared.strays().get_mut(&self.key(owner)) {
            s.since = Instant::now();
        }
    }

    /// Since when a stray try of `owner`'s on this lock has been under way on this client
    /// (`None`: none is).
    pub(crate) fn stray_since(&self, owner: &Owner) -> Option<Instant> {
        self.inner.shared.strays().get(&self.key(owner)).map(|s| s.since)
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

    /// Gives the hold back as an acquire nobody took is undone, and waits until that is done:
    /// released, or, when the release fails, its level no longer counted (with no level left,
    /// no longer renewed, so its lease ends it).
    pub(crate) async fn give_back(mut self) {
        if let Some(lock) = self.lock.take() {
            lock.undo(&self.owner).now().await;
        }
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
