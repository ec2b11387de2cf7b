//! `NativeMultiLock`: core `rlock::MultiLock` over lock handles, all or nothing.

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;

use crate::error::{js_error, Code};
use crate::lock::NativeLock;
use crate::{acquiring, local, opt_millis, CancelToken};

/// A multi-lock over the locks of `members` (core `rlock::MultiLock`), with a fresh owner of
/// its own (the members' handles keep theirs).
#[napi]
pub fn multi_lock(members: Vec<&NativeLock>) -> napi::Result<NativeMultiLock, Code> {
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
    /// Takes every member, waiting at most `waitMs` when given (then rejects `RLOCK_NOT_ACQUIRED`
    /// with core's message, nothing held; `tryAcquire` in the wrapper resolves false for it);
    /// `leaseMs` fixes each member's lease (else the watchdog renews). Resolves `true`.
    /// Cancelling `cancel` leaves nothing held.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let parsed = opt_millis("waitMs", wait_ms).and_then(|w| Ok((w, opt_millis("leaseMs", lease_ms)?)));
        let (multi, owner) = (self.multi.clone(), self.owner.clone());
        acquiring(env, parsed, cancel, move |(wait, lease)| async move {
            rlock::surface::multi_lock_held(&multi, &owner, wait, lease).await?.keep();
            Ok(true)
        })
    }

    /// Releases every member; the error names each member that failed.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, ()>, Code> {
        let (multi, owner) = (self.multi.clone(), self.owner.clone());
        local::spawn(env, async move { multi.release(&owner).await.map_err(js_error) })
    }

    /// Whether this handle's owner holds every member.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_held<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let (multi, owner) = (self.multi.clone(), self.owner.clone());
        local::spawn(env, async move { multi.is_held(&owner).await.map_err(js_error) })
    }
}
