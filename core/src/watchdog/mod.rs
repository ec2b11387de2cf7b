//! The watchdog: one task per client renews every watchdog-leased hold in batches.
//!
//! It renews any kind of hold: each hold names its [`HoldKind`], whose renewal step takes a
//! batch of holds of that kind in one hash slot. Lost holds are reported to the listeners whose
//! [`LostFilter`] matches (a lock name, an owner), so surfaces get their events routed here.
//!
//! Every hold this client knows of lives in one map (also used by release to tell a lost hold
//! from one never held). A hold that uses the watchdog is put on tokio-util's `DelayQueue` (a
//! hierarchical timer wheel). Due times are rounded up to a tick of one eighth of the renewal
//! period, so holds taken at nearby moments fall due together and share script calls of at most
//! `renewal_batch_size` locks of one hash tag (see [`crate::keys::hash_tag`]): a script that
//! spans tags is refused behind a proxy in front of a sharded cluster (`CROSSSLOT`), or run on
//! the wrong shard by one that routes a script by its first key. The calls of one round go out
//! together on the multiplexed connection, in one write where they fit.
//!
//! An acquire only notes its hold in a list of fresh holds; the watchdog task moves the fresh
//! holds still held onto the queue every [`SWEEP`] (at most), with the due time they would have
//! had. Most holds are released long before their first renewal, and those never cost a task
//! wake-up, a queue entry, or its expiry a renewal period later (at 60k acquires per second the
//! queue used to hold about 600k such stale entries, some 55 MB).
//!
//! A hold is put in the map before its acquire returns, and the queue only ever looks holds up
//! in the map, so a release (which removes the hold) can never be overtaken by a renewal
//! registration: the race of Redisson's issue 7272 cannot happen.
//!
//! Lease doubt: each hold knows the latest moment its lease is proven to run until,
//! `lease_until`: the send time of the command that last set the lease (the acquire, or the
//! latest renewal Redis confirmed) plus that lease. Redis started the lease no earlier than the
//! send, so it cannot end before then. When that moment, less the margin
//! ([`Watchdog::margin`]), comes with no newer renewal confirmed, the hold is lost with
//! [`LostReason::LeaseDoubt`] (or [`LostReason::LeaseEnding`] for a lease nobody renews):
//! before another owner can take the lock, not after a renewal finally fails.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use redis::RedisResult;
use schemars::JsonSchema;
use tokio::time::Instant;

use crate::conn::Commands;
use crate::metrics::Metrics;
use crate::owner::Owner;

pub(crate) mod acquire;
pub(crate) mod release;
pub(crate) mod renew;

/// Why a hold was lost (its JSON Schema names each as [`LostReason::as_str`] does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[schemars(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LostReason {
    /// Confirmed: a renewal found the lock no longer held by this owner (expired,
    /// force-unlocked, deleted).
    Gone,
    /// Not confirmed: no renewal was confirmed in time (Redis unreachable, slow or erroring), so
    /// the lease may end on the server within the lease-doubt margin. Told before another owner
    /// can take the lock; the watchdog stops renewing the hold.
    LeaseDoubt,
    /// A lease nobody renews (an explicit lease, or one past `max_hold`) ends within the
    /// lease-doubt margin.
    LeaseEnding,
}

impl LostReason {
    /// A short stable name: `"gone"`, `"lease_doubt"` or `"lease_ending"`.
    pub fn as_str(self) -> &'static str {
        match self {
            LostReason::Gone => "gone",
            LostReason::LeaseDoubt => "lease_doubt",
            LostReason::LeaseEnding => "lease_ending",
        }
    }

    /// Whether Redis confirmed the loss (`Gone`), as opposed to a lease that may have ended or
    /// is about to.
    pub fn is_confirmed(self) -> bool {
        self == LostReason::Gone
    }
}

