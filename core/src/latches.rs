//! Deletes release latch keys in the background, many per command.
//!
//! A latch (`redisson_unlock_latch:{N}:<request id>`) only matters to retries of its own
//! release; once that release returned it can go. Redisson sends one DEL per release; we queue
//! the keys and send one DEL for everything queued where the endpoint takes keys of several
//! hash tags in one command (see `Commands::spans_tags`), else one DEL per hash tag (see
//! [`crate::keys::hash_tag`]; behind a proxy in front of a sharded cluster), all together on
//! the multiplexed connection. That costs Redis and the client far less per release under
//! load. Keys a failed DEL leaves behind expire by their own TTL.

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

    /// Queues `key` for deletion.
    pub(crate) fn delete(&self, key: String) {
        let _ = self.0.send(key);
    }
}

/// The latch key of one release: `prefix` and a request id of 32 lowercase hex digits (16
/// bytes) that no other release call of any client uses. The first 8 bytes come from the
/// client's random UUID, the last 8 are a bijective scramble (splitmix64) of a per-process
/// sequence number keyed by the rest of that UUID, so ids of one client never repeat and look
/// random, without a `getrandom` system call per release (`Uuid::new_v4` made one).
pub(crate) fn request_latch(prefix: &str, client: uuid::Uuid) -> String {
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
            let latch = request_latch(&prefix, client);
            let id = latch.strip_prefix(&prefix).unwrap_or_default();
            assert_eq!(id.len(), 32);
            assert!(id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
            assert!(seen.insert(latch));
        }
        // Another client's ids differ in their first half.
        let other = request_latch(&prefix, uuid::Uuid::new_v4());
        assert!(seen.iter().all(|l| l[..prefix.len() + 16] != other[..prefix.len() + 16]));
    }
}
