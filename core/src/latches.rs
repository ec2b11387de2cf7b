//! Deletes release latch keys in the background, many per command.
//!
//! A latch (`redisson_unlock_latch:{N}:<request id>`) only matters to retries of its own
//! release; once that release returned it can go. Redisson sends one DEL per release; we queue
//! the keys and send one DEL for everything queued where the endpoint takes keys of several
//! hash tags in one command (see `Commands::spans_tags`), else one DEL per hash tag (see
//! [`crate::keys::hash_tag`]; behind a proxy in front of a sharded cluster), all together on
//! the multiplexed connection. That costs Redis and the client far less per release under
//! load. Keys a failed DEL leaves behind expire by their own TTL.
//!
//! A call's latch is a [`RequestLatch`]: the only way to make one, and the only way one is
//! deleted (when it is dropped). Whoever owns it decides how long it lives: the call itself, or
//! a background give-back it was moved into, which drops it when done. A call that failed
//! leaves its latch to its TTL ([`RequestLatch::leave`]).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::future::join_all;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::conn::Commands;
use crate::keys;

/// Most keys in one DEL.
const MAX_BATCH: usize = 512;

/// How long the task collects keys after the first before it deletes them. A latch only
/// matters until its release returned, and it expires by its TTL anyway; without this pause a
/// lone owner's every release cost a DEL of its own and two wake-ups of the runtime's thread
/// (measured: two of the four context switches per pair of a single Node owner).
const LINGER: std::time::Duration = std::time::Duration::from_millis(10);

/// The sending side: queue a latch key for deletion.
#[derive(Clone)]
pub(crate) struct Latches(mpsc::UnboundedSender<String>);

impl Latches {
    /// Starts the deleting task on `handle`; it ends when `stop` is cancelled. `spans_tags`:
    /// one DEL may name keys of several hash tags on this endpoint.
    pub(crate) fn start(
        handle: &tokio::runtime::Handle,
        commands: Commands,
        spans_tags: bool,
        stop: CancellationToken,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        handle.spawn(run(rx, commands, spans_tags, stop));
        Latches(tx)
    }

    /// A new latch for one call of client `client`: `prefix` and a request id no other call
    /// of any client uses ([`request_id`]). Deleted in the background when dropped.
    pub(crate) fn request(&self, prefix: &str, client: uuid::Uuid) -> RequestLatch {
        RequestLatch { key: request_id(prefix, client), deleter: Some(self.0.clone()) }
    }
}

/// The request latch of one call (a release, a count-down, a semaphore's acquire step): the
/// key its script writes so that retries of the call do not count twice. Deleted in the
/// background (batched, see the module's doc) when dropped: when nothing can retry the call
/// any more. A give-back that needs the latch after its call returned owns it, so the latch
/// lives until the give-back is done.
#[must_use = "dropping a RequestLatch deletes it"]
pub(crate) struct RequestLatch {
    key: String,
    /// `None` once the latch needs no deletion.
    deleter: Option<mpsc::UnboundedSender<String>>,
}

impl RequestLatch {
    /// The key, for the script's `KEYS`.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// Ends the guard without a DEL, leaving any latch to its TTL. For a call whose script said
    /// it wrote nothing (it found nothing to do: no DEL per refused try under contention), and
    /// for a call that failed: an earlier try of it (timed out, or sent on a connection that
    /// broke) may still reach the server, and with the latch gone it would run as a new call
    /// and count twice (a lock level released twice, permits given twice, a count-down
    /// counted twice).
    pub(crate) fn leave(mut self) {
        self.deleter = None;
    }
}

impl Drop for RequestLatch {
    fn drop(&mut self) {
        if let Some(deleter) = self.deleter.take() {
            let _ = deleter.send(std::mem::take(&mut self.key));
        }
    }
}

/// `prefix` and a request id of 32 lowercase hex digits (16 bytes) that no other call of any
/// client uses (a latch key, or a permit id with no prefix). The first 8 bytes come from the
/// client's random UUID, the last 8 are a bijective scramble (splitmix64) of a per-process
/// sequence number keyed by the rest of that UUID, so ids of one client never repeat and look
/// random, without a `getrandom` system call per call (`Uuid::new_v4` made one).
pub(crate) fn request_id(prefix: &str, client: uuid::Uuid) -> String {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let (hi, lo) = client.as_u64_pair();
    let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let mut z = lo.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let id = (u128::from(hi) << 64) | u128::from(z);
    let mut latch = String::with_capacity(prefix.len() + 32);
    latch.push_str(prefix);
    let _ = write!(latch, "{id:032x}");
    latch
}

async fn run(
    mut rx: mpsc::UnboundedReceiver<String>,
    commands: Commands,
    spans_tags: bool,
    stop: CancellationToken,
) {
    let mut buf = Vec::with_capacity(MAX_BATCH);
    loop {
        let n = tokio::select! {
            _ = stop.cancelled() => return,
            n = rx.recv_many(&mut buf, MAX_BATCH) => n,
        };
        if n == 0 {
            return;
        }
        if n < MAX_BATCH {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(LINGER) => {}
            }
            while buf.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(key) => buf.push(key),
                    Err(_) => break,
                }
            }
        }
        let mut groups: HashMap<&str, Vec<&str>> = HashMap::new();
        for k in &buf {
            groups.entry(if spans_tags { "" } else { keys::hash_tag(k) }).or_default().push(k);
        }
        let deletes = groups.into_values().map(|keys| {
            let mut commands = commands.clone();
            async move {
                let mut cmd = redis::cmd("DEL");
                cmd.arg(&keys);
                if let Err(e) = cmd.query_async::<()>(&mut commands).await {
                    log::debug!(
                        "rlock: deleting {} release latches failed (they expire by TTL): {e}",
                        keys.len()
                    );
                }
            }
        });
        join_all(deletes).await;
        buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_32_hex_digits_and_never_repeat() {
        let client = uuid::Uuid::new_v4();
        let prefix = crate::keys::unlock_latch_prefix("orders");
        let mut seen = std::collections::HashSet::new();
        for _ in 0..100_000 {
            let latch = request_id(&prefix, client);
            let id = latch.strip_prefix(&prefix).unwrap_or_default();
            assert_eq!(id.len(), 32);
            assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            assert!(seen.insert(latch));
        }
        // Another client's ids differ in their first half.
        let other = request_id(&prefix, uuid::Uuid::new_v4());
        assert!(seen.iter().all(|l| l[..prefix.len() + 16] != other[..prefix.len() + 16]));
    }

    /// A latch is queued for deletion when dropped, wherever its owner drops it, and only then;
    /// one left to its TTL (never written, or of a failed call) is not.
    #[test]
    fn a_latch_is_deleted_when_dropped_unless_left() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let latches = Latches(tx);
        let client = uuid::Uuid::new_v4();
        let kept = latches.request("p:", client);
        let key = kept.key().to_owned();
        let moved = std::thread::spawn(move || kept); // a give-back owns it for a while
        assert!(rx.try_recv().is_err(), "not deleted while owned");
        drop(moved.join().ok());
        assert_eq!(rx.try_recv().ok(), Some(key));
        latches.request("p:", client).leave();
        assert!(rx.try_recv().is_err(), "a latch left to its TTL costs no DEL");
    }
}