/// A hold the watchdog lost: the same fields on every surface.
///
/// Delivered to every listener registered with [`Client::on_lost`](crate::Client::on_lost)
/// whose filter matches. Its JSON Schema is what tools/generate writes each surface's event type
/// from (strings for the name, owner and permit id).
#[derive(Debug, Clone, JsonSchema)]
pub struct LostEvent {
    /// The lock (or semaphore) name.
    #[schemars(with = "String")]
    pub name: Arc<str>,
    /// The kind of hold: `"lock"` (reentrant, fenced, fair, spin and non-reentrant locks),
    /// `"read"`, `"write"`, `"permit"` (a permit of a permit-expirable semaphore), or
    /// `"red_lock"` (a RedLock left with fewer than a majority of its servers).
    #[schemars(with = "String", extend("enum" = ["lock", "read", "write", "permit", "red_lock"]))]
    pub kind: &'static str,
    /// The owner whose hold was lost, as stored in Redis (`<client uuid>:<id>`; for a permit,
    /// the client's owner 0, since permits have no owner).
    #[schemars(with = "String")]
    pub owner: Owner,
    /// What happened.
    pub reason: LostReason,
    /// The permit id (32 hex characters) for a permit of a permit-expirable semaphore; `None`
    /// for other holds.
    #[schemars(with = "Option<String>")]
    pub permit_id: Option<Arc<str>>,
}

impl LostEvent {
    /// Who held what was lost, as a surface shows it: the permit id for a permit, else the
    /// owner as stored in Redis.
    pub fn holder(&self) -> &str {
        self.permit_id.as_deref().unwrap_or(self.owner.as_str())
    }
}

/// Which lost holds a listener hears of.
#[derive(Debug, Clone, Default)]
pub struct LostFilter {
    /// Only holds of this lock name (`None`: every name).
    pub name: Option<Arc<str>>,
    /// Only holds of the owner with this id (`None`: every owner).
    pub owner: Option<u64>,
    /// Only holds of this kind (`"lock"`: reentrant, fenced, fair, spin and non-reentrant locks; `"read"` and
    /// `"write"`: the sides of a read-write lock; `"permit"`: permits of a permit-expirable
    /// semaphore; `None`: every kind).
    pub kind: Option<&'static str>,
}

impl LostFilter {
    /// Every lost hold of the client.
    pub fn all() -> Self {
        Self::default()
    }

    /// Lost holds of lock `name`, by any owner.
    pub fn name(name: &str) -> Self {
        LostFilter { name: Some(name.into()), ..Self::default() }
    }

    /// Lost holds of lock `name` by `owner`.
    pub fn hold(name: &str, owner: &Owner) -> Self {
        LostFilter { name: Some(name.into()), owner: Some(owner.id()), kind: None }
    }

    fn matches(&self, e: &LostEvent) -> bool {
        self.name.as_ref().is_none_or(|n| **n == *e.name)
            && self.owner.is_none_or(|o| o == e.owner.id())
            && self.kind.is_none_or(|k| k == e.kind)
    }
}

/// Identifies a listener added with [`Client::on_lost`](crate::Client::on_lost) or [`Lock::on_lost`](crate::Lock::on_lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListenerId(pub(crate) u64);

impl ListenerId {
    /// The id as a number, for surfaces that hand it across their boundary.
    pub fn into_raw(self) -> u64 {
        self.0
    }

    /// The id of a number [`ListenerId::into_raw`] gave (an unknown number removes nothing).
    pub fn from_raw(id: u64) -> Self {
        ListenerId(id)
    }
}

/// One hold handed to a renewal step.
pub(crate) struct Renewing {
    /// The lock (or semaphore) name.
    pub(crate) name: Arc<str>,
    /// The owner of the hold.
    pub(crate) owner: Owner,
    /// The permit id, for permit holds.
    pub(crate) permit: Option<Arc<str>>,
}

