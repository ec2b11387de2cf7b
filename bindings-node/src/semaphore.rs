//! `NativeSemaphore`: core `rlock::Semaphore` (permits are not owned).

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::error::{js_error, Code};
use crate::{acquiring, local, opt_millis, permits_arg, whole, CancelToken};

/// A semaphore (core `rlock::Semaphore`): permits are not owned.
#[napi]
pub struct NativeSemaphore {
    pub(crate) sem: rlock::Semaphore,
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
    ) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let parsed = permits_arg("permits", permits, 0).and_then(|p| Ok((p, opt_millis("ttlMs", ttl_ms)?)));
        let sem = self.sem.clone();
        local::spawn(env, async move {
            let (n, ttl) = parsed?;
            sem.try_set_permits(n, ttl).await.map_err(js_error)
        })
    }

    /// Takes `permits`, waiting at most `waitMs` when given (then rejects `RLOCK_NOT_ACQUIRED`
    /// with core's message, nothing taken; `tryAcquire` in the wrapper resolves false for it);
    /// resolves `true`. Cancelling `cancel` takes nothing.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        permits: f64,
        wait_ms: Option<f64>,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let parsed = permits_arg("permits", permits, 1).and_then(|p| Ok((p, opt_millis("waitMs", wait_ms)?)));
        let sem = self.sem.clone();
        acquiring(env, parsed, cancel, move |(n, wait)| async move {
            rlock::surface::permits_held(&sem, n, wait).await?.keep();
            Ok(true)
        })
    }

    /// Gives back `permits`; resolves the new count.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn release<'env>(&self, env: &'env Env, permits: f64) -> napi::Result<PromiseRaw<'env, f64>, Code> {
        let parsed = permits_arg("permits", permits, 1);
        let sem = self.sem.clone();
        local::spawn(env, async move { Ok(sem.release(parsed?).await.map_err(js_error)? as f64) })
    }

    /// The available permits (0 when the semaphore does not exist).
    #[napi(ts_return_type = "Promise<number>")]
    pub fn available_permits<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, f64>, Code> {
        let sem = self.sem.clone();
        local::spawn(env, async move { Ok(sem.available_permits().await.map_err(js_error)? as f64) })
    }

    /// Adds `n` permits (negative removes); resolves the new count.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn add_permits<'env>(&self, env: &'env Env, n: f64) -> napi::Result<PromiseRaw<'env, f64>, Code> {
        let parsed = whole("n", n);
        let sem = self.sem.clone();
        local::spawn(env, async move { Ok(sem.add_permits(parsed?).await.map_err(js_error)? as f64) })
    }

    /// Takes every available permit; resolves how many there were.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn drain_permits<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, f64>, Code> {
        let sem = self.sem.clone();
        local::spawn(env, async move { Ok(sem.drain_permits().await.map_err(js_error)? as f64) })
    }
}
