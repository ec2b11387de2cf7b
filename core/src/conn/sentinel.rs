//! Sentinel: the master is found through the sentinels and followed across failovers.
//!
//! A monitor task asks a sentinel for the master's address once a second (Redisson's
//! `scanInterval`), and at once when a command fails the way a failover makes commands fail
//! (connection lost or refused, timeout, READONLY from a demoted master). When the address
//! changed, it lets the redis crate find and check the new master (`ROLE`), opens new command,
//! replica-sync and pub/sub connections to it and swaps them in. The pub/sub side then
//! subscribes every channel with waiters again and wakes the waiters, since unlock messages
//! published during the switch went to a connection that is gone.

use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use redis::aio::{ConnectionManager, MultiplexedConnection};
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, RedisResult, TlsMode};
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;

use super::open::{Observe, Opened, Opener, Use};
use super::retry::retry_transient;
use crate::error::{Error, Result};
use crate::url::SentinelTarget;

/// How often the monitor asks a sentinel where the master is.
const SCAN_INTERVAL: Duration = Duration::from_secs(1);

/// The current master's connections, shared by every user of a Sentinel client.
pub(crate) struct Link {
    master: RwLock<Arc<Master>>,
    /// Bumped on every switch to a new master; the pub/sub side watches it.
    epoch: watch::Sender<u64>,
    /// Asks the monitor to look now instead of at its next scan.
    recheck: Notify,
    db: i64,
    /// Opens a master's pub/sub connection again (see [`Link::reopen_pubsub`]).
    opener: Opener,
}

struct Master {
    addr: (String, u16),
    /// What the master's connections were opened with.
    client: redis::Client,
    conns: Opened,
}

impl Link {
    fn current(&self) -> Arc<Master> {
        // A poisoned lock only means a panic elsewhere while swapping an Arc; the value is whole.
        self.master.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The current master's connection for `role`.
    pub(crate) fn connection(&self, role: Use) -> ConnectionManager {
        let m = self.current();
        match (role, &m.conns.sync) {
            (Use::Sync, Some(sync)) => sync.clone(),
            _ => m.conns.commands.clone(),
        }
    }

    /// The current master's pub/sub connection.
    pub(crate) fn pubsub(&self) -> ConnectionManager {
        self.current().conns.pubsub.clone()
    }

    /// Follows master switches (for the pub/sub side).
    pub(crate) fn epochs(&self) -> watch::Receiver<u64> {
        self.epoch.subscribe()
    }

    /// Replaces the current master's pub/sub connection by a new one to the same master (the
    /// pub/sub side found it silent); the caller subscribes its channels again. When the
    /// master changed meanwhile, the switch already brought a new one. Fails when the new
    /// connection cannot be opened.
    pub(crate) async fn reopen_pubsub(&self) -> Result<()> {
        let m = self.current();
        let pubsub = self.opener.open_pubsub(&m.client).await?;
        let mut master = self.master.write().unwrap_or_else(|p| p.into_inner());
        if Arc::ptr_eq(&master, &m) {
            let c = &m.conns;
            let conns =
                Opened { commands: c.commands.clone(), more: c.more.clone(), sync: c.sync.clone(), pubsub };
            *master = Arc::new(Master { addr: m.addr.clone(), client: m.client.clone(), conns });
        }
        Ok(())
    }

    /// The database selected on the master.
    pub(crate) fn db(&self) -> i64 {
        self.db
    }
}

impl Observe for Link {
    /// Looks at a command's outcome and asks the monitor to check the master at once when
    /// the failure is one a failover causes.
    fn observe<T>(self: &Arc<Self>, result: &RedisResult<T>) {
        if let Err(e) = result {
            if e.is_io_error()
                || e.is_connection_refusal()
                || e.is_connection_dropped()
                || e.is_timeout()
                || e.code() == Some("READONLY")
            {
                self.recheck.notify_one();
            }
        }
    }
}

/// The monitor task of a Sentinel client; [`Monitor::run`] follows the master until stopped.
pub(crate) struct Monitor {
    link: Weak<Link>,
    client: SentinelClient,
    service: String,
    opener: Opener,
}

fn addr_of(addr: &ConnectionAddr) -> (String, u16) {
    match addr {
        ConnectionAddr::Tcp(h, p) => (h.clone(), *p),
        ConnectionAddr::TcpTls { host, port, .. } => (host.clone(), *port),
        other => (other.to_string(), 0),
    }
}

/// Finds the master through the sentinels of `target` and connects to it.
pub(crate) async fn connect(target: SentinelTarget, opener: Opener) -> Result<(Arc<Link>, Monitor)> {
    let mut builder =
        SentinelClientBuilder::new(target.sentinels, &target.service, SentinelServerType::Master)
            .map_err(|e| Error::invalid(format!("invalid redis+sentinel configuration ({:?})", e.kind())))?
            .set_client_to_redis_db(target.db);
    if let Some(u) = &target.username {
        builder = builder.set_client_to_redis_username(u);
    }
    if let Some(p) = &target.password {
        builder = builder.set_client_to_redis_password(p);
    }
    if target.tls {
        builder = builder
            .set_client_to_redis_tls_mode(TlsMode::Secure)
            .set_client_to_sentinel_tls_mode(TlsMode::Secure);
        if let Some(c) = target.certs {
            builder =
                builder.set_client_to_redis_certificates(c.clone()).set_client_to_sentinel_certificates(c);
        }
    }
    let client = builder
        .build()
        .map_err(|e| Error::invalid(format!("invalid redis+sentinel configuration ({:?})", e.kind())))?;
    // Mid-failover the sentinels may name no usable master for a moment: retry like a command.
    let lookup = tokio::sync::Mutex::new(client);
    let master = retry_transient(opener.retry_attempts(), opener.retry_delay(), None, || async {
        lookup.lock().await.async_get_client().await.map_err(|e| {
            Error::from_redis(&format!("could not find master '{}' through the sentinels", target.service), e)
        })
    })
    .await?;
    let client = lookup.into_inner();
    let addr = addr_of(master.get_connection_info().addr());
    let conns = opener.open(&master).await?;
    let (epoch, _) = watch::channel(0);
    let link = Arc::new(Link {
        master: RwLock::new(Arc::new(Master { addr, client: master, conns })),
        epoch,
        recheck: Notify::new(),
        db: target.db,
        opener: opener.clone(),
    });
    let monitor = Monitor { link: Arc::downgrade(&link), client, service: target.service, opener };
    Ok((link, monitor))
}

impl Monitor {
    /// Follows the master until `stop` is cancelled or the client is gone.
    pub(crate) async fn run(mut self, stop: CancellationToken) {
        let mut sentinel: Option<MultiplexedConnection> = None;
        loop {
            let Some(link) = self.link.upgrade() else { return };
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = link.recheck.notified() => {}
                _ = tokio::time::sleep(SCAN_INTERVAL) => {}
            }
            let current = link.current().addr.clone();
            drop(link);
            match self.reported_master(&mut sentinel).await {
                Ok(Some(addr)) if addr == current => continue,
                Ok(_) => {}
                Err(e) => {
                    log::debug!("rlock: sentinel query failed, trying another: {e}");
                    sentinel = None;
                    continue;
                }
            }
            if let Err(e) = self.switch(&current).await {
                log::warn!("rlock: could not switch to the new master of '{}' yet: {e}", self.service);
            }
        }
    }

