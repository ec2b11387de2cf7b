//! RedLock (Redisson `RedissonRedLock`, antirez's algorithm): one lock name on N independent
//! servers (N odd, at least 3), held while a majority of them hold it. It survives the loss of a
//! minority of the servers, which a lock on one server (with or without Sentinel) does not.
//!
//! Each server stores an ordinary reentrant lock (Redisson's layout), so `RedissonRedLock`
//! users and rlock users exclude each other. An acquire round tries every server at once and
//! succeeds with a majority and validity left (members answering within a short grace after
//! that are kept too; tries still under way then finish in the background and give back what
//! they take, and the same owner's rounds, through any handle of those clients, leave those
//! members alone until they have, so a member's hold count, shared by all of the owner's
//! tries, never counts one hold twice): the lease minus the time the round took minus a
//! drift allowance of 1% of the lease plus 2 ms (the published algorithm). A round that fails
//! gives back what it took; the next waits on the unlock channels of the servers that were
//! busy (pub/sub, never polling), after a random pause when the round had split the servers
//! with another owner. Each held member is renewed by its own client's watchdog, with lease
//! doubt; the holder is told its RedLock is lost as soon as fewer than a majority of members
//! are still held.
//!
//! The fenced RedLock ([`FencedRedLock`]) hands out a token that strictly increases across
//! every successful acquire whatever majority granted it: the counter
//! `redisson_lock_token:{name}` on each server is a quorum register. The acquire reads it from
//! a majority, takes the largest plus one, writes that back (raise-only) to a majority, and only
//! then returns it, so every later read majority overlaps the write majority and sees it. The
//! max of a per-server `INCR` would not do: counters 1, 1, 100 give 101 on servers {1, 3} and
//! then 3 on servers {1, 2}. What breaks the order: a server that loses acknowledged writes
//! (restarted without persistence, or an asynchronous replica promoted in its place).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::time::Instant;

use crate::client::Client;
use crate::error::{Error, ErrorKind, Result};
use crate::lock::{lock_message, Guard, Lock, Released};
use crate::options::positive_ms;
use crate::owner::Owner;
use crate::pubsub::{Membership, SubState};
use crate::shared::PollBackoff;
use crate::shared::{jitter, pause_before_retry, remaining};
use crate::watchdog::release::Remaining;
use crate::watchdog::{ListenerId, LostEvent};

mod fenced;
#[cfg(test)]
mod kinds_test;
mod strays;

pub use fenced::FencedRedLock;

/// Longest random pause after a round that split the servers with another owner: long enough
/// for the other owner's round to end, short against a hand-off.
const MAX_PAUSE: Duration = Duration::from_millis(10);

/// The least time a round waits for a member's answer (see [`RedLock::member_limit`]).
const MEMBER_LIMIT: Duration = Duration::from_millis(50);

/// How long, at least, the members still answering get once a majority is held.
const GRACE: Duration = Duration::from_millis(50);

/// The kind of the lost-hold events a RedLock's listeners hear.
pub const RED_LOCK_KIND: &str = "red_lock";

/// One lock name held by a majority of N independent servers. Cheap to clone; holds belong
/// to [`Owner`]s of the first client (the same id is an owner on every member's client).
#[derive(Clone)]
pub struct RedLock {
    inner: Arc<RedInner>,
}

struct RedInner {
    name: Arc<str>,
    members: Vec<Lock>,
    quorum: usize,
    /// The token counter's key, for a fenced RedLock.
    token_key: Option<String>,
    /// The latest successful acquire of each owner id holding it through this handle (tells a
    /// listener's "lost" reports of one hold from the next), with its token when fenced.
    acquires: Mutex<HashMap<u64, (u64, Option<u64>)>>,
    next_acquire: std::sync::atomic::AtomicU64,
    /// Each listener's ids on the member clients, by the first one's raw id.
    listeners: Mutex<HashMap<u64, Vec<(usize, ListenerId)>>>,
    /// Per member, when a try of this handle was sent that no answer of the member has followed
    /// (`None`: every try answered, held or busy, in a round or as a stray; or none sent). A
    /// member is silent once that is a command timeout ago ([`RedLock::silent`]): asked and
    /// not answered, not merely unheard of while the handle did not ask it (seen: a loaded
    /// client's live member, slow for the rounds but answering each try, counted silent after
    /// a second without an answer that included time it was not asked).
    unanswered: Mutex<Vec<Option<Instant>>>,
}

