//! The native part of the Node package `rlock`: a thin napi-rs layer over the core crate.
//!
//! Every function here parses its arguments, calls core and maps the result; lock logic lives in
//! core only. The hand-written `rlock.js` wraps these classes into the public API (option
//! objects, `AbortSignal`, `lostSignal`, `withLock`). Errors cross the boundary as napi errors
//! whose message starts with `[RLOCK_<KIND>] `; the wrapper moves that prefix into `err.code`
//! because napi's async bridge only carries its own status codes.

mod local;
pub mod red_lock;

use std::time::Duration;

use napi::bindgen_prelude::{FnArgs, Function, PromiseRaw};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use rlock::{ErrorKind, ListenerId, Ttl};
use tokio_util::sync::CancellationToken;

/// The one mapping of core errors for Node: `[RLOCK_<KIND>] message`, kind in upper snake case
/// (`RLOCK_NOT_HELD`, `RLOCK_TIMEOUT`, ...), so new core kinds get a code without a change here.
fn js_error(e: rlock::Error) -> napi::Error {
    coded(e.kind(), e.message())
}

fn coded(kind: ErrorKind, message: &str) -> napi::Error {
    napi::Error::new(Status::GenericFailure, format!("[{}] {message}", kind.code_name()))
}

fn invalid(message: &str) -> napi::Error {
    coded(ErrorKind::InvalidArgument, message)
}

/// Milliseconds given by JS as a `Duration`, checked by core (every surface agrees).
fn millis(what: &str, ms: f64) -> napi::Result<Duration> {
    rlock::surface::duration_arg(rlock::surface::Surface::Node, what, ms).map_err(js_error)
}

fn opt_millis(what: &str, ms: Option<f64>) -> napi::Result<Option<Duration>> {
    ms.map(|m| millis(what, m)).transpose()
}

/// Client options from a JS object, set by name through core (which knows every option, its
/// type and its range; durations in milliseconds).
fn client_options(
    options: Option<serde_json::Map<String, serde_json::Value>>,
) -> napi::Result<rlock::ClientOptions> {
    use serde_json::Value;
    let mut o = rlock::ClientOptions::default();
    for (key, value) in options.into_iter().flatten() {
        let value = match &value {
            Value::Null => rlock::surface::OptionValue::Unset,
            Value::Bool(b) => rlock::surface::OptionValue::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => rlock::surface::OptionValue::Int(i),
                None => rlock::surface::OptionValue::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => rlock::surface::OptionValue::Str(s),
            _ => return Err(invalid(&format!("option {key} must be a number, boolean, string or null"))),
        };
        o.set(rlock::surface::Surface::Node, &key, value).map_err(js_error)?;
    }
    Ok(o)
}

/// Connects to Redis at `url` (`undefined`: `redisUrlEnv`, the runtime's `process.env.REDIS_URL`,
/// else `redis://127.0.0.1:6379`) and starts the client's watchdog and pub/sub tasks on napi's
/// tokio runtime (core needs a runtime and creates none).
#[napi(
    ts_args_type = "url?: string | undefined | null, options?: Record<string, unknown> | undefined | null, redisUrlEnv?: string | undefined | null"
)]
pub async fn connect(
    url: Option<String>,
    options: Option<serde_json::Map<String, serde_json::Value>>,
    redis_url_env: Option<String>,
) -> napi::Result<NativeClient> {
    let options = client_options(options)?;
    let url = url.unwrap_or_else(|| rlock::default_url_from(redis_url_env));
    let client = rlock::Client::connect(&url, options).await.map_err(js_error)?;
    Ok(NativeClient { client })
}

/// The rlock version, "MAJOR.MINOR.PATCH" (the workspace version, Cargo.toml).
#[napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// Every error code (`RLOCK_NOT_HELD`, ...), from core's one list of error kinds.
#[napi]
pub fn error_codes() -> Vec<String> {
    rlock::ErrorKind::ALL.iter().map(|k| k.code_name()).collect()
}

/// Tells the addon which JS runtime loaded it: `'node'`, `'bun'`, `'deno'` or another name
/// (`rlock.js` calls it once at load). Off Node, calls skip the event-loop-polled local link,
/// which needs Node's libuv, and use the client's shared connection.
#[napi]
pub fn set_runtime(name: String) {
    local::set_runtime(&name);
}

