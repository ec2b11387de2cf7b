//! The semaphore (Redisson `RSemaphore`): a count of permits in the STRING `name`; a missing key
//! means 0 permits, so somebody sets them first ([`Semaphore::try_set_permits`]).
//!
//! - Acquire takes n permits when that many are available, else waits on `redisson_sc:{name}`,
//!   whose messages are the new count: a waiter wakes up to that many local waiters, as Java
//!   does, so Java and rlock waiters wake each other.
//! - No owners, no leases, no renewal: the permits of a holder that dies are gone (the
//!   permit-expirable semaphore is the one whose permits come back).
//! - Cancel-safe: an acquire step that lands after its caller gave up gives its permits back.
//!   Request latches keep a lost reply from counting twice: an acquire step's latch tells its
//!   give-back what it took (a retry is a new step, with a new latch), and a release call's
//!   latch makes its retries give permits once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::conn::retry_transient;
use crate::error::{Error, Result};
use crate::finish::{Finish, Undo};
use crate::keys;
use crate::latches::RequestLatch;
use crate::millis::whole_ms;
use crate::pubsub::Wake;
use crate::scripts;
use crate::shared::{Acquiring, Attempt, Shared, Wakeup};

/// How long the give-back of an acquire whose answer was lost goes on trying, from the
/// acquire's send, when its first try gets no answer either; the acquire's latch lives this
/// much longer than the call's retries need it.
const GIVE_BACK_WINDOW: Duration = Duration::from_secs(60);

/// What a message on a semaphore channel means: the new count wakes up to that many waiters.
pub(crate) fn count_message(payload: &[u8]) -> Wake {
    std::str::from_utf8(payload).ok().and_then(|s| s.parse::<i64>().ok()).map_or(Wake::Nobody, |n| {
        if n > 0 {
            Wake::UpTo(n as usize)
        } else {
            Wake::Nobody
        }
    })
}

/// A handle on one semaphore. Cheap to clone.
#[derive(Clone)]
pub struct Semaphore {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    name: Arc<str>,
    channel: String,
    latch_prefix: String,
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore").field("name", &self.inner.name).finish()
    }
}

/// Reads a count a surface was given (permits): `InvalidArgument` naming `what` when it is below
/// `min` (1 for what is taken or given back, 0 for what a semaphore is set to).
pub fn count_arg(what: &str, n: i64, min: u64) -> Result<u64> {
    match u64::try_from(n) {
        Ok(v) if v >= min => Ok(v),
        _ => Err(Error::invalid(format!("{what} must be at least {min} (got {n})"))),
    }
}

/// Checks a permit count: at least 1.
fn permits_arg(permits: u64) -> Result<u64> {
    if permits == 0 {
        return Err(Error::invalid("permits must be at least 1"));
    }
    if permits > i64::MAX as u64 {
        return Err(Error::invalid(format!("permits must be at most {} (got {permits})", i64::MAX)));
    }
    Ok(permits)
}

impl Semaphore {
    pub(crate) fn new(shared: Arc<Shared>, name: &str) -> Semaphore {
        Semaphore {
            inner: Arc::new(Inner {
                shared,
                name: name.into(),
                channel: keys::semaphore_channel(name),
                latch_prefix: keys::suffixed(name, "rlock_permits_latch:"),
            }),
        }
    }

    /// The semaphore name (also its Redis key).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Sets the number of permits when the semaphore does not exist yet (with an expiry when
    /// `ttl` is given). True when set, false when it existed (nothing changed). `InvalidArgument`
    /// for a `ttl` under 1 ms.
    pub async fn try_set_permits(&self, permits: u64, ttl: Option<Duration>) -> Result<bool> {
        if permits > i64::MAX as u64 {
            return Err(Error::invalid(format!("permits must be at most {} (got {permits})", i64::MAX)));
        }
        let ttl_ms = ttl.map(|t| crate::options::positive_ms("ttl", t)).transpose()?.unwrap_or(0);
        let i = &self.inner;
        i.shared.check_open()?;
        let publish = i.shared.publish_command();
        i.shared
            .retrying(|mut c| async move {
                scripts::sem_try_set(&mut c, (&i.name, &i.channel), permits, publish, ttl_ms).await.map_err(
                    |e| Error::from_redis(&format!("try_set_permits of semaphore '{}' failed", i.name), e),
                )
            })
            .await
    }

