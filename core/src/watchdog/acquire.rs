//! An acquire's outcome, as a type: [`Watchdog::start_acquire`] makes an [`AcquireTicket`]
//! right before the command that may take (or re-lease) a hold is sent, so a hold it takes is
//! tracked with a lease that runs from that send and from no later moment a caller could pick.
//! The ticket's consuming methods are the only ways an outcome reaches the watchdog: a level
//! handed to the caller, a permit handed to the watchdog, a level nobody is handed, a permit
//! whose lease was set by hand, a hold the server says is not held. An acquire that took
//! nothing drops its ticket.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{Forgotten, HoldKey, HoldKind, Watchdog};
use crate::owner::Owner;

/// One acquire of hold `key` under way (see the module's doc).
#[must_use = "an acquire ticket tells the watchdog what the acquire took"]
pub(crate) struct AcquireTicket<'a> {
    wd: &'a Watchdog,
    key: HoldKey,
    /// When the command was about to be sent: a lease it set runs from no earlier.
    sent: Instant,
}

impl Watchdog {
    /// Starts an acquire of hold `key`: take it right before the command is sent.
    pub(crate) fn start_acquire(&self, key: HoldKey) -> AcquireTicket<'_> {
        AcquireTicket { wd: self, key, sent: Instant::now() }
    }
}

impl AcquireTicket<'_> {
    /// The acquire took a level (first or reentrant) its caller is handed: tracked with
    /// `lease` from the send, renewed when `renew`, with the fencing token its reply carried
    /// (`Some` for fenced locks). Called before the acquire returns.
    pub(crate) fn took(
        self,
        kind: &'static HoldKind,
        owner: &Owner,
        lease: Duration,
        renew: bool,
        token: Option<u64>,
    ) {
        self.wd.acquired(kind, self.key.clone(), owner, lease, renew, self.sent);
        if let Some(token) = token {
            self.wd.set_token(&self.key, token);
        }
    }

    /// The command took permit `id` (or handed a held one to the watchdog) with the watchdog's
    /// lease: tracked and renewed until it is released.
    pub(crate) fn took_permit(self, kind: &'static HoldKind, owner: &Owner, id: Arc<str>) {
        self.wd.acquired_permit(kind, self.key, owner, id, self.sent);
    }

    /// The acquire took a level nobody is handed (no replica acknowledged it, and it is undone
    /// now): counted, so the undo's release ends this level and not one the caller holds.
    pub(crate) fn took_unhanded(self) {
        self.wd.level_added(&self.key);
    }

    /// The command set the hold's lease by hand (a permit's `update_lease` with a lease): the
    /// watchdog no longer tracks it, and that lease ends it on the server.
    pub(crate) fn leased_by_hand(self) {
        self.wd.untrack(&self.key);
    }

    /// The server says the hold is not held: forgotten; `Lost` when the watchdog had lost it.
    pub(crate) fn not_held(self) -> Forgotten {
        self.wd.forget(&self.key)
    }
}
