//! The multi-lock: several locks (any kinds, any clients) taken all-or-nothing by one owner.

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use super::client::rlock_client;
use super::lock::{kind_arg, owner, target_of, who};
use super::{guard, lease, rlock_result, wait_arg, Failure};
use crate::error::Error;
use crate::multi_lock::MultiLock;
use crate::owner::Owner;

/// One member of a multi-lock: the lock `name` of `kind` (an `rlock_lock_kind`) on `client`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct rlock_lock_ref {
    /// The client the lock lives on (members may use different clients and servers).
    pub client: *const rlock_client,
    /// The lock name (only read during the call).
    pub name: *const c_char,
    /// An `rlock_lock_kind`.
    pub kind: c_int,
}

/// Reads `count` members and the owner the call acts for. Keeps a reference to each client
/// for the call.
///
/// # Safety
/// `members` is NULL or points to `count` readable `rlock_lock_ref`s whose clients are NULL or
/// live and whose names are NULL or NUL-terminated strings.
unsafe fn multi(
    members: *const rlock_lock_ref,
    count: usize,
    owner_id: u64,
) -> Result<(Vec<Arc<rlock_client>>, MultiLock, Owner), Failure> {
    if members.is_null() || count == 0 {
        return Err(Failure::invalid("a multi-lock needs at least one member (members NULL or count 0)"));
    }
    // SAFETY: the caller gives `count` readable members.
    let refs = unsafe { std::slice::from_raw_parts(members, count) };
    let mut clients = Vec::with_capacity(count);
    let mut locks = Vec::with_capacity(count);
    for r in refs {
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target_of(r.client, r.name, kind_arg(r.kind)?) }?;
        clients.push(c);
        locks.push(lock);
    }
    let owner = owner(&clients[0], who(owner_id));
    Ok((clients, MultiLock::new(locks)?, owner))
}

/// Blocks until `owner_id` (`RLOCK_THREAD`: the calling thread) holds every one of the `count`
/// `members`, all-or-nothing: a round that finds a member held elsewhere gives back what it
/// took and waits for that member, so owners taking the same locks in other orders never
/// deadlock. `lease_ms <= 0`: the watchdog renews each hold; `> 0`: each member's lease.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL or empty members, a NULL client or
/// name, a bad kind), `RLOCK_WOULD_DEADLOCK`, `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`,
/// `RLOCK_REDIS`, `RLOCK_CLOSED`, `RLOCK_FORKED`; nothing is held after an error.
#[no_mangle]
pub unsafe extern "C" fn rlock_multi_acquire(
    members: *const rlock_lock_ref,
    count: usize,
    owner_id: u64,
    lease_ms: i64,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (clients, m, o) = unsafe { multi(members, count, owner_id) }?;
        clients[0].block_on(m.acquire(&o, lease(lease_ms)))??;
        Ok(())
    })
}

/// Like `rlock_multi_acquire`, waiting at most `wait_ms` (0: one round): `RLOCK_NOT_ACQUIRED`
/// when the wait ran out (no member held).
///
/// Thread-safe. Errors as `rlock_multi_acquire`, and `RLOCK_INVALID_ARGUMENT` for a negative
/// `wait_ms`.
#[no_mangle]
pub unsafe extern "C" fn rlock_multi_try_acquire(
    members: *const rlock_lock_ref,
    count: usize,
    owner_id: u64,
    wait_ms: i64,
    lease_ms: i64,
) -> rlock_result {
    guard(|| {
        let wait = wait_arg(wait_ms)?;
        // SAFETY: forwarded contract.
        let (clients, m, o) = unsafe { multi(members, count, owner_id) }?;
        if clients[0].block_on(m.try_acquire(&o, wait, lease(lease_ms)))?? {
            Ok(())
        } else {
            Err(Error::not_acquired(format!("the multi-lock of {count} members"), Some(wait)).into())
        }
    })
}

/// Releases every one of the `count` `members` held by `owner_id` (`RLOCK_THREAD`: the calling
/// thread), all of them also when some fail; the last error names each member that failed and
/// the result is the first failure's code (`RLOCK_NOT_HELD`, `RLOCK_LOST`, ...).
///
/// Thread-safe. Errors as `rlock_multi_acquire`, and those of `rlock_release`.
#[no_mangle]
pub unsafe extern "C" fn rlock_multi_release(
    members: *const rlock_lock_ref,
    count: usize,
    owner_id: u64,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (clients, m, o) = unsafe { multi(members, count, owner_id) }?;
        clients[0].block_on(m.release(&o))??;
        Ok(())
    })
}
