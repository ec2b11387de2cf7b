//! Lock operations. The plain functions act for the calling OS thread (the same thread
//! re-enters, other threads contend, as in Redisson); the `_as` variants take an explicit owner
//! id for event-loop programs (ids 2^61 and up are reserved for threads).

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use super::client::{named, rlock_client};
use super::{check_out, guard, lease, rlock_result, wait_arg, write_out, Failure};
use crate::error::Error;
use crate::lock::{Guard, Lock};
use crate::owner::{thread_owner_id, Owner};

/// Which owner a call acts for.
#[derive(Clone, Copy)]
pub(crate) enum Who {
    Thread,
    Id(u64),
}

pub(crate) fn owner(c: &rlock_client, who: Who) -> Owner {
    c.core().owner(match who {
        Who::Thread => thread_owner_id(),
        Who::Id(id) => id,
    })
}

/// The locks of the family, for the `rlock_family_*` functions (which take the kind as an
/// `int`: any other value gives `RLOCK_INVALID_ARGUMENT`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)]
pub enum rlock_lock_kind {
    /// The reentrant lock (Redisson `RLock`), as `rlock_acquire` and the other plain functions.
    RLOCK_LOCK = 0,
    /// The fenced lock (Redisson `RFencedLock`): acquires take fencing tokens.
    RLOCK_FENCED_LOCK = 1,
    /// The read side of the read-write lock (Redisson `RReadWriteLock`): shared by readers.
    RLOCK_READ_LOCK = 2,
    /// The write side of the read-write lock: one writer, who may also take read holds. A
    /// reader asking for it gets `RLOCK_WOULD_DEADLOCK` at once.
    RLOCK_WRITE_LOCK = 3,
    /// The fair lock (Redisson `RFairLock`): granted in arrival order across all clients.
    RLOCK_FAIR_LOCK = 4,
}

pub(crate) fn kind_arg(kind: c_int) -> Result<rlock_lock_kind, Failure> {
    Ok(match kind {
        0 => rlock_lock_kind::RLOCK_LOCK,
        1 => rlock_lock_kind::RLOCK_FENCED_LOCK,
        2 => rlock_lock_kind::RLOCK_READ_LOCK,
        3 => rlock_lock_kind::RLOCK_WRITE_LOCK,
        4 => rlock_lock_kind::RLOCK_FAIR_LOCK,
        k => return Err(Failure::invalid(format!("kind {k} is not an rlock_lock_kind"))),
    })
}

/// The owner id that means "the calling thread" in the `rlock_family_*` functions.
pub const RLOCK_THREAD: u64 = u64::MAX;

pub(crate) fn who(owner_id: u64) -> Who {
    if owner_id == RLOCK_THREAD {
        Who::Thread
    } else {
        Who::Id(owner_id)
    }
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
    unsafe { target_of(client, name, rlock_lock_kind::RLOCK_LOCK) }
}

/// [`target`], with the handle of the lock of `kind`.
///
/// # Safety
/// As [`target`].
pub(crate) unsafe fn target_of(
    client: *const rlock_client,
    name: *const c_char,
    kind: rlock_lock_kind,
) -> Result<(Arc<rlock_client>, Lock), Failure> {
    // SAFETY: forwarded contract.
    unsafe {
        named(client, name, |core, name| {
            Ok(match kind {
                rlock_lock_kind::RLOCK_LOCK => core.lock(name)?,
                rlock_lock_kind::RLOCK_FENCED_LOCK => core.fenced_lock(name)?.lock().clone(),
                rlock_lock_kind::RLOCK_READ_LOCK => core.read_write_lock(name)?.read_lock(),
                rlock_lock_kind::RLOCK_WRITE_LOCK => core.read_write_lock(name)?.write_lock(),
                rlock_lock_kind::RLOCK_FAIR_LOCK => core.fair_lock(name)?,
            })
        })
    }
}

/// Keeps the hold an acquire took and writes its token where the caller asked for one
/// (`out_token` `None`: no token wanted; 0 for a kind that is not fenced). The token is the
/// acquire's own reply, never a second read that a hold lost meanwhile could leave empty.
fn keep_hold(held: Guard, out_token: Option<*mut u64>) {
    if let Some(out) = out_token {
        write_out(out, held.token().unwrap_or(0));
    }
    held.keep();
}

fn check_token_out(out_token: Option<*mut u64>) -> Result<(), Failure> {
    out_token.map_or(Ok(()), check_out)
}

unsafe fn acquire_impl(
    client: *const rlock_client,
    (kind, name): (rlock_lock_kind, *const c_char),
    who: Who,
    lease_ms: i64,
    out_token: Option<*mut u64>,
) -> rlock_result {
    guard(|| {
        check_token_out(out_token)?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target_of(client, name, kind) }?;
        let owner = owner(&c, who);
        let held = c.block_on(lock.acquire_guard(&owner, None, lease(lease_ms)))??;
        // Without a wait the acquire waits until it holds the lock.
        let held = held.ok_or_else(|| Error::not_acquired(format!("lock '{}'", lock.name()), None))?;
        keep_hold(held, out_token);
        Ok(())
    })
}

