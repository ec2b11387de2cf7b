//! The permit-expirable semaphore (Redisson `RPermitExpirableSemaphore`): permits with ids.
//!
//! - The count of free permits is the STRING `name` (missing = 0, as the semaphore); each held
//!   permit is a member of the ZSET `{name}:timeout`: its id as 16 raw bytes, scored by its
//!   expiry in absolute milliseconds. Users see ids as 32 lowercase hex characters.
//! - Expired permits go back to the count when the next script runs (any client's), which
//!   announces the new count on `redisson_sc:{name}` like the semaphore, so Java and rlock
//!   waiters wake each other. A waiter with no message to wait for sleeps until the earliest
//!   held permit expires.
//! - A permit taken without a lease is renewed by the watchdog (batched like lock renewals;
//!   Redisson has no watchdog here), so it stays while its client lives and comes back within
//!   the watchdog timeout when the client dies. A permit the watchdog could not renew is
//!   reported like a lost lock (kind `"permit"`).
//! - Cancel-safe: a permit taken for a caller who gave up is released again; acquire and
//!   release steps are idempotent under retries after a lost reply.

use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::finish::{Finish, Undo};
use crate::keys;
use crate::latches::request_id;
use crate::owner::Owner;
use crate::scripts;
use crate::semaphore::{count_message, Semaphore};
use crate::shared::{Acquiring, Attempt, Shared, Wakeup};
use crate::watchdog::release;
use crate::watchdog::{Forgotten, HoldKey, HoldKind, ListenerId, LostEvent, LostFilter, Renewing};

/// A permit renewed by the watchdog: its expiry is pushed out while it is held.
pub(crate) static PERMIT: HoldKind = HoldKind {
    id: 3,
    name: "permit",
    renew: |mut conn, lease_ms, holds| {
        Box::pin(async move {
            let permits: Vec<(String, [u8; 16])> = holds
                .iter()
                .map(|h: &Renewing| {
                    let id = h.permit.as_deref().and_then(|p| parse_id(p).ok()).unwrap_or_default();
                    (keys::suffixed(&h.name, "timeout"), id)
                })
                .collect();
            let refs: Vec<(&str, [u8; 16])> = permits.iter().map(|(k, id)| (k.as_str(), *id)).collect();
            scripts::pes_renew(&mut conn, lease_ms, &refs).await
        })
    },
};

