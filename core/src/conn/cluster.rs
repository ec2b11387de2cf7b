//! Redis Cluster connections that replace themselves when they stop answering.
//!
//! The `redis` crate's cluster client routes by slot, follows MOVED/ASK, refreshes its slot
//! map and resubscribes after topology changes; rlock uses all of that. What it adds is a
//! guard: in redis 1.8.1 a slot refresh during a failover can leave a cluster connection where
//! every request times out, for good (seen in `tests/cluster.rs`: after a master was killed,
//! one client's connection never answered again while a fresh one worked). A lock client whose
//! renewals stop getting through loses every hold, so: when requests keep timing out and none
//! got any answer (a reply or an error) for a whole command timeout, the connection is rebuilt
//! from the seed nodes (a fresh slot map) and swapped in. The pub/sub side watches the swaps
//! and subscribes its channels again on the new connection.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::RedisResult;
use tokio::sync::watch;
use tokio::time::Instant;

use super::open::Observe;
use crate::error::{Error, Result};

/// One cluster connection and how to make another.
pub(crate) struct ClusterLink {
    client: ClusterClient,
    conn: RwLock<ClusterConnection>,
    /// When a request last got an answer (a reply, or any error but a timeout).
    answered: Mutex<Instant>,
    rebuilding: AtomicBool,
    /// How long without any answer, while requests time out, counts as stuck.
    stuck_after: Duration,
    connect_timeout: Duration,
    /// Bumped on every swap; the pub/sub side watches it.
    epoch: watch::Sender<u64>,
    what: &'static str,
    /// Where rebuilds run (the runtime the client was connected on).
    handle: tokio::runtime::Handle,
}

impl ClusterLink {
    /// Connects with `client`; `stuck_after` is normally the command timeout. Runs inside the
    /// client's runtime (rebuilds are spawned there).
    pub(crate) async fn connect(
        client: ClusterClient,
        stuck_after: Duration,
        connect_timeout: Duration,
        what: &'static str,
    ) -> Result<Arc<ClusterLink>> {
        let conn = tokio::time::timeout(connect_timeout, client.get_async_connection())
            .await
            .map_err(|_| {
                Error::new(crate::error::ErrorKind::Timeout, format!("{what}: connecting timed out"))
            })?
            .map_err(|e| Error::from_redis(what, e))?;
        let (epoch, _) = watch::channel(0);
        Ok(Arc::new(ClusterLink {
            client,
            conn: RwLock::new(conn),
            answered: Mutex::new(Instant::now()),
            rebuilding: AtomicBool::new(false),
            stuck_after,
            connect_timeout,
            epoch,
            what,
            handle: tokio::runtime::Handle::current(),
        }))
    }

    /// The current connection (cheap: a handle).
    pub(crate) fn current(&self) -> ClusterConnection {
        // A poisoned lock only means a panic elsewhere while swapping a handle.
        self.conn.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Follows swaps (for the pub/sub side).
    pub(crate) fn epochs(&self) -> watch::Receiver<u64> {
        self.epoch.subscribe()
    }

    /// Connects anew from the seed nodes and swaps the new connection in.
    async fn reconnect(&self) -> Result<()> {
        let conn = tokio::time::timeout(self.connect_timeout, self.client.get_async_connection())
            .await
            .map_err(|_| {
                Error::new(
                    crate::error::ErrorKind::Timeout,
                    format!("reconnecting the {} timed out", self.what),
                )
            })?
            .map_err(|e| Error::from_redis(&format!("reconnecting the {} failed", self.what), e))?;
        *self.conn.write().unwrap_or_else(|p| p.into_inner()) = conn;
        *self.answered.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        self.epoch.send_modify(|e| *e += 1);
        Ok(())
    }

    async fn rebuild(self: Arc<Self>) {
        log::warn!("rlock: the {} stopped answering; reconnecting to the cluster", self.what);
        if let Err(e) = self.reconnect().await {
            log::warn!("rlock: {e}");
        }
        self.rebuilding.store(false, Ordering::Release);
    }

    /// Rebuilds the connection now and waits for it (the pub/sub side found it silent while
    /// nothing else used it). When a rebuild is already under way, returns at once: that one
    /// bumps the epoch when it is done.
    pub(crate) async fn rebuild_now(&self) -> Result<()> {
        if self.rebuilding.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let result = self.reconnect().await;
        self.rebuilding.store(false, Ordering::Release);
        result
    }
}

impl Observe for ClusterLink {
    /// Records a request's outcome; starts a rebuild when the connection looks stuck.
    fn observe<T>(self: &Arc<Self>, result: &RedisResult<T>) {
        let now = Instant::now();
        let mut answered = self.answered.lock().unwrap_or_else(|p| p.into_inner());
        match result {
            Err(e) if e.is_timeout() => {
                if now.saturating_duration_since(*answered) >= self.stuck_after
                    && !self.rebuilding.swap(true, Ordering::AcqRel)
                {
                    drop(answered);
                    self.handle.spawn(self.clone().rebuild());
                }
            }
            _ => *answered = now,
        }
    }
}
