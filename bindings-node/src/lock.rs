//! `NativeLock`: one lock of the family (reentrant, fenced, fair, read or write) with the
//! owner of its handle.

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use rlock::{ListenerId, Ttl};

use crate::error::{js_error, Code};
use crate::{acquiring, local, lost_listener, opt_millis, CancelToken, LostCallback};

/// One lock name together with the owner of this handle.
#[napi]
pub struct NativeLock {
    pub(crate) lock: rlock::Lock,
    pub(crate) owner: rlock::Owner,
}

/// Keeps the hold an acquire took; its fencing token (from the acquire's own reply) as a JS
/// number, for a fenced lock (tokens stay below 2^53: one INCR per acquire).
fn kept_token(held: rlock::Guard) -> Option<f64> {
    let token = held.token().map(|t| t as f64);
    held.keep();
    token
}

#[napi]
impl NativeLock {
    /// The lock name (its Redis key).
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.lock.name().to_owned()
    }

    /// Which lock of the family: `'lock'`, `'fenced'`, `'read'`, `'write'`, `'fair'`, `'spin'`,
    /// `'non_reentrant'` or `'non_reentrant_fair'`.
    #[napi(
        getter,
        ts_return_type = "'lock' | 'fenced' | 'read' | 'write' | 'fair' | 'spin' | 'non_reentrant' | 'non_reentrant_fair'"
    )]
    pub fn kind(&self) -> &'static str {
        self.lock.kind()
    }

    /// The owner of this handle as stored in Redis (`<client uuid>:<id>`).
    #[napi(getter)]
    pub fn owner(&self) -> String {
        self.owner.as_str().to_owned()
    }

    /// Waits until held. `waitMs` bounds the wait (then rejects `RLOCK_NOT_ACQUIRED` with core's
    /// message; `tryAcquire` in the wrapper resolves false for it), `leaseMs` fixes the lease
    /// (else the watchdog renews). Cancelling `cancel` drops the core future. Resolves a fenced
    /// lock's new token (from the acquire's own reply), else null.
    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, Option<f64>>, Code> {
        let parsed = opt_millis("waitMs", wait_ms).and_then(|w| Ok((w, opt_millis("leaseMs", lease_ms)?)));
        let (lock, owner) = (self.lock.clone(), self.owner.clone());
        acquiring(env, parsed, cancel, move |(wait, lease)| async move {
            Ok(kept_token(rlock::surface::lock_held(&lock, &owner, wait, lease).await?))
        })
    }

    /// Releases one hold level; resolves true when the lock is now free, false when this handle
    /// still holds it (it had re-entered).
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let (lock, owner) = (self.lock.clone(), self.owner.clone());
        local::spawn(env, async move { Ok(lock.release(&owner).await.map_err(js_error)?.is_unlocked()) })
    }

    /// Deletes the lock whoever holds it; resolves whether there was one.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn force_unlock<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let lock = self.lock.clone();
        local::spawn(env, async move { lock.force_unlock().await.map_err(js_error) })
    }

    /// Whether anyone holds the lock.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_locked<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let lock = self.lock.clone();
        local::spawn(env, async move { lock.is_locked().await.map_err(js_error) })
    }

    /// Whether this handle holds the lock.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_held<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let (lock, owner) = (self.lock.clone(), self.owner.clone());
        local::spawn(env, async move { lock.is_held(&owner).await.map_err(js_error) })
    }

    /// How many times this handle holds the lock (0 when it does not).
    #[napi(ts_return_type = "Promise<number>")]
    pub fn hold_count<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, u32>, Code> {
        let (lock, owner) = (self.lock.clone(), self.owner.clone());
        local::spawn(env, async move { lock.hold_count(&owner).await.map_err(js_error) })
    }

    /// Remaining lease in ms; null when the lock is free, -1 when the key has no expiry (not an
    /// rlock/Redisson lock).
    #[napi(ts_return_type = "Promise<number | null>")]
    pub fn remaining_ttl<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Option<f64>>, Code> {
        let lock = self.lock.clone();
        local::spawn(env, async move {
            Ok(match lock.remaining_ttl().await.map_err(js_error)? {
                Ttl::Absent => None,
                Ttl::NoExpiry => Some(-1.0),
                Ttl::Remaining(d) => Some(d.as_millis() as f64),
            })
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

    /// How long local time still proves this handle's hold, in whole ms (0: not held, lost or
    /// in doubt).
    #[napi]
    pub fn valid_for_ms(&self) -> f64 {
        self.lock.valid_for(&self.owner).as_millis() as f64
    }

    /// Calls `callback(name, kind, owner, reason, permitId)` on the JS thread when the watchdog loses this
    /// handle's hold (core routes the event to this handle's owner). Returns the listener id
    /// for `removeLostListener`. The threadsafe function is weak, so it never keeps
    /// the process alive by itself.
    #[napi(
        ts_args_type = "callback: (name: string, kind: string, owner: string, reason: string, permitId: string | null) => void"
    )]
    pub fn on_lost(&self, callback: LostCallback) -> napi::Result<f64, Code> {
        Ok(self.lock.on_lost(Some(&self.owner), lost_listener(callback)?).into_raw() as f64)
    }

    /// Removes a listener added with `onLost` (dropping its threadsafe function); false when it
    /// was already removed.
    #[napi]
    pub fn remove_lost_listener(&self, id: f64) -> bool {
        self.lock.remove_lost_listener(ListenerId::from_raw(id as u64))
    }
}
