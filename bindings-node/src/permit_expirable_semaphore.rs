//! `NativePermitSemaphore`: core `rlock::PermitExpirableSemaphore` (permits with ids).

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use rlock::ListenerId;

use crate::error::{js_error, Code};
use crate::{acquiring, local, lost_listener, opt_millis, permits_arg, whole, CancelToken, LostCallback};

/// A permit-expirable semaphore (core `rlock::PermitExpirableSemaphore`): permits with ids.
#[napi]
pub struct NativePermitSemaphore {
    pub(crate) sem: rlock::PermitExpirableSemaphore,
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
    ) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let parsed = permits_arg("permits", permits, 0).and_then(|p| Ok((p, opt_millis("ttlMs", ttl_ms)?)));
        let sem = self.sem.clone();
        local::spawn(env, async move {
            let (n, ttl) = parsed?;
            sem.try_set_permits(n, ttl).await.map_err(js_error)
        })
    }

    /// Takes a permit and resolves its id, waiting at most `waitMs` when given (then rejects
    /// `RLOCK_NOT_ACQUIRED` with core's message; `tryAcquire` in the wrapper resolves null for
    /// it). `leaseMs` absent: the watchdog renews the permit. Cancelling `cancel` takes nothing.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, String>, Code> {
        let parsed = opt_millis("waitMs", wait_ms).and_then(|w| Ok((w, opt_millis("leaseMs", lease_ms)?)));
        let sem = self.sem.clone();
        acquiring(env, parsed, cancel, move |(wait, lease)| async move {
            Ok(rlock::surface::permit_held(&sem, wait, lease).await?.keep())
        })
    }

    /// Releases permit `id`; rejects RLOCK_NOT_HELD when it is not held, RLOCK_LOST when the
    /// watchdog lost it.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn release<'env>(&self, env: &'env Env, id: String) -> napi::Result<PromiseRaw<'env, ()>, Code> {
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
    ) -> napi::Result<PromiseRaw<'env, ()>, Code> {
        let parsed = opt_millis("leaseMs", lease_ms);
        let sem = self.sem.clone();
        local::spawn(env, async move { sem.update_lease(&id, parsed?).await.map_err(js_error) })
    }

    /// The free permits, after expired ones came back (0 when the semaphore does not exist).
    #[napi(ts_return_type = "Promise<number>")]
    pub fn available_permits<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, f64>, Code> {
        let sem = self.sem.clone();
        local::spawn(env, async move { Ok(sem.available_permits().await.map_err(js_error)? as f64) })
    }

    /// The held permits (neither released nor expired).
    #[napi(ts_return_type = "Promise<number>")]
    pub fn acquired_permits<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, f64>, Code> {
        let sem = self.sem.clone();
        local::spawn(env, async move { Ok(sem.acquired_permits().await.map_err(js_error)? as f64) })
    }

    /// Adds `n` permits (negative removes); resolves the new count of free ones.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn add_permits<'env>(&self, env: &'env Env, n: f64) -> napi::Result<PromiseRaw<'env, f64>, Code> {
        let parsed = whole("n", n);
        let sem = self.sem.clone();
        local::spawn(env, async move { Ok(sem.add_permits(parsed?).await.map_err(js_error)? as f64) })
    }

    /// Whether this client's watchdog lost permit `id` (until it is released).
    #[napi]
    pub fn is_lost(&self, id: String) -> bool {
        self.sem.is_lost(&id)
    }

    /// How long local time still proves permit `id`, in whole ms.
    #[napi]
    pub fn valid_for_ms(&self, id: String) -> f64 {
        self.sem.valid_for(&id).as_millis() as f64
    }

    /// Calls `callback(name, kind, owner, reason, permitId)` on the JS thread when this client's
    /// watchdog loses a permit of this semaphore. Returns the listener id for
    /// `removeLostListener`.
    #[napi(
        ts_args_type = "callback: (name: string, kind: string, owner: string, reason: string, permitId: string | null) => void"
    )]
    pub fn on_lost(&self, callback: LostCallback) -> napi::Result<f64, Code> {
        Ok(self.sem.on_lost(lost_listener(callback)?).into_raw() as f64)
    }

    /// Removes a listener added with `onLost`; false when it was already removed.
    #[napi]
    pub fn remove_lost_listener(&self, id: f64) -> bool {
        self.sem.remove_lost_listener(ListenerId::from_raw(id as u64))
    }
}
