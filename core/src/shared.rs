//! The one interface primitives use to reach a client's state: its connections, the watchdog,
//! pub/sub waiting, replica sync, latches and the retry policy. Primitives get an
//! `Arc<Shared>` and call its methods; its fields stay private.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::runtime::Handle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::conn::{self, is_transient, retry_transient, Commands, PushHandler, Topology};
use crate::error::{Error, Result};
use crate::finish::{Cleanups, Finish};
use crate::latches::{Latches, RequestLatch};
use crate::metrics::Metrics;
use crate::options::ClientOptions;
use crate::owner::Owner;
use crate::pubsub::{self, Meaning, Membership, SubState};
use crate::records;
use crate::replicas::{require_waits, Replicas};
use crate::watchdog::{self, HoldKey, Watchdog};

/// A client's shared state. Dropping the last reference stops its background tasks.
pub(crate) struct Shared {
    id: Uuid,
    options: ClientOptions,
    commands: Commands,
    pubsub: Arc<pubsub::Registry>,
    watchdog: Arc<Watchdog>,
    cleanups: Cleanups,
    closed: CancellationToken,
    latch_ttl_ms: u64,
    latches: Latches,
    replicas: Option<Arc<Replicas>>,
    topology: Topology,
    sharded: bool,
    metrics: Arc<Metrics>,
    /// The server's `maxmemory-policy` when it may evict a held lock's key (anything but
    /// `noeviction`), as read at connect.
    eviction_policy: Option<String>,
    /// RedLock member tries a round stopped waiting for, still under way in the background,
    /// by the hold each would take (see `red_lock::strays`). Per client, not per RedLock
    /// handle: users make a new handle for every acquire.
    strays: Mutex<HashMap<HoldKey, Strays>>,
}

/// The stray tries of one hold under way on a client (see `red_lock::strays`): how many, and
/// since when there has been one without a break.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Strays {
    /// Tries under way.
    pub(crate) count: usize,
    /// Since when the member has been asked and not answered: the first try's start, moved on
    /// to the answer when one comes (a give-back is then all that is left).
    pub(crate) since: Instant,
    /// Whether the owner held nothing on the member when the rounds of these tries began.
    pub(crate) alone: bool,
}

/// An acquire, as the metrics and traces name it.
pub(crate) struct Acquiring<'a> {
    /// A lock's [`kind`](crate::Lock::kind) (`"lock"`, `"fenced"`, ...), `"semaphore"` or
    /// `"permit"`.
    pub(crate) kind: &'static str,
    /// The primitive's name.
    pub(crate) name: &'a str,
    /// The owner as stored in Redis (empty where a primitive has none).
    pub(crate) owner: &'a str,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// One try of a waiting step (an acquire, a permit take).
pub(crate) enum Attempt<T> {
    /// It succeeded with this result.
    Done(T),
    /// Somebody else has it: try again after a message on the channel, or after this long at
    /// most (the holder's remaining lease; `None` when nothing bounds the wait).
    Busy(Option<Duration>),
}