    /// What a sentinel says the master's address is.
    async fn reported_master(
        &mut self,
        conn: &mut Option<MultiplexedConnection>,
    ) -> RedisResult<Option<(String, u16)>> {
        if conn.is_none() {
            let client = self.client.async_get_sentinel_client().await?;
            let config = redis::AsyncConnectionConfig::new()
                .set_connection_timeout(Some(SCAN_INTERVAL))
                .set_response_timeout(Some(SCAN_INTERVAL));
            *conn = Some(client.get_multiplexed_async_connection_with_config(&config).await?);
        }
        let Some(c) = conn.as_mut() else { return Ok(None) };
        let reply: Option<(String, u16)> =
            redis::cmd("SENTINEL").arg("get-master-addr-by-name").arg(&self.service).query_async(c).await?;
        Ok(reply)
    }

    /// Finds the master (checked with ROLE), and when it moved, connects and swaps.
    async fn switch(&mut self, old: &(String, u16)) -> Result<()> {
        let master = self
            .client
            .async_get_client()
            .await
            .map_err(|e| Error::from_redis("master lookup through the sentinels failed", e))?;
        let addr = addr_of(master.get_connection_info().addr());
        if &addr == old {
            return Ok(());
        }
        let conns = self.opener.open(&master).await?;
        let Some(link) = self.link.upgrade() else { return Ok(()) };
        log::warn!(
            "rlock: master '{}' moved from {}:{} to {}:{}; following it",
            self.service,
            old.0,
            old.1,
            addr.0,
            addr.1
        );
        *link.master.write().unwrap_or_else(|p| p.into_inner()) =
            Arc::new(Master { addr, client: master, conns });
        link.epoch.send_modify(|e| *e += 1);
        Ok(())
    }
}
