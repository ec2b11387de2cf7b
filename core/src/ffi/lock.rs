//! Lock operations. The plain functions act for the calling OS thread (the same thread
//! re-enters, other threads contend, as in Redisson); the `_as` variants take an explicit owner
//! id for event-loop programs (ids 2^61 and up are reserved for threads).

use std::ffi::c_char;
use std::time::Duration;

use super::client::{client_ref, rlock_client};
use super::{block_on, guard, rlock_result, str_arg, Failure};
use crate::lock::Lock;
use crate::owner::{thread_owner_id, Owner};

/// Which owner a call acts for.
#[derive(Clone, Copy)]
enum Who {
    Thread,
    Id(u64),
}

fn owner(c: &rlock_client, who: Who) -> Owner {
    c.client.owner(match who {
        Who::Thread => thread_owner_id(),
        Who::Id(id) => id,
    })
}

/// Checks the client and name and makes the lock handle.
///
/// # Safety
/// `client` is NULL or live; `name` is NULL or a NUL-terminated string.
unsafe fn target<'a>(
    client: *const rlock_client,
    name: *const c_char,
) -> Result<(&'a rlock_client, Lock), Failure> {
    let c = client_ref(client)?;
    // SAFETY: forwarded contract.
    let name = unsafe { str_arg(name, "name") }?;
    let lock = c.client.lock(name)?;
    Ok((c, lock))
}

fn lease(lease_ms: i64) -> Option<Duration> {
    u64::try_from(lease_ms).ok().filter(|&ms| ms > 0).map(Duration::from_millis)
}

fn write<T>(out: *mut T, value: T) {
    // SAFETY: checked non-NULL by the caller of `write`; writable per the header.
    unsafe { out.write(value) }
}

fn check_out<T>(out: *mut T) -> Result<(), Failure> {
    if out.is_null() {
        Err(Failure::invalid("out is NULL"))
    } else {
        Ok(())
    }
}

unsafe fn lock_impl(
    client: *const rlock_client,
    name: *const c_char,
    who: Who,
    lease_ms: i64,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target(client, name) }?;
        let owner = owner(c, who);
        match lease(lease_ms) {
            Some(l) => block_on(lock.acquire_with_lease(&owner, l))??,
            None => block_on(lock.acquire(&owner))??,
        }
        Ok(())
    })
}

unsafe fn try_lock_impl(
    client: *const rlock_client,
    name: *const c_char,
    who: Who,
    wait_ms: i64,
    lease_ms: i64,
) -> rlock_result {
    guard(|| {
        let wait = u64::try_from(wait_ms)
            .map(Duration::from_millis)
            .map_err(|_| Failure::invalid(format!("wait_ms must not be negative (got {wait_ms})")))?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target(client, name) }?;
        let owner = owner(c, who);
        if block_on(lock.try_acquire(&owner, wait, lease(lease_ms)))?? {
            Ok(())
        } else {
            Err(Failure::new(
                rlock_result::RLOCK_NOT_ACQUIRED,
                format!("lock '{}' is held by another owner (waited {wait_ms} ms)", lock.name()),
            ))
        }
    })
}

unsafe fn unlock_impl(client: *const rlock_client, name: *const c_char, who: Who) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target(client, name) }?;
        block_on(lock.release(&owner(c, who)))??;
        Ok(())
    })
}

unsafe fn is_held_impl(
    client: *const rlock_client,
    name: *const c_char,
    who: Who,
    out: *mut bool,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target(client, name) }?;
        write(out, block_on(lock.is_held_by(&owner(c, who)))??);
        Ok(())
    })
}

unsafe fn hold_count_impl(
    client: *const rlock_client,
    name: *const c_char,
    who: Who,
    out: *mut u32,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target(client, name) }?;
        write(out, block_on(lock.hold_count(&owner(c, who)))??);
        Ok(())
    })
}

/// Blocks until the calling thread holds lock `name` (re-entering when it already holds it).
/// `lease_ms <= 0`: the watchdog keeps the lease alive until `rlock_unlock`; `lease_ms > 0`: a
/// fixed lease, after which the hold ends by itself. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_lock(
    client: *const rlock_client,
    name: *const c_char,
    lease_ms: i64,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { lock_impl(client, name, Who::Thread, lease_ms) }
}

