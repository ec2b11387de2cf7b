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
//! With `replica_sync_aof` the wait is `WAITAOF` instead: until the write is fsynced to the
//! append-only file of one replica, and of the master as well when the master has `appendonly
//! yes` (read with the replica counts, `INFO persistence`). Where the server has no `WAITAOF`
//! (probed at connect with `COMMAND INFO`), connect fails rather than sync less than asked.
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

use crate::conn::{info_field, master_of_slot, server_named, slot_master, Commands};
use crate::error::{Error, ErrorKind, Result};

/// How often the replica counts are refreshed.
const REFRESH: Duration = Duration::from_secs(1);

/// What a master offers to wait on, as last read.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Master {
    /// Connected (online) replicas.
    replicas: usize,
    /// Whether the master itself has `appendonly yes` (read only with `replica_sync_aof`).
    aof: bool,
}

/// What each master offers, as last read.
#[derive(Debug, Clone, PartialEq)]
enum Counts {
    /// Not read yet: assume replicas, so the first acquires are synced rather than not.
    Unknown,
    /// One master (single server, Sentinel).
    One(Master),
    /// A cluster: (first slot, last slot, its master) per slot range.
    Ranges(Vec<(u16, u16, Master)>),
}

impl Counts {
    /// The master of batch group `group` (its slot on a cluster); None when not read yet.
    fn of(&self, group: u16) -> Option<Master> {
        match self {
            Counts::Unknown => None,
            Counts::One(m) => Some(*m),
            Counts::Ranges(r) => Some(
                r.iter().find(|(a, b, _)| (*a..=*b).contains(&group)).map_or_else(Master::default, |r| r.2),
            ),
        }
    }
}

/// Replica sync for one client.
pub(crate) struct Replicas {
    counts: RwLock<Counts>,
    sync: Commands,
    timeout_ms: u64,
    /// `WAITAOF` (fsynced) instead of `WAIT` (received).
    aof: bool,
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
    /// With `aof`, acquires wait with `WAITAOF` (see the module), and the masters' `appendonly`
    /// is read with their replica counts.
    pub(crate) async fn start(
        handle: &tokio::runtime::Handle,
        mut main: Commands,
        sync: Commands,
        timeout: Duration,
        aof: bool,
        master_changes: Option<watch::Receiver<u64>>,
        stop: CancellationToken,
    ) -> Arc<Replicas> {
        let first = read_counts(&mut main, aof).await.unwrap_or_else(|e| {
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
            aof,
        });
        handle.spawn(refresh(Arc::downgrade(&replicas), main, aof, master_changes, stop));
        replicas
    }

    /// Whether an acquire of a key in batch group `group` (its slot on a cluster) should wait
    /// for a replica.
    pub(crate) fn wanted(&self, group: u16) -> bool {
        self.master(group).is_none_or(|m| m.replicas > 0 || (self.aof && m.aof))
    }

    fn master(&self, group: u16) -> Option<Master> {
        self.counts.read().unwrap_or_else(|p| p.into_inner()).of(group)
    }

    /// Runs `write` (one command or script on `key`, given the sync connection) and, when
    /// `wrote` says it changed something, `WAIT 1 <timeout>` (or `WAITAOF`, see the module) on
    /// the same connection to the same master. When no replica acknowledged, asks that master
    /// whether it has any online replica: a master without one (a replica just promoted, while
    /// the cached counts are stale) is not waited on, as in Redisson.
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
        let acked = if self.aof {
            // Unknown counts (not read yet) ask for a replica only: WAITAOF refuses a local
            // fsync on a master without appendonly.
            let master = self.master(group);
            let local = master.is_some_and(|m| m.aof);
            let replica = master.is_none_or(|m| m.replicas > 0);
            let mut wait = redis::cmd("WAITAOF");
            wait.arg(u8::from(local)).arg(u8::from(replica)).arg(self.timeout_ms);
            // [fsynced locally, replicas that fsynced]
            let (here, replicas): (i64, i64) =
                redis::from_redis_value(conn.route(wait, slot_master(key)).await?)?;
            if local && here < 1 {
                return Ok(Synced::Unacknowledged(out));
            }
            !replica || replicas > 0
        } else {
            let mut wait = redis::cmd("WAIT");
            wait.arg(1).arg(self.timeout_ms);
            redis::from_redis_value::<i64>(conn.route(wait, slot_master(key)).await?)? > 0
        };
        if acked {
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
                for (a, b, m) in r.iter_mut() {
                    if (*a..=*b).contains(&group) {
                        m.replicas = 0;
                    }
                }
            }
            Counts::One(m) => m.replicas = 0,
            other => *other = Counts::One(Master::default()),
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
    aof: bool,
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
        let counts = read_counts(&mut main, aof).await;
        let Some(r) = replicas.upgrade() else { return };
        match counts {
            Ok(c) => r.set(c),
            Err(e) => log::debug!("rlock: reading the replica counts failed: {e}"),
        }
    }
}