/// A batch renewal step: renews holds of one kind, all of one hash tag, to a lease of the
/// given milliseconds; one flag per hold, true when it was still held.
pub(crate) type RenewStep = fn(Commands, u64, Vec<Renewing>) -> BoxFuture<'static, RedisResult<Vec<bool>>>;

/// One kind of hold the watchdog renews: each primitive that holds defines one.
pub(crate) struct HoldKind {
    /// Tells kinds apart (a write hold and a read hold of one owner on one name are distinct).
    pub(crate) id: u8,
    /// Shown in lost events and logs.
    pub(crate) name: &'static str,
    /// The renewal step.
    pub(crate) renew: RenewStep,
}

/// Identifies one hold: its kind, a lock name and an owner id of this client.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct HoldKey {
    pub(crate) kind: u8,
    pub(crate) name: Arc<str>,
    pub(crate) owner: u64,
}

struct Hold {
    kind: &'static HoldKind,
    owner: Owner,
    /// Lease used by the last acquire (sent again on reentrant release).
    lease: Duration,
    /// Whether the watchdog renews this hold.
    renew: bool,
    acquired: Instant,
    /// The latest moment the lease is proven to run until: the send time of the command that
    /// last set it, plus that lease (see the module's doc).
    lease_until: Instant,
    /// A renewal of this hold is under way (its reply not yet in).
    inflight: bool,
    /// Another command set the lease while a renewal was under way: Redis may have run the
    /// two in either order, so that renewal's reply proves only the earlier end.
    overlapped: bool,
    /// Tells the hold's live queue entry from stale ones (bumped whenever one is queued).
    seq: u64,
    /// Tells queue entries of an earlier hold of the same key apart from this one.
    generation: u64,
    lost: Option<LostReason>,
    /// Releases of this hold under way. A renewal that finds the hold gone while one is under
    /// way may have run just after that release freed the lock (the two answers race back to
    /// different tasks), so the loss waits in `gone_while_releasing` for the release's outcome.
    releasing: u32,
    gone_while_releasing: Option<LostReason>,
    /// The latest fencing token of this hold (fenced locks).
    token: Option<u64>,
    /// The permit id (permit holds).
    permit: Option<Arc<str>>,
    /// Acquires of this hold the client saw succeed, less its releases. The server may count
    /// more: levels of acquires whose reply was lost and whose undo failed too. Nobody holds
    /// those, so they must not be renewed once these are released.
    levels: u32,
}

impl Hold {
    /// Why this hold is lost once its lease is in doubt: a renewed lease whose renewals were
    /// not confirmed in time, or a lease nobody renews running out.
    fn doubt_reason(&self) -> LostReason {
        if self.renew {
            LostReason::LeaseDoubt
        } else {
            LostReason::LeaseEnding
        }
    }
}

type Listener = Arc<dyn Fn(&LostEvent) + Send + Sync>;

/// Longest time a fresh hold waits before the watchdog task puts it on its queue.
const SWEEP: Duration = Duration::from_millis(100);

/// The shared part of the watchdog: the holds and the lost-lock listeners.
pub(crate) struct Watchdog {
    holds: Mutex<HashMap<HoldKey, Hold>>,
    listeners: Mutex<HashMap<u64, (LostFilter, Listener)>>,
    /// Holds (key, generation) that started renewing since the watchdog task last swept.
    fresh: Mutex<Vec<(HoldKey, u64)>>,
    next_id: AtomicU64,
    lease: Duration,
    max_hold: Option<Duration>,
    margin: Duration,
    /// Woken when an acquire took a lease too short to wait for the next sweep.
    sweep_now: tokio::sync::Notify,
    /// Woken when the client goes from holding nothing to holding something (the holder
    /// record's writer sleeps on it while nothing is held).
    first_hold: tokio::sync::Notify,
    metrics: Arc<Metrics>,
}

