//! Pub/sub waiting. One subscription per lock channel per client, shared and counted by every
//! local waiter, dropped with the last one. Subscribe and unsubscribe commands go through one
//! ordered queue so an UNSUBSCRIBE of a channel nobody wanted any more can never overtake the
//! SUBSCRIBE of a waiter that arrived just after.
//!
//! Any primitive waits here: it joins a channel with the [`Meaning`] of its messages (wake one
//! local waiter, all of them, up to N, or nobody). A disconnect wakes every waiter (the crate
//! resubscribes; messages sent during the gap are lost, so waiters re-try), and the
//! confirmation of that resubscription wakes them once more.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use redis::{PushInfo, PushKind, Value};
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::Instant;

use crate::conn::Subscriber;
use crate::metrics::Metrics;

/// State of one channel's subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SubState {
    /// SUBSCRIBE queued or sent, not confirmed yet.
    Pending,
    /// Confirmed by the server: messages arrive.
    Active,
    /// SUBSCRIBE failed; waiters poll (bounded by the holder's TTL and the poll interval).
    Failed,
    /// The endpoint has no pub/sub (it refused RESP3 at connect): nothing is subscribed and
    /// waiters poll with back-off (see `shared::PollBackoff`).
    Unavailable,
}

/// Whom a message wakes among the local waiters of its channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Nobody (a message that announces nothing to wait for).
    Nobody,
    /// One waiter (Redisson's unlock message `0`).
    One,
    /// Every waiter (a read unlock, a latch reaching zero).
    All,
    /// Up to this many waiters (a semaphore's released permits).
    #[allow(dead_code)] // first used by the semaphores; tested below
    UpTo(usize),
}

/// Reads a message payload of a channel: what it means to the channel's waiters. Given by the
/// primitive that joins the channel; every joiner of one channel passes the same.
pub(crate) type Meaning = fn(&[u8]) -> Wake;

/// One subscribed channel and the local waiters on it.
pub(crate) struct Channel {
    /// Woken by messages, as [`Meaning`] says.
    pub(crate) notify: Notify,
    meaning: Meaning,
    state: watch::Sender<SubState>,
    /// Set on disconnect; the resubscribe confirmation clears it and wakes the waiters.
    resubscribing: AtomicBool,
}

impl Channel {
    /// Wakes local waiters as `wake` says.
    fn wake(&self, wake: Wake) {
        match wake {
            Wake::Nobody => {}
            Wake::One => self.notify.notify_one(),
            Wake::All => self.notify.notify_waiters(),
            Wake::UpTo(n) => {
                for _ in 0..n {
                    self.notify.notify_one();
                }
            }
        }
    }

    /// A receiver of the subscription state.
    pub(crate) fn state(&self) -> watch::Receiver<SubState> {
        self.state.subscribe()
    }
}

struct Entry {
    channel: Arc<Channel>,
    waiters: usize,
}

enum Command {
    Subscribe(String, Arc<Channel>),
    Unsubscribe(String),
}

/// The registry of waited-on channels of one client.
pub(crate) struct Registry {
    channels: Mutex<HashMap<String, Entry>>,
    /// False where the endpoint has no pub/sub: channels are joined as
    /// [`SubState::Unavailable`] and nothing is subscribed.
    available: AtomicBool,
    queue: mpsc::UnboundedSender<Command>,
    /// Notified on every disconnect of a pub/sub connection: [`run`] repairs it.
    disconnected: Arc<Notify>,
}

/// A waiter's membership of a channel; dropping it leaves (and unsubscribes after the last).
pub(crate) struct Membership {
    registry: Arc<Registry>,
    name: String,
    /// The channel joined.
    pub(crate) channel: Arc<Channel>,
}

impl Registry {
    /// Creates the registry and the receiving end of its command queue (for [`run`]).
    pub(crate) fn new() -> (Arc<Registry>, Queue) {
        let (tx, rx) = mpsc::unbounded_channel();
        let disconnected = Arc::new(Notify::new());
        let registry = Registry {
            channels: Mutex::new(HashMap::new()),
            available: AtomicBool::new(true),
            queue: tx,
            disconnected: disconnected.clone(),
        };
        (Arc::new(registry), Queue(rx, disconnected))
    }

    /// Marks the endpoint as having no pub/sub (before any waiter joins): channels are then
    /// never subscribed, and their waiters poll.
    pub(crate) fn set_unavailable(&self) {
        self.available.store(false, Ordering::Release);
    }

