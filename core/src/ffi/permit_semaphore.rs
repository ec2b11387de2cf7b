//! `rlock_permit_expirable_semaphore`: a handle on one permit-expirable semaphore (Redisson
//! `RPermitExpirableSemaphore`). Permits have ids (32 hex characters, returned as strings
//! librlock allocates) and are not owned: any thread or process, Java's included, may release
//! one by its id.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::client::rlock_client;
use super::handle::{answer, give_up, handle, new_named, on, take, Handle};
use super::lost::{rlock_lost_callback, HandleListeners};
use super::{check_out, guard, lease_arg, rlock_result, str_arg, wait_arg, write_out, write_string};
use crate::bindings::permit_held;
use crate::millis::whole_ms;
use crate::permit_semaphore::PermitExpirableSemaphore;
use crate::semaphore::count_arg;

/// An opaque handle on one permit-expirable semaphore: `rlock_permit_expirable_semaphore_new`
/// makes it, `rlock_permit_expirable_semaphore_free` frees it. Thread-safe, and free may race
/// calls in progress, as `rlock_lock`.
pub struct rlock_permit_expirable_semaphore {
    client: Arc<rlock_client>,
    sem: PermitExpirableSemaphore,
    listeners: HandleListeners,
}

impl Drop for rlock_permit_expirable_semaphore {
    fn drop(&mut self) {
        self.listeners.remove_all(|id| self.sem.remove_lost_listener(id));
    }
}

handle!(rlock_permit_expirable_semaphore, "semaphore");

/// Makes a handle on permit-expirable semaphore `name` (Redisson's keys; a missing semaphore
/// has 0 permits; `name` is only read during the call) on `client` and writes it to `*out`.
/// Sends nothing. Free it with `rlock_permit_expirable_semaphore_free`.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL client, name or out; invalid UTF-8; an
/// empty name), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_new(
    client: *const rlock_client,
    name: *const c_char,
    out: *mut *mut rlock_permit_expirable_semaphore,
) -> rlock_result {
    // SAFETY: the header's contract.
    unsafe {
        new_named(client, name, out, |c, name| {
            let sem = c.core().permit_expirable_semaphore(name)?;
            Ok(rlock_permit_expirable_semaphore { client: c, sem, listeners: HandleListeners::default() })
        })
    }
}

/// Frees a permit-expirable semaphore handle; NULL is a no-op. Releases no permit (permits
/// taken with a watchdog lease stay renewed until released by id). Calls in progress on other
/// threads finish undisturbed; no call may start after this returned. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_free(sem: *mut rlock_permit_expirable_semaphore) {
    // SAFETY: NULL or from rlock_permit_expirable_semaphore_new, freed once (the contract).
    unsafe { give_up(sem) }
}

/// Sets `sem` to `permits` (0 or more) when it does not exist yet, expiring after `ttl_ms`
/// (`RLOCK_FOREVER`: never); `*out_set` (when not NULL) says whether it was set (false: it
/// existed and nothing changed).
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL sem, negative permits, a bad `ttl_ms`),
/// `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS`, `RLOCK_CLOSED`, `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_try_set_permits(
    sem: *const rlock_permit_expirable_semaphore,
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

/// Takes a permit of `sem`, waiting `wait_ms` (`RLOCK_FOREVER`: as long as it takes; 0: tries
/// once), and writes its id (32 lowercase hex characters) to `*id_out` as a new string the
/// caller frees with `rlock_string_free`. `lease_ms`: above 0, the permit expires that long
/// after it was taken unless released or updated; `RLOCK_FOREVER`, the watchdog renews it
/// until it is released (so it comes back within the watchdog timeout if the process dies).
///
/// Returns `RLOCK_NOT_ACQUIRED` when the wait ran out (nothing taken, `*id_out` untouched).
/// Thread-safe. Errors as `rlock_permit_expirable_semaphore_try_set_permits`
/// (`RLOCK_INVALID_ARGUMENT` also for a NULL `id_out`, a bad `wait_ms` or `lease_ms`).
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_acquire(
    sem: *const rlock_permit_expirable_semaphore,
    wait_ms: i64,
    lease_ms: i64,
    id_out: *mut *mut c_char,
) -> rlock_result {
    guard(|| {
        check_out(id_out)?;
        let wait = wait_arg(wait_ms)?;
        let lease = lease_arg(lease_ms, "lease_ms")?;
        // SAFETY: NULL or live per the header.
        let s = unsafe { take(sem) }?;
        let permit = s.run(permit_held(&s.sem, wait, lease))?;
        write_string(id_out, permit.keep())
    })
}

/// Releases permit `id` (32 hex characters, NUL-terminated) of `sem` and wakes a waiter. Never
/// gives back twice, also when retried after a connection error.
///
/// Thread-safe. Errors: `RLOCK_NOT_HELD` (unknown, released or expired id), `RLOCK_LOST` (this
/// client's watchdog lost it), `RLOCK_INVALID_ARGUMENT` (NULL or malformed id; nothing sent),
/// and those of `rlock_permit_expirable_semaphore_try_set_permits`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_release(
    sem: *const rlock_permit_expirable_semaphore,
    id: *const c_char,
) -> rlock_result {
    guard(|| {
        // SAFETY: NULL or NUL-terminated per the header.
        let id = unsafe { str_arg(id, "id") }?;
        // SAFETY: NULL or live per the header.
        let s = unsafe { take(sem) }?;
        s.run(s.sem.release(id))
    })
}