/// Tries to take lock `name` for the calling thread, waiting at most `wait_ms` (0 tries once;
/// negative is `RLOCK_INVALID_ARGUMENT`). Returns `RLOCK_OK` when held, `RLOCK_NOT_ACQUIRED`
/// when the wait ran out. `lease_ms` as in `rlock_lock`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_try_lock(
    client: *const rlock_client,
    name: *const c_char,
    wait_ms: i64,
    lease_ms: i64,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { try_lock_impl(client, name, Who::Thread, wait_ms, lease_ms) }
}

/// Releases one hold level of the calling thread. `RLOCK_NOT_HELD` when the thread does not
/// hold the lock (or its lease ran out), `RLOCK_LOST` when the watchdog had lost the hold.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_unlock(client: *const rlock_client, name: *const c_char) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { unlock_impl(client, name, Who::Thread) }
}

/// Deletes lock `name` whoever holds it and wakes a waiter; `*out_released` says whether a lock
/// was there (`out_released` may be NULL). `RLOCK_REDIS` (nothing deleted) when the key is not
/// a lock. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_force_unlock(
    client: *const rlock_client,
    name: *const c_char,
    out_released: *mut bool,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (_, lock) = unsafe { target(client, name) }?;
        let released = block_on(lock.force_release())??;
        if !out_released.is_null() {
            write(out_released, released);
        }
        Ok(())
    })
}

/// Writes whether anyone holds lock `name`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_is_locked(
    client: *const rlock_client,
    name: *const c_char,
    out: *mut bool,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        // SAFETY: forwarded contract.
        let (_, lock) = unsafe { target(client, name) }?;
        write(out, block_on(lock.is_locked())??);
        Ok(())
    })
}

/// Writes whether the calling thread holds lock `name`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_is_held(
    client: *const rlock_client,
    name: *const c_char,
    out: *mut bool,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { is_held_impl(client, name, Who::Thread, out) }
}

/// Writes how many times the calling thread holds lock `name` (0 when it does not).
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_hold_count(
    client: *const rlock_client,
    name: *const c_char,
    out: *mut u32,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { hold_count_impl(client, name, Who::Thread, out) }
}

/// Writes the remaining lease of lock `name` in milliseconds: -2 when it does not exist, -1
/// when it has no expiry. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_remaining_ttl(
    client: *const rlock_client,
    name: *const c_char,
    out_ms: *mut i64,
) -> rlock_result {
    guard(|| {
        check_out(out_ms)?;
        // SAFETY: forwarded contract.
        let (_, lock) = unsafe { target(client, name) }?;
        write(out_ms, block_on(lock.remaining_ttl())??.as_millis_i64());
        Ok(())
    })
}

/// `rlock_lock` for the explicit owner `owner_id` instead of the calling thread: any thread may
/// acquire and release for it (for event loops).
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_as(
    client: *const rlock_client,
    name: *const c_char,
    owner_id: u64,
    lease_ms: i64,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { lock_impl(client, name, Who::Id(owner_id), lease_ms) }
}

/// `rlock_try_lock` for the explicit owner `owner_id`.
#[no_mangle]
pub unsafe extern "C" fn rlock_try_lock_as(
    client: *const rlock_client,
    name: *const c_char,
    owner_id: u64,
    wait_ms: i64,
    lease_ms: i64,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { try_lock_impl(client, name, Who::Id(owner_id), wait_ms, lease_ms) }
}

/// `rlock_unlock` for the explicit owner `owner_id`.
#[no_mangle]
pub unsafe extern "C" fn rlock_unlock_as(
    client: *const rlock_client,
    name: *const c_char,
    owner_id: u64,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { unlock_impl(client, name, Who::Id(owner_id)) }
}

/// `rlock_is_held` for the explicit owner `owner_id`.
#[no_mangle]
pub unsafe extern "C" fn rlock_is_held_as(
    client: *const rlock_client,
    name: *const c_char,
    owner_id: u64,
    out: *mut bool,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { is_held_impl(client, name, Who::Id(owner_id), out) }
}

/// `rlock_hold_count` for the explicit owner `owner_id`.
#[no_mangle]
pub unsafe extern "C" fn rlock_hold_count_as(
    client: *const rlock_client,
    name: *const c_char,
    owner_id: u64,
    out: *mut u32,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { hold_count_impl(client, name, Who::Id(owner_id), out) }
}