async fn read_counts(main: &mut Commands, aof: bool) -> RedisResult<Counts> {
    match main {
        Commands::Cluster(_) => cluster_counts(main, aof).await,
        _ => master_count(main, aof).await,
    }
}

/// Online replicas in an `INFO replication` reply (`slaveN:...,state=online,...`).
fn online_replicas(info: &str) -> usize {
    info.lines().filter(|l| l.starts_with("slave") && l.contains("state=online")).count()
}

/// Whether an `INFO persistence` reply says the append-only file is on (`aof_enabled:1`).
pub(crate) fn aof_enabled(info: &str) -> bool {
    info_field(info, "aof_enabled") == Some("1")
}

/// `INFO persistence` of the master of `routing` (any master off a cluster): whether it has
/// `appendonly yes`.
async fn master_aof(conn: &mut Commands, routing: redis::cluster_routing::RoutingInfo) -> RedisResult<bool> {
    let mut info = redis::cmd("INFO");
    info.arg("persistence");
    Ok(aof_enabled(&redis::from_redis_value::<String>(conn.route(info, routing).await?)?))
}

/// Online replicas of one master (and, with `aof`, whether it has `appendonly yes`).
async fn master_count(conn: &mut Commands, aof: bool) -> RedisResult<Counts> {
    let info: String = redis::cmd("INFO").arg("replication").query_async(conn).await?;
    let aof = aof && aof_enabled(&redis::cmd("INFO").arg("persistence").query_async::<String>(conn).await?);
    Ok(Counts::One(Master { replicas: online_replicas(&info), aof }))
}

/// Replicas per slot range, from `CLUSTER SLOTS` (which lists replicas not marked failed), and
/// with `aof` whether each range's master has `appendonly yes`.
async fn cluster_counts(conn: &mut Commands, aof: bool) -> RedisResult<Counts> {
    let slots: Vec<Vec<Value>> = redis::cmd("CLUSTER").arg("SLOTS").query_async(conn).await?;
    let mut ranges = Vec::new();
    for range in &slots {
        let (Some(first), Some(last)) = (range.first().and_then(int), range.get(1).and_then(int)) else {
            continue;
        };
        // [first, last, master, replica...]
        let mut master = Master { replicas: range.len().saturating_sub(3), aof: false };
        if aof {
            master.aof = master_aof(conn, master_of_slot(first)).await?;
        }
        ranges.push((first, last, master));
    }
    Ok(Counts::Ranges(ranges))
}

/// Fails, typed, unless the endpoint runs the wait replica sync sends: `WAIT`, or with `aof`
/// `WAITAOF`, tried with nothing to wait for (`WAIT 0 0`, `WAITAOF 0 0 0` answer at once). An
/// error answer means the endpoint does not have it (a service that forbids it, a renamed
/// command): replica sync must not sync less than it says, nor fail every acquire. No answer at
/// all is a failed connect.
pub(crate) async fn require_waits(mut conn: Commands, aof: bool) -> Result<()> {
    let (name, option, hint) = if aof {
        (
            "WAITAOF",
            "replica_sync_aof",
            "Redis and Valkey have it from 7.2 on: upgrade, or use replica sync without it",
        )
    } else {
        (
            "WAIT",
            "replica_sync",
            "some managed services (ElastiCache Serverless) forbid it: leave replica sync off there",
        )
    };
    let mut probe = redis::cmd(name);
    probe.arg(0).arg(0);
    if aof {
        probe.arg(0);
    }
    match probe.query_async::<Value>(&mut conn).await {
        Ok(_) => Ok(()),
        Err(e) if crate::conn::answered_nothing(&e) => {
            Err(Error::from_redis(&format!("probing for {name} failed"), e))
        }
        Err(_) => {
            let server = server_named(&mut conn).await;
            Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{option} is on, but this endpoint{server} does not run {name} ({hint})"),
            ))
        }
    }
}

fn int(v: &Value) -> Option<u16> {
    match v {
        Value::Int(i) => u16::try_from(*i).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_replies_are_read_by_field() {
        let persistence = "# Persistence\r\nloading:0\r\naof_enabled:1\r\naof_rewrite_in_progress:0\r\n";
        assert!(aof_enabled(persistence));
        assert!(!aof_enabled("# Persistence\r\naof_enabled:0\r\n"));
        assert!(!aof_enabled(""));
        let replication = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n\
            slave0:ip=127.0.0.1,port=7001,state=online,offset=1,lag=0\r\n\
            slave1:ip=127.0.0.1,port=7002,state=wait_bgsave,offset=0,lag=0\r\n";
        assert_eq!(online_replicas(replication), 1);
    }
}
