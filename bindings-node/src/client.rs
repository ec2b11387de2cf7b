//! `NativeClient`: a connected core client and the handles it makes.

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use rlock::ListenerId;

use crate::count_down_latch::NativeCountDownLatch;
use crate::error::{invalid, js_error, Code};
use crate::lock::NativeLock;
use crate::permit_expirable_semaphore::NativePermitSemaphore;
use crate::semaphore::NativeSemaphore;
use crate::{local, lost_listener, LostCallback, NODE};

/// Client options from a JS object, set by name through core (which knows every option, its
/// type and its range; durations in milliseconds).
fn client_options(
    options: Option<serde_json::Map<String, serde_json::Value>>,
) -> napi::Result<rlock::ClientOptions, Code> {
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
        o.set(NODE, &key, value).map_err(js_error)?;
    }
    Ok(o)
}

/// Connects to Redis at `url` (`undefined`: `redisUrlEnv`, the runtime's `process.env.REDIS_URL`,
/// else `redis://127.0.0.1:6379`) and starts the client's watchdog and pub/sub tasks on napi's
/// tokio runtime (core needs a runtime and creates none).
#[napi(
    ts_args_type = "url?: string | undefined | null, options?: Record<string, unknown> | undefined | null, redisUrlEnv?: string | undefined | null",
    ts_return_type = "Promise<NativeClient>"
)]
pub fn connect<'env>(
    env: &'env Env,
    url: Option<String>,
    options: Option<serde_json::Map<String, serde_json::Value>>,
    redis_url_env: Option<String>,
) -> napi::Result<PromiseRaw<'env, NativeClient>, Code> {
    let options = client_options(options);
    local::spawn(env, async move {
        let url = url.unwrap_or_else(|| rlock::default_url_from(redis_url_env));
        let client = rlock::Client::connect(&url, options?).await.map_err(js_error)?;
        Ok(NativeClient { client })
    })
}

/// A connected core client.
#[napi]
pub struct NativeClient {
    pub(crate) client: rlock::Client,
}

#[napi]
impl NativeClient {
    /// A handle on lock `name` of `kind` (`'lock'`, `'fenced'`, `'fair'`, `'spin'`,
    /// `'non_reentrant'` or `'non_reentrant_fair'`; default `'lock'`) with a fresh owner of its
    /// own (Node holds belong to handles).
    #[napi(
        ts_args_type = "name: string, kind?: 'lock' | 'fenced' | 'fair' | 'spin' | 'non_reentrant' | 'non_reentrant_fair'"
    )]
    pub fn lock(&self, env: &Env, name: String, kind: Option<String>) -> napi::Result<NativeLock, Code> {
        let c = &self.client;
        local::link(env, c)?;
        let lock = match kind.as_deref() {
            None | Some("lock") => c.lock(&name),
            Some("fenced") => c.fenced_lock(&name).map(|f| f.lock().clone()),
            Some("fair") => c.fair_lock(&name),
            Some("spin") => c.spin_lock(&name),
            Some("non_reentrant") => c.non_reentrant_lock(&name),
            Some("non_reentrant_fair") => c.non_reentrant_fair_lock(&name),
            Some(k) => return Err(invalid(&format!("unknown lock kind '{k}'"))),
        }
        .map_err(js_error)?;
        Ok(NativeLock { lock, owner: c.new_owner() })
    }

    /// The read and write sides of read-write lock `name`, sharing one fresh owner (so the
    /// writer may downgrade to a read hold).
    #[napi]
    pub fn read_write_lock(&self, env: &Env, name: String) -> napi::Result<Vec<NativeLock>, Code> {
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
    pub fn permit_expirable_semaphore(
        &self,
        env: &Env,
        name: String,
    ) -> napi::Result<NativePermitSemaphore, Code> {
        local::link(env, &self.client)?;
        Ok(NativePermitSemaphore { sem: self.client.permit_expirable_semaphore(&name).map_err(js_error)? })
    }

    /// A handle on the semaphore `name`.
    #[napi]
    pub fn semaphore(&self, env: &Env, name: String) -> napi::Result<NativeSemaphore, Code> {
        local::link(env, &self.client)?;
        Ok(NativeSemaphore { sem: self.client.semaphore(&name).map_err(js_error)? })
    }

    /// A handle on the count-down latch `name`.
    #[napi]
    pub fn count_down_latch(&self, env: &Env, name: String) -> napi::Result<NativeCountDownLatch, Code> {
        local::link(env, &self.client)?;
        Ok(NativeCountDownLatch { latch: self.client.count_down_latch(&name).map_err(js_error)? })
    }

    /// What lives under `name` (core `Client::describe`), as core's JSON text (`rlock.js`
    /// parses it).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn describe<'env>(
        &self,
        env: &'env Env,
        name: String,
    ) -> napi::Result<PromiseRaw<'env, String>, Code> {
        let client = self.client.clone();
        local::spawn(env, async move {
            rlock::surface::describe_json(&client, NODE, &name).await.map_err(js_error)
        })
    }

    /// Names of primitives matching `pattern` (core `Client::list`; at most `limit`, a whole
    /// number from 1), as core's JSON text.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn list<'env>(
        &self,
        env: &'env Env,
        pattern: Option<String>,
        limit: Option<f64>,
    ) -> napi::Result<PromiseRaw<'env, String>, Code> {
        let client = self.client.clone();
        local::spawn(env, async move {
            let limit = match limit {
                Some(n) if !(n.is_finite() && n.fract() == 0.0 && n >= 1.0) => {
                    return Err(invalid(&format!("limit must be a whole number from 1 (got {n})")))
                }
                Some(n) => Some(n as usize),
                None => None,
            };
            rlock::surface::list_json(&client, NODE, pattern.as_deref(), limit).await.map_err(js_error)
        })
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
    pub fn on_lost(&self, callback: LostCallback) -> napi::Result<f64, Code> {
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
        rlock::surface::to_json_for(NODE, &self.client.stats())
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
