//! The count-down latch (Redisson `RCountDownLatch`): a count in the STRING `name`; the latch
//! is open when the count is 0, which is also what a missing key means.
//!
//! - [`CountDownLatch::try_set_count`] sets the count only when the key is missing and
//!   publishes `1` (Redisson's new-count message); [`CountDownLatch::count_down`] decrements it,
//!   deletes the key at zero or below and publishes `0` when it reaches zero.
//! - Waiters sleep on `redisson_countdownlatch__channel__{name}` (braces around the whole name,
//!   unlike the other primitives' channels). `0` wakes every waiter, Java's and rlock's. rlock
//!   waiters also look at the count again on `1` (a new count or a delete), which Java waiters
//!   ignore: Redisson wakes them only on `0`, so a latch deleted under Java waiters leaves them
//!   waiting (count it down to zero instead).
//! - A waiter subscribes, then reads the count again before it sleeps, so a zero message sent
//!   meanwhile is never missed; while subscribed it also re-reads the count every second.
//! - No owners and no leases: anyone may count down, and the key never expires.
//! - On a Redis Cluster the name must have no `{` or `}` (see [`keys::latch_shares_one_tag`]).

use std::sync::Arc;
use std::time::Duration;

use crate::conn::Commands;
use crate::error::{Error, Result};
use crate::finish::Finish;
use crate::keys;
use crate::pubsub::Wake;
use crate::scripts;
use crate::shared::{Attempt, Shared};

/// What a message on a latch channel means to rlock waiters: `0` (zero reached) and `1` (a new
/// count, or a delete) both make every waiter read the count again.
fn latch_message(payload: &[u8]) -> Wake {
    match payload {
        b"0" | b"1" => Wake::All,
        _ => Wake::Nobody,
    }
}

/// A handle on one count-down latch. Cheap to clone.
#[derive(Clone)]
pub struct CountDownLatch {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    name: Arc<str>,
    channel: String,
    latch_prefix: String,
}

impl std::fmt::Debug for CountDownLatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountDownLatch").field("name", &self.inner.name).finish()
    }
}

impl CountDownLatch {
    pub(crate) fn new(shared: Arc<Shared>, name: &str) -> CountDownLatch {
        CountDownLatch {
            inner: Arc::new(Inner {
                shared,
                name: name.into(),
                channel: keys::latch_channel(name),
                latch_prefix: keys::suffixed(name, "rlock_countdown_latch:"),
            }),
        }
    }

    /// The latch name (also its Redis key).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Sets the count to `count` when the latch does not exist (is open); true when set, false
    /// when it existed (nothing changed). A count of 0 stores `0`: the latch is open, but the
    /// key exists until it is counted down or deleted. Retried after connection errors without
    /// reporting a set of its own as "existed". Fails with `InvalidArgument` for a count above
    /// `i64::MAX` (nothing sent), `Redis` when `name` holds another kind of key,
    /// `Connection`/`Timeout` when Redis cannot be reached, `Closed` after [`close`].
    ///
    /// [`close`]: crate::Client::close
    pub async fn try_set_count(&self, count: u64) -> Result<bool> {
        if count > i64::MAX as u64 {
            return Err(Error::invalid(format!("count must be at most {} (got {count})", i64::MAX)));
        }
        let i = &self.inner;
        i.shared.check_open()?;
        let latch = i.shared.request_latch(&i.latch_prefix);
        let (publish, ttl) = (i.shared.publish_command(), i.shared.latch_ttl_ms());
        let keys = (&*i.name, i.channel.as_str(), latch.key());
        let set = i
            .shared
            .retrying(|mut c| async move {
                scripts::latch_try_set(&mut c, keys, count, publish, ttl).await.map_err(|e| {
                    Error::from_redis(&format!("try_set_count of count-down latch '{}' failed", i.name), e)
                })
            })
            .await;
        // Not set: nothing written; failed: an earlier try may still run. Set: deleted.
        if set.as_ref().map_or(true, |set| !set) {
            latch.leave();
        }
        set
    }