    /// Whether the endpoint has pub/sub (waiters subscribe), as found at connect.
    pub(crate) fn available(&self) -> bool {
        self.available.load(Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // A poisoned map only means a panic elsewhere while it was held; its data is still
        // consistent (every update is a single insert/remove/counter change).
        self.channels.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Joins `channel`, whose messages mean what `meaning` says, subscribing if this is its
    /// first local waiter.
    pub(crate) fn join(self: &Arc<Self>, name: &str, meaning: Meaning) -> Membership {
        let mut map = self.lock();
        let channel = match map.get_mut(name) {
            Some(entry) => {
                entry.waiters += 1;
                entry.channel.clone()
            }
            None => {
                let available = self.available.load(Ordering::Acquire);
                let first = if available { SubState::Pending } else { SubState::Unavailable };
                let (state, _) = watch::channel(first);
                let channel = Arc::new(Channel {
                    notify: Notify::new(),
                    meaning,
                    state,
                    resubscribing: AtomicBool::new(false),
                });
                map.insert(name.to_owned(), Entry { channel: channel.clone(), waiters: 1 });
                if available {
                    let _ = self.queue.send(Command::Subscribe(name.to_owned(), channel.clone()));
                }
                channel
            }
        };
        Membership { registry: self.clone(), name: name.to_owned(), channel }
    }

    /// Re-queues the SUBSCRIBE of a channel whose subscription failed.
    pub(crate) fn retry_subscribe(&self, m: &Membership) {
        let map = self.lock();
        if *m.channel.state.borrow() == SubState::Failed && map.contains_key(&m.name) {
            m.channel.state.send_replace(SubState::Pending);
            let _ = self.queue.send(Command::Subscribe(m.name.clone(), m.channel.clone()));
        }
    }

    /// Number of channels with local waiters (for tests and stats).
    pub(crate) fn channel_count(&self) -> usize {
        self.lock().len()
    }

    /// Every channel with local waiters, by name.
    fn snapshot(&self) -> Vec<(String, Arc<Channel>)> {
        self.lock().iter().map(|(n, e)| (n.clone(), e.channel.clone())).collect()
    }

    /// Wakes every waiter on every channel (client close, disconnect).
    pub(crate) fn wake_all(&self, resubscribing: bool) {
        for entry in self.lock().values() {
            if resubscribing {
                entry.channel.resubscribing.store(true, Ordering::Release);
            }
            entry.channel.notify.notify_waiters();
        }
    }

    /// Handles one push from the pub/sub connection. Runs on the connection's task: no
    /// blocking beyond the registry mutex.
    pub(crate) fn on_push(&self, push: PushInfo) {
        match push.kind {
            PushKind::Message | PushKind::SMessage => {
                let (Some(chan), Some(payload)) = (push.data.first(), push.data.get(1)) else {
                    return;
                };
                let (Some(chan), Some(payload)) = (bytes(chan), bytes(payload)) else {
                    return;
                };
                let map = self.lock();
                let Some(entry) = std::str::from_utf8(chan).ok().and_then(|c| map.get(c)) else {
                    return;
                };
                entry.channel.wake((entry.channel.meaning)(payload));
            }
            PushKind::Subscribe | PushKind::SSubscribe => {
                let Some(chan) = push.data.first().and_then(bytes) else { return };
                let Ok(chan) = std::str::from_utf8(chan) else { return };
                let map = self.lock();
                if let Some(entry) = map.get(chan) {
                    if entry.channel.resubscribing.swap(false, Ordering::AcqRel) {
                        entry.channel.notify.notify_waiters();
                    }
                } else {
                    // Confirmed, but nobody here waits on it: an UNSUBSCRIBE that failed while
                    // the connection was down left it in the crate's resubscription set. Drop it
                    // (queued under the registry lock, so a waiter that joins later subscribes
                    // after this).
                    let _ = self.queue.send(Command::Unsubscribe(chan.to_owned()));
                }
            }
            PushKind::Disconnection => {
                self.wake_all(true);
                self.disconnected.notify_one();
            }
            _ => {}
        }
    }
}

fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        let mut map = self.registry.lock();
        if let Some(entry) = map.get_mut(&self.name) {
            entry.waiters = entry.waiters.saturating_sub(1);
            if entry.waiters == 0 {
                map.remove(&self.name);
                let _ = self.registry.queue.send(Command::Unsubscribe(std::mem::take(&mut self.name)));
            }
        }
    }
}

/// The receiving end of a registry's command queue, and its disconnect signal.
pub(crate) struct Queue(mpsc::UnboundedReceiver<Command>, Arc<Notify>);