/// The option names core knows, in Node spelling (checked against the `.d.ts` by the tests).
#[napi]
pub fn option_names() -> Vec<String> {
    rlock::surface::OPTIONS.iter().map(|o| o.spelling(rlock::surface::Surface::Node)).collect()
}

/// A connected core client.
#[napi]
pub struct NativeClient {
    client: rlock::Client,
}

#[napi]
impl NativeClient {
    /// A handle on lock `name` of `kind` (`'lock'`, `'fenced'` or `'fair'`; default `'lock'`)
    /// with a fresh owner of its own (Node holds belong to handles).
    #[napi(ts_args_type = "name: string, kind?: 'lock' | 'fenced' | 'fair'")]
    pub fn lock(&self, env: &Env, name: String, kind: Option<String>) -> napi::Result<NativeLock> {
        let c = &self.client;
        local::link(env, c)?;
        let lock = match kind.as_deref() {
            None | Some("lock") => c.lock(&name),
            Some("fenced") => c.fenced_lock(&name).map(|f| f.lock().clone()),
            Some("fair") => c.fair_lock(&name),
            Some(k) => {
                return Err(js_error(rlock::Error::new(
                    rlock::ErrorKind::InvalidArgument,
                    format!("unknown lock kind '{k}'"),
                )))
            }
        }
        .map_err(js_error)?;
        Ok(NativeLock { lock, owner: c.new_owner() })
    }

    /// The read and write sides of read-write lock `name`, sharing one fresh owner (so the
    /// writer may downgrade to a read hold).
    #[napi]
    pub fn read_write_lock(&self, env: &Env, name: String) -> napi::Result<Vec<NativeLock>> {
        local::link(env, &self.client)?;
        let rw = self.client.read_write_lock(&name).map_err(js_error)?;
        let owner = self.client.new_owner();
        Ok(vec![
            NativeLock { lock: rw.read_lock(), owner: owner.clone() },
            NativeLock { lock: rw.write_lock(), owner },
        ])
    }

    /// A handle on the permit-expirable semaphore `name`.
    #[napi]
    pub fn permit_expirable_semaphore(&self, env: &Env, name: String) -> napi::Result<NativePermitSemaphore> {
        local::link(env, &self.client)?;
        Ok(NativePermitSemaphore { sem: self.client.permit_expirable_semaphore(&name).map_err(js_error)? })
    }

    /// A handle on the semaphore `name`.
    #[napi]
    pub fn semaphore(&self, env: &Env, name: String) -> napi::Result<NativeSemaphore> {
        local::link(env, &self.client)?;
        Ok(NativeSemaphore { sem: self.client.semaphore(&name).map_err(js_error)? })
    }

    /// A handle on the count-down latch `name`.
    #[napi]
    pub fn count_down_latch(&self, env: &Env, name: String) -> napi::Result<NativeCountDownLatch> {
        local::link(env, &self.client)?;
        Ok(NativeCountDownLatch { latch: self.client.count_down_latch(&name).map_err(js_error)? })
    }

    /// What lives under `name` (core `Client::describe`), as core's JSON text (`rlock.js`
    /// parses it).
    #[napi]
    pub async fn describe(&self, name: String) -> napi::Result<String> {
        self.client.describe(&name).await.map(|d| rlock::surface::to_json(&d)).map_err(js_error)
    }

    /// Names of primitives matching `pattern` (core `Client::list`; at most `limit`, a whole
    /// number from 1), as core's JSON text.
    #[napi]
    pub async fn list(&self, pattern: Option<String>, limit: Option<f64>) -> napi::Result<String> {
        let limit = match limit {
            Some(n) if !(n.is_finite() && n.fract() == 0.0 && n >= 1.0) => {
                return Err(invalid(&format!("limit must be a whole number from 1 (got {n})")))
            }
            Some(n) => Some(n as usize),
            None => None,
        };
        self.client
            .list(pattern.as_deref(), limit)
            .await
            .map(|l| rlock::surface::to_json(&l))
            .map_err(js_error)
    }

