//! Client options and their validation.

use std::time::Duration;

use crate::error::{Error, Result};

/// Settings of one [`Client`](crate::Client). Build with [`ClientOptions::default`] and the
/// `with_*` methods; every duration is checked when the client connects.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Lease of a watchdog-renewed hold; the watchdog renews every third of it. Default 30 s
    /// (Redisson's `lockWatchdogTimeout`).
    pub watchdog_timeout: Duration,
    /// Most locks renewed by one script call. Default 100.
    pub renewal_batch_size: usize,
    /// How long one Redis command may take before it fails with
    /// [`ErrorKind::Timeout`](crate::ErrorKind::Timeout). `None` waits forever. Default 3 s.
    pub command_timeout: Option<Duration>,
    /// How long connecting (or reconnecting) may take. Default 10 s.
    pub connect_timeout: Duration,
    /// How often a failed command (connection error or timeout) is retried before the error is
    /// returned. Default 3.
    pub retry_attempts: u32,
    /// Pause between those retries. Default 1.5 s (Redisson's `retryInterval`).
    pub retry_delay: Duration,
    /// How long a waiter waits for its SUBSCRIBE to be confirmed before it falls back to
    /// polling. Default 7.5 s (Redisson's `subscriptionTimeout`).
    pub subscription_timeout: Duration,
    /// With pub/sub unavailable, how often a waiter re-tries the lock (it never waits past the
    /// holder's TTL either). Default 100 ms.
    pub poll_interval: Duration,
    /// When set, the watchdog stops renewing a hold this long after it was acquired, so the
    /// lease runs out at most one watchdog timeout later. Default `None` (renew until release).
    pub max_hold: Option<Duration>,
    /// PEM file of the CA that signed the server's certificate, for `rediss://` URLs (and the
    /// `rediss+cluster://` / `rediss+sentinel://` variants). `None` trusts the system's roots.
    pub tls_ca_file: Option<std::path::PathBuf>,
    /// Sharded pub/sub (SSUBSCRIBE / SPUBLISH) on a Redis Cluster. `None` (the default) decides
    /// as Redisson does: on when the cluster answers `PUBSUB SHARDNUMSUB` (Redis 7+), else off.
    /// Every client sharing locks must make the same choice. Ignored off a cluster: single
    /// servers and Sentinel setups always use classic pub/sub, as Redisson does.
    pub sharded_pubsub: Option<bool>,
    /// After each acquire, `WAIT` until at least one replica has the lock, and undo and retry
    /// the acquire when none acknowledged within [`replica_sync_timeout`](Self::replica_sync_timeout).
    /// `None` (the default) decides as Redisson does: on for Cluster and Sentinel URLs, off
    /// for a single server. Masters without connected replicas are never waited on. This
    /// narrows, but does not close, the window in which a failover loses a fresh hold.
    pub replica_sync: Option<bool>,
    /// How long one acquire waits for a replica's acknowledgement. Default 1 s (Redisson's).
    pub replica_sync_timeout: Duration,
    /// Connections for lock commands to a single server, used in turn. Default 1: one
    /// multiplexed connection already pipelines concurrent requests. With 2, the client
    /// prepares one batch while Redis works on the other, which raises pairs/s with tens of
    /// concurrent owners (see bench/README.md); more than 2 makes batches smaller and costs Redis
    /// more per command. 1 to 8. Ignored for Cluster and Sentinel URLs.
    pub command_connections: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            watchdog_timeout: Duration::from_secs(30),
            renewal_batch_size: 100,
            command_timeout: Some(Duration::from_secs(3)),
            connect_timeout: Duration::from_secs(10),
            retry_attempts: 3,
            retry_delay: Duration::from_millis(1500),
            subscription_timeout: Duration::from_millis(7500),
            poll_interval: Duration::from_millis(100),
            max_hold: None,
            tls_ca_file: None,
            sharded_pubsub: None,
            replica_sync: None,
            replica_sync_timeout: Duration::from_secs(1),
            command_connections: 1,
        }
    }
}

