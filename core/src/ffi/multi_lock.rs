//! `rlock_multi_lock` (Redisson `RedissonMultiLock`): several lock handles (any kinds, any
//! clients) taken all-or-nothing by one owner. Made over lock handles rather than names, so a
//! member's kind and client are those of a handle the program already has.

use std::sync::Arc;

use super::client::rlock_client;
use super::handle::{give_up, hand_out, on, query, take, Handle};
use super::lock::rlock_lock;
use super::{check_out, guard, lease_arg, rlock_result, wait_arg, Failure};
use crate::bindings::multi_lock_held;
use crate::multi_lock::MultiLock;

/// An opaque multi-lock: `rlock_multi_lock_new` makes it over lock handles,
/// `rlock_multi_lock_free` frees it. Thread-safe, and free may race calls in progress, as
/// `rlock_lock`.
pub struct rlock_multi_lock {
    /// The member handles, kept so their clients outlive the multi-lock's calls.
    members: Vec<Arc<rlock_lock>>,
    multi: MultiLock,
}

impl Handle for rlock_multi_lock {
    const WHAT: &'static str = "multi_lock";
    fn client(&self) -> &rlock_client {
        // The first member's client: owners are named on it (the core multi-lock maps the id
        // to each member's client).
        self.members[0].client_arc()
    }
}

/// Makes a multi-lock over the `count` lock handles at `locks` (at least one; any kinds, on
/// any clients; taken in this order) and writes it to `*out`. The multi-lock keeps its own
/// reference to each member, so the member handles may be freed right after. Sends nothing.
/// Free it with `rlock_multi_lock_free`.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL locks or out, count 0, a NULL member),
/// `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_multi_lock_new(
    locks: *const *mut rlock_lock,
    count: usize,
    out: *mut *mut rlock_multi_lock,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        if locks.is_null() || count == 0 {
            return Err(Failure::invalid("a multi-lock needs at least one lock (locks NULL or count 0)"));
        }
        // SAFETY: the caller gives `count` readable pointers (the header's contract).
        let ptrs = unsafe { std::slice::from_raw_parts(locks, count) };
        // SAFETY: each NULL or a live lock handle (the header's contract).
        let members = ptrs.iter().map(|&p| unsafe { take(p.cast_const()) }).collect::<Result<Vec<_>, _>>()?;
        let multi = MultiLock::new(members.iter().map(|m| m.core().clone()).collect())?;
        // SAFETY: checked non-NULL; writable per the header.
        unsafe { hand_out(rlock_multi_lock { members, multi }, out) };
        Ok(())
    })
}

/// Frees a multi-lock (and its references to the member handles); NULL is a no-op. Releases
/// nothing. Calls in progress on other threads finish undisturbed; no call may start after
/// this returned. Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_multi_lock_free(multi: *mut rlock_multi_lock) {
    // SAFETY: NULL or from rlock_multi_lock_new, freed once (the header's contract).
    unsafe { give_up(multi) }
}

/// Acquires every member of `multi` for `owner` (`RLOCK_THREAD` or an explicit id),
/// all-or-nothing: a round that finds a member held elsewhere gives back what it took and
/// waits for that member, so owners taking the same locks in other orders never deadlock.
/// `wait_ms`: `RLOCK_FOREVER` as long as it takes, 0 one round, else at most that long.
/// `lease_ms`: `RLOCK_FOREVER`, the watchdog renews each hold; above 0, each member's lease.
///
/// Returns `RLOCK_NOT_ACQUIRED` when the wait ran out (no member held). Thread-safe. Errors:
/// `RLOCK_INVALID_ARGUMENT` (NULL multi, a bad `wait_ms` or `lease_ms`), `RLOCK_WOULD_DEADLOCK`,
/// `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS`, `RLOCK_CLOSED`, `RLOCK_FORKED`; nothing is
/// held after an error.
#[no_mangle]
pub unsafe extern "C" fn rlock_multi_lock_acquire(
    multi: *const rlock_multi_lock,
    owner: u64,
    wait_ms: i64,
    lease_ms: i64,
) -> rlock_result {
    guard(|| {
        let wait = wait_arg(wait_ms)?;
        let lease = lease_arg(lease_ms, "lease_ms")?;
        // SAFETY: NULL or live per the header.
        let m = unsafe { take(multi) }?;
        m.run(multi_lock_held(&m.multi, &m.owner(owner), wait, lease))?.keep();
        Ok(())
    })
}

/// Releases every member of `multi` held by `owner`, all of them also when some fail; the last
/// error names each member that failed and the result is the first failure's code
/// (`RLOCK_NOT_HELD`, `RLOCK_LOST`, ...).
///
/// Thread-safe. Errors as `rlock_multi_lock_acquire`, and those of `rlock_lock_release`.
#[no_mangle]
pub unsafe extern "C" fn rlock_multi_lock_release(
    multi: *const rlock_multi_lock,
    owner: u64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { on(multi, |m| m.run(m.multi.release(&m.owner(owner)))) }
}

/// Writes whether `owner` holds every member of `multi` to `*out` (one query per member).
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL multi or out), and those of
/// `rlock_multi_lock_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rlock_multi_lock_is_held(
    multi: *const rlock_multi_lock,
    owner: u64,
    out: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(multi, out, |m| m.run(m.multi.is_held(&m.owner(owner)))) }
}
