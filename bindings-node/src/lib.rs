//! The native part of the Node package `rlock`: a thin napi-rs layer over the core crate.
//!
//! Every function here parses its arguments, calls core and maps the result; lock logic lives in
//! core only. The hand-written `rlock.js` wraps these classes into the public API (option
//! objects, `AbortSignal`, `lostSignal`, `withLock`). Errors cross the boundary as napi errors
//! whose message starts with `[RLOCK_<KIND>] `; the wrapper moves that prefix into `err.code`
//! because napi's async bridge only carries its own status codes.

use std::time::Duration;

use napi::bindgen_prelude::{FnArgs, Function, PromiseRaw};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use rlock::{ErrorKind, ListenerId, Released, Ttl};
use tokio_util::sync::CancellationToken;

/// The one mapping of core errors for Node: `[RLOCK_<KIND>] message`, kind in upper snake case
/// (`RLOCK_NOT_HELD`, `RLOCK_TIMEOUT`, ...), so new core kinds get a code without a change here.
fn js_error(e: rlock::Error) -> napi::Error {
    coded(e.kind(), e.message())
}

fn coded(kind: ErrorKind, message: &str) -> napi::Error {
    napi::Error::new(
        Status::GenericFailure,
        format!("[RLOCK_{}] {message}", kind.as_str().to_ascii_uppercase()),
    )
}

fn invalid(message: &str) -> napi::Error {
    coded(ErrorKind::InvalidArgument, message)
}

/// Parses a JS millisecond count. Negative, NaN and infinite values are the caller's mistake;
/// range limits (zero lease, over 100 years) are left to core so every surface agrees.
fn millis(what: &str, ms: f64) -> napi::Result<Duration> {
    if !ms.is_finite() || ms < 0.0 {
        return Err(invalid(&format!("{what} must be a finite number of milliseconds >= 0 (got {ms})")));
    }
    Duration::try_from_secs_f64(ms / 1000.0)
        .map_err(|_| invalid(&format!("{what} is out of range (got {ms} ms)")))
}

fn opt_millis(what: &str, ms: Option<f64>) -> napi::Result<Option<Duration>> {
    ms.map(|m| millis(what, m)).transpose()
}

/// Client settings, all optional; durations in milliseconds (see core's `ClientOptions`).
#[napi(object)]
#[derive(Default)]
pub struct ClientOptions {
    /// Lease of a watchdog-renewed hold; renewed every third of it. Default 30000.
    pub watchdog_timeout_ms: Option<f64>,
    /// Most locks renewed by one script call. Default 100.
    pub renewal_batch_size: Option<u32>,
    /// How long one Redis command may take. Default 3000.
    pub command_timeout_ms: Option<f64>,
    /// How long connecting may take. Default 10000.
    pub connect_timeout_ms: Option<f64>,
    /// Retries of a command after a connection error or timeout. Default 3.
    pub retry_attempts: Option<u32>,
    /// Pause between those retries. Default 1500.
    pub retry_delay_ms: Option<f64>,
    /// How long a waiter waits for its SUBSCRIBE before it falls back to polling. Default 7500.
    pub subscription_timeout_ms: Option<f64>,
    /// Polling interval when pub/sub is unavailable. Default 100.
    pub poll_interval_ms: Option<f64>,
    /// Stop renewing a hold this long after it was acquired. Default: renew until release.
    pub max_hold_ms: Option<f64>,
    /// PEM file of the CA that signed the servers' certificates (`rediss://` URLs and their
    /// cluster/sentinel variants). Default: the system's roots.
    pub tls_ca_file: Option<String>,
    /// Sharded pub/sub on a Redis Cluster. Default: decided as Redisson does (on when the
    /// cluster answers `PUBSUB SHARDNUMSUB`). Ignored off a cluster.
    pub sharded_pubsub: Option<bool>,
    /// Wait after each acquire until a replica has the lock. Default: on for Cluster and
    /// Sentinel URLs, off for a single server (as Redisson).
    pub replica_sync: Option<bool>,
    /// How long one acquire waits for a replica's acknowledgement. Default 1000.
    pub replica_sync_timeout_ms: Option<f64>,
    /// Connections for lock commands to a single server, used in turn (1 to 8). Default 1.
    pub command_connections: Option<u32>,
}

