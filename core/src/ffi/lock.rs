//! `rlock_lock`: a handle on one lock of the lock family (Redisson's `RLock`, `RFairLock`,
//! `RFencedLock` and the two sides of `RReadWriteLock`), made once by `rlock_lock_new` and used
//! by every lock operation. Holds belong to owners: the calling thread (`RLOCK_THREAD`) or an
//! explicit id, so one function serves both.

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use super::client::rlock_client;
use super::handle::{answer, give_up, handle, new_named, on, query, Handle};
use super::lost::{rlock_lost_callback, HandleListeners};
use super::{lease_arg, rlock_result, wait_arg, write_out, Failure, RLOCK_THREAD};
use crate::bindings::lock_held;
use crate::lock::Lock;
use crate::millis::whole_ms;
use crate::owner::{thread_owner_id, Owner};

/// The owner an `owner` argument names on client `c`.
pub(crate) fn owner_of(c: &rlock_client, owner: u64) -> Owner {
    c.core().owner(if owner == RLOCK_THREAD { thread_owner_id() } else { owner })
}

/// Writes a fenced acquire's token to `out_token` (NULL: not wanted). A fenced guard always
/// carries its acquire's token; without one this fails `RLOCK_PANIC` (a bug), and the caller's
/// unkept guard gives the hold back rather than report it with token 0.
pub(crate) fn write_token(token: Option<u64>, out_token: *mut u64) -> Result<(), Failure> {
    let token = token.filter(|&t| t > 0).ok_or_else(|| {
        Failure(rlock_result::RLOCK_PANIC, "a fenced acquire came back without its token (a bug)".into())
    })?;
    write_out(out_token, token);
    Ok(())
}

/// Which lock of the family an `rlock_lock` is (Redisson's names).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)]
pub enum rlock_lock_kind {
    /// The reentrant lock (Redisson `RLock`).
    RLOCK_LOCK = 0,
    /// The fenced lock (Redisson `RFencedLock`): every acquire takes a fencing token.
    RLOCK_FENCED_LOCK = 1,
    /// The read side of the read-write lock (Redisson `RReadWriteLock.readLock()`): shared by
    /// readers.
    RLOCK_READ_LOCK = 2,
    /// The write side of the read-write lock (`RReadWriteLock.writeLock()`): one writer, who
    /// may also take read holds. A reader asking for it gets `RLOCK_WOULD_DEADLOCK` at once.
    RLOCK_WRITE_LOCK = 3,
    /// The fair lock (Redisson `RFairLock`): granted in arrival order across all clients.
    RLOCK_FAIR_LOCK = 4,
    /// The spin lock (Redisson `RSpinLock`): the reentrant lock's hash, but a release publishes
    /// nothing and a waiter polls with back-off (endpoints without pub/sub).
    RLOCK_SPIN_LOCK = 5,
    /// The non-reentrant lock (Redisson 4.4's `getNonReentrantLock`): the reentrant lock's hash,
    /// but an owner that holds it and acquires it again gets `RLOCK_WOULD_DEADLOCK` at once.
    RLOCK_NON_REENTRANT_LOCK = 6,
    /// The non-reentrant fair lock (Redisson 4.4's `getNonReentrantFairLock`): the fair lock,
    /// with a re-entry refused as `RLOCK_NON_REENTRANT_LOCK` refuses it.
    RLOCK_NON_REENTRANT_FAIR_LOCK = 7,
}

/// An opaque handle on one lock: `rlock_lock_new` makes it, `rlock_lock_free` frees it.
/// Thread-safe: any number of threads may use one handle at once, for any owners, and free may
/// race calls in progress on other threads (see `rlock_lock_free`). Holds live in Redis and the
/// client, not in the handle: freeing a handle releases nothing, and another handle on the same
/// client and name is the same lock.
pub struct rlock_lock {
    client: Arc<rlock_client>,
    lock: Lock,
    kind: rlock_lock_kind,
    listeners: HandleListeners,
}

impl Drop for rlock_lock {
    fn drop(&mut self) {
        self.listeners.remove_all(|id| self.lock.remove_lost_listener(id));
    }
}

handle!(rlock_lock, "lock");

impl rlock_lock {
    /// The core lock, for the multi-lock.
    pub(crate) fn core(&self) -> &Lock {
        &self.lock
    }

    /// The handle's client, shared.
    pub(crate) fn client_arc(&self) -> &Arc<rlock_client> {
        &self.client
    }
}

