//! `rlock_red_lock` (Redisson `RedissonRedLock`, antirez's algorithm): one lock name held on a
//! majority of N independent servers, one client each. Fenced or not, as the lock handle's
//! kind: a fenced RedLock's acquire hands out a token that strictly increases across successful
//! acquires, whichever majority granted them.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::client::{client_ref, rlock_client};
use super::handle::{answer, give_up, hand_out, on, query, Handle};
use super::lock::write_token;
use super::lost::{rlock_lost_callback, HandleListeners};
use super::{check_out, guard, lease_arg, rlock_result, str_arg, wait_arg, Failure};
use crate::bindings::red_lock_held;
use crate::client::Client;
use crate::millis::whole_ms;
use crate::red_lock::{red_lock, RedLock};

/// An opaque RedLock: `rlock_red_lock_new` makes it over client handles,
/// `rlock_red_lock_free` frees it. Thread-safe, and free may race calls in progress, as
/// `rlock_lock`.
pub struct rlock_red_lock {
    /// The clients, kept so their memory outlives the RedLock's calls; owners are named on the
    /// first.
    clients: Vec<Arc<rlock_client>>,
    red: RedLock,
    fenced: bool,
    listeners: HandleListeners,
}

impl Drop for rlock_red_lock {
    fn drop(&mut self) {
        self.listeners.remove_all(|id| self.red.remove_lost_listener(id));
    }
}

impl Handle for rlock_red_lock {
    const WHAT: &'static str = "red_lock";
    fn client(&self) -> &rlock_client {
        &self.clients[0]
    }
}

/// Makes a RedLock named `name` (only read during the call) over the `count` client handles at
/// `clients` (an odd number, at least 3, each a different client of its own server), and
/// writes it to `*out`. `fenced`: every acquire hands out a fencing token (a quorum register
/// on each server's `redisson_lock_token:{name}`). Sends nothing. The RedLock keeps its own
/// reference to each client's memory; free it with `rlock_red_lock_free`.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL clients, name or out, a NULL client, an
/// even count or fewer than 3, the same client twice, a bad name), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_red_lock_new(
    clients: *const *const rlock_client,
    count: usize,
    name: *const c_char,
    fenced: bool,
    out: *mut *mut rlock_red_lock,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        if clients.is_null() {
            return Err(Failure::invalid("clients is NULL"));
        }
        // SAFETY: NULL or NUL-terminated per the header.
        let name = unsafe { str_arg(name, "name") }?;
        // SAFETY: the caller gives `count` readable pointers (the header's contract).
        let ptrs = unsafe { std::slice::from_raw_parts(clients, count) };
        let clients = ptrs.iter().map(|&p| client_ref(p)).collect::<Result<Vec<_>, _>>()?;
        let cores: Vec<Client> = clients.iter().map(|c| c.core().clone()).collect();
        let red = red_lock(name, &cores, fenced)?;
        // SAFETY: checked non-NULL; writable per the header.
        unsafe {
            hand_out(rlock_red_lock { clients, red, fenced, listeners: HandleListeners::default() }, out)
        };
        Ok(())
    })
}

/// Frees a RedLock; NULL is a no-op. Releases nothing. Calls in progress on other threads
/// finish undisturbed; no call may start after this returned. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_red_lock_free(red: *mut rlock_red_lock) {
    // SAFETY: NULL or from rlock_red_lock_new, freed once (the header's contract).
    unsafe { give_up(red) }
}