/// Reads a permit id: 32 hex characters (either case) into its 16 bytes.
fn parse_id(id: &str) -> Result<[u8; 16]> {
    let bad = || Error::invalid(format!("a permit id is 32 hex characters (got {:?})", truncated(id)));
    // from_str_radix alone would take a sign ("+f").
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let mut out = [0u8; 16];
    for (i, pair) in id.as_bytes().chunks(2).enumerate() {
        let hex = std::str::from_utf8(pair).map_err(|_| bad())?;
        out[i] = u8::from_str_radix(hex, 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// At most 40 characters of what a user passed, for an error message.
fn truncated(s: &str) -> String {
    s.chars().take(40).collect()
}

/// The id as users see it: 32 lowercase hex characters.
fn format_id(id: &[u8; 16]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// A handle on one permit-expirable semaphore. Cheap to clone.
#[derive(Clone)]
pub struct PermitExpirableSemaphore {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    /// The plain semaphore on the same key and channel: setting and adding permits are the same.
    counts: Semaphore,
    name: Arc<str>,
    timeouts: String,
    channel: String,
    latch_prefix: String,
    /// Permits have no owner; lost-permit events name the client's owner 0.
    owner: Owner,
}

impl std::fmt::Debug for PermitExpirableSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitExpirableSemaphore").field("name", &self.inner.name).finish()
    }
}

impl PermitExpirableSemaphore {
    pub(crate) fn new(shared: Arc<Shared>, name: &str) -> Self {
        let owner = Owner::new(shared.id(), 0);
        PermitExpirableSemaphore {
            inner: Arc::new(Inner {
                counts: Semaphore::new(shared.clone(), name),
                shared,
                name: name.into(),
                timeouts: keys::suffixed(name, "timeout"),
                channel: keys::semaphore_channel(name),
                latch_prefix: keys::suffixed(name, "rlock_permits_latch:"),
                owner,
            }),
        }
    }

    /// The semaphore name (also the Redis key of its count).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Sets the number of permits when the semaphore does not exist yet (with an expiry when
    /// `ttl` is given). True when set, false when it existed (nothing changed).
    pub async fn try_set_permits(&self, permits: u64, ttl: Option<Duration>) -> Result<bool> {
        self.inner.counts.try_set_permits(permits, ttl).await
    }

    /// Adds `delta` permits (negative: removes them) and wakes waiters; not retried (a retry
    /// could add twice). Returns the new count of free permits.
    pub async fn add_permits(&self, delta: i64) -> Result<i64> {
        self.inner.counts.add_permits(delta).await
    }

    /// Waits until a permit is free and takes it. `lease` `None`: the watchdog renews the
    /// permit until it is released (it comes back within the watchdog timeout if this client
    /// dies); `Some(d)`: it expires `d` after it was taken unless released or updated first.
    /// Cancel-safe: a permit taken for a dropped call is released again.
    ///
    /// ```no_run
    /// # async fn demo() -> rlock::Result<()> {
    /// # let client = rlock::Client::connect_default(Default::default()).await?;
    /// let sem = client.permit_expirable_semaphore("workers")?;
    /// sem.try_set_permits(3, None).await?;
    /// let permit = sem.acquire(None).await?; // renewed by the watchdog until released
    /// println!("holding permit {}", permit.id());
    /// permit.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self, lease: Option<Duration>) -> Result<Permit> {
        let got = self.acquire_inner(None, lease).await?;
        got.ok_or_else(|| Error::not_acquired(self.what(), None))
    }

    /// What an acquire waits for, as a "not acquired" error names it ("a permit of semaphore
    /// 'NAME'"): the same words from [`PermitExpirableSemaphore::acquire`] and the surfaces.
    pub(crate) fn what(&self) -> String {
        format!("a permit of semaphore '{}'", self.inner.name)
    }

    /// Like [`PermitExpirableSemaphore::acquire`], waiting at most `wait` (zero: one try);
    /// `None` when no permit came free in time (nothing taken).
    pub async fn try_acquire(&self, wait: Duration, lease: Option<Duration>) -> Result<Option<Permit>> {
        self.acquire_inner(Some(wait), lease).await
    }

    async fn acquire_inner(&self, wait: Option<Duration>, lease: Option<Duration>) -> Result<Option<Permit>> {
        let lease_ms = match lease {
            Some(l) => crate::options::positive_ms("lease", l)?,
            None => crate::options::positive_ms("watchdog lease", self.inner.shared.watchdog().lease())?,
        };
        let deadline = crate::shared::deadline("wait", wait)?;
        let i = &self.inner;
        i.shared.check_open()?;
        let id = self.new_id();
        i.shared
            .acquire_until(
                Acquiring { kind: "permit", name: &i.name, owner: "" },
                Wakeup::Channel(&i.channel, count_message),
                deadline,
                || async move {
                    Ok(match self.attempt(id, lease_ms, lease.is_none()).await? {
                        Ok(permit) => Attempt::Done(permit),
                        Err(until_expiry) => Attempt::Busy(until_expiry.map(Duration::from_millis)),
                    })
                },
            )
            .await
    }

    /// A permit id no live permit of this client has (its hold key is free).
    fn new_id(&self) -> [u8; 16] {
        let i = &self.inner;
        loop {
            let hex = request_id("", i.shared.id());
            let id = parse_id(&hex).unwrap_or_default();
            if i.shared.watchdog().permit(&self.key(&id)).is_none() {
                return id;
            }
        }
    }

    /// Whether this client's watchdog tracks permit `id` under `key`.
    fn tracked(&self, key: &HoldKey, id: &[u8; 16]) -> bool {
        self.inner.shared.watchdog().permit(key).is_some_and(|p| *p == *format_id(id))
    }

    /// The watchdog's key of permit `id` (its low 8 bytes, unique among this client's ids).
    fn key(&self, id: &[u8; 16]) -> HoldKey {
        let mut low = [0u8; 8];
        low.copy_from_slice(&id[8..]);
        HoldKey { kind: PERMIT.id, name: self.inner.name.clone(), owner: u64::from_be_bytes(low) }
    }

    /// One acquire step run to the end ([`Shared::step`]): a permit taken for a caller who gave
    /// up is released again (an [`Undo`]). `Err` carries the ms until the earliest expiry.
    async fn attempt(
        &self,
        id: [u8; 16],
        lease_ms: u64,
        renew: bool,
    ) -> Result<std::result::Result<Permit, Option<u64>>> {
        let sem = self.clone();
        let answer = self
            .inner
            .shared
            .step(async move {
                let i = &sem.inner;
                let keys = (&*i.name, i.timeouts.as_str(), i.channel.as_str());
                // Right before the send: a lease it sets runs from then at the earliest.
                let ticket = i.shared.watchdog().start_acquire(sem.key(&id));
                let taken = scripts::pes_acquire(
                    &mut i.shared.conn(),
                    keys,
                    lease_ms,
                    i.shared.publish_command(),
                    &[id],
                )
                .await
                .map_err(|e| Error::from_redis(&format!("acquire of semaphore '{}' failed", i.name), e));
                let taken = match taken {
                    Ok(taken) => taken,
                    Err(e) => {
                        if e.outcome_unknown() {
                            // Only the reply may be lost: give back what the script may have
                            // taken under `id` (no one else uses it) before anything retries
                            // with it. `NotHeld` when it took nothing.
                            // One try: retries of its own would hold up the acquire's.
                            if let Err(e) = sem.release_tries(id, false).await {
                                if e.kind() != ErrorKind::NotHeld {
                                    log::warn!(
                                        "rlock: could not give back a permit an unanswered acquire of \
                                         '{}' may have taken ({e}); it ends with its lease",
                                        i.name
                                    );
                                }
                            }
                        }
                        return Err(e);
                    }
                };
                Ok(match taken {
                    Ok(()) => {
                        let hex: Arc<str> = format_id(&id).into();
                        if renew {
                            ticket.took_permit(&PERMIT, &i.owner, hex.clone());
                        }
                        Ok((hex, sem.give_back(id)))
                    }
                    Err(until) => Err(until),
                })
            })
            .await;
        // No await from here on: the permit is handed to the caller in the same poll.
        Ok(match answer? {
            Ok((hex, undo)) => {
                undo.keep();
                Ok(Permit { sem: Some(self.clone()), id: hex })
            }
            Err(until) => Err(until),
        })
    }

    /// Releases permit `id` on the client's runtime when dropped unkept.
    fn give_back(&self, id: [u8; 16]) -> Undo {
        let back = self.clone();
        Undo::new(self.inner.shared.cleanups(), async move {
            if let Err(e) = back.release_now(id).await {
                if e.kind() != ErrorKind::NotHeld && e.kind() != ErrorKind::Lost {
                    log::warn!("rlock: could not give back a permit nobody took on '{}': {e}", back.name());
                }
            }
        })
    }

    /// Releases permit `id` (32 hex characters, from either side: rlock or Redisson) and wakes
    /// waiters. Runs to the end even when the returned future is dropped; retried after
    /// connection errors without giving the permit back twice. `NotHeld` when the id is not a
    /// held permit (unknown, already released, or expired: an expired one is given back all the
    /// same); `Lost` when the watchdog of this client had lost it; `InvalidArgument` (nothing
    /// sent) for an id that is not 32 hex characters.
    pub async fn release(&self, id: &str) -> Result<()> {
        let id = parse_id(id)?;
        self.inner.shared.check_open()?;
        let sem = self.clone();
        let r = Finish::new(self.inner.shared.cleanups(), async move { sem.release_now(id).await }).await;
        self.inner.shared.counted(r)
    }

    async fn release_now(&self, id: [u8; 16]) -> Result<()> {
        self.release_tries(id, true).await
    }

    /// [`Self::release_now`], retried after transient errors when `retry`, else tried once.
    async fn release_tries(&self, id: [u8; 16], retry: bool) -> Result<()> {
        let i = &self.inner;
        let key = self.key(&id);
        // A permit this client does not hold (another's id) has no ticket: nothing to forget.
        let ticket = self.tracked(&key, &id).then(|| i.shared.watchdog().start_release(key));
        let latch = i.shared.request_latch(&i.latch_prefix);
        let (publish, ttl) = (i.shared.publish_command(), i.shared.latch_ttl_ms());
        let latch_ref = latch.key();
        let op = |mut c: crate::conn::Commands| async move {
            let keys = (&*i.name, i.timeouts.as_str(), i.channel.as_str());
            scripts::pes_release(&mut c, keys, latch_ref, &id, publish, ttl)
                .await
                .map_err(|e| Error::from_redis(&format!("release of semaphore '{}' failed", i.name), e))
        };
        let released = if retry { i.shared.retrying_past_close(op).await } else { op(i.shared.conn()).await };
        match released {
            Ok(true) => {
                let lost = ticket.map_or_else(
                    || {
                        i.shared.metrics().released(None);
                        Forgotten::NotHeld
                    },
                    |t| t.freed(),
                );
                drop(latch); // the call's retries are over: deleted
                match lost {
                    Forgotten::Lost => Err(not_held(lost, &i.name, &format_id(&id))),
                    Forgotten::NotHeld => Ok(()),
                }
            }
            Ok(false) => {
                latch.leave();
                let forgotten = ticket.map_or(Forgotten::NotHeld, |t| t.not_held());
                Err(not_held(forgotten, &i.name, &format_id(&id)))
            }
            Err(e) => {
                // It may have run; a permit's release sets no lease.
                if let Some(t) = ticket {
                    t.failed_setting_no_lease();
                }
                latch.leave();
                Err(e)
            }
        }
    }

    /// Sets the lease of held permit `id`: `Some(d)` expires it `d` from now (and stops any
    /// watchdog renewal of it by this client); `None` hands it to this client's watchdog, which
    /// renews it until it is released. `NotHeld` when the id is not a held permit (unknown,
    /// released or expired); `InvalidArgument` (nothing sent) for a bad id or lease.
    pub async fn update_lease(&self, id: &str, lease: Option<Duration>) -> Result<()> {
        let id = parse_id(id)?;
        let i = &self.inner;
        let wd = i.shared.watchdog();
        let lease_ms = match lease {
            Some(l) => crate::options::positive_ms("lease", l)?,
            None => crate::options::positive_ms("watchdog lease", wd.lease())?,
        };
        i.shared.check_open()?;
        let timeouts = i.timeouts.as_str();
        let key = self.key(&id);
        // Right before the send: a watchdog lease it sets runs from then at the earliest.
        let ticket = wd.start_acquire(key.clone());
        let flags = i
            .shared
            .retrying(|mut c| async move {
                scripts::pes_renew(&mut c, lease_ms, &[(timeouts, id)]).await.map_err(|e| {
                    Error::from_redis(&format!("update_lease on semaphore '{}' failed", i.name), e)
                })
            })
            .await?;
        let hex: Arc<str> = format_id(&id).into();
        if flags.first() != Some(&true) {
            // Another permit's hold under the same key (its low 8 bytes) is not this one's.
            let forgotten = if self.tracked(&key, &id) { ticket.not_held() } else { Forgotten::NotHeld };
            return Err(not_held(forgotten, &i.name, &hex));
        }
        match lease {
            None => ticket.took_permit(&PERMIT, &i.owner, hex),
            Some(_) => ticket.leased_by_hand(),
        }
        Ok(())
    }

    /// The number of free permits, after expired permits were given back (0 when the semaphore
    /// does not exist).
    pub async fn available_permits(&self) -> Result<i64> {
        Ok(self.counts().await?.0)
    }

    /// The number of held permits (taken and not yet released or expired).
    pub async fn acquired_permits(&self) -> Result<i64> {
        Ok(self.counts().await?.1)
    }

    async fn counts(&self) -> Result<(i64, i64)> {
        let i = &self.inner;
        let publish = i.shared.publish_command();
        i.shared
            .retrying(|mut c| async move {
                let keys = (&*i.name, i.timeouts.as_str(), i.channel.as_str());
                scripts::pes_counts(&mut c, keys, publish)
                    .await
                    .map_err(|e| Error::from_redis(&format!("counting permits of '{}' failed", i.name), e))
            })
            .await
    }

    /// Whether this client's watchdog lost permit `id` (until it is released).
    pub fn is_lost(&self, id: &str) -> bool {
        parse_id(id).is_ok_and(|id| self.inner.shared.watchdog().is_lost(&self.key(&id)))
    }

    /// How long local time still proves permit `id` (see [`crate::Lock::valid_for`]): zero for
    /// an id this client does not hold, a lost permit, or one in doubt. No query.
    pub fn valid_for(&self, id: &str) -> Duration {
        parse_id(id).map_or(Duration::ZERO, |id| self.inner.shared.watchdog().valid_for(&self.key(&id)))
    }

    /// Calls `f` (on a library thread) whenever this client's watchdog loses a permit of this
    /// semaphore (the event's `permit_id` names it). Returns an id for
    /// [`PermitExpirableSemaphore::remove_lost_listener`].
    pub fn on_lost(&self, f: impl Fn(&LostEvent) + Send + Sync + 'static) -> ListenerId {
        let mut filter = LostFilter::name(self.name());
        filter.kind = Some(PERMIT.name);
        self.inner.shared.watchdog().add_listener(filter, Arc::new(f))
    }

    /// Removes a listener added with [`PermitExpirableSemaphore::on_lost`]; false when it was
    /// already removed.
    pub fn remove_lost_listener(&self, id: ListenerId) -> bool {
        self.inner.shared.watchdog().remove_listener(id)
    }
}

/// The error of a release or update Redis answered "not held" for.
fn not_held(forgotten: Forgotten, name: &str, id: &str) -> Error {
    release::not_held(
        forgotten,
        &format!("permit {id} of semaphore '{name}'"),
        "(unknown, released, or expired)",
    )
}

/// A permit taken from a [`PermitExpirableSemaphore`]: released when dropped (in the
/// background) unless [`kept`](Permit::keep).
#[must_use = "dropping the permit releases it at once"]
pub struct Permit {
    sem: Option<PermitExpirableSemaphore>,
    id: Arc<str>,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Permit").field("id", &self.id).finish()
    }
}