    /// Waits until `permits` (at least 1) are available and takes them. Cancel-safe.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// # async fn demo() -> rlock::Result<()> {
    /// # let client = rlock::Client::connect_default(Default::default()).await?;
    /// let sem = client.semaphore("render")?;
    /// sem.try_set_permits(2, None).await?; // once: a missing key is 0 permits
    /// sem.acquire(1).await?;
    /// // ... at most two of these at a time ...
    /// sem.release(1).await?; // anyone may give permits back
    /// if sem.try_acquire(2, Duration::from_secs(1)).await? {
    ///     sem.release(2).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire(&self, permits: u64) -> Result<()> {
        // Without a deadline the wait ends only with the permits or an error.
        self.acquire_inner(permits, None).await.map(drop)
    }

    /// Tries to take `permits` for at most `wait` (zero tries once); false when the wait ran
    /// out (nothing taken).
    pub async fn try_acquire(&self, permits: u64, wait: Duration) -> Result<bool> {
        Ok(self.acquire_inner(permits, Some(wait)).await?.is_some())
    }

    async fn acquire_inner(&self, permits: u64, wait: Option<Duration>) -> Result<Option<()>> {
        let permits = permits_arg(permits)?;
        let deadline = crate::shared::deadline("wait", wait)?;
        let i = &self.inner;
        i.shared.check_open()?;
        i.shared
            .acquire_until(
                Acquiring { kind: "semaphore", name: &i.name, owner: "" },
                Wakeup::Channel(&i.channel, count_message),
                deadline,
                || async move {
                    Ok(if self.attempt(permits).await? { Attempt::Done(()) } else { Attempt::Busy(None) })
                },
            )
            .await
    }

    /// Takes `permits` like [`Semaphore::acquire`] (`wait` `None`) or [`Semaphore::try_acquire`]
    /// (`wait` `Some`; `None` returned when it ran out), as [`Permits`] that go back to the
    /// semaphore when dropped unkept. For surfaces that hand the result across a boundary where
    /// the receiver may be gone (an interrupted blocking call, a cancelled awaitable).
    pub async fn acquire_guard(&self, permits: u64, wait: Option<Duration>) -> Result<Option<Permits>> {
        let got = self.acquire_inner(permits, wait).await?;
        Ok(got.map(|()| Permits { sem: Some(self.clone()), permits }))
    }

    /// Gives `permits` back on the client's runtime when dropped unkept. It owns `latch`, the
    /// latch of the acquire step that took them: deleted once the give-back is done, or with
    /// the Undo when the caller keeps the permits (only a give-back reads it).
    fn give_back(&self, permits: u64, latch: Option<RequestLatch>) -> Undo {
        let back = self.clone();
        Undo::new(self.inner.shared.cleanups(), async move {
            if let Err(e) = back.release_now(permits).await {
                log::warn!("rlock: could not give back permits nobody took on '{}': {e}", back.name());
            }
            drop(latch);
        })
    }

    /// One acquire step run to the end ([`Shared::step`]): permits taken for a caller who gave up are given
    /// back (an [`Undo`]). Each step has a request latch of its own, set when it takes permits:
    /// when its answer is lost, the latch tells its give-back what was taken, before the error
    /// is returned or, when that fails too, in the background (see [`Self::undo_lost`]). No later
    /// step uses that latch, so none finds and adopts permits the give-back returns.
    async fn attempt(&self, permits: u64) -> Result<bool> {
        let sem = self.clone();
        let shared = &self.inner.shared;
        let latch = shared.request_latch(&self.inner.latch_prefix);
        let answer = shared
            .step(async move {
                let i = &sem.inner;
                let sent = Instant::now();
                let taken = scripts::sem_acquire(
                    &mut i.shared.conn(),
                    &i.name,
                    latch.key(),
                    permits,
                    i.shared.latch_ttl_ms() + whole_ms(GIVE_BACK_WINDOW),
                )
                .await
                .map_err(|e| Error::from_redis(&format!("acquire of semaphore '{}' failed", i.name), e));
                let taken = match taken {
                    Ok(taken) => taken,
                    Err(e) => {
                        if e.outcome_unknown() {
                            // Only the answer may be lost: give back what the step may have taken.
                            sem.undo_lost(permits, latch, sent + GIVE_BACK_WINDOW).await;
                        } else {
                            latch.leave();
                        }
                        return Err(e);
                    }
                };
                if !taken {
                    latch.leave();
                    return Ok(None);
                }
                Ok(Some(sem.give_back(permits, Some(latch))))
            })
            .await;
        // No await from here on: the permits are handed to the caller in the same poll.
        Ok(match answer? {
            Some(undo) => {
                undo.keep(); // its latch goes with it: only a give-back reads it
                true
            }
            None => false,
        })
    }

    /// Gives back the `permits` the acquire step of `latch` took when its answer was lost (its
    /// latch exists). One try, within the command timeout, so that the acquire's error is not
    /// held up; when it gets no answer (the network is still down, the connection is being
    /// made again), a task on the client's runtime tries again every `retry_delay` until one
    /// is answered or `until` passes (the latch lives [`GIVE_BACK_WINDOW`] longer than retries
    /// need it, so a give-back tried by then can still tell what was taken). A plain semaphore's
    /// permits have no lease: given back by nobody, they would be gone for good.
    /// The latch is left to its TTL afterwards: the unanswered acquire may still run.
    async fn undo_lost(&self, permits: u64, latch: RequestLatch, until: Instant) {
        let first = self.try_undo(permits, latch.key());
        let answered = match self.inner.shared.options().command_timeout {
            Some(limit) => tokio::time::timeout(limit, first).await.ok(),
            None => Some(first.await),
        };
        if matches!(answered, Some(Ok(()))) {
            latch.leave();
            return;
        }
        let sem = self.clone();
        self.inner.shared.cleanups().spawn(async move {
            let delay = sem.inner.shared.options().retry_delay;
            let tries = retry_transient(u32::MAX, delay, None, || sem.try_undo(permits, latch.key()));
            let outcome = tokio::time::timeout_at(until.into(), tries).await;
            latch.leave();
            let failed = match outcome {
                Ok(Ok(())) => return,
                Ok(Err(e)) => e.to_string(),
                Err(_) => "no answer".to_string(),
            };
            log::warn!(
                "rlock: could not give back permits an unanswered acquire of '{}' may have taken \
                 within {} s ({failed}); they stay taken",
                sem.name(),
                GIVE_BACK_WINDOW.as_secs()
            );
        });
    }

    /// One try of the give-back of `latch`'s permits (`sem_undo`): `Ok` once the server
    /// answered, whether or not anything was taken.
    async fn try_undo(&self, permits: u64, latch: &str) -> Result<()> {
        let i = &self.inner;
        let publish = i.shared.publish_command();
        scripts::sem_undo(&mut i.shared.conn(), (&i.name, &i.channel, latch), permits, publish)
            .await
            .map(drop)
            .map_err(|e| Error::from_redis(&format!("give-back to semaphore '{}' failed", i.name), e))
    }

    /// Gives back `permits` (at least 1) and wakes up to the new count of waiters. Runs to the
    /// end even when the returned future is dropped; retried after connection errors without
    /// adding the permits twice. Returns the new count.
    pub async fn release(&self, permits: u64) -> Result<i64> {
        let permits = permits_arg(permits)?;
        self.inner.shared.check_open()?;
        let sem = self.clone();
        let shared = &self.inner.shared;
        let r = Finish::new(shared.cleanups(), async move { sem.release_now(permits).await }).await;
        if r.is_ok() {
            shared.metrics().released(None);
        }
        shared.counted(r)
    }

    async fn release_now(&self, permits: u64) -> Result<i64> {
        let i = &self.inner;
        let latch = i.shared.request_latch(&i.latch_prefix);
        let (publish, ttl) = (i.shared.publish_command(), i.shared.latch_ttl_ms());
        let latch_ref = latch.key();
        let count = i
            .shared
            .retrying_past_close(|mut c| async move {
                scripts::sem_release(&mut c, (&i.name, &i.channel, latch_ref), permits, publish, ttl)
                    .await
                    .map_err(|e| Error::from_redis(&format!("release of semaphore '{}' failed", i.name), e))
            })
            .await;
        if count.is_err() {
            latch.leave();
        }
        count
    }

    /// The number of available permits (`GET`; 0 when the semaphore does not exist).
    pub async fn available_permits(&self) -> Result<i64> {
        let name = &self.inner.name;
        self.inner
            .shared
            .retrying(|mut c| async move {
                let v: Option<i64> = redis::AsyncCommands::get(&mut c, &**name)
                    .await
                    .map_err(|e| Error::from_redis("GET failed", e))?;
                Ok(v.unwrap_or(0))
            })
            .await
    }

    /// Adds `delta` permits (negative: removes them, possibly below 0) and wakes waiters. Not
    /// retried (a retry could add twice). Returns the new count.
    pub async fn add_permits(&self, delta: i64) -> Result<i64> {
        let i = &self.inner;
        i.shared.check_open()?;
        scripts::sem_add(&mut i.shared.conn(), (&i.name, &i.channel), delta, i.shared.publish_command())
            .await
            .map_err(|e| Error::from_redis(&format!("add_permits of semaphore '{}' failed", i.name), e))
    }

    /// Takes every available permit; returns how many there were (0 when it does not exist).
    pub async fn drain_permits(&self) -> Result<i64> {
        let i = &self.inner;
        i.shared.check_open()?;
        scripts::sem_drain(&mut i.shared.conn(), &i.name)
            .await
            .map_err(|e| Error::from_redis(&format!("drain_permits of semaphore '{}' failed", i.name), e))
    }
}