    /// Closes the client: stops renewals and pub/sub and fails pending and later calls with
    /// `RLOCK_CLOSED`.
    #[napi]
    pub fn close(&self) {
        self.client.close();
    }

    /// Whether `close` was called.
    #[napi(getter)]
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Calls `callback(name, kind, owner, reason, permitId)` (on the JS thread) whenever this
    /// client's watchdog loses any of its holds; returns the listener's id.
    #[napi(
        ts_args_type = "callback: (name: string, kind: string, owner: string, reason: string, permitId: string | null) => void"
    )]
    pub fn on_lost(&self, callback: LostCallback) -> napi::Result<f64> {
        Ok(self.client.on_lost(rlock::LostFilter::all(), lost_listener(callback)?).into_raw() as f64)
    }

    /// Removes a listener added with `onLost`; false when it was already removed.
    #[napi]
    pub fn remove_lost_listener(&self, id: f64) -> bool {
        self.client.remove_lost_listener(ListenerId::from_raw(id as u64))
    }

    /// The client's figures as JSON (core's `Stats`); `Client.stats()` parses it.
    #[napi]
    pub fn stats_json(&self) -> String {
        self.client.stats().to_json()
    }

    /// The client's figures in the Prometheus text exposition format.
    #[napi]
    pub fn prometheus_text(&self) -> String {
        self.client.prometheus_text()
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

/// Keeps the hold an acquire took; its fencing token (from the acquire's own reply) as a JS
/// number, for a fenced lock (tokens stay below 2^53: one INCR per acquire).
fn kept_token(held: rlock::Guard) -> Option<f64> {
    let token = held.token().map(|t| t as f64);
    held.keep();
    token
}

/// Runs a core call until `token` is cancelled: then the core future is dropped (core calls are
/// cancel-safe) and the call rejects `[RLOCK_ABORTED]`, which the wrapper turns into the
/// signal's `AbortError`.
async fn cancellable<T>(
    token: &CancellationToken,
    call: impl std::future::Future<Output = rlock::Result<T>>,
) -> napi::Result<T> {
    tokio::select! {
        r = call => r.map_err(js_error),
        _ = token.cancelled() => Err(napi::Error::new(Status::Cancelled, "[RLOCK_ABORTED] the acquire was aborted")),
    }
}

#[napi]
impl NativeLock {
    /// The lock name (its Redis key).
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.lock.name().to_owned()
    }

    /// Which lock of the family: `'lock'`, `'fenced'`, `'read'`, `'write'` or `'fair'`.
    #[napi(getter, ts_return_type = "'lock' | 'fenced' | 'read' | 'write' | 'fair'")]
    pub fn kind(&self) -> &'static str {
        self.lock.kind()
    }

    /// The owner of this handle as stored in Redis (`<client uuid>:<id>`).
    #[napi(getter)]
    pub fn owner(&self) -> String {
        self.owner.as_str().to_owned()
    }

    /// Waits until held. `waitMs` bounds the wait (then rejects `RLOCK_NOT_ACQUIRED`), `leaseMs`
    /// fixes the lease (else the watchdog renews). Cancelling `cancel` drops the core future.
    /// Resolves a fenced lock's new token (from the acquire's own reply), else null.
    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, Option<f64>>> {
        let parsed = opt_millis("waitMs", wait_ms).and_then(|w| Ok((w, opt_millis("leaseMs", lease_ms)?)));
        let (lock, owner, token) = (self.lock.clone(), self.owner.clone(), cancel.token.clone());
        local::spawn(env, async move {
            let (wait, lease) = parsed?;
            let work = async {
                match lock.acquire_guard(&owner, wait, lease).await? {
                    Some(held) => Ok(kept_token(held)),
                    None => Err(rlock::Error::not_acquired(format!("lock '{}'", lock.name()), wait)),
                }
            };
            cancellable(&token, work).await
        })
    }

    /// Tries for at most `waitMs` (default 0: try once); resolves null when not held, else the
    /// fenced lock's new token (from the acquire's own reply), 0 for a lock that is not fenced.
    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn try_acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, Option<f64>>> {
        let parsed = opt_millis("waitMs", wait_ms).and_then(|w| Ok((w, opt_millis("leaseMs", lease_ms)?)));
        let (lock, owner, token) = (self.lock.clone(), self.owner.clone(), cancel.token.clone());
        local::spawn(env, async move {
            let (wait, lease) = parsed?;
            let work = async {
                let got = lock.acquire_guard(&owner, Some(wait.unwrap_or(Duration::ZERO)), lease).await?;
                Ok(got.map(|held| kept_token(held).unwrap_or(0.0)))
            };
            cancellable(&token, work).await
        })
    }

    /// Releases one hold level; resolves true when the lock is now free, false when this handle
    /// still holds it (it had re-entered).
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>> {
        let (lock, owner) = (self.lock.clone(), self.owner.clone());
        local::spawn(env, async move { Ok(lock.release(&owner).await.map_err(js_error)?.is_unlocked()) })
    }

    /// Deletes the lock whoever holds it; resolves whether there was one.
    #[napi]
    pub async fn force_unlock(&self) -> napi::Result<bool> {
        self.lock.force_unlock().await.map_err(js_error)
    }

    /// Whether anyone holds the lock.
    #[napi]
    pub async fn is_locked(&self) -> napi::Result<bool> {
        self.lock.is_locked().await.map_err(js_error)
    }

    /// Whether this handle holds the lock.
    #[napi]
    pub async fn is_held(&self) -> napi::Result<bool> {
        self.lock.is_held(&self.owner).await.map_err(js_error)
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

    /// For a fenced lock: this handle's latest fencing token while it holds the lock, else null.
    #[napi]
    pub fn token(&self) -> Option<f64> {
        self.lock.token_of(&self.owner).map(|t| t as f64)
    }

    /// Whether the watchdog lost this handle's hold (until `release` is called).
    #[napi]
    pub fn is_lost(&self) -> bool {
        self.lock.is_lost(&self.owner)
    }

    /// Calls `callback(name, kind, owner, reason, permitId)` on the JS thread when the watchdog loses this
    /// handle's hold (core routes the event to this handle's owner). Returns the listener id
    /// for `removeLostListener`. The threadsafe function is weak, so it never keeps
    /// the process alive by itself.
    #[napi(
        ts_args_type = "callback: (name: string, kind: string, owner: string, reason: string, permitId: string | null) => void"
    )]
    pub fn on_lost(&self, callback: LostCallback) -> napi::Result<f64> {
        Ok(self.lock.on_lost(Some(&self.owner), lost_listener(callback)?).into_raw() as f64)
    }

    /// Removes a listener added with `onLost` (dropping its threadsafe function); false when it
    /// was already removed.
    #[napi]
    pub fn remove_lost_listener(&self, id: f64) -> bool {
        self.lock.remove_lost_listener(ListenerId::from_raw(id as u64))
    }
}

