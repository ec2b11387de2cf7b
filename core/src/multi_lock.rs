//! The multi-lock (Redisson `RedissonMultiLock`): several locks taken all-or-nothing.
//!
//! Members are any [`Lock`]s (reentrant, fenced, fair, read or write sides), from one client
//! or several (other servers included). One owner id holds them all: the same number on each
//! member's client ([`Client::new_owner`](crate::Client::new_owner) ids are unique across the
//! clients of a process).
//!
//! Each round waits (pub/sub, no polling) for one member, then tries every other member once.
//! When one is taken by somebody else, the round gives back what it took and the next round
//! waits for that member first. So two owners taking `{a, b}` and `{b, a}` never deadlock: at
//! most one of them waits while holding nothing else, and a small random pause breaks the tie
//! when both failed at once. Release frees every member and reports every failure (Redisson's
//! stops at the first failing member and leaves the rest locked).
//!
//! A lock that must survive the loss of a minority of independent servers is a
//! [`RedLock`](crate::RedLock) (a majority, not all).

use std::time::Duration;

use futures_util::future::join_all;
use tokio::time::Instant;

use crate::error::{Error, ErrorKind, Result};
use crate::lock::{Guard, Lock};
use crate::options::positive_ms;
use crate::owner::Owner;
use crate::shared::{jitter, pause_before_retry, remaining};

/// Longest random pause between two rounds: long enough to let the other owner finish its
/// round, short against a lock hand-off.
const MAX_PAUSE: Duration = Duration::from_millis(5);

/// Several locks taken and released as one. Cheap to clone.
#[derive(Clone, Debug)]
pub struct MultiLock {
    members: Vec<Lock>,
}

impl MultiLock {
    /// A multi-lock over `members`, taken in this order. `InvalidArgument` when there are none.
    ///
    /// ```no_run
    /// use rlock::MultiLock;
    /// # async fn demo() -> rlock::Result<()> {
    /// # let client = rlock::Client::connect_default(Default::default()).await?;
    /// let both = MultiLock::new(vec![client.lock("account:1")?, client.lock("account:2")?])?;
    /// let me = both.new_owner();
    /// both.acquire(&me).await?; // all or nothing, without deadlock against other orders
    /// // ... move money between the two accounts ...
    /// both.release(&me).await?;
    /// # Ok(()) }
    /// ```
    pub fn new(members: Vec<Lock>) -> Result<MultiLock> {
        if members.is_empty() {
            return Err(Error::invalid("a multi-lock needs at least one lock"));
        }
        Ok(MultiLock { members })
    }

    /// The member locks.
    pub fn members(&self) -> &[Lock] {
        &self.members
    }

    /// A fresh owner (on the first member's client) that no other call of this process
    /// returned: its id is an owner of its own on every member's client.
    pub fn new_owner(&self) -> Owner {
        self.members[0].owner_on_client(crate::owner::next_auto_owner_id())
    }

    /// `owner`'s id as an owner on member `i`'s client.
    fn owner_on(&self, i: usize, owner: &Owner) -> Owner {
        self.members[i].owner_on_client(owner.id())
    }

    /// Waits until `owner` holds every member, each hold renewed by its client's watchdog.
    /// Cancel-safe: a dropped call leaves no member held.
    pub async fn acquire(&self, owner: &Owner) -> Result<()> {
        if let Some(held) = self.acquire_guard(owner, None, None).await? {
            held.keep();
        }
        Ok(())
    }

    /// Like [`MultiLock::acquire`], each member's hold expiring `lease` after it was taken
    /// (not renewed), as [`Lock::acquire_with_lease`].
    pub async fn acquire_with_lease(&self, owner: &Owner, lease: Duration) -> Result<()> {
        positive_ms("lease", lease)?;
        if let Some(held) = self.acquire_guard(owner, None, Some(lease)).await? {
            held.keep();
        }
        Ok(())
    }

    /// Like [`MultiLock::acquire`], giving up after `wait` (zero: one round); false when the
    /// wait ran out (no member held).
    pub async fn try_acquire(&self, owner: &Owner, wait: Duration, lease: Option<Duration>) -> Result<bool> {
        Ok(self.acquire_guard(owner, Some(wait), lease).await?.map(MultiGuard::keep).is_some())
    }