/// Permits taken from a semaphore ([`Semaphore::acquire_guard`]): given back when dropped (in
/// the background) unless [`kept`](Permits::keep).
#[must_use = "dropping the permits gives them back at once"]
pub struct Permits {
    sem: Option<Semaphore>,
    permits: u64,
}

impl Permits {
    /// How many permits this is.
    pub fn count(&self) -> u64 {
        self.permits
    }

    /// Keeps the permits: the caller gives them back with [`Semaphore::release`].
    pub fn keep(mut self) {
        self.sem = None;
    }

    /// Gives the permits back now (see [`Semaphore::release`]); the new count.
    pub async fn release(mut self) -> Result<i64> {
        match self.sem.take() {
            Some(sem) => sem.release(self.permits).await,
            None => Err(Error::new(crate::error::ErrorKind::NotHeld, "the permits were already given back")),
        }
    }
}

impl Drop for Permits {
    fn drop(&mut self) {
        if let Some(sem) = self.sem.take() {
            drop(sem.give_back(self.permits, None));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_messages_wake_up_to_the_count() {
        assert_eq!(count_message(b"3"), Wake::UpTo(3));
        assert_eq!(count_message(b"0"), Wake::Nobody);
        assert_eq!(count_message(b"-2"), Wake::Nobody);
        assert_eq!(count_message(b"x"), Wake::Nobody);
    }

    #[test]
    fn counts_from_surfaces() {
        assert_eq!(count_arg("permits", 3, 1).ok(), Some(3));
        assert!(count_arg("permits", 0, 1).is_err());
        assert_eq!(count_arg("permits", 0, 0).ok(), Some(0));
        assert!(count_arg("permits", -1, 0).is_err());
    }

    #[test]
    fn permits_must_be_positive() {
        assert!(permits_arg(0).is_err());
        assert!(permits_arg(u64::MAX).is_err());
        assert_eq!(permits_arg(5).ok(), Some(5));
    }
}
