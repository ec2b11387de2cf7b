//! Replica sync (Redisson's synced lock writes). An acquire that took the lock is followed by
//! `WAIT 1 <timeout>` on a connection of its own (WAIT blocks its connection until a replica
//! answers, and renewals must not queue behind it). When no replica acknowledged in
//! time the caller undoes the acquire and retries, as Redisson does.
//!
//! Redisson waits for all available replicas and fails only when none acknowledged; waiting
//! for one gives the same pass/fail rule without waiting for the slowest replica. Masters with
//! no connected replica are not waited on at all (Redisson counts "available slaves" the same
//! way), so a replica-less setup pays nothing. The replica counts are read in the background
//! every [`REFRESH`]: `INFO replication` on a single master, `CLUSTER SLOTS` on a cluster.
//!
//! What it narrows: a failover right after an acquire promotes a replica that has the lock.
//! What it cannot close: the replica that acknowledged may not be the one promoted (another
//! replica may win), a renewal or release is not synced, and an acknowledged write can still be
//! lost if the promoted replica restarts without persistence.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use redis::{RedisResult, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::conn::{slot_master, Commands};

/// How often the replica counts are refreshed.
const REFRESH: Duration = Duration::from_secs(1);

/// Connected replicas per master, as last read.
#[derive(Debug, Clone, PartialEq)]
enum Counts {
    /// Not read yet: assume replicas, so the first acquires are synced rather than not.
    Unknown,
    /// One master (single server, Sentinel).
    One(usize),
    /// A cluster: (first slot, last slot, replicas) per slot range.
    Ranges(Vec<(u16, u16, usize)>),
}

/// Replica sync for one client.
pub(crate) struct Replicas {
    counts: RwLock<Counts>,
    sync: Commands,
    timeout_ms: u64,
}

/// The outcome of a replica-synced write.
pub(crate) enum Synced<T> {
    /// Nothing was written, or a replica has the write (or the master turned out to have no
    /// replica at all).
    Acknowledged(T),
    /// Written, but no replica acknowledged in time: the caller undoes it.
    Unacknowledged(T),
}

impl Replicas {
    /// Starts replica sync on `sync` (its own connection): reads the replica counts through
    /// `main` once before returning (so a replica-less setup never waits), then every
    /// [`REFRESH`] in the background until `stop`.
    pub(crate) async fn start(
        handle: &tokio::runtime::Handle,
        mut main: Commands,
        sync: Commands,
        timeout: Duration,
        master_changes: Option<watch::Receiver<u64>>,
        stop: CancellationToken,
    ) -> Arc<Replicas> {
        let first = read_counts(&mut main).await.unwrap_or_else(|e| {
            log::warn!(
                "rlock: replica sync is on but the replica counts cannot be read ({e}); every \
                 acquire will wait for a replica. Allow INFO / CLUSTER SLOTS for this user or set \
                 replica_sync off."
            );
            Counts::Unknown
        });
        let replicas = Arc::new(Replicas {
            counts: RwLock::new(first),
            sync,
            timeout_ms: crate::millis::whole_ms(timeout).max(1),
        });
        handle.spawn(refresh(Arc::downgrade(&replicas), main, master_changes, stop));
        replicas
    }

    /// Whether an acquire of a key in batch group `group` (its slot on a cluster) should wait
    /// for a replica.
    pub(crate) fn wanted(&self, group: u16) -> bool {
        match &*self.counts.read().unwrap_or_else(|p| p.into_inner()) {
            Counts::Unknown => true,
            Counts::One(n) => *n > 0,
            Counts::Ranges(r) => r.iter().any(|(a, b, n)| (*a..=*b).contains(&group) && *n > 0),
        }
    }