impl ClientOptions {
    fn to_core(&self) -> napi::Result<rlock::ClientOptions> {
        let mut o = rlock::ClientOptions::default();
        if let Some(d) = opt_millis("watchdogTimeoutMs", self.watchdog_timeout_ms)? {
            o = o.with_watchdog_timeout(d);
        }
        if let Some(n) = self.renewal_batch_size {
            o = o.with_renewal_batch_size(n as usize);
        }
        if let Some(d) = opt_millis("commandTimeoutMs", self.command_timeout_ms)? {
            o = o.with_command_timeout(Some(d));
        }
        if let Some(d) = opt_millis("connectTimeoutMs", self.connect_timeout_ms)? {
            o = o.with_connect_timeout(d);
        }
        if let Some(n) = self.retry_attempts {
            o = o.with_retry_attempts(n);
        }
        if let Some(d) = opt_millis("retryDelayMs", self.retry_delay_ms)? {
            o = o.with_retry_delay(d);
        }
        if let Some(d) = opt_millis("subscriptionTimeoutMs", self.subscription_timeout_ms)? {
            o = o.with_subscription_timeout(d);
        }
        if let Some(d) = opt_millis("pollIntervalMs", self.poll_interval_ms)? {
            o = o.with_poll_interval(d);
        }
        if let Some(d) = opt_millis("maxHoldMs", self.max_hold_ms)? {
            o = o.with_max_hold(Some(d));
        }
        if let Some(d) = opt_millis("replicaSyncTimeoutMs", self.replica_sync_timeout_ms)? {
            o = o.with_replica_sync_timeout(d);
        }
        if let Some(n) = self.command_connections {
            o = o.with_command_connections(n as usize);
        }
        Ok(o.with_tls_ca_file(self.tls_ca_file.as_ref().map(std::path::PathBuf::from))
            .with_sharded_pubsub(self.sharded_pubsub)
            .with_replica_sync(self.replica_sync))
    }
}

/// Connects to Redis at `url` and starts the client's watchdog and pub/sub tasks on napi's
/// tokio runtime (core needs a runtime and creates none).
#[napi]
pub async fn connect(url: String, options: Option<ClientOptions>) -> napi::Result<NativeClient> {
    let options = options.unwrap_or_default().to_core()?;
    let client = rlock::Client::connect(&url, options).await.map_err(js_error)?;
    Ok(NativeClient { client, listener: std::sync::Mutex::new(None) })
}

/// A connected core client.
#[napi]
pub struct NativeClient {
    client: rlock::Client,
    /// The lost-hold listener; removing it drops (releases) its threadsafe function.
    listener: std::sync::Mutex<Option<ListenerId>>,
}

#[napi]
impl NativeClient {
    /// A handle on lock `name` with a fresh owner of its own (Node holds belong to handles).
    #[napi]
    pub fn lock(&self, name: String) -> napi::Result<NativeLock> {
        let lock = self.client.lock(&name).map_err(js_error)?;
        Ok(NativeLock { lock, owner: self.client.new_owner() })
    }

    /// Calls `callback(name, owner)` on the JS thread whenever the watchdog loses a hold of this
    /// client. Replaces an earlier callback. The threadsafe function is weak, so it never keeps
    /// the process alive by itself.
    #[napi(ts_args_type = "callback: (name: string, owner: string) => void")]
    pub fn on_lost(&self, callback: Function<FnArgs<(String, String)>, ()>) -> napi::Result<()> {
        // FnArgs spreads the pair into two JS arguments (a bare tuple arrives as one array).
        type Args = FnArgs<(String, String)>;
        let tsfn: ThreadsafeFunction<Args, (), Args, Status, false, true> =
            callback.build_threadsafe_function().callee_handled::<false>().weak::<true>().build()?;
        let id = self.client.on_lost(move |ev| {
            let args = FnArgs::from((ev.name.to_string(), ev.owner.as_str().to_owned()));
            tsfn.call(args, ThreadsafeFunctionCallMode::NonBlocking);
        });
        let old =
            self.listener.lock().map_err(|_| napi::Error::from_reason("listener lock poisoned"))?.replace(id);
        if let Some(old) = old {
            self.client.remove_lost_listener(old);
        }
        Ok(())
    }

    /// Closes the client: stops renewals and pub/sub, fails pending and later calls with
    /// `RLOCK_CLOSED`, and drops the lost-hold callback so nothing keeps the process alive.
    #[napi]
    pub fn close(&self) {
        if let Ok(mut l) = self.listener.lock() {
            if let Some(id) = l.take() {
                self.client.remove_lost_listener(id);
            }
        }
        self.client.close();
    }

    /// Whether `close` was called.
    #[napi(getter)]
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Holds the client tracks (held, or lost and not yet released).
    #[napi]
    pub fn tracked_holds(&self) -> u32 {
        u32::try_from(self.client.tracked_holds()).unwrap_or(u32::MAX)
    }

    /// Lock channels with local waiters (one subscription each).
    #[napi]
    pub fn waited_channels(&self) -> u32 {
        u32::try_from(self.client.waited_channels()).unwrap_or(u32::MAX)
    }

    /// What the URL named: "single", "cluster" or "sentinel".
    #[napi(getter, ts_return_type = "'single' | 'cluster' | 'sentinel'")]
    pub fn topology(&self) -> &'static str {
        self.client.topology().as_str()
    }

    /// Whether waiters use sharded pub/sub (decided at connect).
    #[napi(getter)]
    pub fn sharded_pubsub(&self) -> bool {
        self.client.sharded_pubsub()
    }

    /// Whether acquires wait for a replica (decided at connect).
    #[napi(getter)]
    pub fn replica_sync(&self) -> bool {
        self.client.replica_sync()
    }
}

