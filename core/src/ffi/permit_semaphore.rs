//! Permit-expirable semaphore operations (Redisson `RPermitExpirableSemaphore`). Permits have
//! ids (32 hex characters) and are not owned: any thread or process, Java's included, may
//! release one by its id.

use std::ffi::c_char;
use std::time::Duration;

use super::client::{named, rlock_client};
use super::{check_out, guard, lease, rlock_result, str_arg, wait_arg, write_out, Failure};
use crate::error::Error;
use crate::permit_semaphore::PermitExpirableSemaphore;
use crate::semaphore::count_arg;

/// Bytes of the buffer a permit id is written to: 32 hex characters and a NUL.
pub const RLOCK_PERMIT_ID_SIZE: usize = 33;

/// Sets permit-expirable semaphore `name` to `permits` when it does not exist yet (expiring
/// after `ttl_ms` when `ttl_ms > 0`); `*out_set` (when not NULL) says whether it was set
/// (false: it existed and nothing changed). A missing semaphore has 0 permits.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL client or name, negative permits),
/// `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS`, `RLOCK_CLOSED`, `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_semaphore_try_set_permits(
    client: *const rlock_client,
    name: *const c_char,
    permits: i64,
    ttl_ms: i64,
    out_set: *mut bool,
) -> rlock_result {
    guard(|| {
        let n = count_arg("permits", permits, 0)?;
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.permit_expirable_semaphore(n)) }?;
        write_out(out_set, c.block_on(sem.try_set_permits(n, lease(ttl_ms)))??);
        Ok(())
    })
}

/// Takes a permit of `sem`, waiting at most `wait` (`None`: as long as it takes), and writes
/// its id to `out_id`.
///
/// # Safety
/// `out_id` is NULL or a writable buffer of `RLOCK_PERMIT_ID_SIZE` bytes.
unsafe fn take_permit(
    c: &rlock_client,
    sem: &PermitExpirableSemaphore,
    wait: Option<Duration>,
    lease_ms: i64,
    out_id: *mut c_char,
) -> Result<(), Failure> {
    check_out(out_id)?;
    let lease = lease(lease_ms);
    let permit = match wait {
        None => Some(c.block_on(sem.acquire(lease))??),
        Some(w) => c.block_on(sem.try_acquire(w, lease))??,
    };
    let Some(permit) = permit else {
        return Err(Error::not_acquired(format!("a permit of semaphore '{}'", sem.name()), wait).into());
    };
    let id = permit.keep();
    let mut bytes = [0u8; RLOCK_PERMIT_ID_SIZE];
    bytes[..id.len()].copy_from_slice(id.as_bytes());
    // SAFETY: the caller gives a buffer of RLOCK_PERMIT_ID_SIZE bytes (see above).
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), out_id, RLOCK_PERMIT_ID_SIZE) };
    Ok(())
}

/// Blocks until a permit of semaphore `name` is free, takes it and writes its id (32
/// lowercase hex characters and a NUL) to `out_id`, a buffer of at least
/// `RLOCK_PERMIT_ID_SIZE` bytes. `lease_ms > 0`: the permit expires that long after it was
/// taken unless released or updated; `lease_ms <= 0`: the watchdog renews it until it is
/// released, so it comes back within the watchdog timeout if the process dies.
///
/// Thread-safe. Errors as `rlock_permit_semaphore_try_set_permits` (`RLOCK_INVALID_ARGUMENT`
/// also for a NULL `out_id`).
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_semaphore_acquire(
    client: *const rlock_client,
    name: *const c_char,
    lease_ms: i64,
    out_id: *mut c_char,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.permit_expirable_semaphore(n)) }?;
        // SAFETY: forwarded contract.
        unsafe { take_permit(&c, &sem, None, lease_ms, out_id) }
    })
}

/// Like `rlock_permit_semaphore_acquire`, waiting at most `wait_ms` (0 tries once):
/// `RLOCK_NOT_ACQUIRED` when the wait ran out (nothing taken, `out_id` untouched).
///
/// Thread-safe. Errors as `rlock_permit_semaphore_acquire`, and `RLOCK_INVALID_ARGUMENT` for a
/// negative `wait_ms`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_semaphore_try_acquire(
    client: *const rlock_client,
    name: *const c_char,
    wait_ms: i64,
    lease_ms: i64,
    out_id: *mut c_char,
) -> rlock_result {
    guard(|| {
        let wait = wait_arg(wait_ms)?;
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.permit_expirable_semaphore(n)) }?;
        // SAFETY: forwarded contract.
        unsafe { take_permit(&c, &sem, Some(wait), lease_ms, out_id) }
    })
}

/// Releases permit `id` (32 hex characters, NUL-terminated) of semaphore `name` and wakes a
/// waiter. Never gives back twice, also when retried after a connection error.
///
/// Thread-safe. Errors: `RLOCK_NOT_HELD` (unknown, released or expired id), `RLOCK_LOST` (this
/// client's watchdog lost it), `RLOCK_INVALID_ARGUMENT` (NULL or malformed id; nothing sent),
/// and those of `rlock_permit_semaphore_try_set_permits`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_semaphore_release(
    client: *const rlock_client,
    name: *const c_char,
    id: *const c_char,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let id = unsafe { str_arg(id, "id") }?;
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.permit_expirable_semaphore(n)) }?;
        c.block_on(sem.release(id))??;
        Ok(())
    })
}

/// Makes held permit `id` of semaphore `name` expire `lease_ms` from now (`lease_ms <= 0`:
/// this client's watchdog renews it until it is released).
///
/// Thread-safe. Errors as `rlock_permit_semaphore_release`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_semaphore_update_lease(
    client: *const rlock_client,
    name: *const c_char,
    id: *const c_char,
    lease_ms: i64,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let id = unsafe { str_arg(id, "id") }?;
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.permit_expirable_semaphore(n)) }?;
        c.block_on(sem.update_lease(id, lease(lease_ms)))??;
        Ok(())
    })
}

/// Writes the free permits of semaphore `name` (after expired permits came back; 0 when it
/// does not exist) to `*out_available` and the held ones to `*out_acquired` (either may be
/// NULL). Thread-safe. Errors as `rlock_permit_semaphore_try_set_permits`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_semaphore_permits(
    client: *const rlock_client,
    name: *const c_char,
    out_available: *mut i64,
    out_acquired: *mut i64,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.permit_expirable_semaphore(n)) }?;
        write_out(out_available, c.block_on(sem.available_permits())??);
        write_out(out_acquired, c.block_on(sem.acquired_permits())??);
        Ok(())
    })
}

/// Adds `delta` permits to semaphore `name` (negative removes them) and wakes waiters;
/// `*out_count` (when not NULL) receives the new count of free permits. Thread-safe. Errors as
/// `rlock_permit_semaphore_try_set_permits`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_semaphore_add_permits(
    client: *const rlock_client,
    name: *const c_char,
    delta: i64,
    out_count: *mut i64,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.permit_expirable_semaphore(n)) }?;
        write_out(out_count, c.block_on(sem.add_permits(delta))??);
        Ok(())
    })
}