impl Shared {
    /// Connects to `url` and starts the background tasks (watchdog, pub/sub, latches, replica
    /// sync, Sentinel monitor) on the current tokio runtime.
    pub(crate) async fn connect(url: &str, options: ClientOptions) -> Result<Arc<Shared>> {
        options.validate()?;
        let handle = Handle::try_current()
            .map_err(|_| Error::invalid("Client::connect must run inside a tokio runtime"))?;
        let target = crate::url::parse(url, &options)?;
        let label = target.label();
        let metrics = Arc::new(Metrics::new(options.metrics));
        let (registry, queue) = pubsub::Registry::new();
        let weak = Arc::downgrade(&registry);
        let on_push: PushHandler = Arc::new(move |push| {
            if let Some(r) = weak.upgrade() {
                r.on_push(push);
            }
        });
        let conns = conn::connect(target, &options, on_push).await?;
        let eviction_policy = conns.maxmemory_policy.filter(|p| p != "noeviction");
        if let Some(policy) = &eviction_policy {
            log::warn!(
                "rlock: the server {label} may evict keys under memory pressure (maxmemory-policy {policy}): \
                 a held lock's key can be evicted like any other, and another owner then takes the \
                 lock; use maxmemory-policy noeviction for the locks' server"
            );
        }
        let commands = conns.commands;
        if conns.sync.is_some() {
            require_waits(commands.clone(), options.replica_sync_aof).await?;
        }
        let wd = Watchdog::new(
            options.watchdog_timeout,
            options.max_hold,
            options.lease_doubt_margin,
            metrics.clone(),
        );
        let closed = CancellationToken::new();
        let id = Uuid::new_v4();
        if options.holder_record {
            handle.spawn(records::run(
                wd.clone(),
                commands.clone(),
                id,
                options.app_name.clone(),
                closed.clone(),
            ));
        }

        let stop = closed.clone();
        let reg = Arc::downgrade(&registry);
        let m = metrics.clone();
        let answer_within = options.subscription_timeout;
        match conns.subscriber {
            Some(subscriber) => {
                handle.spawn(async move {
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        _ = pubsub::run(queue, subscriber, reg, m, answer_within) => {}
                    }
                });
            }
            None => registry.set_unavailable(),
        }
        if let Some(monitor) = conns.monitor {
            handle.spawn(monitor.run(closed.clone()));
        }
        handle.spawn(watchdog::renew::run(
            wd.clone(),
            commands.clone(),
            options.renewal_batch_size,
            options.retry_delay,
            closed.clone(),
        ));
        let replicas = match conns.sync {
            Some(sync) => Some(
                Replicas::start(
                    &handle,
                    commands.clone(),
                    sync,
                    options.replica_sync_timeout,
                    options.replica_sync_aof,
                    conns.master_changes,
                    closed.clone(),
                )
                .await,
            ),
            None => None,
        };
        let latches = Latches::start(&handle, commands.clone(), commands.spans_tags().await, closed.clone());
        let per_try = options.command_timeout.unwrap_or(Duration::from_secs(10)) + options.retry_delay;
        let latch_ttl = per_try.saturating_mul(options.retry_attempts + 1).max(Duration::from_secs(1));
        Ok(Arc::new(Shared {
            id,
            options,
            commands,
            pubsub: registry,
            watchdog: wd,
            cleanups: Cleanups::new(handle),
            closed,
            latch_ttl_ms: crate::millis::whole_ms(latch_ttl),
            latches,
            replicas,
            topology: conns.topology,
            sharded: conns.sharded,
            metrics,
            eviction_policy,
            strays: Mutex::new(HashMap::new()),
        }))
    }

    /// The client's random UUID.
    pub(crate) fn id(&self) -> Uuid {
        self.id
    }

    /// The server's `maxmemory-policy` when it may evict a held lock's key (see `Stats`).
    pub(crate) fn eviction_policy(&self) -> Option<&str> {
        self.eviction_policy.as_deref()
    }

    /// The client's options.
    pub(crate) fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// What the URL named.
    pub(crate) fn topology(&self) -> Topology {
        self.topology
    }

    /// Whether waiters use sharded pub/sub.
    pub(crate) fn sharded(&self) -> bool {
        self.sharded
    }

    /// Whether acquires wait for a replica.
    pub(crate) fn replica_sync(&self) -> bool {
        self.replicas.is_some()
    }

    /// Where abandoned calls finish (and their results are given back).
    pub(crate) fn cleanups(&self) -> &Cleanups {
        &self.cleanups
    }

    /// Runs a step that changes Redis to the end, also when the caller drops the returned future
    /// (see [`Finish`]); `Closed` when the client closes first (the step still finishes, and
    /// what it took is given back).
    pub(crate) async fn step<T: Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        tokio::select! {
            a = Finish::new(&self.cleanups, fut) => a,
            _ = self.closed() => Err(Error::closed()),
        }
    }

    /// A connection for commands (cheap: a shared multiplexed connection).
    pub(crate) fn conn(&self) -> Commands {
        self.commands.clone()
    }

    /// The local link of this client for the thread that polls the returned future (see
    /// `conn::local`); `None` when the client cannot have one.
    pub(crate) fn local_link(
        &self,
        watch: conn::local::Watch,
    ) -> Option<impl Future<Output = ()> + Send + 'static> {
        let route = self.commands.local_route()?;
        Some(conn::local::run(route, self.closed.clone(), watch))
    }

    /// The slot by which replica sync finds `key`'s master (its hash slot on a cluster, else 0).
    pub(crate) fn master_slot(&self, key: &str) -> u16 {
        self.commands.master_slot(key)
    }

    /// `PUBLISH`, or `SPUBLISH` where waiters use sharded pub/sub.
    pub(crate) fn publish_command(&self) -> &'static str {
        if self.sharded {
            "SPUBLISH"
        } else {
            "PUBLISH"
        }
    }

    /// The watchdog.
    pub(crate) fn watchdog(&self) -> &Arc<Watchdog> {
        &self.watchdog
    }

    /// The client's counters and histograms.
    pub(crate) fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// RedLock member tries still under way in the background, by the hold each would take.
    pub(crate) fn strays(&self) -> std::sync::MutexGuard<'_, HashMap<HoldKey, Strays>> {
        // Every critical section leaves the map consistent, so a poisoned mutex is still usable.
        self.strays.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts an error a release (or another call a user made) returns, and passes `r` on.
    pub(crate) fn counted<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            self.metrics.error(e.kind());
        }
        r
    }

    /// Pub/sub waiting.
    pub(crate) fn pubsub(&self) -> &Arc<pubsub::Registry> {
        &self.pubsub
    }

    /// A new request latch for one call of this client, under `prefix`; deleted in the
    /// background when dropped.
    pub(crate) fn request_latch(&self, prefix: &str) -> RequestLatch {
        self.latches.request(prefix, self.id())
    }

    /// How long a release latch outlives its call, in ms.
    pub(crate) fn latch_ttl_ms(&self) -> u64 {
        self.latch_ttl_ms
    }

    /// Replica sync for a write in batch group `group`, when it is on and that master has
    /// replicas.
    pub(crate) fn replicas_for(&self, group: u16) -> Option<&Replicas> {
        self.replicas.as_deref().filter(|r| r.wanted(group))
    }

    /// Fails with `Closed` once the client is closed.
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.is_cancelled() {
            Err(Error::closed())
        } else {
            Ok(())
        }
    }

    /// Whether the client is closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Resolves when the client closes.
    pub(crate) async fn closed(&self) {
        self.closed.cancelled().await
    }

    /// Closes: stops renewals and pub/sub and fails pending and later calls with `Closed`.
    pub(crate) fn close(&self) {
        self.closed.cancel();
        self.watchdog.clear();
        self.pubsub.wake_all(false);
    }

    /// Checks that `owner` was made by this client.
    pub(crate) fn check_owner(&self, owner: &Owner) -> Result<()> {
        if owner.client_id() != self.id {
            return Err(Error::invalid("this owner belongs to another client"));
        }
        Ok(())
    }

    /// Runs `op` again after connection errors and timeouts, up to `retry_attempts` times.
    pub(crate) async fn retrying<T, F, Fut>(&self, mut op: F) -> Result<T>
    where
        F: FnMut(Commands) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let o = &self.options;
        retry_transient(o.retry_attempts, o.retry_delay, Some(&self.closed), || op(self.commands.clone()))
            .await
    }

    /// Like [`Self::retrying`], but going on after the client closes: for steps that clean up
    /// after a caller who stopped waiting (a fair-lock waiter leaving the queue), which a close
    /// must not skip.
    pub(crate) async fn retrying_past_close<T, F, Fut>(&self, mut op: F) -> Result<T>
    where
        F: FnMut(Commands) -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let o = &self.options;
        retry_transient(o.retry_attempts, o.retry_delay, None, || op(self.commands.clone())).await
    }

    /// [`Self::wait_until`] for an acquire: counted in the metrics (wait time, contention,
    /// timeouts, errors) and traced as an `rlock.acquire` span with the name, kind and owner.
    pub(crate) async fn acquire_until<T, F, Fut>(
        &self,
        what: Acquiring<'_>,
        wakeup: Wakeup<'_>,
        deadline: Option<Instant>,
        attempt: F,
    ) -> Result<Option<T>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Attempt<T>>>,
    {
        use tracing::Instrument as _;
        let span =
            tracing::debug_span!("rlock.acquire", name = what.name, kind = what.kind, owner = what.owner);
        let start = Instant::now();
        let mut contended = false;
        let got = self.wait_loop(wakeup, deadline, &mut contended, attempt).instrument(span.clone()).await;
        let waited = start.elapsed();
        let _entered = span.enter();
        match &got {
            Ok(Some(_)) => {
                self.metrics.acquired(waited, contended);
                tracing::debug!(waited_us = waited.as_micros() as u64, contended, "rlock: acquired");
            }
            Ok(None) => {
                self.metrics.timed_out();
                tracing::debug!(
                    waited_us = waited.as_micros() as u64,
                    "rlock: not acquired: the wait ran out"
                );
            }
            Err(e) => {
                self.metrics.error(e.kind());
                tracing::debug!(error = %e, "rlock: acquire failed");
            }
        }
        got
    }

    /// The wait loop of every waiting primitive: runs `attempt` until it is done, sleeping
    /// between tries on `channel` (whose messages mean what `meaning` says). It subscribes
    /// before the second try, so a message sent after a try's answer is never missed; every
    /// sleep is bounded by what the try reported (the holder's lease), so a lost message costs
    /// at most that. Transient errors are retried `retry_attempts` times. `None` when
    /// `deadline` passed first; `Closed` when the client closes.
    pub(crate) async fn wait_until<T, F, Fut>(
        &self,
        channel: &str,
        meaning: Meaning,
        deadline: Option<Instant>,
        attempt: F,
    ) -> Result<Option<T>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Attempt<T>>>,
    {
        self.wait_loop(Wakeup::Channel(channel, meaning), deadline, &mut false, attempt).await
    }

    /// [`Self::wait_until`], setting `contended` once an attempt found the primitive busy.
    async fn wait_loop<T, F, Fut>(
        &self,
        wakeup: Wakeup<'_>,
        deadline: Option<Instant>,
        contended: &mut bool,
        mut attempt: F,
    ) -> Result<Option<T>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Attempt<T>>>,
    {
        let options = &self.options;
        let mut membership: Option<Membership> = None;
        let mut failures = 0u32;
        let mut polls = PollBackoff::new(options.poll_interval);
        loop {
            let joined = membership.as_ref().map(|m| m.channel.clone());
            // Registered before the attempt, so a message sent after the attempt's answer is
            // never missed.
            let notified = joined.as_ref().map(|c| c.notify.notified());
            tokio::pin!(notified);
            if let Some(n) = notified.as_mut().as_pin_mut() {
                n.enable();
            }
            let bound = match attempt().await {
                Ok(Attempt::Done(v)) => return Ok(Some(v)),
                Ok(Attempt::Busy(bound)) => {
                    failures = 0;
                    *contended = true;
                    bound
                }
                Err(e) if is_transient(&e) && failures < options.retry_attempts => {
                    failures += 1;
                    let pause =
                        remaining(deadline).map_or(options.retry_delay, |r| r.min(options.retry_delay));
                    if pause.is_zero() {
                        return Ok(None);
                    }
                    // A subscribed waiter also ends the pause on a message (a release on the
                    // master that took over, while this one was still failing).
                    self.sleep_or_wake(notified.as_mut(), pause).await?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let left = remaining(deadline);
            if left == Some(Duration::ZERO) {
                return Ok(None);
            }
            let mut sleep = bound.unwrap_or(Duration::from_secs(1));
            match (&membership, &wakeup) {
                (None, Wakeup::Channel(channel, meaning)) => {
                    // Subscribe, then try again before waiting: a message that raced the
                    // subscription is caught by that retry.
                    let m = self.pubsub.join(channel, *meaning);
                    let mut state = m.channel.state();
                    let limit =
                        left.map_or(options.subscription_timeout, |l| l.min(options.subscription_timeout));
                    tokio::select! {
                        _ = self.closed.cancelled() => return Err(Error::closed()),
                        _ = tokio::time::timeout(limit, state.wait_for(|s| *s != SubState::Pending)) => {}
                    }
                    membership = Some(m);
                    continue;
                }
                (Some(m), _) => {
                    if *m.channel.state().borrow() != SubState::Active {
                        self.pubsub.retry_subscribe(m);
                        sleep = sleep.min(polls.pause());
                    }
                }
                // No message comes: the next try is after the back-off's pause, or the holder's
                // lease when that ends first.
                (None, Wakeup::Poll) => sleep = sleep.min(polls.pause()),
            }
            if let Some(l) = left {
                sleep = sleep.min(l);
            }
            self.sleep_or_wake(notified.as_mut(), sleep).await?;
        }
    }

    /// Waits `d`, or less when a message arrives (`notified`, when subscribed); `Closed` when
    /// the client closes meanwhile.
    async fn sleep_or_wake<N: Future<Output = ()>>(
        &self,
        notified: Pin<&mut Option<N>>,
        d: Duration,
    ) -> Result<()> {
        let message = async {
            match notified.as_pin_mut() {
                Some(n) => n.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.closed.cancelled() => Err(Error::closed()),
            _ = message => {
                self.metrics.woken();
                Ok(())
            }
            _ = tokio::time::sleep(d) => Ok(()),
        }
    }
}

/// How a waiter hears that what it waits for may have become free.
#[derive(Clone, Copy)]
pub(crate) enum Wakeup<'a> {
    /// A message on the channel, whose payload the [`Meaning`] reads.
    Channel(&'a str, Meaning),
    /// Nothing: its releases publish no message (a spin lock), so it polls with [`PollBackoff`].
    Poll,
}

/// The deadline of a wait of at most `wait` from now (`None`: no deadline). `InvalidArgument`
/// (named `what`) when the wait is over the longest duration options accept.
pub(crate) fn deadline(what: &str, wait: Option<Duration>) -> Result<Option<Instant>> {
    wait.map(|w| crate::options::check_duration(what, w).map(|()| Instant::now() + w)).transpose()
}

/// Time left until `deadline` (zero when passed); `None` without a deadline.
pub(crate) fn remaining(deadline: Option<Instant>) -> Option<Duration> {
    deadline.map(|d| d.saturating_duration_since(Instant::now()))
}

/// The pauses of a waiter that no message can wake (no pub/sub on the endpoint, or its
/// SUBSCRIBE failed): exponential back-off from a sixteenth of `poll_interval` (at least 1
/// ms) up to `poll_interval`, each pause drawn at random from its upper half, so waiters that
/// started together spread out. A waiter so tries again at most `poll_interval` after a
/// release: the hand-off bound without pub/sub is `poll_interval` plus a round trip.
pub(crate) struct PollBackoff {
    next: Duration,
    max: Duration,
}

impl PollBackoff {
    /// Back-off up to `poll_interval`.
    pub(crate) fn new(poll_interval: Duration) -> Self {
        let max = poll_interval.max(Duration::from_millis(1));
        PollBackoff { next: (max / 16).max(Duration::from_millis(1)).min(max), max }
    }

    /// The next pause: between half of the current step and the step, which then doubles up
    /// to the maximum.
    pub(crate) fn pause(&mut self) -> Duration {
        let step = self.next;
        self.next = (step * 2).min(self.max);
        step / 2 + jitter(step - step / 2)
    }
}

/// A random pause in `[0, max)`: between two rounds that split the servers with another
/// owner, so that the two do not meet again in step.
pub(crate) fn jitter(max: Duration) -> Duration {
    let r = Uuid::new_v4().as_u128() as u64;
    Duration::from_micros(r % (max.as_micros() as u64).max(1))
}

/// Sleeps `pause`, or until `deadline` when that comes first. False when the deadline has
/// passed: the caller answers "not acquired" then, not before (returning at once when the
/// pause would outlast the wait reported a wait that ran out early).
pub(crate) async fn pause_before_retry(pause: Duration, deadline: Option<Instant>) -> bool {
    match remaining(deadline) {
        Some(left) if left <= pause => {
            tokio::time::sleep(left).await;
            false
        }
        _ => {
            tokio::time::sleep(pause).await;
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_back_off_to_the_poll_interval_with_jitter() {
        let mut b = PollBackoff::new(Duration::from_millis(100));
        let pauses: Vec<Duration> = (0..8).map(|_| b.pause()).collect();
        // Steps 6.25, 12.5, 25, 50, 100, 100...: each pause in its step's upper half.
        let steps = [6_250u64, 12_500, 25_000, 50_000, 100_000, 100_000, 100_000, 100_000];
        for (p, step) in pauses.iter().zip(steps) {
            let step = Duration::from_micros(step);
            assert!(*p >= step / 2 && *p <= step, "{p:?} outside the upper half of {step:?}");
        }
        // Never past the poll interval, and a tiny interval still pauses (1 ms floor).
        assert!((0..100).all(|_| b.pause() <= Duration::from_millis(100)));
        let mut tiny = PollBackoff::new(Duration::ZERO);
        assert!((0..10).all(|_| tiny.pause() <= Duration::from_millis(1)));
    }

    /// A pause longer than the wait left ends at the deadline, not before it: returning at once
    /// reported "not acquired" up to a pause early (seen failing a RedLock test in CI).
    #[tokio::test(start_paused = true)]
    async fn a_pause_past_the_deadline_ends_at_the_deadline() {
        let deadline = Instant::now() + Duration::from_millis(3);
        assert!(!pause_before_retry(Duration::from_millis(10), Some(deadline)).await);
        assert!(Instant::now() >= deadline);
        let started = Instant::now();
        assert!(pause_before_retry(Duration::from_millis(5), Some(started + Duration::from_secs(1))).await);
        assert_eq!(started.elapsed(), Duration::from_millis(5));
        assert!(jitter(Duration::from_millis(5)) < Duration::from_millis(5));
    }
}
