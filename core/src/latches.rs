//! Deletes release latch keys in the background, many per command.
//!
//! A latch (`redisson_unlock_latch:{N}:<request id>`) only matters to retries of its own
//! release; once that release returned it can go. Redisson sends one DEL per release; we queue
//! the keys and send one DEL per batch group (hash slot) for everything queued, which costs
//! Redis and the client far less per release under load. Keys a failed DEL leaves behind expire
//! by their own TTL.

use std::collections::HashMap;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::connection::Commands;

/// Most keys in one DEL.
const MAX_BATCH: usize = 512;

/// The sending side: queue a latch key for deletion.
#[derive(Clone)]
pub(crate) struct Latches(mpsc::UnboundedSender<(u16, String)>);

impl Latches {
    /// Starts the deleting task on `handle`; it ends when `stop` is cancelled.
    pub(crate) fn start(
        handle: &tokio::runtime::Handle,
        commands: Commands,
        stop: CancellationToken,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        handle.spawn(run(rx, commands, stop));
        Latches(tx)
    }

    /// Queues `key` (in batch group `group`) for deletion.
    pub(crate) fn delete(&self, group: u16, key: String) {
        let _ = self.0.send((group, key));
    }
}

async fn run(
    mut rx: mpsc::UnboundedReceiver<(u16, String)>,
    mut commands: Commands,
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
        let mut groups: HashMap<u16, Vec<String>> = HashMap::new();
        for (g, k) in buf.drain(..) {
            groups.entry(g).or_default().push(k);
        }
        for keys in groups.into_values() {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(&keys);
            if let Err(e) = cmd.query_async::<()>(&mut commands).await {
                log::debug!(
                    "rlock: deleting {} release latches failed (they expire by TTL): {e}",
                    keys.len()
                );
            }
        }
    }
}