impl Drop for NativeClient {
    fn drop(&mut self) {
        if let Ok(mut l) = self.listener.lock() {
            if let Some(id) = l.take() {
                self.client.remove_lost_listener(id);
            }
        }
    }
}

/// Cancels one pending acquire: the wrapper calls `cancel()` when the caller's `AbortSignal`
/// fires, which drops the core acquire future (core's acquire is cancel-safe).
#[napi]
pub struct CancelToken {
    token: CancellationToken,
}

#[napi]
impl CancelToken {
    /// A token not yet cancelled.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        CancelToken { token: CancellationToken::new() }
    }

    /// Cancels the acquire this token was passed to (no-op when it already finished).
    #[napi]
    pub fn cancel(&self) {
        self.token.cancel();
    }
}

/// One lock name together with the owner of this handle.
#[napi]
pub struct NativeLock {
    lock: rlock::Lock,
    owner: rlock::Owner,
}

/// Rejection of an acquire cancelled through its token; the wrapper turns it into the
/// signal's `AbortError`.
fn aborted() -> napi::Error {
    napi::Error::new(Status::Cancelled, "[RLOCK_ABORTED] the acquire was aborted")
}

#[napi]
impl NativeLock {
    /// The lock name (its Redis key).
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.lock.name().to_owned()
    }

    /// The owner of this handle as stored in Redis (`<client uuid>:<id>`).
    #[napi(getter)]
    pub fn owner(&self) -> String {
        self.owner.as_str().to_owned()
    }

    /// Waits until held. `waitMs` bounds the wait (then rejects `RLOCK_TIMEOUT`), `leaseMs`
    /// fixes the lease (else the watchdog renews). Cancelling `cancel` drops the core future.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let parsed = opt_millis("waitMs", wait_ms).and_then(|w| Ok((w, opt_millis("leaseMs", lease_ms)?)));
        let (lock, owner, token) = (self.lock.clone(), self.owner.clone(), cancel.token.clone());
        env.spawn_future(async move {
            let (wait, lease) = parsed?;
            let work = async {
                match lock.acquire_guard(&owner, wait, lease).await? {
                    Some(held) => {
                        held.keep();
                        Ok(())
                    }
                    None => Err(rlock::Error::new(
                        ErrorKind::Timeout,
                        format!(
                            "lock '{}' was not acquired within {} ms",
                            lock.name(),
                            wait.map_or(0, |w| w.as_millis())
                        ),
                    )),
                }
            };
            tokio::select! {
                r = work => r.map_err(js_error),
                _ = token.cancelled() => Err(aborted()),
            }
        })
    }

    /// Tries for at most `waitMs` (default 0: try once); resolves whether it is held.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn try_acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let parsed = opt_millis("waitMs", wait_ms).and_then(|w| Ok((w, opt_millis("leaseMs", lease_ms)?)));
        let (lock, owner, token) = (self.lock.clone(), self.owner.clone(), cancel.token.clone());
        env.spawn_future(async move {
            let (wait, lease) = parsed?;
            tokio::select! {
                r = lock.try_acquire(&owner, wait.unwrap_or(Duration::ZERO), lease) => r.map_err(js_error),
                _ = token.cancelled() => Err(aborted()),
            }
        })
    }

    /// Releases one hold level; resolves true when the lock is now free, false when this handle
    /// still holds it (it had re-entered).
    #[napi]
    pub async fn release(&self) -> napi::Result<bool> {
        let r = self.lock.release(&self.owner).await.map_err(js_error)?;
        Ok(matches!(r, Released::Unlocked))
    }

    /// Deletes the lock whoever holds it; resolves whether there was one.
    #[napi]
    pub async fn force_unlock(&self) -> napi::Result<bool> {
        self.lock.force_release().await.map_err(js_error)
    }

    /// Whether anyone holds the lock.
    #[napi]
    pub async fn is_locked(&self) -> napi::Result<bool> {
        self.lock.is_locked().await.map_err(js_error)
    }

    /// Whether this handle holds the lock.
    #[napi]
    pub async fn is_held(&self) -> napi::Result<bool> {
        self.lock.is_held_by(&self.owner).await.map_err(js_error)
    }

    /// How many times this handle holds the lock (0 when it does not).
    #[napi]
    pub async fn hold_count(&self) -> napi::Result<u32> {
        self.lock.hold_count(&self.owner).await.map_err(js_error)
    }

    /// Remaining lease in ms; null when the lock is free, -1 when the key has no expiry (not an
    /// rlock/Redisson lock).
    #[napi]
    pub async fn remaining_ttl(&self) -> napi::Result<Option<f64>> {
        Ok(match self.lock.remaining_ttl().await.map_err(js_error)? {
            Ttl::Absent => None,
            Ttl::NoExpiry => Some(-1.0),
            Ttl::Remaining(d) => Some(d.as_millis() as f64),
        })
    }

    /// Whether the watchdog lost this handle's hold (until `release` is called).
    #[napi]
    pub fn is_lost(&self) -> bool {
        self.lock.is_lost(&self.owner)
    }
}