    /// Acquires like [`MultiLock::acquire`] (`wait` `None`) or [`MultiLock::try_acquire`]
    /// (`None` returned when the wait ran out), as a [`MultiGuard`] that releases every member
    /// when dropped unkept: for surfaces whose caller may be gone when the result arrives.
    pub async fn acquire_guard(
        &self,
        owner: &Owner,
        wait: Option<Duration>,
        lease: Option<Duration>,
    ) -> Result<Option<MultiGuard>> {
        if let Some(l) = lease {
            positive_ms("lease", l)?;
        }
        let deadline = crate::shared::deadline("wait", wait)?;
        let mut first = 0;
        loop {
            match self.round(owner, first, deadline, lease).await? {
                Round::Taken(guards) => return Ok(Some(MultiGuard { guards })),
                Round::TimedOut => return Ok(None),
                Round::Busy(member) => {
                    first = member;
                    if !pause_before_retry(jitter(MAX_PAUSE), deadline).await {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// One round: waits for member `first` until `deadline`, then tries the others once.
    async fn round(
        &self,
        owner: &Owner,
        first: usize,
        deadline: Option<Instant>,
        lease: Option<Duration>,
    ) -> Result<Round> {
        let Some(g) = self.members[first]
            .acquire_guard(&self.owner_on(first, owner), remaining(deadline), lease)
            .await?
        else {
            return Ok(Round::TimedOut);
        };
        let mut guards = vec![g];
        for i in (0..self.members.len()).filter(|&i| i != first) {
            let got =
                self.members[i].acquire_guard(&self.owner_on(i, owner), Some(Duration::ZERO), lease).await;
            match got {
                Ok(Some(g)) => guards.push(g),
                Ok(None) => {
                    give_back(guards).await;
                    return Ok(Round::Busy(i));
                }
                Err(e) => {
                    give_back(guards).await;
                    return Err(e);
                }
            }
        }
        Ok(Round::Taken(guards))
    }

    /// Releases every member held by `owner` (all of them, also when some fail). The error,
    /// when any failed, names each failing member and carries the first failure's kind.
    pub async fn release(&self, owner: &Owner) -> Result<()> {
        let owners: Vec<Owner> = (0..self.members.len()).map(|i| self.owner_on(i, owner)).collect();
        let results = join_all(self.members.iter().zip(&owners).map(|(m, o)| m.release(o))).await;
        let failures: Vec<(&Lock, Error)> =
            self.members.iter().zip(results).filter_map(|(m, r)| r.err().map(|e| (m, e))).collect();
        let Some(kind) = failures.first().map(|(_, e)| e.kind()) else { return Ok(()) };
        let detail: Vec<String> =
            failures.iter().map(|(m, e)| format!("{} '{}': {}", m.kind(), m.name(), e.message())).collect();
        Err(Error::new(
            kind,
            format!(
                "{} of {} members failed to release: {}",
                failures.len(),
                self.members.len(),
                detail.join("; ")
            ),
        ))
    }

    /// Whether `owner` holds every member (one query per member).
    pub async fn is_held(&self, owner: &Owner) -> Result<bool> {
        for (i, m) in self.members.iter().enumerate() {
            if !m.is_held(&self.owner_on(i, owner)).await? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Every member of a multi-lock, held ([`MultiLock::acquire_guard`]): released when dropped
/// (in the background) unless [`kept`](MultiGuard::keep).
#[must_use = "dropping the guard releases every member at once"]
pub struct MultiGuard {
    guards: Vec<Guard>,
}

impl MultiGuard {
    /// Keeps the holds: the owner releases them with [`MultiLock::release`].
    pub fn keep(self) {
        self.guards.into_iter().for_each(Guard::keep);
    }
}

enum Round {
    /// Every member is held.
    Taken(Vec<Guard>),
    /// The wait for the round's first member ran out.
    TimedOut,
    /// This member was held by somebody else (everything taken was given back).
    Busy(usize),
}

/// Releases what a failed round took, before the next round takes anything.
async fn give_back(guards: Vec<Guard>) {
    for g in guards.into_iter().rev() {
        if let Err(e) = g.release().await {
            if e.kind() != ErrorKind::NotHeld {
                log::warn!("rlock: multi-lock could not give back a member it took: {e}");
            }
        }
    }
}