/// One hold as the holder record lists it.
pub(crate) struct HoldInfo {
    pub(crate) name: Arc<str>,
    pub(crate) kind: &'static str,
    pub(crate) owner: Owner,
    pub(crate) permit: Option<Arc<str>>,
    /// How long it has been held.
    pub(crate) age: Duration,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section leaves the data consistent, so a poisoned mutex is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What release learns from the local state when Redis says "not held".
pub(crate) enum Forgotten {
    /// The watchdog had lost this hold.
    Lost,
    /// No lost hold was known.
    NotHeld,
}

impl Watchdog {
    /// Creates the shared state (for [`renew::run`] and the locks). `margin` is the
    /// `lease_doubt_margin` option.
    pub(crate) fn new(
        lease: Duration,
        max_hold: Option<Duration>,
        margin: Duration,
        metrics: Arc<Metrics>,
    ) -> Arc<Self> {
        let wd = Watchdog {
            holds: Mutex::new(HashMap::new()),
            listeners: Mutex::new(HashMap::new()),
            fresh: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            lease,
            max_hold,
            margin,
            sweep_now: tokio::sync::Notify::new(),
            first_hold: tokio::sync::Notify::new(),
            metrics,
        };
        Arc::new(wd)
    }

    /// The watchdog lease.
    pub(crate) fn lease(&self) -> Duration {
        self.lease
    }

    /// The lease-doubt margin for a lease: the `lease_doubt_margin` option, at most a quarter
    /// of the lease (so a healthy watchdog hold, renewed every third of its lease, always has
    /// two renewals' time before its doubt moment).
    pub(crate) fn margin(&self, lease: Duration) -> Duration {
        self.margin.min(lease / 4)
    }

    /// Records a successful acquire (first or reentrant), whose command was sent at `sent` (or
    /// earlier). Called before the acquire returns, through an [`acquire::AcquireTicket`].
    #[allow(clippy::too_many_arguments)] // one call site per primitive; a struct adds nothing
    fn acquired(
        &self,
        kind: &'static HoldKind,
        key: HoldKey,
        owner: &Owner,
        lease: Duration,
        renew: bool,
        sent: Instant,
    ) {
        let now = Instant::now();
        let until = sent + lease;
        // A lease nobody renews that ends before the next sweep: sweep now, so its signal is
        // not late.
        if !renew && until.saturating_duration_since(now) < SWEEP + self.margin(lease) {
            self.sweep_now.notify_one();
        }
        let mut holds = lock(&self.holds);
        if holds.is_empty() {
            self.first_hold.notify_one();
        }
        let generation = self.next_id.fetch_add(1, Ordering::Relaxed);
        let schedule = match holds.get_mut(&key) {
            Some(h) if h.lost.is_none() => {
                // The acquire set the lease on the server: it runs from this send.
                h.lease = lease;
                h.lease_until = if h.inflight { h.lease_until.min(until) } else { until };
                h.overlapped |= h.inflight;
                h.levels = h.levels.saturating_add(1);
                let start = renew && !h.renew;
                h.renew |= renew;
                if start {
                    h.generation = generation;
                    h.inflight = false;
                }
                start
            }
            _ => {
                let hold = Hold {
                    kind,
                    owner: owner.clone(),
                    lease,
                    renew,
                    acquired: now,
                    lease_until: until,
                    inflight: false,
                    overlapped: false,
                    seq: 0,
                    generation,
                    lost: None,
                    releasing: 0,
                    gone_while_releasing: None,
                    token: None,
                    permit: None,
                    levels: 1,
                };
                holds.insert(key.clone(), hold);
                // Every fresh hold is queued: a renewed one for its renewals, one that is not
                // for the signal before its lease ends.
                true
            }
        };
        if schedule {
            lock(&self.fresh).push((key, generation));
        }
    }

    /// Records a permit `id` taken with a watchdog lease (renewed until released) by a command
    /// sent at `sent`. Called before the acquire returns.
    fn acquired_permit(
        &self,
        kind: &'static HoldKind,
        key: HoldKey,
        owner: &Owner,
        id: Arc<str>,
        sent: Instant,
    ) {
        self.acquired(kind, key.clone(), owner, self.lease, true, sent);
        if let Some(h) = lock(&self.holds).get_mut(&key) {
            h.permit = Some(id);
        }
    }

