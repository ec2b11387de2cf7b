//! A release of a tracked hold, as a type: [`Watchdog::start_release`] makes a
//! [`ReleaseTicket`] before the release is sent, and the ticket's consuming methods are the only
//! ways the release can end (freed, a level left, not held, failed). Dropping an unended ticket
//! ends it as failed, so no path (an early `?`, a dropped future) leaves the hold marked as
//! being released, which would hold back its loss report for good. A release that leaves the
//! hold tracked (a level left, a failure) hands back a [`Remaining`], the only way to stop
//! renewing a hold an owner did not finish releasing (a RedLock member once the RedLock is
//! released). A force unlock by this client ends through a [`ForceUnlockTicket`]. One place
//! builds the error a release of a hold that is not held returns.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{Forgotten, HoldKey, Watchdog};
use crate::error::{Error, ErrorKind};

/// One release of hold `key` under way (see the module's doc).
#[must_use = "a release ticket ends the release: dropping it says the release failed"]
pub(crate) struct ReleaseTicket<'a> {
    wd: &'a Arc<Watchdog>,
    key: HoldKey,
    /// When the release was about to be sent: a lease it may have set runs from no earlier.
    sent: Instant,
    /// Whether one of the consuming methods ended it.
    ended: bool,
}

/// What a release that left the hold held on the server (re-entered) means for its owner.
pub(crate) enum LevelLeft {
    /// The owner still holds it: a level it was handed is left (and renewed, unless the
    /// [`Remaining`] is ended).
    StillHeld(Remaining),
    /// The levels left came from acquires whose reply was lost: nobody holds them. The hold is
    /// forgotten (not renewed: their lease ends them), as after a final release.
    Orphaned(Forgotten),
}

/// A hold a release left tracked (a level left, or the release failed): renewed as before
/// while this is kept or dropped. [`Remaining::end_by_lease`] is for a hold nobody will
/// release: a RedLock member whose release failed or that still counts a level, once the
/// RedLock's hold is over.
pub(crate) struct Remaining {
    wd: Arc<Watchdog>,
    key: HoldKey,
}

impl Remaining {
    /// Stops renewing the hold without releasing it: its lease ends it on the server.
    pub(crate) fn end_by_lease(self) {
        self.wd.untrack(&self.key);
    }
}

/// A force unlock of a lock by this client under way: [`ForceUnlockTicket::deleted`] when the
/// server deleted the lock; dropped otherwise (nothing deleted, or no answer: then a hold of it
/// this client tracks stays tracked, and a renewal finds out whether it is gone).
#[must_use = "a force unlock ticket says whether the lock was deleted"]
pub(crate) struct ForceUnlockTicket<'a> {
    wd: &'a Watchdog,
    name: &'a str,
}

impl ForceUnlockTicket<'_> {
    /// The server deleted the lock: every hold of it on this client is over, forgotten (their
    /// owners' releases answer `NotHeld`; nothing is renewed).
    pub(crate) fn deleted(self) {
        self.wd.forget_name(self.name);
    }
}

impl Watchdog {
    /// Starts a release of hold `key`: while it is under way a loss a renewal sees is held
    /// back (and reported by the ticket's end, unless the release frees the hold). Take it
    /// right before the release is sent.
    pub(crate) fn start_release(self: &Arc<Self>, key: HoldKey) -> ReleaseTicket<'_> {
        self.release_started(&key);
        ReleaseTicket { wd: self, key, sent: Instant::now(), ended: false }
    }

    /// Starts a force unlock of lock `name` by this client: take it before the call is sent.
    pub(crate) fn start_force_unlock<'a>(&'a self, name: &'a str) -> ForceUnlockTicket<'a> {
        ForceUnlockTicket { wd: self, name }
    }
}

impl ReleaseTicket<'_> {
    /// The lease to send with the release (the last acquire's, else the watchdog's).
    pub(crate) fn lease(&self) -> Duration {
        self.wd.release_lease(&self.key)
    }

    /// The server freed the owner's hold (or its last level): forgotten, counted. `Lost` when
    /// the holder had been told it was lost: the release freed what was left, and still fails.
    pub(crate) fn freed(mut self) -> Forgotten {
        self.ended = true;
        self.wd.released(&self.key)
    }

    /// The server left the hold held (a re-entered lock): one level fewer. The release may
    /// have set the lease again, from its arrival.
    pub(crate) fn level_left(mut self) -> LevelLeft {
        if self.wd.level_released(&self.key) {
            self.failed_now();
            LevelLeft::StillHeld(self.remaining())
        } else {
            self.ended = true;
            LevelLeft::Orphaned(self.wd.released(&self.key))
        }
    }

    /// The server says the owner does not hold it: forgotten; `Lost` when the watchdog had
    /// lost it (a loss seen while this release was under way is reported now).
    pub(crate) fn not_held(mut self) -> Forgotten {
        self.ended = true;
        self.wd.forget(&self.key)
    }

    /// The release failed (no answer, an error): it may have run and set the lease again.
    /// The hold stays tracked (see [`Remaining`]).
    pub(crate) fn failed(mut self) -> Remaining {
        self.failed_now();
        self.remaining()
    }

    /// The release failed, and nobody sends it again (the undo of a level an acquire took and
    /// nobody was handed): that level is no longer counted. With levels left, the owner still
    /// holds the hold (a level the server still counts for the undo is let go at the owner's
    /// last release: [`LevelLeft::Orphaned`]); with none, it is forgotten, no longer renewed,
    /// and its lease ends it on the server.
    pub(crate) fn abandoned(mut self) {
        if self.wd.level_released(&self.key) {
            self.failed_now();
        } else {
            self.ended = true;
            self.wd.untrack(&self.key);
        }
    }

    /// The release failed, and it sets no lease where it runs (a permit's release removes the
    /// permit): the lease proven so far stands.
    pub(crate) fn failed_setting_no_lease(mut self) {
        if !std::mem::replace(&mut self.ended, true) {
            self.wd.release_ended(&self.key);
        }
    }

    fn remaining(&self) -> Remaining {
        Remaining { wd: Arc::clone(self.wd), key: self.key.clone() }
    }

    fn failed_now(&mut self) {
        if !std::mem::replace(&mut self.ended, true) {
            self.wd.lease_reset(&self.key, self.sent);
            self.wd.release_ended(&self.key);
        }
    }
}

impl Drop for ReleaseTicket<'_> {
    fn drop(&mut self) {
        self.failed_now();
    }
}

/// The error of a release whose hold is not held, `what` naming the hold ("lock 'orders'",
/// "permit 0a1b... of semaphore 'gpu'") and `why` saying when that happens: `Lost` when the
/// watchdog had lost it (the listeners were told why), else `NotHeld`.
pub(crate) fn not_held(forgotten: Forgotten, what: &str, why: &str) -> Error {
    match forgotten {
        Forgotten::Lost => Error::new(
            ErrorKind::Lost,
            format!(
                "{what} was lost before this release: it expired, was deleted or force-unlocked, or its \
                 lease was in doubt or ending (the lost-hold listeners were told why)"
            ),
        ),
        Forgotten::NotHeld => Error::new(ErrorKind::NotHeld, format!("{what} is not held {why}")),
    }
}