/// Acquires `red` for `owner` (`RLOCK_THREAD` or an explicit id): one round tries every server
/// at once and succeeds with a majority and validity left; a failed round gives back what it
/// took and waits on the busy servers' unlock messages. `wait_ms`: `RLOCK_FOREVER` as long as
/// it takes, 0 one round, else at most that long. `lease_ms`: `RLOCK_FOREVER`, each server's
/// watchdog renews its member; above 0, each member's lease.
///
/// `out_token`: NULL, or for a fenced RedLock where the acquire's token goes (never 0 with
/// `RLOCK_OK`).
///
/// Returns `RLOCK_NOT_ACQUIRED` when the wait ran out (nothing held). Thread-safe. Errors:
/// `RLOCK_INVALID_ARGUMENT` (NULL red, a bad `wait_ms` or `lease_ms`, a non-NULL `out_token`
/// on a RedLock that is not fenced), `RLOCK_CONNECTION` (a majority refused),
/// `RLOCK_TIMEOUT` (a majority did not answer within the command timeout), `RLOCK_REDIS`,
/// `RLOCK_CLOSED`, `RLOCK_FORKED`; nothing is held after an error.
#[no_mangle]
pub unsafe extern "C" fn rlock_red_lock_acquire(
    red: *const rlock_red_lock,
    owner: u64,
    wait_ms: i64,
    lease_ms: i64,
    out_token: *mut u64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe {
        on(red, |r| {
            let wait = wait_arg(wait_ms)?;
            let lease = lease_arg(lease_ms, "lease_ms")?;
            if !out_token.is_null() && !r.fenced {
                return Err(Failure::invalid("out_token is for a fenced RedLock only (pass NULL)"));
            }
            let held = r.run(red_lock_held(&r.red, &r.owner(owner), wait, lease))?;
            if r.fenced {
                write_token(held.token(), out_token)?;
            }
            held.keep();
            Ok(())
        })
    }
}

/// Releases `owner`'s holds on every server of `red`. On success `*out_unlocked` (when not
/// NULL) says whether the lock is free now.
///
/// Thread-safe. Errors: `RLOCK_NOT_HELD` (the owner holds it on no server), `RLOCK_LOST` (fewer
/// than a majority were still held), and those of `rlock_red_lock_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_red_lock_release(
    red: *const rlock_red_lock,
    owner: u64,
    out_unlocked: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { answer(red, out_unlocked, |r| Ok(r.run(r.red.release(&r.owner(owner)))?.is_unlocked())) }
}

/// Writes whether `owner` holds `red` on a majority of its servers to `*out` (one query per
/// server). Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL red or out), and those of
/// `rlock_red_lock_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_red_lock_is_held(
    red: *const rlock_red_lock,
    owner: u64,
    out: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(red, out, |r| r.run(r.red.is_held(&r.owner(owner)))) }
}

/// Writes whether `owner`'s hold of `red` was lost to `*out`: a member's hold was lost and
/// fewer than a majority are left (until the owner's release; no query). Each member's loss
/// also reaches its client's `rlock_client_on_lost` listener (kind "lock").
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL red or out), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_red_lock_is_lost(
    red: *const rlock_red_lock,
    owner: u64,
    out: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(red, out, |r| Ok(r.red.is_lost(&r.owner(owner)))) }
}

/// Writes how long local time still proves a majority of `owner`'s member holds of `red` to
/// `*out_ms`, in whole milliseconds (the quorum-th longest-proven member's time left; see
/// `rlock_lock_valid_for_ms`). 0 when fewer than a majority are proven now. Local: sends
/// nothing. Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL red or out_ms), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_red_lock_valid_for_ms(
    red: *const rlock_red_lock,
    owner: u64,
    out_ms: *mut u64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(red, out_ms, |r| Ok(whole_ms(r.red.valid_for(&r.owner(owner))))) }
}

/// Adds a function called when the watchdog loses `owner`'s hold of `red` (`RLOCK_THREAD`: the calling thread's; fewer than a majority left), with `userdata` as its first argument
/// and the event of `rlock_client_on_lost`'s callback (kind `"red_lock"`); writes the listener's id to
/// `*out_listener` (NULL: not wanted). It runs on a librlock thread, under the rules of
/// `rlock_client_on_lost`. `userdata` must stay valid until `rlock_red_lock_remove_lost_listener` removed it or the handle
/// is freed (which removes it). Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL red or
/// callback).
#[no_mangle]
pub unsafe extern "C" fn rlock_red_lock_on_lost(
    red: *const rlock_red_lock,
    owner: u64,
    callback: rlock_lost_callback,
    userdata: *mut c_void,
    out_listener: *mut u64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe {
        on(red, |h| {
            h.listeners.add(callback, userdata, out_listener, |f| h.red.on_lost(Some(&h.owner(owner)), f))
        })
    }
}

/// Removes a listener `rlock_red_lock_on_lost` added on this handle; writes whether it was there to
/// `*out_removed` (NULL: not wanted). Once this returns the callback is not called again.
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL red).
#[no_mangle]
pub unsafe extern "C" fn rlock_red_lock_remove_lost_listener(
    red: *const rlock_red_lock,
    listener: u64,
    out_removed: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe {
        answer(red, out_removed, |h| Ok(h.listeners.remove(listener, |id| h.red.remove_lost_listener(id))))
    }
}
