//! Pub/sub waiting. One subscription per lock channel per client, shared and counted by every
//! local waiter, dropped with the last one. Subscribe and unsubscribe commands go through one
//! ordered queue so an UNSUBSCRIBE of a channel nobody wanted any more can never overtake the
//! SUBSCRIBE of a waiter that arrived just after.
//!
//! Messages: `0` wakes one local waiter, `1` wakes every local waiter. A disconnect wakes every
//! waiter (the crate resubscribes; messages sent during the gap are lost, so waiters re-try), and
//! the confirmation of that resubscription wakes them once more.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::{PushInfo, PushKind, Value};
use tokio::sync::{mpsc, watch, Notify};

use crate::scripts::{READ_UNLOCK_MESSAGE, UNLOCK_MESSAGE};

/// State of one channel's subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SubState {
    /// SUBSCRIBE queued or sent, not confirmed yet.
    Pending,
    /// Confirmed by the server: messages arrive.
    Active,
    /// SUBSCRIBE failed; waiters poll (bounded by the holder's TTL and the poll interval).
    Failed,
}

/// One subscribed channel and the local waiters on it.
pub(crate) struct Channel {
    /// Woken by unlock messages.
    pub(crate) notify: Notify,
    state: watch::Sender<SubState>,
    /// Set on disconnect; the resubscribe confirmation clears it and wakes the waiters.
    resubscribing: AtomicBool,
}

impl Channel {
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
    queue: mpsc::UnboundedSender<Command>,
    /// Notified on disconnect: [`run`] pings until the connection is back.
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
        let registry =
            Registry { channels: Mutex::new(HashMap::new()), queue: tx, disconnected: disconnected.clone() };
        (Arc::new(registry), Queue(rx, disconnected))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // A poisoned map only means a panic elsewhere while it was held; its data is still
        // consistent (every update is a single insert/remove/counter change).
        self.channels.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Joins `channel`, subscribing if this is its first local waiter, or re-subscribing if an
    /// earlier SUBSCRIBE failed.
    pub(crate) fn join(self: &Arc<Self>, name: &str) -> Membership {
        let mut map = self.lock();
        let channel = match map.get_mut(name) {
            Some(entry) => {
                entry.waiters += 1;
                entry.channel.clone()
            }
            None => {
                let (state, _) = watch::channel(SubState::Pending);
                let channel =
                    Arc::new(Channel { notify: Notify::new(), state, resubscribing: AtomicBool::new(false) });
                map.insert(name.to_owned(), Entry { channel: channel.clone(), waiters: 1 });
                let _ = self.queue.send(Command::Subscribe(name.to_owned(), channel.clone()));
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
                if payload == UNLOCK_MESSAGE.as_bytes() {
                    entry.channel.notify.notify_one();
                } else if payload == READ_UNLOCK_MESSAGE.as_bytes() {
                    entry.channel.notify.notify_waiters();
                }
            }
            PushKind::Subscribe | PushKind::SSubscribe => {
                let Some(chan) = push.data.first().and_then(bytes) else { return };
                let Ok(chan) = std::str::from_utf8(chan) else { return };
                let map = self.lock();
                if let Some(entry) = map.get(chan) {
                    if entry.channel.resubscribing.swap(false, Ordering::AcqRel) {
                        entry.channel.notify.notify_waiters();
                    }
                } else if push.kind == PushKind::Subscribe {
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

/// Pause between pings while the pub/sub connection is down.
const RECONNECT_PAUSE: Duration = Duration::from_millis(250);

/// Runs the subscribe/unsubscribe queue until the registry is gone. Consecutive commands of one
/// kind go out as one SUBSCRIBE/UNSUBSCRIBE with many channels.
pub(crate) async fn run(mut queue: Queue, mut conn: ConnectionManager, registry: Weak<Registry>) {
    let mut batch = Vec::new();
    loop {
        let first = tokio::select! {
            first = queue.0.recv() => first,
            () = queue.1.notified() => {
                // The crate reconnects (and resubscribes) a few times after a disconnect, then
                // waits for the next request: ping until the connection is back, or messages
                // would be lost until some waiter subscribes anew.
                while registry.strong_count() > 0
                    && redis::cmd("PING").query_async::<()>(&mut conn).await.is_err()
                {
                    tokio::time::sleep(RECONNECT_PAUSE).await;
                }
                continue;
            }
        };
        let Some(first) = first else { break };
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
                let result = conn.subscribe(&names).await;
                let state = if result.is_ok() { SubState::Active } else { SubState::Failed };
                if let Err(e) = &result {
                    log::warn!("rlock: SUBSCRIBE failed, waiters fall back to polling: {e}");
                }
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