    /// Decrements the count; at zero the latch opens (the key is deleted and every waiter,
    /// Java's included, is woken). Counting down an open latch changes nothing. Runs to the end
    /// even when the returned future is dropped, and is retried after connection errors without
    /// counting down twice. Fails with `Redis` when `name` holds a key that is not a count,
    /// `Connection`/`Timeout` when Redis cannot be reached, `Closed` after [`close`].
    ///
    /// [`close`]: crate::Client::close
    pub async fn count_down(&self) -> Result<()> {
        let i = &self.inner;
        i.shared.check_open()?;
        let this = self.clone();
        Finish::new(i.shared.cleanups(), async move { this.count_down_now().await }).await
    }

    async fn count_down_now(&self) -> Result<()> {
        let i = &self.inner;
        let latch = i.shared.request_latch(&i.latch_prefix);
        let (publish, ttl) = (i.shared.publish_command(), i.shared.latch_ttl_ms());
        let keys = (&*i.name, i.channel.as_str(), latch.key());
        let counted = i
            .shared
            .retrying(|mut c| async move {
                scripts::latch_count_down(&mut c, keys, publish, ttl).await.map_err(|e| {
                    Error::from_redis(&format!("count_down of count-down latch '{}' failed", i.name), e)
                })
            })
            .await;
        if counted.is_err() {
            latch.leave();
        }
        counted.map(drop)
    }

    /// The current count (`GET`): 0 when the latch is open (the key is missing, or holds 0 or
    /// less). Fails with `Redis` when `name` holds something that is not a count,
    /// `Connection`/`Timeout` when Redis cannot be reached.
    pub async fn count(&self) -> Result<u64> {
        self.inner.shared.retrying(|c| self.read(c)).await
    }

    /// One `GET` of the count, not retried.
    async fn read(&self, mut c: Commands) -> Result<u64> {
        let name = &*self.inner.name;
        let v: Option<i64> = redis::AsyncCommands::get(&mut c, name)
            .await
            .map_err(|e| Error::from_redis(&format!("count of count-down latch '{name}' failed"), e))?;
        Ok(v.map_or(0, |n| u64::try_from(n).unwrap_or(0)))
    }

    /// Waits until the count is 0: true when it is (at once when the latch is open already),
    /// false when `wait` ran out first (`None`: no limit; zero: look once). Cancel-safe:
    /// dropping the future leaves no subscription behind. Fails with `InvalidArgument` for a
    /// `wait` over 100 years, `Redis` when `name` holds something that is not a count,
    /// `Connection`/`Timeout` when Redis stays unreachable, `Closed` when the client closes.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// # async fn demo() -> rlock::Result<()> {
    /// # let client = rlock::Client::connect_default(Default::default()).await?;
    /// let done = client.count_down_latch("batch:42")?;
    /// done.try_set_count(2).await?; // two workers to wait for
    /// // Each worker, when finished: done.count_down().await?;
    /// if done.wait(Some(Duration::from_secs(60))).await? {
    ///     // both counted down
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn wait(&self, wait: Option<Duration>) -> Result<bool> {
        let deadline = crate::shared::deadline("wait", wait)?;
        let i = &self.inner;
        i.shared.check_open()?;
        let open = i
            .shared
            .wait_until(&i.channel, latch_message, deadline, || async {
                let count = self.read(i.shared.conn()).await?;
                Ok(if count == 0 { Attempt::Done(()) } else { Attempt::Busy(None) })
            })
            .await?;
        Ok(open.is_some())
    }

    /// Deletes the latch whatever its count (it reads as open afterwards) and publishes
    /// Redisson's new-count message: rlock waiters wake and return true, Java waiters keep
    /// waiting (Redisson wakes them only when a count-down reaches zero). True when it existed.
    /// A retry after a lost reply reports false. Fails as [`CountDownLatch::count`] does.
    pub async fn delete(&self) -> Result<bool> {
        let i = &self.inner;
        i.shared.check_open()?;
        let publish = i.shared.publish_command();
        i.shared
            .retrying(|mut c| async move {
                scripts::latch_delete(&mut c, (&i.name, &i.channel), publish).await.map_err(|e| {
                    Error::from_redis(&format!("delete of count-down latch '{}' failed", i.name), e)
                })
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_new_count_messages_wake_every_waiter() {
        assert_eq!(latch_message(b"0"), Wake::All);
        assert_eq!(latch_message(b"1"), Wake::All);
        assert_eq!(latch_message(b"2"), Wake::Nobody);
        assert_eq!(latch_message(b""), Wake::Nobody);
    }
}
