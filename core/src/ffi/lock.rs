//! Lock operations. The plain functions act for the calling OS thread (the same thread
//! re-enters, other threads contend, as in Redisson); the `_as` variants take an explicit owner
//! id for event-loop programs (ids 2^61 and up are reserved for threads).

use std::ffi::c_char;
use std::sync::Arc;
use std::time::Duration;

use super::client::{client_ref, rlock_client};
use super::{guard, rlock_result, str_arg, Failure};
use crate::lock::Lock;
use crate::owner::{thread_owner_id, Owner};

/// Which owner a call acts for.
#[derive(Clone, Copy)]
enum Who {
    Thread,
    Id(u64),
}

fn owner(c: &rlock_client, who: Who) -> Owner {
    c.core().owner(match who {
        Who::Thread => thread_owner_id(),
        Who::Id(id) => id,
    })
}

/// Checks the client and name, takes a reference to the client for the call and makes the
/// lock handle.
///
/// # Safety
/// `client` is NULL or live; `name` is NULL or a NUL-terminated string.
unsafe fn target(
    client: *const rlock_client,
    name: *const c_char,
) -> Result<(Arc<rlock_client>, Lock), Failure> {
    // SAFETY: forwarded contract.
    unsafe { target_of(client, name, false) }
}

/// [`target`], with the fenced lock's handle when `fenced`.
///
/// # Safety
/// As [`target`].
unsafe fn target_of(
    client: *const rlock_client,
    name: *const c_char,
    fenced: bool,
) -> Result<(Arc<rlock_client>, Lock), Failure> {
    let c = client_ref(client)?;
    // SAFETY: forwarded contract.
    let name = unsafe { str_arg(name, "name") }?;
    let lock = if fenced { c.core().fenced_lock(name)?.lock().clone() } else { c.core().lock(name)? };
    Ok((c, lock))
}

/// Where a fenced acquire writes its token (`None`: a plain lock's acquire).
fn token_out(lock: &Lock, owner: &Owner, out_token: Option<*mut u64>) {
    if let Some(out) = out_token {
        // Held now: the watchdog has the token the acquire just took.
        write(out, lock.token_of(owner).unwrap_or(0));
    }
}

fn check_token_out(out_token: Option<*mut u64>) -> Result<(), Failure> {
    out_token.map_or(Ok(()), check_out)
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

unsafe fn acquire_impl(
    client: *const rlock_client,
    name: *const c_char,
    who: Who,
    lease_ms: i64,
    out_token: Option<*mut u64>,
) -> rlock_result {
    guard(|| {
        check_token_out(out_token)?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target_of(client, name, out_token.is_some()) }?;
        let owner = owner(&c, who);
        match lease(lease_ms) {
            Some(l) => c.block_on(lock.acquire_with_lease(&owner, l))??,
            None => c.block_on(lock.acquire(&owner))??,
        }
        token_out(&lock, &owner, out_token);
        Ok(())
    })
}

unsafe fn try_acquire_impl(
    client: *const rlock_client,
    name: *const c_char,
    who: Who,
    (wait_ms, lease_ms): (i64, i64),
    out_token: Option<*mut u64>,
) -> rlock_result {
    guard(|| {
        check_token_out(out_token)?;
        let wait = u64::try_from(wait_ms)
            .map(Duration::from_millis)
            .map_err(|_| Failure::invalid(format!("wait_ms must not be negative (got {wait_ms})")))?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target_of(client, name, out_token.is_some()) }?;
        let owner = owner(&c, who);
        if c.block_on(lock.try_acquire(&owner, wait, lease(lease_ms)))?? {
            token_out(&lock, &owner, out_token);
            Ok(())
        } else {
            Err(Failure::new(
                rlock_result::RLOCK_NOT_ACQUIRED,
                format!("lock '{}' is held by another owner (waited {wait_ms} ms)", lock.name()),
            ))
        }
    })
}