impl std::fmt::Debug for RedLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedLock")
            .field("name", &self.inner.name)
            .field("members", &self.inner.members.len())
            .field("fenced", &self.inner.token_key.is_some())
            .finish()
    }
}

/// A RedLock on `name` over `clients`, fenced or not: for the surfaces that have one class for
/// both (as [`RedLock::new`] and [`FencedRedLock::new`]).
pub fn red_lock(name: &str, clients: &[Client], fenced: bool) -> Result<RedLock> {
    RedLock::build(name, clients, fenced)
}

/// A RedLock's majority, held ([`RedLock::acquire_guard`]): released when dropped (in the
/// background) unless [`kept`](RedGuard::keep).
#[must_use = "dropping the guard releases every member at once"]
pub struct RedGuard {
    guards: Vec<Guard>,
    validity: Duration,
    token: Option<u64>,
}

impl RedGuard {
    /// How long the majority was proven held when the acquire returned: the lease minus the
    /// round's time and the drift allowance. Watchdog holds are renewed past it.
    pub fn validity(&self) -> Duration {
        self.validity
    }

    /// The fencing token (fenced RedLocks; `None` otherwise).
    pub fn token(&self) -> Option<u64> {
        self.token
    }

    /// How many members are held.
    pub fn held(&self) -> usize {
        self.guards.len()
    }

    /// Keeps the holds: the owner releases them with [`RedLock::release`].
    pub fn keep(self) -> Option<u64> {
        self.guards.into_iter().for_each(Guard::keep);
        self.token
    }
}

/// What one round did.
enum Round {
    Taken(RedGuard),
    /// Not taken (everything given back): wait on these busy members' channels, at most this
    /// long (`None`: no bound), after a random pause when `split`. `unreachable`: a majority
    /// did not answer in time (the members that failed or stayed silent, with why).
    Busy {
        busy: Vec<usize>,
        bound: Option<Duration>,
        split: bool,
        unreachable: Option<Vec<(usize, Error)>>,
    },
}

impl RedLock {
    /// A RedLock on `name` over `clients`, one member per client. `InvalidArgument` unless there
    /// is an odd number of at least 3 distinct clients (each should reach its own server:
    /// members on one server do not survive its loss), or when `name` is not a valid lock name.
    pub fn new(name: &str, clients: &[Client]) -> Result<RedLock> {
        Self::build(name, clients, false)
    }