unsafe fn try_acquire_impl(
    client: *const rlock_client,
    (kind, name): (rlock_lock_kind, *const c_char),
    who: Who,
    (wait_ms, lease_ms): (i64, i64),
    out_token: Option<*mut u64>,
) -> rlock_result {
    guard(|| {
        check_token_out(out_token)?;
        let wait = wait_arg(wait_ms)?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target_of(client, name, kind) }?;
        let owner = owner(&c, who);
        match c.block_on(lock.acquire_guard(&owner, Some(wait), lease(lease_ms)))?? {
            Some(held) => {
                keep_hold(held, out_token);
                Ok(())
            }
            None => Err(Error::not_acquired(format!("lock '{}'", lock.name()), Some(wait)).into()),
        }
    })
}

unsafe fn release_impl(
    client: *const rlock_client,
    (kind, name): (rlock_lock_kind, *const c_char),
    who: Who,
    out_unlocked: *mut bool,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target_of(client, name, kind) }?;
        let released = c.block_on(lock.release(&owner(&c, who)))??;
        write_out(out_unlocked, released.is_unlocked());
        Ok(())
    })
}

unsafe fn is_held_impl(
    client: *const rlock_client,
    (kind, name): (rlock_lock_kind, *const c_char),
    who: Who,
    out: *mut bool,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target_of(client, name, kind) }?;
        write_out(out, c.block_on(lock.is_held(&owner(&c, who)))??);
        Ok(())
    })
}

unsafe fn hold_count_impl(
    client: *const rlock_client,
    (kind, name): (rlock_lock_kind, *const c_char),
    who: Who,
    out: *mut u32,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target_of(client, name, kind) }?;
        write_out(out, c.block_on(lock.hold_count(&owner(&c, who)))??);
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
    unsafe { acquire_impl(client, (rlock_lock_kind::RLOCK_LOCK, name), Who::Thread, lease_ms, None) }
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
    unsafe {
        acquire_impl(
            client,
            (rlock_lock_kind::RLOCK_FENCED_LOCK, name),
            Who::Thread,
            lease_ms,
            Some(out_token),
        )
    }
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
    unsafe {
        try_acquire_impl(
            client,
            (rlock_lock_kind::RLOCK_FENCED_LOCK, name),
            Who::Thread,
            (wait_ms, lease_ms),
            Some(out_token),
        )
    }
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
    unsafe {
        try_acquire_impl(client, (rlock_lock_kind::RLOCK_LOCK, name), Who::Thread, (wait_ms, lease_ms), None)
    }
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
    unsafe { release_impl(client, (rlock_lock_kind::RLOCK_LOCK, name), Who::Thread, out_unlocked) }
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
    // SAFETY: forwarded contract.
    unsafe { force_unlock_impl(client, (rlock_lock_kind::RLOCK_LOCK, name), out_released) }
}

unsafe fn force_unlock_impl(
    client: *const rlock_client,
    (kind, name): (rlock_lock_kind, *const c_char),
    out_released: *mut bool,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target_of(client, name, kind) }?;
        let released = c.block_on(lock.force_unlock())??;
        write_out(out_released, released);
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
    // SAFETY: forwarded contract.
    unsafe { is_locked_impl(client, (rlock_lock_kind::RLOCK_LOCK, name), out) }
}

unsafe fn is_locked_impl(
    client: *const rlock_client,
    (kind, name): (rlock_lock_kind, *const c_char),
    out: *mut bool,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        // SAFETY: forwarded contract.
        let (c, lock) = unsafe { target_of(client, name, kind) }?;
        write_out(out, c.block_on(lock.is_locked())??);
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
    unsafe { is_held_impl(client, (rlock_lock_kind::RLOCK_LOCK, name), Who::Thread, out) }
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
    unsafe { hold_count_impl(client, (rlock_lock_kind::RLOCK_LOCK, name), Who::Thread, out) }
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
        write_out(out_ms, c.block_on(lock.remaining_ttl())??.as_millis_i64());
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
    unsafe { acquire_impl(client, (rlock_lock_kind::RLOCK_LOCK, name), Who::Id(owner_id), lease_ms, None) }
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
    unsafe {
        try_acquire_impl(
            client,
            (rlock_lock_kind::RLOCK_LOCK, name),
            Who::Id(owner_id),
            (wait_ms, lease_ms),
            None,
        )
    }
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
    unsafe { release_impl(client, (rlock_lock_kind::RLOCK_LOCK, name), Who::Id(owner_id), out_unlocked) }
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
    unsafe { is_held_impl(client, (rlock_lock_kind::RLOCK_LOCK, name), Who::Id(owner_id), out) }
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
    unsafe { hold_count_impl(client, (rlock_lock_kind::RLOCK_LOCK, name), Who::Id(owner_id), out) }
}