/// The longest duration rlock accepts anywhere (about 292 million years would overflow Redis'
/// millisecond arithmetic long before; we cap at 100 years).
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl ClientOptions {
    /// Sets [`watchdog_timeout`](Self::watchdog_timeout).
    pub fn with_watchdog_timeout(mut self, d: Duration) -> Self {
        self.watchdog_timeout = d;
        self
    }
    /// Sets [`renewal_batch_size`](Self::renewal_batch_size).
    pub fn with_renewal_batch_size(mut self, n: usize) -> Self {
        self.renewal_batch_size = n;
        self
    }
    /// Sets [`command_timeout`](Self::command_timeout).
    pub fn with_command_timeout(mut self, d: Option<Duration>) -> Self {
        self.command_timeout = d;
        self
    }
    /// Sets [`connect_timeout`](Self::connect_timeout).
    pub fn with_connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = d;
        self
    }
    /// Sets [`retry_attempts`](Self::retry_attempts).
    pub fn with_retry_attempts(mut self, n: u32) -> Self {
        self.retry_attempts = n;
        self
    }
    /// Sets [`retry_delay`](Self::retry_delay).
    pub fn with_retry_delay(mut self, d: Duration) -> Self {
        self.retry_delay = d;
        self
    }
    /// Sets [`subscription_timeout`](Self::subscription_timeout).
    pub fn with_subscription_timeout(mut self, d: Duration) -> Self {
        self.subscription_timeout = d;
        self
    }
    /// Sets [`poll_interval`](Self::poll_interval).
    pub fn with_poll_interval(mut self, d: Duration) -> Self {
        self.poll_interval = d;
        self
    }
    /// Sets [`max_hold`](Self::max_hold).
    pub fn with_max_hold(mut self, d: Option<Duration>) -> Self {
        self.max_hold = d;
        self
    }

    /// Sets [`tls_ca_file`](Self::tls_ca_file).
    pub fn with_tls_ca_file(mut self, path: Option<std::path::PathBuf>) -> Self {
        self.tls_ca_file = path;
        self
    }

    /// Sets [`sharded_pubsub`](Self::sharded_pubsub).
    pub fn with_sharded_pubsub(mut self, on: Option<bool>) -> Self {
        self.sharded_pubsub = on;
        self
    }

    /// Sets [`replica_sync`](Self::replica_sync).
    pub fn with_replica_sync(mut self, on: Option<bool>) -> Self {
        self.replica_sync = on;
        self
    }

    /// Sets [`replica_sync_timeout`](Self::replica_sync_timeout).
    pub fn with_replica_sync_timeout(mut self, d: Duration) -> Self {
        self.replica_sync_timeout = d;
        self
    }

    /// Sets [`command_connections`](Self::command_connections).
    pub fn with_command_connections(mut self, n: usize) -> Self {
        self.command_connections = n;
        self
    }

    /// Checks every setting; the error names the bad one.
    pub fn validate(&self) -> Result<()> {
        positive_ms("watchdog_timeout", self.watchdog_timeout)?;
        if self.watchdog_timeout < Duration::from_millis(30) {
            return Err(Error::invalid("watchdog_timeout must be at least 30 ms"));
        }
        if self.renewal_batch_size == 0 || self.renewal_batch_size > 10_000 {
            return Err(Error::invalid("renewal_batch_size must be between 1 and 10000"));
        }
        if let Some(t) = self.command_timeout {
            positive_ms("command_timeout", t)?;
        }
        positive_ms("connect_timeout", self.connect_timeout)?;
        if self.retry_attempts > 1000 {
            return Err(Error::invalid("retry_attempts must be at most 1000"));
        }
        check_duration("retry_delay", self.retry_delay)?;
        positive_ms("subscription_timeout", self.subscription_timeout)?;
        positive_ms("poll_interval", self.poll_interval)?;
        if let Some(m) = self.max_hold {
            positive_ms("max_hold", m)?;
        }
        if !(1..=8).contains(&self.command_connections) {
            return Err(Error::invalid("command_connections must be between 1 and 8"));
        }
        // WAIT takes whole milliseconds; 0 would mean "wait forever".
        positive_ms("replica_sync_timeout", self.replica_sync_timeout)?;
        Ok(())
    }
}

/// Checks a duration is at most [`MAX_DURATION`].
pub(crate) fn check_duration(what: &str, d: Duration) -> Result<()> {
    if d > MAX_DURATION {
        return Err(Error::invalid(format!("{what} is too long ({d:?}); the limit is 100 years")));
    }
    Ok(())
}

/// Checks a duration is at least 1 ms and at most [`MAX_DURATION`]; returns whole milliseconds.
pub(crate) fn positive_ms(what: &str, d: Duration) -> Result<u64> {
    check_duration(what, d)?;
    let ms = d.as_millis();
    if ms == 0 {
        return Err(Error::invalid(format!("{what} must be at least 1 ms (got {d:?})")));
    }
    Ok(ms as u64)
}