    fn build(name: &str, clients: &[Client], fenced: bool) -> Result<RedLock> {
        if clients.len() < 3 || clients.len() % 2 == 0 {
            return Err(Error::invalid(format!(
                "a RedLock needs an odd number of at least 3 clients (independent servers), got {}",
                clients.len()
            )));
        }
        let mut ids: Vec<_> = clients.iter().map(Client::id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != clients.len() {
            return Err(Error::invalid("a RedLock's clients must be distinct (one per server)"));
        }
        let members = clients.iter().map(|c| c.lock(name)).collect::<Result<Vec<_>>>()?;
        Ok(RedLock {
            inner: Arc::new(RedInner {
                name: name.into(),
                quorum: quorum_of(clients.len()),
                members,
                token_key: fenced.then(|| crate::keys::token_key(name)),
                acquires: Mutex::new(HashMap::new()),
                next_acquire: 1.into(),
                listeners: Mutex::new(HashMap::new()),
                unanswered: Mutex::new(vec![None; clients.len()]),
            }),
        })
    }

    /// The lock name (the key on every server).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The member locks, one per client, in the clients' order.
    pub fn members(&self) -> &[Lock] {
        &self.inner.members
    }

    /// How many members make a majority.
    pub fn quorum(&self) -> usize {
        self.inner.quorum
    }

    /// A fresh owner (on the first client) that no other call of this process returned.
    pub fn new_owner(&self) -> Owner {
        self.inner.members[0].owner_on_client(crate::owner::next_auto_owner_id())
    }

    fn owner_on(&self, i: usize, owner: &Owner) -> Owner {
        self.inner.members[i].owner_on_client(owner.id())
    }

    /// Waits until `owner` holds a majority (watchdog-renewed). Cancel-safe: a dropped call
    /// leaves no member held. Errors: `Connection`/`Timeout` (the first failure's kind) when
    /// more than a minority of the servers failed in one round.
    pub async fn acquire(&self, owner: &Owner) -> Result<()> {
        self.acquire_guard(owner, None, None).await?.map(RedGuard::keep);
        Ok(())
    }

    /// Like [`RedLock::acquire`] with a fixed `lease` on every member (no watchdog).
    pub async fn acquire_with_lease(&self, owner: &Owner, lease: Duration) -> Result<()> {
        self.acquire_guard(owner, None, Some(lease)).await?.map(RedGuard::keep);
        Ok(())
    }

    /// Tries for at most `wait` (zero: one round); false when the wait ran out (nothing held).
    pub async fn try_acquire(&self, owner: &Owner, wait: Duration, lease: Option<Duration>) -> Result<bool> {
        Ok(self.acquire_guard(owner, Some(wait), lease).await?.map(RedGuard::keep).is_some())
    }

    /// Acquires like [`RedLock::acquire`] (`wait` `None`) or [`RedLock::try_acquire`] (`None`
    /// returned when the wait ran out), as a [`RedGuard`] that releases every member when
    /// dropped unkept: for surfaces whose caller may be gone when the result arrives.
    pub async fn acquire_guard(
        &self,
        owner: &Owner,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<RedGuard>> {
        let first = self.inner.members[0].shared();
        first.check_owner(owner)?;
        first.check_open()?;
        if let Some(l) = lease {
            positive_ms("lease", l)?;
        }
        let deadline = crate::shared::deadline("wait", wait)?;
        let mut joined: Option<Vec<Membership>> = None;
        let mut unreachable_since: Option<Instant> = None;
        let mut polls = PollBackoff::new(first.options().poll_interval);
        loop {
            // Registered before the round, so an unlock during it is not missed.
            let notified: Vec<_> = joined
                .iter()
                .flatten()
                .map(|m| {
                    let mut n = Box::pin(m.channel.notify.notified());
                    n.as_mut().enable();
                    n
                })
                .collect();
            let (busy, bound, split) = match self.round(owner, lease).await? {
                Round::Taken(mut g) => {
                    if self.inner.token_key.is_some() {
                        // Holding a majority here: the token round has no competitor but a
                        // holder that outlived its lease, which the register orders all the same.
                        g.token = Some(self.next_token().await?);
                    }
                    let seq = self.inner.next_acquire.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    lock_map(&self.inner.acquires).insert(owner.id(), (seq, g.token));
                    return Ok(Some(g));
                }
                Round::Busy { busy, bound, split, unreachable } => {
                    match unreachable {
                        // No majority answered in time: an error once that lasted a command
                        // timeout, and once more than a minority gave no answer at all for as
                        // long. A member that misses the member limit again and again (a
                        // loaded client) but whose strays answer is slow, not gone: the
                        // acquire goes on trying (seen failing TIMEOUT under 8 busy workers).
                        Some(failed) => {
                            let since = *unreachable_since.get_or_insert_with(Instant::now);
                            if since.elapsed() >= self.unreachable_limit()
                                && self.silent(owner) > self.minority()
                            {
                                return Err(self.no_majority("acquire", &failed));
                            }
                        }
                        None => unreachable_since = None,
                    }
                    (busy, bound, split)
                }
            };
            if split && !pause_before_retry(jitter(MAX_PAUSE), deadline).await {
                return Ok(None);
            }
            let left = remaining(deadline);
            if left == Some(Duration::ZERO) {
                return Ok(None);
            }
            if joined.is_none() {
                // Subscribe, then try again before waiting: an unlock that raced the
                // subscription is caught by that round.
                drop(notified);
                joined = Some(self.join(left).await);
                continue;
            }
            let mut sleep = bound.unwrap_or(Duration::from_secs(1));
            if unreachable_since.is_some() {
                sleep = sleep.min(self.member_limit());
            }
            // A busy member whose unlocks cannot wake this waiter (no pub/sub there, or its
            // SUBSCRIBE failed): poll it.
            let deaf = |i: &usize| {
                joined
                    .iter()
                    .flatten()
                    .nth(*i)
                    .is_some_and(|m| *m.channel.state().borrow() != SubState::Active)
            };
            if busy.iter().any(deaf) {
                sleep = sleep.min(polls.pause());
            }
            if let Some(l) = left {
                sleep = sleep.min(l);
            }
            // Only the busy members' channels: the unlocks of this round's own give-backs are
            // not news.
            let wakers: Vec<_> =
                notified.into_iter().enumerate().filter(|(i, _)| busy.contains(i)).map(|(_, n)| n).collect();
            let woken = async {
                if wakers.is_empty() {
                    std::future::pending::<()>().await
                } else {
                    futures_util::future::select_all(wakers).await;
                }
            };
            tokio::select! {
                _ = first.closed() => return Err(Error::closed()),
                _ = woken => {}
                _ = tokio::time::sleep(sleep) => {}
            }
        }
    }

    /// Joins every member's unlock channel and waits (at most the subscription timeout, or
    /// `left`) until each subscription is answered, or a majority is and the rest had the
    /// grace a round gives members once a majority is held. A stopped server's subscription
    /// is never answered: waiting for it took the whole wait from the rounds.
    async fn join(&self, left: Option<Duration>) -> Vec<Membership> {
        let joined: Vec<Membership> =
            self.inner.members.iter().map(|m| m.shared().pubsub().join(m.channel(), lock_message)).collect();
        let limit = self.inner.members[0].shared().options().subscription_timeout;
        let limit = left.map_or(limit, |l| l.min(limit));
        let mut answers: FuturesUnordered<_> = joined
            .iter()
            .map(|m| {
                let mut state = m.channel.state();
                async move {
                    let _ = state.wait_for(|s| *s != SubState::Pending).await;
                }
            })
            .collect();
        let start = Instant::now();
        let quorum = self.inner.quorum;
        let answered = async {
            let mut n = 0;
            while n < quorum && answers.next().await.is_some() {
                n += 1;
            }
            let _ = tokio::time::timeout(grace(start.elapsed()), async {
                while answers.next().await.is_some() {}
            })
            .await;
        };
        let _ = tokio::time::timeout(limit, answered).await;
        joined
    }

    /// One round: tries every member at once without waiting, until a majority is held or
    /// can no longer be.
    async fn round(&self, owner: &Owner, lease: Option<Duration>) -> Result<Round> {
        let inner = &self.inner;
        let (n, q) = (inner.members.len(), inner.quorum);
        let start = Instant::now();
        // Members with a stray try of this owner still under way (through any handle) sit this
        // round out.
        let straying: Vec<usize> =
            (0..n).filter(|&i| inner.members[i].stray_since(&self.owner_on(i, owner)).is_some()).collect();
        // What the owner holds before any try of this round is sent: a stray's take is told
        // from the owner's hold by it (a stray releases its own take; a release must not).
        let had: Vec<bool> = (0..n).map(|i| inner.members[i].is_tracked(&self.owner_on(i, owner))).collect();
        let mut tries: FuturesUnordered<_> = inner
            .members
            .iter()
            .enumerate()
            .filter(|(i, _)| !straying.contains(i))
            .map(|(i, m)| {
                let (m, o) = (m.clone(), self.owner_on(i, owner));
                if let Some(at) = lock_map(&inner.unanswered).get_mut(i) {
                    at.get_or_insert(start);
                }
                // Weak: a stray try (finished in the background) does not keep the handle.
                let red = Arc::downgrade(&self.inner);
                async move {
                    let r = m.try_once(&o, lease).await;
                    if let (Ok(_), Some(red)) = (&r, red.upgrade()) {
                        if let Some(at) = lock_map(&red.unanswered).get_mut(i) {
                            *at = None;
                        }
                    }
                    (i, r)
                }
            })
            .collect();
        let (mut held, mut busy, mut failed) = (Vec::new(), Vec::new(), Vec::new());
        let mut bound: Option<Duration> = None;
        // A member that has not answered by then counts as slow for this round (antirez: a
        // per-server timeout small against the lease), so a stopped server holds no round up
        // for a whole command timeout.
        let slow_after = start + self.member_limit();
        let mut answered = vec![false; n];
        while let Ok(Some((i, r))) = tokio::time::timeout_at(slow_after, tries.next()).await {
            answered[i] = true;
            match r {
                Ok(Ok(g)) => held.push(g),
                Ok(Err(b)) => {
                    busy.push(i);
                    bound = match (bound, b) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                Err(e) if e.kind() == ErrorKind::InvalidArgument || e.kind() == ErrorKind::Closed => {
                    let pending = (0..n).filter(|&i| !answered[i] && !straying.contains(&i)).collect();
                    self.finish_strays(owner, pending, &had, tries);
                    give_back(held).await;
                    return Err(e);
                }
                Err(e) => failed.push((i, e)),
            }
            if busy.len() + failed.len() + straying.len() > n - q {
                break;
            }
            if held.len() >= q {
                // The members still answering get a grace period, so a healthy set holds every
                // member (and survives more losses) while a stopped server costs little.
                let late = async {
                    while let Some((i, r)) = tries.next().await {
                        answered[i] = true;
                        if let Ok(Ok(g)) = r {
                            held.push(g);
                        }
                    }
                };
                let _ = tokio::time::timeout(grace(start.elapsed()), late).await;
                break;
            }
        }
        let slow: Vec<usize> = (0..n).filter(|&i| !answered[i]).collect();
        // Tries still under way finish in the background and give back what they take; until
        // then this owner's rounds leave their members alone.
        let pending = slow.iter().copied().filter(|i| !straying.contains(i)).collect();
        self.finish_strays(owner, pending, &had, tries);
        // A stray's give-back publishes on its member's channel: worth waking for.
        busy.extend(straying);
        let lease = lease.unwrap_or_else(|| {
            inner.members.iter().map(|m| m.shared().watchdog().lease()).min().unwrap_or_default()
        });
        let drift = lease / 100 + Duration::from_millis(2);
        let validity = lease.checked_sub(start.elapsed() + drift).filter(|v| !v.is_zero());
        if held.len() >= q {
            if let Some(validity) = validity {
                return Ok(Round::Taken(RedGuard { guards: held, validity, token: None }));
            }
        }
        let split = !held.is_empty();
        give_back(held).await;
        if failed.len() > n - q {
            return Err(self.no_majority("acquire", &failed));
        }
        let unreachable = (failed.len() + slow.len() > n - q).then(|| {
            let limit = self.member_limit();
            let quiet = slow.iter().map(|&i| {
                (i, Error::new(ErrorKind::Timeout, format!("no answer within {} ms", limit.as_millis())))
            });
            failed.into_iter().chain(quiet).collect()
        });
        Ok(Round::Busy { busy, bound, split, unreachable })
    }

    /// How long a majority may stay without answering before an acquire fails: the command
    /// timeout (3 s without one).
    fn unreachable_limit(&self) -> Duration {
        self.inner.members[0].shared().options().command_timeout.unwrap_or(Duration::from_secs(3))
    }

    /// How many members have left a try of `owner`'s unanswered for [`RedLock::unreachable_limit`]
    /// or longer: one of this handle's, or a stray on the member's client (of an earlier handle:
    /// users make one for every acquire).
    fn silent(&self, owner: &Owner) -> usize {
        let limit = self.unreachable_limit();
        let unanswered = lock_map(&self.inner.unanswered).clone();
        unanswered
            .iter()
            .enumerate()
            .filter(|&(i, own)| {
                let stray = self.inner.members[i].stray_since(&self.owner_on(i, owner));
                own.iter().chain(stray.iter()).min().is_some_and(|t| t.elapsed() >= limit)
            })
            .count()
    }

    /// The most members that may fail while a majority is left.
    fn minority(&self) -> usize {
        self.inner.members.len() - self.inner.quorum
    }

    /// How long a round waits for a member's answer: 1% of the shortest lease, at least 50 ms,
    /// at most the command timeout.
    fn member_limit(&self) -> Duration {
        let first = self.inner.members[0].shared();
        let lease =
            self.inner.members.iter().map(|m| m.shared().watchdog().lease()).min().unwrap_or_default();
        let limit = (lease / 100).max(MEMBER_LIMIT);
        first.options().command_timeout.map_or(limit, |t| limit.min(t))
    }

    /// The error of a step that failed on more than a minority of the servers.
    fn no_majority(&self, what: &str, failed: &[(usize, Error)]) -> Error {
        let inner = &self.inner;
        let kind = failed.first().map_or(ErrorKind::Connection, |(_, e)| e.kind());
        let detail: Vec<String> =
            failed.iter().map(|(i, e)| format!("server {}: {}", i + 1, e.message())).collect();
        Error::new(
            kind,
            format!(
                "{what} of RedLock '{}' failed on {} of {} servers, and it needs a majority of {}: {}",
                inner.name,
                failed.len(),
                inner.members.len(),
                inner.quorum,
                detail.join("; ")
            ),
        )
    }

    /// Releases `owner`'s holds on every member it holds through these clients (all of them,
    /// also when some fail). [`Released::StillHeld`] when it had re-entered (members still
    /// hold it, and no majority was freed). Once the hold is over, a member whose release
    /// failed is no longer renewed, so its lease ends it on its server. Errors: `Lost` when
    /// fewer than a majority of its members were still held (the lost-hold listeners were
    /// told); `NotHeld` when it holds none; else, when the release failed on more than a
    /// minority of the servers (so the lock stays held there until the leases end), the first
    /// failure's kind with every failing server named. Failures on a minority are logged
    /// only: a majority of the servers is free of this owner's hold, so others can take the
    /// lock.
    pub async fn release(&self, owner: &Owner) -> Result<Released> {
        let inner = &self.inner;
        inner.members[0].shared().check_owner(owner)?;
        let tracked: Vec<usize> = (0..inner.members.len()).filter(|&i| self.holds(i, owner.id())).collect();
        if tracked.is_empty() {
            return Err(Error::new(
                ErrorKind::NotHeld,
                format!("RedLock '{}' is not held by {owner} (never acquired, or released)", inner.name),
            ));
        }
        let lost = self.is_lost(owner);
        let results = futures_util::future::join_all(tracked.iter().map(|&i| {
            let o = self.owner_on(i, owner);
            async move { (i, inner.members[i].release_member(&o).await) }
        }))
        .await;
        let (mut reentered, mut freed, mut failed, mut tracked_still) =
            (Vec::new(), 0, Vec::new(), Vec::new());
        for (i, (r, left)) in results {
            tracked_still.extend(left);
            match r {
                Ok(Released::StillHeld) => reentered.push(i),
                Ok(_) => freed += 1,
                Err(e) => failed.push((i, e)),
            }
        }
        // The owner's hold is over once a majority freed it (or no member says it re-entered).
        // Then a member whose release failed (its server down or silent: the release may never
        // have run) or that still counts a hold (more than this owner took through this
        // handle) is no longer renewed, so its lease ends it. Renewed, it stayed held for good
        // by an owner that had released, and the owner's next acquire re-entered it there.
        let still_held = freed < inner.quorum && !reentered.is_empty();
        if !still_held {
            lock_map(&inner.acquires).remove(&owner.id());
            tracked_still.into_iter().for_each(Remaining::end_by_lease);
        }
        if lost {
            return Err(Error::new(
                ErrorKind::Lost,
                format!(
                    "RedLock '{}' was lost before this release: fewer than {} of its {} members were \
                     still held (the lost-hold listeners were told why); what was left is released",
                    inner.name,
                    inner.quorum,
                    inner.members.len()
                ),
            ));
        }
        // Free for others once a majority of the servers has no hold of ours left.
        if failed.len() > inner.members.len() - inner.quorum {
            return Err(self.no_majority("release", &failed));
        }
        for (i, e) in &failed {
            log::warn!(
                "rlock: RedLock '{}': server {} did not release ({e}); its lease ends the hold there",
                inner.name,
                i + 1
            );
        }
        Ok(if still_held { Released::StillHeld } else { Released::Unlocked })
    }

    /// For a fenced RedLock: the token of `owner`'s latest acquire through this handle, while
    /// it holds it (`None` after its last release, or when not fenced).
    pub fn token_of(&self, owner: &Owner) -> Option<u64> {
        lock_map(&self.inner.acquires).get(&owner.id()).and_then(|(_, t)| *t)
    }

    /// Whether `owner` holds the lock on a majority of the servers (one query per server).
    /// Errors when fewer than a majority answered.
    pub async fn is_held(&self, owner: &Owner) -> Result<bool> {
        let inner = &self.inner;
        let results = futures_util::future::join_all(inner.members.iter().enumerate().map(|(i, m)| {
            let o = self.owner_on(i, owner);
            async move { (i, m.is_held(&o).await) }
        }))
        .await;
        let mut held = 0;
        let mut failed = Vec::new();
        for (i, r) in results {
            match r {
                Ok(h) => held += usize::from(h),
                Err(e) => failed.push((i, e)),
            }
        }
        if failed.len() > inner.members.len() - inner.quorum {
            return Err(self.no_majority("is_held", &failed));
        }
        Ok(held >= inner.quorum)
    }

    /// Whether the owner `owner_id` holds member `i` as its watchdog knows (no query): tracked
    /// there, and not only by a stray try that took it (whose give-back releases it; a release
    /// of the owner's that released it too found it gone, `NotHeld`, and with a second server
    /// down that failed the release on a majority: seen in the chaos suite).
    fn holds(&self, i: usize, owner_id: u64) -> bool {
        let m = &self.inner.members[i];
        let o = m.owner_on_client(owner_id);
        m.is_tracked(&o) && !m.stray_alone(&o)
    }

    /// How many members `owner` holds through these clients (live), and how many of its holds
    /// were lost, as their watchdogs know (no query).
    fn live(&self, owner_id: u64) -> (usize, usize) {
        let inner = &self.inner;
        let (mut live, mut lost) = (0, 0);
        for (i, m) in inner.members.iter().enumerate() {
            let o = m.owner_on_client(owner_id);
            if m.is_lost(&o) {
                lost += 1;
            } else if self.holds(i, owner_id) {
                live += 1;
            }
        }
        (live, lost)
    }

    /// Whether `owner`'s RedLock was lost: some member's hold was lost, and fewer than a
    /// majority are still held (until its release is called).
    pub fn is_lost(&self, owner: &Owner) -> bool {
        let (live, lost) = self.live(owner.id());
        lost > 0 && live < self.inner.quorum
    }

    /// How long local time still proves a majority of `owner`'s member holds: the time the
    /// quorum-th longest-proven member has left (see [`Lock::valid_for`]). Zero when fewer
    /// than a majority are proven now. No query.
    pub fn valid_for(&self, owner: &Owner) -> Duration {
        let mut left: Vec<Duration> = (0..self.inner.members.len())
            .map(|i| {
                let m = &self.inner.members[i];
                if self.holds(i, owner.id()) {
                    m.valid_for(&m.owner_on_client(owner.id()))
                } else {
                    Duration::ZERO
                }
            })
            .collect();
        left.sort_unstable_by(|a, b| b.cmp(a));
        left.get(self.inner.quorum - 1).copied().unwrap_or(Duration::ZERO)
    }

    /// Calls `f` (on a library task) once per hold when `owner`'s RedLock (any owner's, with
    /// `None`) is lost: when a member's hold is lost and fewer than a majority are left. The
    /// event's kind is [`RED_LOCK_KIND`], its owner the first client's, its reason the last
    /// member's. Remove it with [`RedLock::remove_lost_listener`]; the listener ends with the
    /// last clone of this handle.
    pub fn on_lost(
        &self,
        owner: Option<&Owner>,
        f: impl Fn(&LostEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        let f: Arc<dyn Fn(&LostEvent) + Send + Sync> = Arc::new(f);
        // Owner id -> the acquire whose loss was reported, so each hold is reported once.
        let reported: Arc<Mutex<HashMap<u64, u64>>> = Arc::default();
        let weak: Weak<RedInner> = Arc::downgrade(&self.inner);
        let ids: Vec<(usize, ListenerId)> = self
            .inner
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let (f, reported, weak) = (f.clone(), reported.clone(), weak.clone());
                let o = owner.map(|o| m.owner_on_client(o.id()));
                let id = m.on_lost(o.as_ref(), move |e| {
                    let Some(inner) = weak.upgrade() else { return };
                    let red = RedLock { inner };
                    red.member_lost(e, &reported, &*f);
                });
                (i, id)
            })
            .collect();
        let first = ids[0].1;
        lock_map(&self.inner.listeners).insert(first.into_raw(), ids);
        first
    }

    fn member_lost(
        &self,
        e: &LostEvent,
        reported: &Mutex<HashMap<u64, u64>>,
        f: &(dyn Fn(&LostEvent) + Send + Sync),
    ) {
        let id = e.owner.id();
        let (live, _) = self.live(id);
        if live >= self.inner.quorum {
            return;
        }
        let Some(&(seq, _)) = lock_map(&self.inner.acquires).get(&id) else { return };
        if lock_map(reported).insert(id, seq) == Some(seq) {
            return;
        }
        let owner = self.owner_on(0, &e.owner);
        f(&LostEvent {
            name: self.inner.name.clone(),
            kind: RED_LOCK_KIND,
            owner,
            reason: e.reason,
            permit_id: None,
        });
    }

    /// Removes a listener added with [`RedLock::on_lost`]; false when it was already removed.
    pub fn remove_lost_listener(&self, id: ListenerId) -> bool {
        let Some(ids) = lock_map(&self.inner.listeners).remove(&id.into_raw()) else { return false };
        for (i, id) in ids {
            self.inner.members[i].remove_lost_listener(id);
        }
        true
    }
}

impl Drop for RedInner {
    fn drop(&mut self) {
        for (_, ids) in lock_map(&self.listeners).drain() {
            for (i, id) in ids {
                self.members[i].remove_lost_listener(id);
            }
        }
    }
}

/// Releases what a failed round took, before anything else is tried.
/// Gives back members taken by a try nobody uses: each released, or, where that fails, no
/// longer renewed, so its lease ends it (a member the watchdog kept renewing would be held
/// by nobody until the client closes).
async fn give_back(guards: Vec<Guard>) {
    futures_util::future::join_all(guards.into_iter().map(Guard::give_back)).await;
}

/// How long the members still answering get once `took` brought a majority: twice that, at
/// least [`GRACE`].
fn grace(took: Duration) -> Duration {
    (took * 2).max(GRACE)
}

/// How many of `servers` make a majority: more than half.
pub fn quorum_of(servers: usize) -> usize {
    servers / 2 + 1
}

fn lock_map<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every critical section leaves the map consistent, so a poisoned mutex is still usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}