    /// The permit id tracked under `key` (`None`: no permit hold there).
    pub(crate) fn permit(&self, key: &HoldKey) -> Option<Arc<str>> {
        lock(&self.holds).get(key).and_then(|h| h.permit.clone())
    }

    /// Records the fencing token the latest acquire of `key` got.
    fn set_token(&self, key: &HoldKey, token: u64) {
        if let Some(h) = lock(&self.holds).get_mut(key) {
            h.token = Some(token);
        }
    }

    /// The latest fencing token of a hold this client tracks (`None` when it holds none).
    pub(crate) fn token(&self, key: &HoldKey) -> Option<u64> {
        lock(&self.holds).get(key).and_then(|h| h.token)
    }

    /// The lease to send with a release of `key` (the last acquire's, else the watchdog's).
    fn release_lease(&self, key: &HoldKey) -> Duration {
        lock(&self.holds).get(key).map_or(self.lease, |h| h.lease)
    }

    /// A release sent at `sent` left the hold held (re-entered) or failed: on the server it may
    /// have set the lease to the one it sent, from its arrival, so the lease is proven only to
    /// the earlier of that and what was proven before.
    fn lease_reset(&self, key: &HoldKey, sent: Instant) {
        if let Some(h) = lock(&self.holds).get_mut(key) {
            h.lease_until = h.lease_until.min(sent + h.lease);
            h.overlapped |= h.inflight;
        }
    }

    /// Forgets a hold after its final release (counted in the metrics, with how long it was
    /// held); `Lost` when the holder had been told it was lost (its lease in doubt or ending):
    /// the release freed what was left of it, and still fails, as every release of a lost hold
    /// does.
    fn released(&self, key: &HoldKey) -> Forgotten {
        let Some(h) = lock(&self.holds).remove(key) else {
            self.metrics.released(None);
            return Forgotten::NotHeld;
        };
        let held = h.acquired.elapsed();
        self.metrics.released(Some(held));
        tracing::debug!(
            name = &*key.name,
            kind = h.kind.name,
            owner = h.permit.as_deref().unwrap_or(h.owner.as_str()),
            held_us = held.as_micros() as u64,
            "rlock: released"
        );
        if h.lost.is_some() {
            Forgotten::Lost
        } else {
            Forgotten::NotHeld
        }
    }

    /// A hold level the client did not count was taken (an acquire about to be undone
    /// without being handed out): its undo's release does not end a counted level.
    fn level_added(&self, key: &HoldKey) {
        if let Some(h) = lock(&self.holds).get_mut(key) {
            h.levels = h.levels.saturating_add(1);
        }
    }

    /// A release left the hold held on the server (re-entered): one level fewer. Returns
    /// whether the client still counts a level of it (true when it does not track the hold).
    /// False means the levels left came from acquires whose reply was lost: the caller forgets
    /// the hold, so they are no longer renewed and their lease ends them.
    fn level_released(&self, key: &HoldKey) -> bool {
        lock(&self.holds).get_mut(key).is_none_or(|h| {
            h.levels = h.levels.saturating_sub(1);
            h.levels > 0
        })
    }

    /// Stops tracking a hold nobody will release: a permit whose lease was set by hand, a failed
    /// undo, a RedLock member left over once the RedLock was released
    /// ([`release::Remaining::end_by_lease`]). Its lease ends it on the server.
    fn untrack(&self, key: &HoldKey) {
        lock(&self.holds).remove(key);
    }

    /// Notes that a release of `key` is under way (see `Hold::releasing`); end it with
    /// [`Self::released`], [`Self::forget`] or [`Self::release_ended`]: only through a
    /// [`release::ReleaseTicket`], whose methods are the ways a release ends.
    fn release_started(&self, key: &HoldKey) {
        if let Some(h) = lock(&self.holds).get_mut(key) {
            h.releasing += 1;
        }
    }