/// Makes a handle on the lock of `kind` (an `rlock_lock_kind`) named `name` (used byte for byte as the Redis key,
/// Redisson's layout; only read during the call) on `client`, and writes it to `*out`. Sends
/// nothing to Redis. The handle keeps the client's memory alive (not the client open: after
/// `rlock_client_free` its calls return `RLOCK_CLOSED`); free it with `rlock_lock_free`.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL client, name or out; invalid UTF-8; an
/// empty name or one over 64 KiB; on a cluster a name with an empty `{}`; a `kind` that is not
/// an `rlock_lock_kind`), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_new(
    client: *const rlock_client,
    name: *const c_char,
    kind: c_int,
    out: *mut *mut rlock_lock,
) -> rlock_result {
    // SAFETY: the header's contract.
    unsafe {
        new_named(client, name, out, |c, name| {
            let core = c.core();
            // An int, not the enum: C may pass any value, and Rust may not hold an invalid enum.
            let (lock, kind) = match kind {
                0 => (core.lock(name)?, rlock_lock_kind::RLOCK_LOCK),
                1 => (core.fenced_lock(name)?.lock().clone(), rlock_lock_kind::RLOCK_FENCED_LOCK),
                2 => (core.read_write_lock(name)?.read_lock(), rlock_lock_kind::RLOCK_READ_LOCK),
                3 => (core.read_write_lock(name)?.write_lock(), rlock_lock_kind::RLOCK_WRITE_LOCK),
                4 => (core.fair_lock(name)?, rlock_lock_kind::RLOCK_FAIR_LOCK),
                5 => (core.spin_lock(name)?, rlock_lock_kind::RLOCK_SPIN_LOCK),
                6 => (core.non_reentrant_lock(name)?, rlock_lock_kind::RLOCK_NON_REENTRANT_LOCK),
                7 => (core.non_reentrant_fair_lock(name)?, rlock_lock_kind::RLOCK_NON_REENTRANT_FAIR_LOCK),
                k => return Err(Failure::invalid(format!("kind {k} is not an rlock_lock_kind"))),
            };
            Ok(rlock_lock { client: c, lock, kind, listeners: HandleListeners::default() })
        })
    }
}

/// Frees a lock handle; NULL is a no-op. Releases nothing (holds stay until released through
/// another handle on the same name, or their lease ends). Calls in progress on other threads
/// (e.g. waiting in `rlock_lock_acquire`) are not disturbed: they hold their own reference and
/// the memory goes when the last of them returns. No call on `lock` may START after this
/// returned, and a handle is freed once. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_free(lock: *mut rlock_lock) {
    // SAFETY: NULL or from rlock_lock_new, freed once (the header's contract).
    unsafe { give_up(lock) }
}

/// Acquires `lock` for `owner` (`RLOCK_THREAD` or an explicit id), re-entering when the owner
/// already holds it (each acquire needs one release). `wait_ms`: `RLOCK_FOREVER` waits as long
/// as it takes, 0 tries once, otherwise at most that many milliseconds. `lease_ms`:
/// `RLOCK_FOREVER` holds until released (the watchdog renews the lease), above 0 a fixed lease
/// after which the hold ends by itself.
///
/// `out_token`: NULL, or for an `RLOCK_FENCED_LOCK` handle where the acquire's fencing token
/// goes (strictly larger than any before for that name by any client; re-entries take one too;
/// counter `redisson_lock_token:{name}`, which never expires). It is the token from the
/// acquire's own reply, so `RLOCK_OK` always comes with the hold's token (never 0), even when
/// the hold was lost right after.
///
/// Returns `RLOCK_OK` when held, `RLOCK_NOT_ACQUIRED` when the wait ran out (nothing taken,
/// `*out_token` untouched; a fair-lock waiter leaves the queue before this returns). Errors:
/// `RLOCK_INVALID_ARGUMENT` (NULL lock, a bad `wait_ms` or `lease_ms`, a non-NULL `out_token`
/// on a lock that is not fenced, called from a librlock callback; nothing sent),
/// `RLOCK_WOULD_DEADLOCK` (the owner holds only read holds and asks for the write lock, or holds
/// the non-reentrant lock already),
/// `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS` (the key is not a lock), `RLOCK_CLOSED`
/// (the client was freed while waiting), `RLOCK_FORKED`. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_acquire(
    lock: *const rlock_lock,
    owner: u64,
    wait_ms: i64,
    lease_ms: i64,
    out_token: *mut u64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe {
        on(lock, |l| {
            let wait = wait_arg(wait_ms)?;
            let lease = lease_arg(lease_ms, "lease_ms")?;
            let fenced = l.kind == rlock_lock_kind::RLOCK_FENCED_LOCK;
            if !out_token.is_null() && !fenced {
                return Err(Failure::invalid("out_token is for RLOCK_FENCED_LOCK handles only (pass NULL)"));
            }
            let held = l.run(lock_held(&l.lock, &l.owner(owner), wait, lease))?;
            if fenced {
                write_token(held.token(), out_token)?;
            }
            held.keep();
            Ok(())
        })
    }
}

/// Releases one hold level of `lock` by `owner` (from any thread for an explicit owner). On
/// success `*out_unlocked` (when not NULL) says whether the lock became free: false while the
/// owner still holds it, for a read-write lock while other holds remain (other readers, or the
/// writer's own read holds), and when only levels of acquires whose reply was lost are left
/// (nobody holds those: they are not renewed and end with their lease).
///
/// Thread-safe. Errors: `RLOCK_NOT_HELD` (the owner does not hold the lock, or its lease ran
/// out), `RLOCK_LOST` (the watchdog had lost the hold; the hold is forgotten), and those of
/// `rlock_lock_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_release(
    lock: *const rlock_lock,
    owner: u64,
    out_unlocked: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { answer(lock, out_unlocked, |l| Ok(l.run(l.lock.release(&l.owner(owner)))?.is_unlocked())) }
}

