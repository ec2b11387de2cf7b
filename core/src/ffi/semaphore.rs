//! `rlock_semaphore`: a handle on one semaphore (Redisson `RSemaphore`). Permits are not owned:
//! any thread may give them back, so no call takes an owner.

use std::ffi::c_char;
use std::sync::Arc;

use super::client::rlock_client;
use super::handle::{answer, give_up, handle, new_named, query, take, Handle};
use super::{guard, lease_arg, rlock_result, wait_arg, write_out};
use crate::bindings::permits_held;
use crate::semaphore::{count_arg, Semaphore};

/// An opaque handle on one semaphore: `rlock_semaphore_new` makes it, `rlock_semaphore_free`
/// frees it. Thread-safe, and free may race calls in progress, as `rlock_lock`.
pub struct rlock_semaphore {
    client: Arc<rlock_client>,
    sem: Semaphore,
}

handle!(rlock_semaphore, "semaphore");

/// Makes a handle on semaphore `name` (the STRING key `name`, Redisson's layout; a missing key
/// is 0 permits; `name` is only read during the call) on `client` and writes it to `*out`.
/// Sends nothing. Free it with `rlock_semaphore_free`.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL client, name or out; invalid UTF-8; an
/// empty name), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_new(
    client: *const rlock_client,
    name: *const c_char,
    out: *mut *mut rlock_semaphore,
) -> rlock_result {
    // SAFETY: the header's contract.
    unsafe {
        new_named(client, name, out, |c, name| {
            Ok(rlock_semaphore { sem: c.core().semaphore(name)?, client: c })
        })
    }
}

/// Frees a semaphore handle; NULL is a no-op. Gives back nothing (permits are not owned).
/// Calls in progress on other threads finish undisturbed; no call may start after this
/// returned. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_free(sem: *mut rlock_semaphore) {
    // SAFETY: NULL or from rlock_semaphore_new, freed once (the header's contract).
    unsafe { give_up(sem) }
}

/// Sets `sem` to `permits` (0 or more) when it does not exist yet, expiring after `ttl_ms`
/// (`RLOCK_FOREVER`: never); `*out_set` (when not NULL) says whether it was set (false: it
/// existed and nothing changed).
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL sem, negative permits, a bad `ttl_ms`),
/// `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS`, `RLOCK_CLOSED`, `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_try_set_permits(
    sem: *const rlock_semaphore,
    permits: i64,
    ttl_ms: i64,
    out_set: *mut bool,
) -> rlock_result {
    guard(|| {
        let n = count_arg("permits", permits, 0)?;
        let ttl = lease_arg(ttl_ms, "ttl_ms")?;
        // SAFETY: NULL or live per the header.
        let s = unsafe { take(sem) }?;
        write_out(out_set, s.run(s.sem.try_set_permits(n, ttl))?);
        Ok(())
    })
}

/// Takes `permits` (at least 1) of `sem`, waiting `wait_ms` (`RLOCK_FOREVER`: as long as it
/// takes; 0: tries once): `RLOCK_OK` when taken, `RLOCK_NOT_ACQUIRED` when the wait ran out
/// (nothing taken).
///
/// Thread-safe. Errors as `rlock_semaphore_try_set_permits` (`RLOCK_INVALID_ARGUMENT` also for
/// permits below 1 and a bad `wait_ms`).
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_acquire(
    sem: *const rlock_semaphore,
    permits: i64,
    wait_ms: i64,
) -> rlock_result {
    guard(|| {
        let n = count_arg("permits", permits, 1)?;
        let wait = wait_arg(wait_ms)?;
        // SAFETY: NULL or live per the header.
        let s = unsafe { take(sem) }?;
        s.run(permits_held(&s.sem, n, wait))?.keep();
        Ok(())
    })
}

/// Gives back `permits` (at least 1) of `sem` and wakes waiters; `*out_count` (when not NULL)
/// receives the new count. Never adds twice, also when retried after a connection error.
///
/// Thread-safe. Errors as `rlock_semaphore_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_release(
    sem: *const rlock_semaphore,
    permits: i64,
    out_count: *mut i64,
) -> rlock_result {
    guard(|| {
        let n = count_arg("permits", permits, 1)?;
        // SAFETY: NULL or live per the header.
        let s = unsafe { take(sem) }?;
        write_out(out_count, s.run(s.sem.release(n))?);
        Ok(())
    })
}

/// Writes the available permits of `sem` to `*out` (0 when it does not exist). Thread-safe.
/// Errors: `RLOCK_INVALID_ARGUMENT` (NULL out), and those of `rlock_semaphore_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_available_permits(
    sem: *const rlock_semaphore,
    out: *mut i64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(sem, out, |s| s.run(s.sem.available_permits())) }
}

/// Adds `delta` permits to `sem` (negative removes them) and wakes waiters; `*out_count` (when
/// not NULL) receives the new count. Thread-safe. Errors as `rlock_semaphore_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_add_permits(
    sem: *const rlock_semaphore,
    delta: i64,
    out_count: *mut i64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { answer(sem, out_count, |s| s.run(s.sem.add_permits(delta))) }
}

/// Takes every available permit of `sem`; `*out_drained` (when not NULL) receives how many
/// there were. Thread-safe. Errors as `rlock_semaphore_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_semaphore_drain_permits(
    sem: *const rlock_semaphore,
    out_drained: *mut i64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { answer(sem, out_drained, |s| s.run(s.sem.drain_permits())) }
}