/// The fields of a lost-hold event, in order: name, kind, owner, reason, permit id (null except
/// for a permit). FnArgs spreads the tuple into JS arguments (a bare tuple arrives as one array).
type LostArgs = FnArgs<(String, &'static str, String, &'static str, Option<String>)>;

/// A JS lost-hold callback taking [`LostArgs`].
type LostCallback<'a> = Function<'a, LostArgs, ()>;

/// A core lost-hold listener that calls `callback` on the JS thread. The threadsafe function
/// is weak, so it never keeps the process alive by itself.
fn lost_listener(
    callback: LostCallback<'_>,
) -> napi::Result<impl Fn(&rlock::LostEvent) + Send + Sync + 'static> {
    let tsfn: ThreadsafeFunction<LostArgs, (), LostArgs, Status, false, true> =
        callback.build_threadsafe_function().callee_handled::<false>().weak::<true>().build()?;
    Ok(move |ev: &rlock::LostEvent| {
        let args = FnArgs::from((
            ev.name.to_string(),
            ev.kind,
            ev.owner.as_str().to_owned(),
            ev.reason.as_str(),
            ev.permit_id.as_deref().map(str::to_owned),
        ));
        tsfn.call(args, ThreadsafeFunctionCallMode::NonBlocking);
    })
}

/// A whole number given by JS (exact up to 2^53).
fn whole(what: &str, n: f64) -> napi::Result<i64> {
    if n.is_finite() && n.fract() == 0.0 && n.abs() <= 9.007_199_254_740_991e15 {
        Ok(n as i64)
    } else {
        Err(invalid(&format!("{what} must be a whole number (got {n})")))
    }
}