/// Deletes `lock` whoever holds it and wakes a waiter; `*out_released` (when not NULL) says
/// whether a lock was there. The holder's watchdog reports the loss (`rlock_client_on_lost`,
/// reason "gone") and its release fails with `RLOCK_LOST`. The `RLOCK_READ_LOCK`
/// (`RLOCK_WRITE_LOCK`) side deletes the lock only while it is read (write) locked, as
/// Redisson's.
///
/// Thread-safe. Errors: `RLOCK_REDIS` (nothing deleted) when the key is not a lock, and those
/// of `rlock_lock_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_force_unlock(
    lock: *const rlock_lock,
    out_released: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { answer(lock, out_released, |l| l.run(l.lock.force_unlock())) }
}

/// Writes whether anyone holds `lock` to `*out` (for `RLOCK_READ_LOCK` whether read holds
/// exist, for `RLOCK_WRITE_LOCK` whether it is write locked). Thread-safe. Errors:
/// `RLOCK_INVALID_ARGUMENT` (NULL out), and those of `rlock_lock_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_is_locked(lock: *const rlock_lock, out: *mut bool) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(lock, out, |l| l.run(l.lock.is_locked())) }
}

/// Writes whether `owner` holds `lock` to `*out`. Thread-safe. Errors as
/// `rlock_lock_is_locked`.
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_is_held(
    lock: *const rlock_lock,
    owner: u64,
    out: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(lock, out, |l| l.run(l.lock.is_held(&l.owner(owner)))) }
}

/// Writes how many times `owner` holds `lock` to `*out` (0 when it does not). Thread-safe.
/// Errors as `rlock_lock_is_locked`.
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_hold_count(
    lock: *const rlock_lock,
    owner: u64,
    out: *mut u32,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(lock, out, |l| l.run(l.lock.hold_count(&l.owner(owner)))) }
}

/// Writes the remaining lease of `lock` in milliseconds to `*out_ms`: -2 when it does not
/// exist, -1 when it has no expiry. Thread-safe. Errors as `rlock_lock_is_locked`.
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_remaining_ttl(lock: *const rlock_lock, out_ms: *mut i64) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(lock, out_ms, |l| Ok(l.run(l.lock.remaining_ttl())?.as_millis_i64())) }
}

/// Writes whether the watchdog lost `owner`'s hold of `lock` to `*out` (true until the owner's
/// next `rlock_lock_release`, which then returns `RLOCK_LOST`). Local: sends nothing.
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL lock or out).
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_is_lost(
    lock: *const rlock_lock,
    owner: u64,
    out: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(lock, out, |l| Ok(l.lock.is_lost(&l.owner(owner)))) }
}

/// Writes how long local time still proves `owner`'s hold of `lock` to `*out_ms`, in whole
/// milliseconds: until the send of its last confirmed renewal (or its acquire), plus the lease,
/// minus the lease-doubt margin. 0 when `owner` does not hold it through this client, or the
/// hold is lost or in doubt (which marks it lost at once). Check it before each write when the
/// storage takes no fencing token. Local: sends nothing. Thread-safe. Errors:
/// `RLOCK_INVALID_ARGUMENT` (NULL lock or out_ms).
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_valid_for_ms(
    lock: *const rlock_lock,
    owner: u64,
    out_ms: *mut u64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(lock, out_ms, |l| Ok(whole_ms(l.lock.valid_for(&l.owner(owner))))) }
}

/// Adds a function called when the watchdog loses `owner`'s hold of `lock` (`RLOCK_THREAD`:
/// the calling thread's), with `userdata` as its first argument and the event of
/// `rlock_client_on_lost`'s callback; writes the listener's id to `*out_listener` (NULL: not
/// wanted). It runs on a librlock thread, under the rules of `rlock_client_on_lost`.
/// `userdata` must stay valid until `rlock_lock_remove_lost_listener` removed it or the handle
/// is freed (which removes it). Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL lock or
/// callback).
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_on_lost(
    lock: *const rlock_lock,
    owner: u64,
    callback: rlock_lost_callback,
    userdata: *mut c_void,
    out_listener: *mut u64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe {
        on(lock, |l| {
            l.listeners.add(callback, userdata, out_listener, |f| l.lock.on_lost(Some(&l.owner(owner)), f))
        })
    }
}

/// Removes a listener `rlock_lock_on_lost` added on this handle; writes whether it was there
/// to `*out_removed` (NULL: not wanted). Once this returns the callback is not called again.
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL lock).
#[no_mangle]
pub unsafe extern "C" fn rlock_lock_remove_lost_listener(
    lock: *const rlock_lock,
    listener: u64,
    out_removed: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe {
        answer(lock, out_removed, |l| Ok(l.listeners.remove(listener, |id| l.lock.remove_lost_listener(id))))
    }
}