impl Permit {
    /// The permit id: 32 lowercase hex characters, as Redisson shows it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Keeps the permit and returns its id: the caller releases it with
    /// [`PermitExpirableSemaphore::release`] (any client, Java's included, may).
    pub fn keep(mut self) -> String {
        self.sem = None;
        self.id.to_string()
    }

    /// Releases the permit now (see [`PermitExpirableSemaphore::release`]).
    pub async fn release(mut self) -> Result<()> {
        match self.sem.take() {
            Some(sem) => sem.release(&self.id).await,
            None => Err(Error::new(ErrorKind::NotHeld, "the permit was already released")),
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let (Some(sem), Ok(id)) = (self.sem.take(), parse_id(&self.id)) {
            drop(sem.give_back(id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permit_ids_are_32_hex_characters() {
        let id = parse_id("00112233445566778899AABBCCDDEEFF").unwrap_or_default();
        assert_eq!(id[0], 0x00);
        assert_eq!(id[15], 0xff);
        assert_eq!(format_id(&id), "00112233445566778899aabbccddeeff");
        for bad in [
            "",
            "0011",
            "00112233445566778899aabbccddeefg",
            "é0112233445566778899aabbccddeef",
            "+0112233445566778899aabbccddeeff",
        ] {
            assert!(parse_id(bad).is_err(), "{bad:?}");
        }
    }
}