unsafe fn release_impl(
    client: *const rlock_client,
    name: *const c_char,
    who: Who,
    out_unlocked: *mut bool,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target(client, name) }?;
        let released = c.block_on(lock.release(&owner(&c, who)))??;
        if !out_unlocked.is_null() {
            write(out_unlocked, released.is_unlocked());
        }
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
        write(out, c.block_on(lock.is_held(&owner(&c, who)))??);
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
        write(out, c.block_on(lock.hold_count(&owner(&c, who)))??);
        Ok(())
    })
}

/// Blocks until the calling thread holds lock `name` (re-entering when it already holds it:
/// each acquire needs one release). `lease_ms <= 0`: the watchdog keeps the lease alive until
/// the last `rlock_release`; `lease_ms > 0`: a fixed lease in milliseconds, after which the
/// hold ends by itself. `name` is only read during the call.
///
/// Thread-safe; the hold belongs to the calling OS thread. Errors: `RLOCK_INVALID_ARGUMENT`
/// (NULL client or name, invalid UTF-8, empty name, lease too long, called from a librlock
/// callback), `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS` (the key is not a lock),
/// `RLOCK_CLOSED` (the client was freed while waiting), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_acquire(
    client: *const rlock_client,
    name: *const c_char,
    lease_ms: i64,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { acquire_impl(client, name, Who::Thread, lease_ms, None) }
}

/// `rlock_acquire` on the fenced lock `name` (Redisson's `RFencedLock`): also takes a new
/// fencing token, strictly larger than any before for that name by any client, and writes it to
/// `*out_token` (required). Every acquire takes one, re-entries included. Release it with
/// `rlock_release`. The token's counter, `redisson_lock_token:{name}`, never expires.
///
/// Thread-safe. Errors as `rlock_acquire`, and `RLOCK_INVALID_ARGUMENT` for a NULL `out_token`
/// (nothing is sent to Redis then).
#[no_mangle]
pub unsafe extern "C" fn rlock_fenced_acquire(
    client: *const rlock_client,
    name: *const c_char,
    lease_ms: i64,
    out_token: *mut u64,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { acquire_impl(client, name, Who::Thread, lease_ms, Some(out_token)) }
}

/// `rlock_try_acquire` on the fenced lock `name`: on `RLOCK_OK`, the new fencing token is in
/// `*out_token` (required); `RLOCK_NOT_ACQUIRED` when the wait ran out (no token is taken).
///
/// Thread-safe. Errors as `rlock_fenced_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_fenced_try_acquire(
    client: *const rlock_client,
    name: *const c_char,
    wait_ms: i64,
    lease_ms: i64,
    out_token: *mut u64,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { try_acquire_impl(client, name, Who::Thread, (wait_ms, lease_ms), Some(out_token)) }
}

/// Tries to take lock `name` for the calling thread, waiting at most `wait_ms` milliseconds
/// (0 tries once). Returns `RLOCK_OK` when held, `RLOCK_NOT_ACQUIRED` when the wait ran out
/// while another owner held it. `lease_ms` as in `rlock_acquire`.
///
/// Thread-safe. Errors as `rlock_acquire`, and `RLOCK_INVALID_ARGUMENT` for a negative or too
/// long `wait_ms`.
#[no_mangle]
pub unsafe extern "C" fn rlock_try_acquire(
    client: *const rlock_client,
    name: *const c_char,
    wait_ms: i64,
    lease_ms: i64,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { try_acquire_impl(client, name, Who::Thread, (wait_ms, lease_ms), None) }
}

/// Releases one hold level of lock `name` by the calling thread. On success `*out_unlocked`
/// (when `out_unlocked` is not NULL) says whether the lock became free: false when the thread
/// still holds it, having acquired it more than once.
///
/// Thread-safe. Errors: `RLOCK_NOT_HELD` (the thread does not hold the lock, or its lease ran
/// out), `RLOCK_LOST` (the watchdog had lost the hold; the hold is forgotten), and those of
/// `rlock_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_release(
    client: *const rlock_client,
    name: *const c_char,
    out_unlocked: *mut bool,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { release_impl(client, name, Who::Thread, out_unlocked) }
}