    /// A release of `key` ended without freeing or forgetting the hold (it was re-entered, or
    /// the call failed): a loss a renewal saw meanwhile is reported now.
    fn release_ended(&self, key: &HoldKey) {
        let pending = {
            let mut holds = lock(&self.holds);
            let Some(h) = holds.get_mut(key) else { return };
            h.releasing = h.releasing.saturating_sub(1);
            if h.releasing > 0 {
                return;
            }
            h.gone_while_releasing.take().map(|reason| (h.generation, reason))
        };
        if let Some((generation, reason)) = pending {
            self.mark_lost(key, generation, reason);
        }
    }

    /// Forgets a hold Redis says is not held, and tells whether the watchdog had lost it (a
    /// loss a renewal saw while this release was under way is reported now).
    fn forget(&self, key: &HoldKey) -> Forgotten {
        let removed = lock(&self.holds).remove(key);
        match removed {
            Some(h) if h.lost.is_some() => Forgotten::Lost,
            Some(h) => match h.gone_while_releasing {
                Some(reason) => {
                    self.emit(LostEvent {
                        name: key.name.clone(),
                        kind: h.kind.name,
                        owner: h.owner,
                        reason,
                        permit_id: h.permit,
                    });
                    Forgotten::Lost
                }
                None => Forgotten::NotHeld,
            },
            None => Forgotten::NotHeld,
        }
    }

    /// Forgets every hold of lock `name` (after a force unlock by this client:
    /// [`release::ForceUnlockTicket::deleted`]).
    fn forget_name(&self, name: &str) {
        lock(&self.holds).retain(|k, _| &*k.name != name);
    }

    /// Whether this hold is lost (and release has not been called since): the watchdog lost
    /// it, or local time says its lease is in doubt now. The second is decided here, not by
    /// whether the watchdog's timer task has run yet: a process resumed after a pause longer
    /// than its lease (SIGSTOP, a GC or VM stall) is told at its first look, and the hold is
    /// marked lost then (its listeners run, its release is refused).
    pub(crate) fn is_lost(&self, key: &HoldKey) -> bool {
        let (generation, reason) = {
            let holds = lock(&self.holds);
            let Some(h) = holds.get(key) else { return false };
            if h.lost.is_some() {
                return true;
            }
            if h.releasing > 0 || self.doubt_at(h).is_some_and(|at| Instant::now() < at) {
                return false;
            }
            (h.generation, h.doubt_reason())
        };
        self.mark_lost(key, generation, reason);
        lock(&self.holds).get(key).is_some_and(|h| h.lost.is_some())
    }

    /// How long local time still proves this hold: from now to its doubt moment (the send of
    /// its last confirmed renewal, plus the lease, minus the margin). Zero when the hold is not
    /// tracked, is lost, or is past that moment (which marks it lost here, as [`Self::is_lost`]
    /// does). A holder without fencing checks it before each write.
    pub(crate) fn valid_for(&self, key: &HoldKey) -> Duration {
        let left = {
            let holds = lock(&self.holds);
            let Some(h) = holds.get(key) else { return Duration::ZERO };
            if h.lost.is_some() {
                return Duration::ZERO;
            }
            self.doubt_at(h).and_then(|at| at.checked_duration_since(Instant::now()))
        };
        match left {
            Some(d) if !d.is_zero() => d,
            _ => {
                // Past the doubt moment: mark it lost now, not when the timer task runs.
                self.is_lost(key);
                Duration::ZERO
            }
        }
    }

    /// The moment local time stops proving `h`'s lease: its proven end less the margin (see the
    /// module's doc). `None` when that is before the clock's start (already in doubt).
    fn doubt_at(&self, h: &Hold) -> Option<Instant> {
        let lease = if h.renew { self.lease } else { h.lease };
        h.lease_until.checked_sub(self.margin(lease))
    }