/// Runs `f` with the checked kind, or fails with `RLOCK_INVALID_ARGUMENT` (recording the
/// message) for a value that is not an `rlock_lock_kind`.
fn with_kind(kind: c_int, f: impl FnOnce(rlock_lock_kind) -> rlock_result) -> rlock_result {
    match kind_arg(kind) {
        Ok(k) => f(k),
        Err(e) => guard(|| Err(e)),
    }
}

/// A token out-parameter that may be NULL.
fn optional_out(out: *mut u64) -> Option<*mut u64> {
    (!out.is_null()).then_some(out)
}

/// `rlock_acquire` on the lock of `kind` (an `rlock_lock_kind`) named `name`, for `owner_id`
/// (`RLOCK_THREAD`: the calling thread; else an explicit owner below 2^61, as the `_as`
/// functions). When `out_token` is not NULL it receives the fencing token of a
/// `RLOCK_FENCED_LOCK` acquire (0 for the other kinds).
///
/// Thread-safe. Errors as `rlock_acquire`; `RLOCK_INVALID_ARGUMENT` for an unknown kind;
/// `RLOCK_WOULD_DEADLOCK` (nothing changed) when the owner holds only read holds and asks for
/// the `RLOCK_WRITE_LOCK`. A fair-lock waiter that stops waiting (the client freed) leaves the
/// queue.
#[no_mangle]
pub unsafe extern "C" fn rlock_family_acquire(
    client: *const rlock_client,
    kind: c_int,
    name: *const c_char,
    owner_id: u64,
    lease_ms: i64,
    out_token: *mut u64,
) -> rlock_result {
    with_kind(kind, |k| {
        // SAFETY: forwarded contract.
        unsafe { acquire_impl(client, (k, name), who(owner_id), lease_ms, optional_out(out_token)) }
    })
}

/// `rlock_try_acquire` on the lock of `kind` for `owner_id` (see `rlock_family_acquire`). A
/// fair-lock waiter whose wait runs out leaves the queue before this returns.
#[no_mangle]
pub unsafe extern "C" fn rlock_family_try_acquire(
    client: *const rlock_client,
    kind: c_int,
    name: *const c_char,
    owner_id: u64,
    wait_ms: i64,
    lease_ms: i64,
    out_token: *mut u64,
) -> rlock_result {
    with_kind(kind, |k| {
        // SAFETY: forwarded contract.
        unsafe {
            try_acquire_impl(client, (k, name), who(owner_id), (wait_ms, lease_ms), optional_out(out_token))
        }
    })
}

/// `rlock_release` on the lock of `kind` for `owner_id`. `*out_unlocked` (when not NULL) says
/// whether the lock became free: false while the owner still holds it, and for a read-write lock
/// while other holds remain (other readers, or the writer's own read holds).
#[no_mangle]
pub unsafe extern "C" fn rlock_family_release(
    client: *const rlock_client,
    kind: c_int,
    name: *const c_char,
    owner_id: u64,
    out_unlocked: *mut bool,
) -> rlock_result {
    // SAFETY: forwarded contract.
    with_kind(kind, |k| unsafe { release_impl(client, (k, name), who(owner_id), out_unlocked) })
}

/// `rlock_force_unlock` on the lock of `kind`: the `RLOCK_READ_LOCK` (`RLOCK_WRITE_LOCK`) side
/// deletes the lock only while it is read (write) locked, as Redisson's.
#[no_mangle]
pub unsafe extern "C" fn rlock_family_force_unlock(
    client: *const rlock_client,
    kind: c_int,
    name: *const c_char,
    out_released: *mut bool,
) -> rlock_result {
    // SAFETY: forwarded contract.
    with_kind(kind, |k| unsafe { force_unlock_impl(client, (k, name), out_released) })
}

/// `rlock_is_locked` on the lock of `kind`: for `RLOCK_READ_LOCK` whether read holds exist, for
/// `RLOCK_WRITE_LOCK` whether it is write locked.
#[no_mangle]
pub unsafe extern "C" fn rlock_family_is_locked(
    client: *const rlock_client,
    kind: c_int,
    name: *const c_char,
    out: *mut bool,
) -> rlock_result {
    // SAFETY: forwarded contract.
    with_kind(kind, |k| unsafe { is_locked_impl(client, (k, name), out) })
}

/// `rlock_is_held` on the lock of `kind` for `owner_id`.
#[no_mangle]
pub unsafe extern "C" fn rlock_family_is_held(
    client: *const rlock_client,
    kind: c_int,
    name: *const c_char,
    owner_id: u64,
    out: *mut bool,
) -> rlock_result {
    // SAFETY: forwarded contract.
    with_kind(kind, |k| unsafe { is_held_impl(client, (k, name), who(owner_id), out) })
}

/// `rlock_hold_count` on the lock of `kind` for `owner_id`.
#[no_mangle]
pub unsafe extern "C" fn rlock_family_hold_count(
    client: *const rlock_client,
    kind: c_int,
    name: *const c_char,
    owner_id: u64,
    out: *mut u32,
) -> rlock_result {
    // SAFETY: forwarded contract.
    with_kind(kind, |k| unsafe { hold_count_impl(client, (k, name), who(owner_id), out) })
}
