//! RedLock on the Node surface (core `rlock::RedLock` / `rlock::FencedRedLock`): one native
//! class for both; `rlock.js` wraps it as `RedLock` and `FencedRedLock`.

use napi::bindgen_prelude::PromiseRaw;
use napi::Env;
use napi_derive::napi;
use rlock::ListenerId;

use crate::client::NativeClient;
use crate::error::{js_error, Code};
use crate::{acquiring, local, lost_listener, opt_millis, CancelToken, LostCallback};

/// A RedLock on `name` over `clients` (an odd number, at least 3, one per independent server),
/// with a fresh owner of its own; `fenced` hands out fencing tokens.
#[napi]
pub fn red_lock(
    env: &Env,
    name: String,
    clients: Vec<&NativeClient>,
    fenced: bool,
) -> napi::Result<NativeRedLock, Code> {
    for c in &clients {
        local::link(env, &c.client)?;
    }
    let natives: Vec<rlock::Client> = clients.iter().map(|c| c.client.clone()).collect();
    let red = rlock::surface::red_lock(&name, &natives, fenced).map_err(js_error)?;
    let owner = red.new_owner();
    Ok(NativeRedLock { red, owner })
}

/// How many of `servers` make a RedLock's majority (core's rule, for the JS class, which knows
/// its clients before its native RedLock exists).
#[napi]
pub fn red_lock_quorum(servers: u32) -> u32 {
    rlock::surface::quorum_of(servers as usize) as u32
}

/// One lock name held by a majority of independent servers, by this handle's owner.
#[napi]
pub struct NativeRedLock {
    red: rlock::RedLock,
    owner: rlock::Owner,
}

#[napi]
impl NativeRedLock {
    /// Takes the lock on a majority, waiting at most `waitMs` when given (then rejects
    /// `RLOCK_NOT_ACQUIRED` with core's message, nothing held; `tryAcquire` in the wrapper
    /// resolves false for it); `leaseMs` fixes each member's lease (else the watchdogs renew).
    /// Resolves the fencing token (0 when not fenced). Cancelling `cancel` leaves nothing held.
    #[napi(ts_return_type = "Promise<number>")]
    pub fn acquire<'env>(
        &self,
        env: &'env Env,
        wait_ms: Option<f64>,
        lease_ms: Option<f64>,
        cancel: &CancelToken,
    ) -> napi::Result<PromiseRaw<'env, f64>, Code> {
        let parsed = opt_millis("waitMs", wait_ms).and_then(|w| Ok((w, opt_millis("leaseMs", lease_ms)?)));
        let (red, owner) = (self.red.clone(), self.owner.clone());
        acquiring(env, parsed, cancel, move |(wait, lease)| async move {
            let held = rlock::surface::red_lock_held(&red, &owner, wait, lease).await?;
            Ok(held.keep().unwrap_or(0) as f64)
        })
    }

    /// Releases this handle's holds on every server; resolves true when the lock is now free.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn release<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let (red, owner) = (self.red.clone(), self.owner.clone());
        local::spawn(env, async move { Ok(red.release(&owner).await.map_err(js_error)?.is_unlocked()) })
    }

    /// Whether this handle holds the lock on a majority of the servers.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn is_held<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, bool>, Code> {
        let (owner, red) = (self.owner.clone(), self.red.clone());
        local::spawn(env, async move { red.is_held(&owner).await.map_err(js_error) })
    }

    /// Whether this handle's hold was lost (fewer than a majority left), until `release`.
    #[napi]
    pub fn is_lost(&self) -> bool {
        self.red.is_lost(&self.owner)
    }

    /// How long local time still proves a majority of this handle's holds, in whole ms.
    #[napi]
    pub fn valid_for_ms(&self) -> f64 {
        self.red.valid_for(&self.owner).as_millis() as f64
    }

    /// The token of this handle's latest acquire while it holds the lock (fenced); else null.
    #[napi]
    pub fn token(&self) -> Option<f64> {
        self.red.token_of(&self.owner).map(|t| t as f64)
    }

    /// How many servers make a majority.
    #[napi(getter)]
    pub fn quorum(&self) -> u32 {
        self.red.quorum() as u32
    }

    /// Calls `callback(name, kind, owner, reason, permitId)` (kind 'red_lock') on the JS thread
    /// when this handle's hold is left with fewer than a majority; returns the listener id.
    #[napi(
        ts_args_type = "callback: (name: string, kind: string, owner: string, reason: string, permitId: string | null) => void"
    )]
    pub fn on_lost(&self, callback: LostCallback) -> napi::Result<f64, Code> {
        Ok(self.red.on_lost(Some(&self.owner), lost_listener(callback)?).into_raw() as f64)
    }

    /// Removes a listener added with `onLost`; false when it was already removed.
    #[napi]
    pub fn remove_lost_listener(&self, id: f64) -> bool {
        self.red.remove_lost_listener(ListenerId::from_raw(id as u64))
    }
}