/// Makes held permit `id` of `sem` expire `lease_ms` from now (`RLOCK_FOREVER`: this client's
/// watchdog renews it until it is released).
///
/// Thread-safe. Errors as `rlock_permit_expirable_semaphore_release`, and
/// `RLOCK_INVALID_ARGUMENT` for a bad `lease_ms`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_update_lease(
    sem: *const rlock_permit_expirable_semaphore,
    id: *const c_char,
    lease_ms: i64,
) -> rlock_result {
    guard(|| {
        // SAFETY: NULL or NUL-terminated per the header.
        let id = unsafe { str_arg(id, "id") }?;
        let lease = lease_arg(lease_ms, "lease_ms")?;
        // SAFETY: NULL or live per the header.
        let s = unsafe { take(sem) }?;
        s.run(s.sem.update_lease(id, lease))
    })
}

/// Writes the free permits of `sem` (after expired permits came back; 0 when it does not
/// exist) to `*out_available` and the held ones to `*out_acquired` (either may be NULL).
/// Thread-safe. Errors as `rlock_permit_expirable_semaphore_try_set_permits`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_permits(
    sem: *const rlock_permit_expirable_semaphore,
    out_available: *mut i64,
    out_acquired: *mut i64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe {
        on(sem, |s| {
            let available = s.run(s.sem.available_permits())?;
            let acquired = s.run(s.sem.acquired_permits())?;
            write_out(out_available, available);
            write_out(out_acquired, acquired);
            Ok(())
        })
    }
}

/// Adds `delta` permits to `sem` (negative removes them) and wakes waiters; `*out_count` (when
/// not NULL) receives the new count of free permits. Thread-safe. Errors as
/// `rlock_permit_expirable_semaphore_try_set_permits`.
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_add_permits(
    sem: *const rlock_permit_expirable_semaphore,
    delta: i64,
    out_count: *mut i64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { answer(sem, out_count, |s| s.run(s.sem.add_permits(delta))) }
}

/// Writes whether this client's watchdog lost permit `permit_id` of `sem` to `*out` (true until
/// the permit is released, which then returns `RLOCK_LOST`). Local: sends nothing.
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL sem, permit_id or out; invalid UTF-8).
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_is_lost(
    sem: *const rlock_permit_expirable_semaphore,
    permit_id: *const c_char,
    out: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live / NUL-terminated per the header.
    unsafe { permit_query(sem, permit_id, out, |sem, id| sem.is_lost(id)) }
}

/// Writes how long local time still proves permit `permit_id` of `sem` to `*out_ms`, in whole
/// milliseconds (see `rlock_lock_valid_for_ms`): 0 for a permit this client does not hold, a
/// lost permit, or one in doubt. Local: sends nothing. Thread-safe. Errors:
/// `RLOCK_INVALID_ARGUMENT` (NULL sem, permit_id or out_ms; invalid UTF-8).
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_valid_for_ms(
    sem: *const rlock_permit_expirable_semaphore,
    permit_id: *const c_char,
    out_ms: *mut u64,
) -> rlock_result {
    // SAFETY: NULL or live / NUL-terminated per the header.
    unsafe { permit_query(sem, permit_id, out_ms, |sem, id| whole_ms(sem.valid_for(id))) }
}

/// A local query of permit `permit_id` of `sem` (sends nothing), its answer written to `*out`.
/// Errors: `RLOCK_INVALID_ARGUMENT` (NULL sem, permit_id or out; invalid UTF-8).
///
/// # Safety
/// `sem` NULL or a live handle, `permit_id` NULL or NUL-terminated, `out` NULL or writable.
unsafe fn permit_query<T>(
    sem: *const rlock_permit_expirable_semaphore,
    permit_id: *const c_char,
    out: *mut T,
    query: impl FnOnce(&PermitExpirableSemaphore, &str) -> T,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        // SAFETY: NULL or NUL-terminated per the caller.
        let id = unsafe { str_arg(permit_id, "permit_id") }?;
        // SAFETY: NULL or live per the caller.
        let s = unsafe { take(sem) }?;
        write_out(out, query(&s.sem, id));
        Ok(())
    })
}

/// Adds a function called when the watchdog loses a permit of `sem` this client holds, with `userdata` as its first argument
/// and the event of `rlock_client_on_lost`'s callback (kind `"permit"`, `permit_id` set); writes the listener's id to
/// `*out_listener` (NULL: not wanted). It runs on a librlock thread, under the rules of
/// `rlock_client_on_lost`. `userdata` must stay valid until `rlock_permit_expirable_semaphore_remove_lost_listener` removed it or the handle
/// is freed (which removes it). Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL sem or
/// callback).
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_on_lost(
    sem: *const rlock_permit_expirable_semaphore,
    callback: rlock_lost_callback,
    userdata: *mut c_void,
    out_listener: *mut u64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { on(sem, |h| h.listeners.add(callback, userdata, out_listener, |f| h.sem.on_lost(f))) }
}

/// Removes a listener `rlock_permit_expirable_semaphore_on_lost` added on this handle; writes whether it was there to
/// `*out_removed` (NULL: not wanted). Once this returns the callback is not called again.
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL sem).
#[no_mangle]
pub unsafe extern "C" fn rlock_permit_expirable_semaphore_remove_lost_listener(
    sem: *const rlock_permit_expirable_semaphore,
    listener: u64,
    out_removed: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe {
        answer(sem, out_removed, |h| Ok(h.listeners.remove(listener, |id| h.sem.remove_lost_listener(id))))
    }
}
