//! Acquiring: the wait loop around the acquire script, what an attempt whose outcome is
//! unknown gives back, and the bookkeeping of a hold once taken.

use std::sync::Mutex;
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::finish::Undo;
use crate::keys;
use crate::owner::Owner;
use crate::replicas::Synced;
use crate::scripts::{self};
use crate::shared::{Acquiring, Attempt, Wakeup};

use crate::millis::whole_ms;

use super::release::{refused_reentry, refused_upgrade};
use super::{fair_message, lock_message, now_ms, write_field, Busy, Flavor, Lock, Step};

impl Lock {
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
        let fair_channel;
        let (wakeup, fair_wait_ms) = match inner.flavor {
            // A fair waiter listens on its own channel, and queues with a wait: the caller's,
            // else the client's fair_lock_wait_timeout (as Redisson does).
            Flavor::Fair { .. } => {
                fair_channel = format!("{}:{}", inner.channel, owner.as_str());
                let ms = match wait {
                    Some(w) if !w.is_zero() => whole_ms(w).max(1),
                    _ => whole_ms(shared.options().fair_lock_wait_timeout).max(1),
                };
                (Wakeup::Channel(&fair_channel, fair_message), ms)
            }
            // A spin lock's releases publish nothing: its waiters poll.
            Flavor::Spin => (Wakeup::Poll, 0),
            _ => (Wakeup::Channel(&inner.channel, lock_message), 0),
        };
        let queue_up = wait != Some(Duration::ZERO);
        // The give-up step of the fair-queue place this waiter holds (see `attempt`).
        let queued: Mutex<Option<Undo>> = Mutex::new(None);
        let queued = &queued;
        let poll = shared.options().poll_interval;
        let got = shared
            .acquire_until(
                Acquiring { kind: self.kind(), name: &inner.name, owner: owner.as_str() },
                wakeup,
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
    pub(super) async fn attempt(
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
                // Right before the acquire's send: the lease it sets runs from then at the
                // earliest.
                let ticket = inner.shared.watchdog().start_acquire(lock.key(&owner));
                let acquired = match lock.run_acquire(&owner, whole_ms(lease), fair_wait_ms, queue_up).await {
                    Ok(Synced::Acknowledged(acquired)) => acquired,
                    Ok(Synced::Unacknowledged(_)) => {
                        // Taken, but no replica acknowledged it: nobody is handed this level.
                        // Counted, then undone, so the undo ends it and not a level `owner`
                        // holds; an undo that fails is not renewed.
                        ticket.took_unhanded();
                        if let Err(e) = lock.undo_now(&owner).await {
                            if e.kind() != ErrorKind::NotHeld && e.kind() != ErrorKind::Lost {
                                log::warn!(
                                    "rlock: could not undo the unsynced acquire of '{}': {e}",
                                    inner.name
                                );
                            }
                        }
                        return Err(lock
                            .failed_attempt(&owner, lock.unsynced(), fair_wait_ms, queue_up)
                            .await);
                    }
                    Err(e) => return Err(lock.failed_attempt(&owner, e, fair_wait_ms, queue_up).await),
                };
                match acquired {
                    Ok(token) => {
                        let fenced = matches!(inner.flavor, Flavor::Fenced { .. });
                        ticket.took(inner.flavor.kind(), &owner, lease, renew, fenced.then_some(token));
                        let undo = lock.undo(&owner);
                        Ok(Ok((undo, token)))
                    }
                    // An upgrade: waiting would never end, so the acquire fails at once.
                    Err(scripts::REFUSED) if matches!(inner.flavor, Flavor::Write) => {
                        Err(refused_upgrade(&inner.name, &owner))
                    }
                    // A non-reentrant lock `owner` holds. Tracked: a re-entry, which would wait
                    // forever, so the acquire fails at once. Not tracked: a hold an earlier try
                    // of this client took before its reply was lost, and whose give-back failed
                    // (`failed_attempt`). Not a re-entry: given back now, and the next try takes
                    // the lock afresh, with a lease this client timed from its own send.
                    Err(scripts::REFUSED) if !inner.flavor.reentrant() => {
                        if lock.is_tracked(&owner) {
                            return Err(refused_reentry(lock.kind(), &inner.name, &owner));
                        }
                        match lock.release_tries(&owner, false).await {
                            Err(e) if e.kind() != ErrorKind::NotHeld => Err(e),
                            _ => Ok(Err((0, None))),
                        }
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
            let Flavor::Fair { queue, timeouts, .. } = &inner.flavor else { return };
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
    pub(super) fn undo(&self, owner: &Owner) -> Undo {
        let (lock, owner) = (self.clone(), owner.clone());
        Undo::new(self.inner.shared.cleanups(), async move {
            match lock.undo_now(&owner).await {
                // Nothing left to give back: the acquire took nothing, or the hold ended.
                Err(e) if e.kind() == ErrorKind::NotHeld || e.kind() == ErrorKind::Lost => {}
                Err(e) => log::warn!(
                    "rlock: could not undo an acquire nobody took on '{}' ({e}); its level is not \
                     renewed, so its lease (or the owner's last release) ends it",
                    lock.name()
                ),
                Ok(_) => {}
            }
        })
    }

    /// The acquire step, followed by a replica `WAIT` when replica sync is on and the key's
    /// master has replicas: `Unacknowledged` when no replica acknowledged what it took (the
    /// caller undoes it).
    async fn run_acquire(
        &self,
        owner: &Owner,
        lease_ms: u64,
        fair_wait_ms: u64,
        queue_up: bool,
    ) -> Result<Synced<Step>> {
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
                Flavor::Reentrant | Flavor::Spin | Flavor::NonReentrant => {
                    let reentrant = inner.flavor.reentrant();
                    scripts::acquire(&mut conn, &inner.name, lease_ms, owner.as_str(), reentrant).await?
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
                Flavor::Fair { queue, timeouts, .. } => {
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
                        inner.flavor.reentrant(),
                    )
                    .await?
                }
            };
            Ok(busy.map_or(Ok(0), Err))
        };
        let Some(replicas) = inner.shared.replicas_for(inner.slot) else {
            return step(inner.shared.conn()).await.map(Synced::Acknowledged).map_err(failed);
        };
        replicas.run(&inner.name, inner.slot, step, Step::is_ok).await.map_err(failed)
    }

    /// The error of an acquire no replica acknowledged (undone by the caller), which the wait
    /// loop retries.
    fn unsynced(&self) -> Error {
        Error::new(
            ErrorKind::Timeout,
            format!(
                "no replica acknowledged the acquire of lock '{}' within replica_sync_timeout ({:?}); \
                 the acquire was undone",
                self.inner.name,
                self.inner.shared.options().replica_sync_timeout
            ),
        )
    }

    /// What an acquire step that failed with `e` leaves behind is given back, and `e` returned.
    async fn failed_attempt(&self, owner: &Owner, e: Error, fair_wait_ms: u64, queue_up: bool) -> Error {
        if e.outcome_unknown() && matches!(self.inner.flavor, Flavor::Fair { .. }) && queue_up {
            // The script may have queued `owner` before its reply was lost, and no answer
            // brought its give-up step: left there, the waiters behind would wait for its
            // deadline (300 s by default). Given up in the background now; a caller still
            // waiting queues again at its next try.
            drop(self.give_up(owner, fair_wait_ms));
        }
        if e.outcome_unknown() && !self.is_tracked(owner) {
            // Only the reply may be lost, and `owner` held nothing here before: release what the
            // script may have taken before anything retries (a retry would count a second hold
            // level). `NotHeld` when it took nothing. A reentrant acquire cannot tell its level
            // from an older one's, so it keeps what it has.
            // One try: retries of its own would hold up the acquire's.
            if let Err(e) = self.release_tries(owner, false).await {
                if e.kind() != ErrorKind::NotHeld {
                    log::warn!(
                        "rlock: could not release what an unanswered acquire of '{}' may have taken \
                         ({e}); it ends with its lease",
                        self.name()
                    );
                }
            }
        }
        e
    }
}
