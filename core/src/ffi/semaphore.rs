//! Semaphore operations (Redisson `RSemaphore`). Permits are not owned: any thread may give
//! them back.

use std::ffi::c_char;

use super::client::{named, rlock_client};
use super::{check_out, guard, lease, rlock_result, wait_arg, write_out};
use crate::error::Error;
use crate::semaphore::count_arg;

/// Sets semaphore `name` to `permits` when it does not exist yet (expiring after `ttl_ms` when
/// `ttl_ms > 0`); `*out_set` (when not NULL) says whether it was set (false: it existed and
/// nothing changed). The semaphore is the STRING key `name`; a missing key is 0 permits.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL client or name, negative permits),
/// `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS`, `RLOCK_CLOSED`, `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_try_set_permits(
    client: *const rlock_client,
    name: *const c_char,
    permits: i64,
    ttl_ms: i64,
    out_set: *mut bool,
) -> rlock_result {
    guard(|| {
        let n = count_arg("permits", permits, 0)?;
        let ttl = lease(ttl_ms);
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.semaphore(n)) }?;
        write_out(out_set, c.block_on(sem.try_set_permits(n, ttl))??);
        Ok(())
    })
}

/// Blocks until `permits` (at least 1) of semaphore `name` are available and takes them.
///
/// Thread-safe. Errors as `rlock_semaphore_try_set_permits` (`RLOCK_INVALID_ARGUMENT` for
/// permits below 1).
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_acquire(
    client: *const rlock_client,
    name: *const c_char,
    permits: i64,
) -> rlock_result {
    guard(|| {
        let n = count_arg("permits", permits, 1)?;
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.semaphore(n)) }?;
        c.block_on(sem.acquire(n))??;
        Ok(())
    })
}

/// Takes `permits` of semaphore `name`, waiting at most `wait_ms` (0 tries once): `RLOCK_OK`
/// when taken, `RLOCK_NOT_ACQUIRED` when the wait ran out (nothing taken).
///
/// Thread-safe. Errors as `rlock_semaphore_acquire`, and `RLOCK_INVALID_ARGUMENT` for a
/// negative `wait_ms`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_try_acquire(
    client: *const rlock_client,
    name: *const c_char,
    permits: i64,
    wait_ms: i64,
) -> rlock_result {
    guard(|| {
        let n = count_arg("permits", permits, 1)?;
        let wait = wait_arg(wait_ms)?;
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.semaphore(n)) }?;
        if c.block_on(sem.try_acquire(n, wait))?? {
            Ok(())
        } else {
            Err(Error::not_acquired(format!("{n} permit(s) of semaphore '{}'", sem.name()), Some(wait))
                .into())
        }
    })
}

/// Gives back `permits` (at least 1) of semaphore `name` and wakes waiters; `*out_count` (when
/// not NULL) receives the new count. Never adds twice, also when retried after a connection
/// error.
///
/// Thread-safe. Errors as `rlock_semaphore_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_release(
    client: *const rlock_client,
    name: *const c_char,
    permits: i64,
    out_count: *mut i64,
) -> rlock_result {
    guard(|| {
        let n = count_arg("permits", permits, 1)?;
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.semaphore(n)) }?;
        write_out(out_count, c.block_on(sem.release(n))??);
        Ok(())
    })
}

/// Writes the available permits of semaphore `name` to `*out` (0 when it does not exist).
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL out), and those of
/// `rlock_semaphore_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_available_permits(
    client: *const rlock_client,
    name: *const c_char,
    out: *mut i64,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.semaphore(n)) }?;
        write_out(out, c.block_on(sem.available_permits())??);
        Ok(())
    })
}

/// Adds `delta` permits to semaphore `name` (negative removes them) and wakes waiters;
/// `*out_count` (when not NULL) receives the new count. Thread-safe. Errors as
/// `rlock_semaphore_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_add_permits(
    client: *const rlock_client,
    name: *const c_char,
    delta: i64,
    out_count: *mut i64,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.semaphore(n)) }?;
        write_out(out_count, c.block_on(sem.add_permits(delta))??);
        Ok(())
    })
}

/// Takes every available permit of semaphore `name`; `*out_drained` (when not NULL) receives
/// how many there were. Thread-safe. Errors as `rlock_semaphore_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_drain_permits(
    client: *const rlock_client,
    name: *const c_char,
    out_drained: *mut i64,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, sem) = unsafe { named(client, name, |c, n| c.semaphore(n)) }?;
        write_out(out_drained, c.block_on(sem.drain_permits())??);
        Ok(())
    })
}