/// Deletes lock `name` whoever holds it and wakes a waiter; `*out_released` (when
/// `out_released` is not NULL) says whether a lock was there. The holder's watchdog reports the
/// loss (`rlock_client_on_lost`, reason "gone") and its release fails with `RLOCK_LOST`.
///
/// Thread-safe. Errors: `RLOCK_REDIS` (nothing deleted) when the key is not a lock, and those
/// of `rlock_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_force_unlock(
    client: *const rlock_client,
    name: *const c_char,
    out_released: *mut bool,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target(client, name) }?;
        let released = c.block_on(lock.force_unlock())??;
        if !out_released.is_null() {
            write(out_released, released);
        }
        Ok(())
    })
}

/// Writes whether anyone holds lock `name` to `*out`. Thread-safe. Errors:
/// `RLOCK_INVALID_ARGUMENT` (NULL out), and those of `rlock_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_is_locked(
    client: *const rlock_client,
    name: *const c_char,
    out: *mut bool,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target(client, name) }?;
        write(out, c.block_on(lock.is_locked())??);
        Ok(())
    })
}

/// Writes whether the calling thread holds lock `name` to `*out`. Thread-safe. Errors as
/// `rlock_is_locked`.
#[no_mangle]
pub unsafe extern "C" fn rlock_is_held(
    client: *const rlock_client,
    name: *const c_char,
    out: *mut bool,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { is_held_impl(client, name, Who::Thread, out) }
}

/// Writes how many times the calling thread holds lock `name` to `*out` (0 when it does not).
/// Thread-safe. Errors as `rlock_is_locked`.
#[no_mangle]
pub unsafe extern "C" fn rlock_hold_count(
    client: *const rlock_client,
    name: *const c_char,
    out: *mut u32,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { hold_count_impl(client, name, Who::Thread, out) }
}

/// Writes the remaining lease of lock `name` in milliseconds to `*out_ms`: -2 when it does not
/// exist, -1 when it has no expiry. Thread-safe. Errors as `rlock_is_locked`.
#[no_mangle]
pub unsafe extern "C" fn rlock_remaining_ttl(
    client: *const rlock_client,
    name: *const c_char,
    out_ms: *mut i64,
) -> rlock_result {
    guard(|| {
        check_out(out_ms)?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target(client, name) }?;
        write(out_ms, c.block_on(lock.remaining_ttl())??.as_millis_i64());
        Ok(())
    })
}

/// `rlock_acquire` for the explicit owner `owner_id` (below 2^61) instead of the calling
/// thread: any thread may acquire and release for it (for event loops). The same owner
/// re-enters; different owners contend.
#[no_mangle]
pub unsafe extern "C" fn rlock_acquire_as(
    client: *const rlock_client,
    name: *const c_char,
    owner_id: u64,
    lease_ms: i64,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { acquire_impl(client, name, Who::Id(owner_id), lease_ms, None) }
}

/// `rlock_try_acquire` for the explicit owner `owner_id`.
#[no_mangle]
pub unsafe extern "C" fn rlock_try_acquire_as(
    client: *const rlock_client,
    name: *const c_char,
    owner_id: u64,
    wait_ms: i64,
    lease_ms: i64,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { try_acquire_impl(client, name, Who::Id(owner_id), (wait_ms, lease_ms), None) }
}

/// `rlock_release` for the explicit owner `owner_id` (from any thread).
#[no_mangle]
pub unsafe extern "C" fn rlock_release_as(
    client: *const rlock_client,
    name: *const c_char,
    owner_id: u64,
    out_unlocked: *mut bool,
) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { release_impl(client, name, Who::Id(owner_id), out_unlocked) }
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