/// Runs the subscribe/unsubscribe queue until the registry is gone. Consecutive commands of one
/// kind go out as one SUBSCRIBE/UNSUBSCRIBE with many channels.
///
/// Repairs, none of which blocks the queue:
/// - When the subscriber's connection is replaced (a Sentinel failover, a rebuilt cluster
///   connection), every channel with waiters is subscribed on the new one and its waiters are
///   woken.
/// - After a disconnect, the `redis` crate reconnects (and resubscribes) a few times, then waits
///   for the next request; its cluster client also learns a failover only from a request. So
///   the connection is pinged (one server) or every channel with waiters is subscribed again (a
///   cluster, which moves subscriptions to the node that took over) until that succeeds.
///   Messages sent meanwhile are lost; waiters are bounded by the holder's TTL.
/// - A connection can also stop delivering without closing (a partition, a middlebox that
///   dropped it): while any channel has waiters, it is pinged every third of
///   `answer_within` (the subscription timeout; on a cluster, every master's connection). One
///   that gives no answer within `answer_within` is replaced by a new one (a cluster's is
///   rebuilt from the seed nodes), every channel is subscribed on it, and every
///   waiter is woken to try again at once (it may have missed an unlock). A waiter so gets
///   the lock at most about `4/3 answer_within` plus a connect after the release, where it
///   waited up to the holder's TTL before.
pub(crate) async fn run(
    mut queue: Queue,
    mut conn: Subscriber,
    registry: Weak<Registry>,
    metrics: Arc<Metrics>,
    answer_within: Duration,
) {
    let mut batch = Vec::new();
    let disconnected = queue.1.clone();
    let mut repair_at: Option<Instant> = None;
    let mut check = tokio::time::interval((answer_within / 3).max(Duration::from_millis(1)));
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let first = tokio::select! {
            cmd = queue.0.recv() => match cmd {
                Some(cmd) => cmd,
                None => break,
            },
            _ = conn.replaced() => {
                let Some(registry) = registry.upgrade() else { break };
                metrics.reconnected();
                tracing::info!("rlock: connection replaced (failover or cluster reconnect); subscribing again");
                resubscribe(&mut conn, &registry).await;
                registry.wake_all(false);
                continue;
            }
            () = disconnected.notified() => {
                if repair_at.is_none() {
                    metrics.reconnected();
                    tracing::info!("rlock: disconnected from Redis; reconnecting");
                }
                repair_at.get_or_insert_with(|| Instant::now() + conn.repair_pause());
                continue;
            }
            () = async { if let Some(at) = repair_at { tokio::time::sleep_until(at).await } }, if repair_at.is_some() => {
                let Some(registry) = registry.upgrade() else { break };
                repair_at = (!repair(&mut conn, &registry).await).then(|| Instant::now() + conn.repair_pause());
                continue;
            }
            _ = check.tick(), if repair_at.is_none() => {
                let Some(registry) = registry.upgrade() else { break };
                if registry.channel_count() > 0 && !conn.answers(answer_within).await {
                    metrics.reconnected();
                    tracing::warn!("rlock: the pub/sub connection stopped answering; opening a new one");
                    match conn.reopen().await {
                        Ok(()) => {
                            resubscribe(&mut conn, &registry).await;
                            registry.wake_all(false);
                        }
                        Err(e) => {
                            tracing::warn!("rlock: {e}");
                            repair_at = Some(Instant::now() + conn.repair_pause());
                        }
                    }
                }
                continue;
            }
        };
        batch.push(first);
        while let Ok(more) = queue.0.try_recv() {
            batch.push(more);
        }
        let mut i = 0;
        while i < batch.len() {
            let subscribing = matches!(batch[i], Command::Subscribe(..));
            let mut j = i;
            let mut names = Vec::new();
            while j < batch.len() && matches!(batch[j], Command::Subscribe(..)) == subscribing {
                match &batch[j] {
                    Command::Subscribe(n, _) | Command::Unsubscribe(n) => names.push(n.as_str()),
                }
                j += 1;
            }
            if subscribing {
                let state = subscribed(conn.subscribe(&names).await);
                for cmd in &batch[i..j] {
                    if let Command::Subscribe(_, ch) = cmd {
                        ch.state.send_replace(state);
                    }
                }
            } else if let Err(e) = conn.unsubscribe(&names).await {
                log::debug!("rlock: UNSUBSCRIBE failed: {e}");
            }
            i = j;
        }
        batch.clear();
        if registry.strong_count() == 0 {
            break;
        }
    }
}