    /// Whether this hold is tracked (held, or lost and not yet released).
    pub(crate) fn is_tracked(&self, key: &HoldKey) -> bool {
        lock(&self.holds).contains_key(key)
    }

    /// Number of holds this client tracks (held or lost, not yet released).
    pub(crate) fn hold_count(&self) -> usize {
        lock(&self.holds).len()
    }

    /// Resolves once the client holds something (at once when it does now).
    pub(crate) async fn holding(&self) {
        loop {
            let woken = self.first_hold.notified();
            if self.hold_count() > 0 {
                return;
            }
            woken.await;
        }
    }

    /// The `limit` longest-held holds (not lost), longest first.
    pub(crate) fn oldest_holds(&self, limit: usize) -> Vec<HoldInfo> {
        let now = Instant::now();
        let holds = lock(&self.holds);
        let mut all: Vec<(&HoldKey, &Hold)> = holds.iter().filter(|(_, h)| h.lost.is_none()).collect();
        if all.len() > limit {
            all.select_nth_unstable_by_key(limit, |(_, h)| h.acquired);
            all.truncate(limit);
        }
        all.sort_by_key(|(_, h)| h.acquired);
        all.into_iter()
            .map(|(k, h)| HoldInfo {
                name: k.name.clone(),
                kind: h.kind.name,
                owner: h.owner.clone(),
                permit: h.permit.clone(),
                age: now.saturating_duration_since(h.acquired),
            })
            .collect()
    }

    /// Forgets everything (client close).
    pub(crate) fn clear(&self) {
        lock(&self.holds).clear();
        lock(&self.fresh).clear();
    }

    /// Adds a lost-hold listener for the holds `filter` matches; returns its id for
    /// [`Self::remove_listener`].
    pub(crate) fn add_listener(&self, filter: LostFilter, f: Listener) -> ListenerId {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.listeners).insert(id, (filter, f));
        ListenerId(id)
    }

    /// Removes a listener; false when the id is unknown.
    pub(crate) fn remove_listener(&self, id: ListenerId) -> bool {
        lock(&self.listeners).remove(&id.0).is_some()
    }

    fn mark_lost(&self, key: &HoldKey, generation: u64, reason: LostReason) {
        let (owner, kind, permit_id) = {
            let mut holds = lock(&self.holds);
            match holds.get_mut(key) {
                Some(h) if h.generation == generation && h.lost.is_none() && h.releasing > 0 => {
                    // Maybe freed by that release: its outcome decides.
                    h.gone_while_releasing = Some(reason);
                    h.renew = false;
                    return;
                }
                Some(h) if h.generation == generation && h.lost.is_none() => {
                    h.lost = Some(reason);
                    h.renew = false;
                    (h.owner.clone(), h.kind.name, h.permit.clone())
                }
                _ => return,
            }
        };
        self.emit(LostEvent { name: key.name.clone(), kind, owner, reason, permit_id });
    }

    /// Logs a lost hold and tells the listeners whose filter matches.
    fn emit(&self, event: LostEvent) {
        let (kind, reason) = (event.kind, event.reason);
        self.metrics.lost();
        tracing::warn!(
            name = &*event.name,
            kind,
            owner = event.holder(),
            reason = reason.as_str(),
            "rlock: lost the {kind} hold of '{}' by {} ({})",
            event.name,
            event.holder(),
            reason.as_str()
        );
        let listeners: Vec<Listener> = lock(&self.listeners)
            .values()
            .filter(|(w, _)| w.matches(&event))
            .map(|(_, f)| f.clone())
            .collect();
        for f in listeners {
            // A listener that panics must not take the watchdog down with it.
            if catch_unwind(AssertUnwindSafe(|| f(&event))).is_err() {
                log::error!("rlock: a lost-lock listener panicked");
            }
        }
    }
}

#[cfg(test)]
mod tests;