/// A count of permits given by JS, at least `min` (core checks the range).
fn permits_arg(what: &str, n: f64, min: u64) -> napi::Result<u64> {
    rlock::surface::count_arg(what, whole(what, n)?, min).map_err(js_error)
}

/// A semaphore (core `rlock::Semaphore`): permits are not owned.
#[napi]
pub struct NativeSemaphore {
    sem: rlock::Semaphore,
}

#[napi]
impl NativeSemaphore {
    /// The semaphore name (its Redis key).
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.sem.name().to_owned()
    }

    /// Sets the permits when the semaphore does not exist (expiring after `ttlMs` when given);
    /// resolves whether it was set.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn try_set_permits<'env>(
        &self,
        env: &'env Env,
        permits: f64,
        ttl_ms: Option<f64>,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let parsed = permits_arg("permits", permits, 0).and_then(|p| Ok((p, opt_millis("ttlMs", ttl_ms)?)));
        let sem = self.sem.clone();
        local::spawn(env, async move {
            let (n, ttl) = parsed?;
            sem.try_set_permits(n, ttl).await.map_err(js_error)
        })
    }

    /// Takes `permits`, waiting at most `waitMs` when given (then rejects
    /// `RLOCK_NOT_ACQUIRED`, with nothing taken); resolves `true`. With `orFalse` the run-out
    /// wait resolves `false` instead. Cancelling `cancel` takes nothing.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        permits: f64,
        wait_ms: Option<f64>,
        or_false: bool,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let parsed = permits_arg("permits", permits, 1).and_then(|p| Ok((p, opt_millis("waitMs", wait_ms)?)));
        let (sem, token) = (self.sem.clone(), cancel.token.clone());
        local::spawn(env, async move {
            let (n, wait) = parsed?;
            let work = async {
                match sem.acquire_guard(n, wait).await? {
                    Some(p) => {
                        p.keep();
                        Ok(true)
                    }
                    None if or_false => Ok(false),
                    None => Err(rlock::Error::not_acquired(
                        format!("{n} permit(s) of semaphore '{}'", sem.name()),
                        wait,
                    )),
                }
            };
            cancellable(&token, work).await
        })
    }

    /// Gives back `permits`; resolves the new count.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn release<'env>(&self, env: &'env Env, permits: f64) -> napi::Result<PromiseRaw<'env, f64>> {
        let parsed = permits_arg("permits", permits, 1);
        let sem = self.sem.clone();
        local::spawn(env, async move { Ok(sem.release(parsed?).await.map_err(js_error)? as f64) })
    }

    /// The available permits (0 when the semaphore does not exist).
    #[napi]
    pub async fn available_permits(&self) -> napi::Result<f64> {
        Ok(self.sem.available_permits().await.map_err(js_error)? as f64)
    }

    /// Adds `n` permits (negative removes); resolves the new count.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn add_permits<'env>(&self, env: &'env Env, n: f64) -> napi::Result<PromiseRaw<'env, f64>> {
        let parsed = whole("n", n);
        let sem = self.sem.clone();
        local::spawn(env, async move { Ok(sem.add_permits(parsed?).await.map_err(js_error)? as f64) })
    }

    /// Takes every available permit; resolves how many there were.
    #[napi]
    pub async fn drain_permits(&self) -> napi::Result<f64> {
        Ok(self.sem.drain_permits().await.map_err(js_error)? as f64)
    }
}

/// A permit-expirable semaphore (core `rlock::PermitExpirableSemaphore`): permits with ids.
#[napi]
pub struct NativePermitSemaphore {
    sem: rlock::PermitExpirableSemaphore,
}