    /// Runs `write` (one command or script on `key`, given the sync connection) and, when
    /// `wrote` says it changed something, `WAIT 1 <timeout>` on the same connection to the same
    /// master. When no replica acknowledged, asks that master whether it has any online
    /// replica: a master without one (a replica just promoted, while the cached counts are
    /// stale) is not waited on, as in Redisson.
    pub(crate) async fn run<T, Fut>(
        &self,
        key: &str,
        group: u16,
        write: impl FnOnce(Commands) -> Fut,
        wrote: impl FnOnce(&T) -> bool,
    ) -> RedisResult<Synced<T>>
    where
        Fut: std::future::Future<Output = RedisResult<T>>,
    {
        let mut conn = self.sync.clone();
        // The write first, then WAIT only when it wrote: a busy attempt wrote nothing, and a
        // WAIT behind it would block this connection for nothing (for the whole timeout on a
        // master without replicas). The write alone gets the cluster client's MOVED/ASK
        // handling; WAIT goes to the same master over the same connection, and waits for this
        // connection's last write.
        let out = write(conn.clone()).await?;
        if !wrote(&out) {
            return Ok(Synced::Acknowledged(out));
        }
        let mut wait = redis::cmd("WAIT");
        wait.arg(1).arg(self.timeout_ms);
        let acked: i64 = redis::from_redis_value(conn.route(wait, slot_master(key)).await?)?;
        if acked > 0 {
            return Ok(Synced::Acknowledged(out));
        }
        let mut info = redis::cmd("INFO");
        info.arg("replication");
        let info: String = redis::from_redis_value(conn.route(info, slot_master(key)).await?)?;
        if online_replicas(&info) == 0 {
            log::debug!("rlock: no replica acknowledged '{key}', and its master has none: not waiting");
            self.no_replicas(group);
            return Ok(Synced::Acknowledged(out));
        }
        Ok(Synced::Unacknowledged(out))
    }

    /// Records that the master of `group` has no replica (until the next refresh).
    fn no_replicas(&self, group: u16) {
        let mut counts = self.counts.write().unwrap_or_else(|p| p.into_inner());
        match &mut *counts {
            Counts::Ranges(r) => {
                for (a, b, n) in r.iter_mut() {
                    if (*a..=*b).contains(&group) {
                        *n = 0;
                    }
                }
            }
            other => *other = Counts::One(0),
        }
    }

    fn set(&self, counts: Counts) {
        *self.counts.write().unwrap_or_else(|p| p.into_inner()) = counts;
    }
}

/// Reads the counts every [`REFRESH`], and at once when a Sentinel client switched masters (the
/// new master's replicas are not the old one's).
async fn refresh(
    replicas: std::sync::Weak<Replicas>,
    mut main: Commands,
    mut master_changes: Option<watch::Receiver<u64>>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(REFRESH) => {}
            Ok(()) = async {
                match master_changes.as_mut() {
                    Some(m) => m.changed().await,
                    None => std::future::pending().await,
                }
            } => {}
        }
        let counts = read_counts(&mut main).await;
        let Some(r) = replicas.upgrade() else { return };
        match counts {
            Ok(c) => r.set(c),
            Err(e) => log::debug!("rlock: reading the replica counts failed: {e}"),
        }
    }
}

async fn read_counts(main: &mut Commands) -> RedisResult<Counts> {
    match main {
        Commands::Cluster(_) => cluster_counts(main).await,
        _ => master_count(main).await,
    }
}

/// Online replicas in an `INFO replication` reply (`slaveN:...,state=online,...`).
fn online_replicas(info: &str) -> usize {
    info.lines().filter(|l| l.starts_with("slave") && l.contains("state=online")).count()
}

/// Online replicas of one master.
async fn master_count(conn: &mut Commands) -> RedisResult<Counts> {
    let info: String = redis::cmd("INFO").arg("replication").query_async(conn).await?;
    Ok(Counts::One(online_replicas(&info)))
}

/// Replicas per slot range, from `CLUSTER SLOTS` (which lists replicas not marked failed).
async fn cluster_counts(conn: &mut Commands) -> RedisResult<Counts> {
    let slots: Vec<Vec<Value>> = redis::cmd("CLUSTER").arg("SLOTS").query_async(conn).await?;
    let ranges = slots
        .iter()
        .filter_map(|range| {
            let first = int(range.first()?)?;
            let last = int(range.get(1)?)?;
            // [first, last, master, replica...]
            Some((first, last, range.len().saturating_sub(3)))
        })
        .collect();
    Ok(Counts::Ranges(ranges))
}

fn int(v: &Value) -> Option<u16> {
    match v {
        Value::Int(i) => u16::try_from(*i).ok(),
        _ => None,
    }
}
