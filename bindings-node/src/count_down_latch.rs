//! `NativeCountDownLatch`: core `rlock::CountDownLatch` (no owners).

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::error::{js_error, Code};
use crate::{acquiring, local, opt_millis, permits_arg, CancelToken};

/// A count-down latch (core `rlock::CountDownLatch`): no owners, anyone counts down.
#[napi]
pub struct NativeCountDownLatch {
    pub(crate) latch: rlock::CountDownLatch,
}

#[napi]
impl NativeCountDownLatch {
    /// Sets the count when the latch does not exist (is open); resolves whether it was set.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn try_set_count<'env>(
        &self,
        env: &'env Env,
        count: f64,
    ) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let parsed = permits_arg("count", count, 0);
        let latch = self.latch.clone();
        local::spawn(env, async move { latch.try_set_count(parsed?).await.map_err(js_error) })
    }

    /// Counts down by one; at 0 the latch opens and every waiter wakes.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn count_down<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>, Code> {
        let latch = self.latch.clone();
        local::spawn(env, async move { latch.count_down().await.map_err(js_error) })
    }

    /// The current count (0 when open).
    #[napi(ts_return_type = "Promise<number>")]
    pub fn count<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, f64>, Code> {
        let latch = self.latch.clone();
        local::spawn(env, async move { Ok(latch.count().await.map_err(js_error)? as f64) })
    }

    /// Waits until the latch is open or `waitMs` passed (undefined: no limit); resolves whether
    /// it is open. Cancelling `cancel` drops the wait.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn wait<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let parsed = opt_millis("waitMs", wait_ms);
        let latch = self.latch.clone();
        acquiring(env, parsed, cancel, move |wait| async move { latch.wait(wait).await })
    }

    /// Deletes the latch whatever its count; resolves whether it existed.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn delete<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let latch = self.latch.clone();
        local::spawn(env, async move { latch.delete().await.map_err(js_error) })
    }
}