#[napi]
impl NativePermitSemaphore {
    /// The semaphore name (the Redis key of its count).
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.sem.name().to_owned()
    }

    /// Sets the permits when the semaphore does not exist (expiring after `ttlMs` when given);
    /// resolves whether it was set.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn try_set_permits<'env>(
        &self,
        env: &'env Env,
        permits: f64,
        ttl_ms: Option<f64>,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let parsed = permits_arg("permits", permits, 0).and_then(|p| Ok((p, opt_millis("ttlMs", ttl_ms)?)));
        let sem = self.sem.clone();
        local::spawn(env, async move {
            let (n, ttl) = parsed?;
            sem.try_set_permits(n, ttl).await.map_err(js_error)
        })
    }

    /// Takes a permit and resolves its id, waiting at most `waitMs` when given (then rejects
    /// `RLOCK_NOT_ACQUIRED`, or resolves null with `orNull`). `leaseMs` absent: the watchdog
    /// renews the permit. Cancelling `cancel` takes nothing.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        or_null: bool,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, Option<String>>> {
        let parsed = opt_millis("waitMs", wait_ms).and_then(|w| Ok((w, opt_millis("leaseMs", lease_ms)?)));
        let (sem, token) = (self.sem.clone(), cancel.token.clone());
        local::spawn(env, async move {
            let (wait, lease) = parsed?;
            let work = async {
                let got = match wait {
                    Some(w) => sem.try_acquire(w, lease).await?,
                    None => Some(sem.acquire(lease).await?),
                };
                match got {
                    Some(p) => Ok(Some(p.keep())),
                    None if or_null => Ok(None),
                    None => Err(rlock::Error::not_acquired(
                        format!("a permit of semaphore '{}'", sem.name()),
                        wait,
                    )),
                }
            };
            cancellable(&token, work).await
        })
    }

    /// Releases permit `id`; rejects RLOCK_NOT_HELD when it is not held, RLOCK_LOST when the
    /// watchdog lost it.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn release<'env>(&self, env: &'env Env, id: String) -> napi::Result<PromiseRaw<'env, ()>> {
        let sem = self.sem.clone();
        local::spawn(env, async move { sem.release(&id).await.map_err(js_error) })
    }

    /// Makes permit `id` expire `leaseMs` from now (absent: the watchdog renews it).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn update_lease<'env>(
        &self,
        env: &'env Env,
        id: String,
        lease_ms: Option<f64>,
    ) -> napi::Result<PromiseRaw<'env, ()>> {
        let parsed = opt_millis("leaseMs", lease_ms);
        let sem = self.sem.clone();
        local::spawn(env, async move { sem.update_lease(&id, parsed?).await.map_err(js_error) })
    }

    /// The free permits, after expired ones came back (0 when the semaphore does not exist).
    #[napi]
    pub async fn available_permits(&self) -> napi::Result<f64> {
        Ok(self.sem.available_permits().await.map_err(js_error)? as f64)
    }

    /// The held permits (neither released nor expired).
    #[napi]
    pub async fn acquired_permits(&self) -> napi::Result<f64> {
        Ok(self.sem.acquired_permits().await.map_err(js_error)? as f64)
    }

    /// Adds `n` permits (negative removes); resolves the new count of free ones.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn add_permits<'env>(&self, env: &'env Env, n: f64) -> napi::Result<PromiseRaw<'env, f64>> {
        let parsed = whole("n", n);
        let sem = self.sem.clone();
        local::spawn(env, async move { Ok(sem.add_permits(parsed?).await.map_err(js_error)? as f64) })
    }

    /// Whether this client's watchdog lost permit `id` (until it is released).
    #[napi]
    pub fn is_lost(&self, id: String) -> bool {
        self.sem.is_lost(&id)
    }

    /// Calls `callback(name, kind, owner, reason, permitId)` on the JS thread when this client's
    /// watchdog loses a permit of this semaphore. Returns the listener id for
    /// `removeLostListener`.
    #[napi(
        ts_args_type = "callback: (name: string, kind: string, owner: string, reason: string, permitId: string | null) => void"
    )]
    pub fn on_lost(&self, callback: LostCallback) -> napi::Result<f64> {
        Ok(self.sem.on_lost(lost_listener(callback)?).into_raw() as f64)
    }

    /// Removes a listener added with `onLost`; false when it was already removed.
    #[napi]
    pub fn remove_lost_listener(&self, id: f64) -> bool {
        self.sem.remove_lost_listener(ListenerId::from_raw(id as u64))
    }
}