/// One repair step after a disconnect; true when the connection is back. A `ConnectionManager`
/// that gave up reconnecting tries again on a request (and then resubscribes by itself): PING
/// it. A cluster client learns where slots went from a request too: subscribe again.
async fn repair(conn: &mut Subscriber, registry: &Registry) -> bool {
    match conn.manager() {
        Some(mut manager) => redis::cmd("PING").query_async::<()>(&mut manager).await.is_ok(),
        None => resubscribe(conn, registry).await == SubState::Active,
    }
}

/// Subscribes every channel with waiters again; returns how that went.
async fn resubscribe(conn: &mut Subscriber, registry: &Registry) -> SubState {
    let channels = registry.snapshot();
    if channels.is_empty() {
        return SubState::Active;
    }
    let names: Vec<&str> = channels.iter().map(|(n, _)| n.as_str()).collect();
    let state = subscribed(conn.subscribe(&names).await);
    for (_, ch) in &channels {
        ch.state.send_replace(state);
    }
    state
}

fn subscribed(result: redis::RedisResult<()>) -> SubState {
    match result {
        Ok(()) => SubState::Active,
        Err(e) => {
            log::warn!("rlock: SUBSCRIBE failed, waiters fall back to polling: {e}");
            SubState::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;

    fn lock_meaning(p: &[u8]) -> Wake {
        match p {
            b"0" => Wake::One,
            b"1" => Wake::All,
            _ => Wake::Nobody,
        }
    }

    fn message(channel: &str, payload: &str) -> PushInfo {
        PushInfo {
            kind: PushKind::Message,
            data: vec![Value::BulkString(channel.into()), Value::BulkString(payload.into())],
        }
    }

    fn commands(queue: &mut Queue) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(c) = queue.0.try_recv() {
            out.push(match c {
                Command::Subscribe(n, _) => format!("+{n}"),
                Command::Unsubscribe(n) => format!("-{n}"),
            });
        }
        out
    }

    #[test]
    fn one_subscription_per_channel_counted_by_waiters() {
        let (registry, mut queue) = Registry::new();
        let a = registry.join("c1", lock_meaning);
        let b = registry.join("c1", lock_meaning);
        let c = registry.join("c2", lock_meaning);
        assert_eq!(registry.channel_count(), 2);
        assert_eq!(commands(&mut queue), ["+c1", "+c2"]);
        drop(a);
        assert_eq!(commands(&mut queue), Vec::<String>::new(), "a waiter is left on c1");
        drop(b);
        drop(c);
        assert_eq!(commands(&mut queue), ["-c1", "-c2"]);
        assert_eq!(registry.channel_count(), 0);
        // Joining again subscribes again, after the unsubscribe in queue order.
        let _d = registry.join("c1", lock_meaning);
        assert_eq!(commands(&mut queue), ["+c1"]);
    }

    #[tokio::test]
    async fn messages_wake_as_their_meaning_says() {
        let (registry, _queue) = Registry::new();
        let m = registry.join("c", lock_meaning);
        let waiters: Vec<_> = (0..3).map(|_| Box::pin(m.channel.notify.notified())).collect();
        let mut waiters = waiters;
        for w in &mut waiters {
            w.as_mut().enable();
        }
        registry.on_push(message("c", "0"));
        let woken = |ws: &mut Vec<std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>>>| {
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            ws.iter_mut().map(|w| w.as_mut().poll(&mut cx).is_ready()).filter(|r| *r).count()
        };
        assert_eq!(woken(&mut waiters), 1, "0 wakes one waiter");
        let mut waiters: Vec<_> = (0..3).map(|_| Box::pin(m.channel.notify.notified())).collect();
        for w in &mut waiters {
            w.as_mut().enable();
        }
        registry.on_push(message("c", "x"));
        assert_eq!(woken(&mut waiters), 0, "an unknown payload wakes nobody");
        registry.on_push(message("other", "1"));
        assert_eq!(woken(&mut waiters), 0, "a message on another channel wakes nobody here");
        registry.on_push(message("c", "1"));
        assert_eq!(woken(&mut waiters), 3, "1 wakes every waiter");
    }

    #[test]
    fn up_to_n_wakes_at_most_n() {
        let (registry, _queue) = Registry::new();
        let m = registry.join("s", |p| {
            std::str::from_utf8(p).ok().and_then(|s| s.parse().ok()).map_or(Wake::Nobody, Wake::UpTo)
        });
        let mut waiters: Vec<_> = (0..5).map(|_| Box::pin(m.channel.notify.notified())).collect();
        for w in &mut waiters {
            w.as_mut().enable();
        }
        registry.on_push(message("s", "2"));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let n = waiters.iter_mut().map(|w| w.as_mut().poll(&mut cx).is_ready()).filter(|r| *r).count();
        assert_eq!(n, 2);
    }
}
