//! Releasing: one hold level (with retries whose reply was lost made safe by a request
//! latch), and force-unlocking.

use crate::error::{Error, ErrorKind, Result};
use crate::finish::Finish;
use crate::keys;
use crate::owner::Owner;
use crate::scripts::{self, ReleaseKind};
use crate::watchdog::release::{self, LevelLeft, Remaining};
use crate::watchdog::Forgotten;

use crate::millis::whole_ms;

use super::{now_ms, write_field, Flavor, Lock, Released};

impl Lock {
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
        self.release_member(owner).await.0
    }

    /// One release of `owner`'s level, retried after transient errors when `retry`, else tried
    /// once.
    pub(super) async fn release_tries(&self, owner: &Owner, retry: bool) -> Result<Released> {
        self.release_call(owner, retry, false).await.0
    }

    /// The release that undoes a level an acquire took and nobody was handed: when it fails,
    /// nobody sends it again, so that level is no longer counted (and with none left, the hold
    /// is no longer renewed: its lease ends it).
    pub(super) async fn undo_now(&self, owner: &Owner) -> Result<Released> {
        self.release_call(owner, true, true).await.0
    }

    /// [`Self::release`], with the hold it left tracked (a level left, or the release failed):
    /// a RedLock ends its members' by lease once its own hold is over.
    pub(crate) async fn release_member(&self, owner: &Owner) -> (Result<Released>, Option<Remaining>) {
        let shared = &self.inner.shared;
        if let Err(e) = shared.check_owner(owner).and_then(|()| shared.check_open()) {
            return (Err(e), None);
        }
        let lock = self.clone();
        let owner = owner.clone();
        let (r, remaining) =
            Finish::new(shared.cleanups(), async move { lock.release_call(&owner, true, false).await }).await;
        (shared.counted(r), remaining)
    }

    async fn release_call(
        &self,
        owner: &Owner,
        retry: bool,
        undo: bool,
    ) -> (Result<Released>, Option<Remaining>) {
        let inner = &self.inner;
        let shared = &inner.shared;
        let key = self.key(owner);
        let latch = shared.request_latch(&inner.latch_prefix);
        let kind = match &inner.flavor {
            Flavor::Reentrant | Flavor::Fenced { .. } | Flavor::Spin | Flavor::NonReentrant => {
                ReleaseKind::Reentrant
            }
            Flavor::Read { key_prefix } => ReleaseKind::Read {
                timeout_prefix: keys::read_timeout_prefix(&inner.name, owner.as_str()),
                key_prefix,
            },
            Flavor::Write => ReleaseKind::Write { field: write_field(owner) },
            Flavor::Fair { queue, timeouts, .. } => ReleaseKind::Fair { queue, timeouts, now_ms: now_ms() },
        };
        let ticket = shared.watchdog().start_release(key);
        let call = scripts::Release {
            name: &inner.name,
            channel: &inner.channel,
            latch: latch.key(),
            lease_ms: whole_ms(ticket.lease()),
            owner: owner.as_str(),
            publish: self.publish_command(),
            latch_ttl_ms: shared.latch_ttl_ms(),
            kind,
        };
        let call = &call;
        let op = |mut conn: crate::conn::Commands| async move {
            call.run(&mut conn)
                .await
                .map_err(|e| Error::from_redis(&format!("release of lock '{}' failed", inner.name), e))
        };
        let result = if retry { shared.retrying(op).await } else { op(shared.conn()).await };
        let (outcome, forgotten, remaining) = match result {
            Ok(Some(scripts::RELEASE_FREE)) => (Released::Unlocked, ticket.freed(), None),
            Ok(Some(scripts::RELEASE_LEFT)) => (Released::StillLocked, ticket.freed(), None),
            Ok(Some(_)) => match ticket.level_left() {
                LevelLeft::StillHeld(remaining) => (Released::StillHeld, Forgotten::NotHeld, Some(remaining)),
                LevelLeft::Orphaned(forgotten) => {
                    // Every level this client took is released; the server still counts levels
                    // of acquires whose reply was lost (and whose undo failed). Nobody holds
                    // them: renewed, they kept the lock for good (a RedLock member left on a
                    // server that was stopped). Forgotten, their lease ends them.
                    log::warn!(
                        "rlock: lock '{}' still counts hold levels of {owner} that no acquire returned \
                         (their replies were lost); they are not renewed, so their lease ends them",
                        inner.name
                    );
                    (Released::StillLocked, forgotten, None)
                }
            },
            Ok(None) => {
                latch.leave();
                return (Err(not_held(ticket.not_held(), &inner.name, owner)), None);
            }
            Err(e) => {
                let remaining = if undo {
                    ticket.abandoned();
                    None
                } else {
                    Some(ticket.failed())
                };
                latch.leave();
                return (Err(e), remaining);
            }
        };
        if let Forgotten::Lost = forgotten {
            return (Err(not_held(forgotten, &inner.name, owner)), remaining);
        }
        // The latch only matters to retries of this call, which are over: dropped, deleted.
        (Ok(outcome), remaining)
    }

    /// Deletes the lock whoever holds it and wakes a waiter. Returns whether a lock was there.
    /// `Redis` error (and nothing deleted) when the key is not a lock. The holder's watchdog
    /// reports the loss and its release fails with `Lost`. The read (write) side of a
    /// read-write lock deletes the lock only while it is read (write) locked, as Redisson's.
    pub async fn force_unlock(&self) -> Result<bool> {
        let inner = &self.inner;
        let shared = &inner.shared;
        shared.check_open()?;
        let publish = self.publish_command();
        let mut conn = shared.conn();
        let (name, channel) = (&*inner.name, inner.channel.as_str());
        let forced = shared.watchdog().start_force_unlock(name);
        let deleted = match &inner.flavor {
            Flavor::Reentrant | Flavor::Fenced { .. } | Flavor::Spin | Flavor::NonReentrant => {
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
            Flavor::Fair { queue, timeouts, .. } => {
                let keys = scripts::FairKeys { name, queue, timeouts, channel };
                scripts::fair_force_unlock(&mut conn, &keys, now_ms(), publish).await
            }
        }
        .map_err(|e| Error::from_redis(&format!("force unlock of lock '{}' failed", inner.name), e))?;
        if deleted == 1 {
            forced.deleted();
        }
        Ok(deleted == 1)
    }
}

/// The error of a write acquire by an owner that holds only read holds.
pub(super) fn refused_upgrade(name: &str, owner: &Owner) -> Error {
    Error::new(
        ErrorKind::WouldDeadlock,
        format!(
            "{owner} holds read locks on '{name}' and asked for its write lock: that upgrade would \
             wait forever (Redisson's does); release the read holds first"
        ),
    )
}

/// The error of an acquire of a lock `owner` holds already and may not re-enter (Redisson 4.4's
/// non-reentrant locks): waiting would never end, since only `owner` itself could release it.
pub(super) fn refused_reentry(kind: &str, name: &str, owner: &Owner) -> Error {
    Error::new(
        ErrorKind::WouldDeadlock,
        format!(
            "{owner} holds {kind} lock '{name}' already and asked for it again: it is not reentrant, \
             so that acquire would wait forever; release it first",
            kind = kind.replace('_', "-")
        ),
    )
}

/// The error of a release Redis answered "not held" for.
fn not_held(forgotten: Forgotten, name: &str, owner: &Owner) -> Error {
    release::not_held(
        forgotten,
        &format!("lock '{name}'"),
        &format!("by {owner} (never acquired, or its lease ran out)"),
    )
}