/// A multi-lock over the locks of `members` (core `rlock::MultiLock`), with a fresh owner of
/// its own (the members' handles keep theirs).
#[napi]
pub fn multi_lock(members: Vec<&NativeLock>) -> napi::Result<NativeMultiLock> {
    let multi = rlock::MultiLock::new(members.iter().map(|m| m.lock.clone()).collect()).map_err(js_error)?;
    let owner = multi.new_owner();
    Ok(NativeMultiLock { multi, owner })
}

/// Several locks taken all-or-nothing by one owner (core `rlock::MultiLock`).
#[napi]
pub struct NativeMultiLock {
    multi: rlock::MultiLock,
    owner: rlock::Owner,
}

#[napi]
impl NativeMultiLock {
    /// Takes every member, waiting at most `waitMs` when given (then rejects
    /// `RLOCK_NOT_ACQUIRED`, or resolves false with `orFalse`; nothing held); `leaseMs` fixes
    /// each member's lease (else the watchdog renews). Cancelling `cancel` leaves nothing held.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        or_false: bool,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let parsed = opt_millis("waitMs", wait_ms).and_then(|w| Ok((w, opt_millis("leaseMs", lease_ms)?)));
        let (multi, owner, token) = (self.multi.clone(), self.owner.clone(), cancel.token.clone());
        local::spawn(env, async move {
            let (wait, lease) = parsed?;
            let work = async {
                match multi.acquire_guard(&owner, wait, lease).await? {
                    Some(held) => {
                        held.keep();
                        Ok(true)
                    }
                    None if or_false => Ok(false),
                    None => Err(rlock::Error::not_acquired("the multi-lock", wait)),
                }
            };
            cancellable(&token, work).await
        })
    }

    /// Releases every member; the error names each member that failed.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>> {
        let (multi, owner) = (self.multi.clone(), self.owner.clone());
        local::spawn(env, async move { multi.release(&owner).await.map_err(js_error) })
    }

    /// Whether this handle's owner holds every member.
    #[napi]
    pub async fn is_held(&self) -> napi::Result<bool> {
        self.multi.is_held(&self.owner).await.map_err(js_error)
    }
}

/// A count-down latch (core `rlock::CountDownLatch`): no owners, anyone counts down.
#[napi]
pub struct NativeCountDownLatch {
    latch: rlock::CountDownLatch,
}

#[napi]
impl NativeCountDownLatch {
    /// Sets the count when the latch does not exist (is open); resolves whether it was set.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn try_set_count<'env>(&self, env: &'env Env, count: f64) -> napi::Result<PromiseRaw<'env, bool>> {
        let parsed = permits_arg("count", count, 0);
        let latch = self.latch.clone();
        local::spawn(env, async move { latch.try_set_count(parsed?).await.map_err(js_error) })
    }

    /// Counts down by one; at 0 the latch opens and every waiter wakes.
    #[napi]
    pub async fn count_down(&self) -> napi::Result<()> {
        self.latch.count_down().await.map_err(js_error)
    }

    /// The current count (0 when open).
    #[napi]
    pub async fn count(&self) -> napi::Result<f64> {
        Ok(self.latch.count().await.map_err(js_error)? as f64)
    }

    /// Waits until the latch is open or `waitMs` passed (undefined: no limit); resolves whether
    /// it is open. Cancelling `cancel` drops the wait.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn wait<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, bool>> {
        let parsed = opt_millis("waitMs", wait_ms);
        let (latch, token) = (self.latch.clone(), cancel.token.clone());
        local::spawn(env, async move { cancellable(&token, latch.wait(parsed?)).await })
    }

    /// Deletes the latch whatever its count; resolves whether it existed.
    #[napi]
    pub async fn delete(&self) -> napi::Result<bool> {
        self.latch.delete().await.map_err(js_error)
    }
}

/// napi's tokio runtime, made by core with [`rlock::runtime::SURFACE_WORKERS`] instead of
/// napi's default of one worker per core (the calls themselves are polled on the JS thread, see
/// `local`). If the runtime cannot be built here, napi builds its default one.
#[napi_derive::module_init]
fn init_runtime() {
    if let Ok(rt) = rlock::runtime::build_runtime(rlock::runtime::SURFACE_WORKERS) {
        napi::bindgen_prelude::create_custom_tokio_runtime(rt);
    }
}
