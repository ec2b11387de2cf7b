//! `rlock_count_down_latch`: a handle on one count-down latch (Redisson `RCountDownLatch`). No
//! owners: any thread may count down.

use std::ffi::c_char;
use std::sync::Arc;

use super::client::rlock_client;
use super::handle::{answer, give_up, handle, new_named, on, query, take, Handle};
use super::{guard, rlock_result, wait_arg, write_out};
use crate::count_down_latch::CountDownLatch;
use crate::semaphore::count_arg;

/// An opaque handle on one count-down latch: `rlock_count_down_latch_new` makes it,
/// `rlock_count_down_latch_free` frees it. Thread-safe, and free may race calls in progress
/// (a thread waiting in `rlock_count_down_latch_wait` included), as `rlock_lock`.
pub struct rlock_count_down_latch {
    client: Arc<rlock_client>,
    latch: CountDownLatch,
}

handle!(rlock_count_down_latch, "latch");

/// Makes a handle on count-down latch `name` (the STRING key `name`, as in Redisson; a missing
/// key is an open latch; `name` is only read during the call) on `client` and writes it to
/// `*out`. Sends nothing. Free it with `rlock_count_down_latch_free`.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL client, name or out; invalid UTF-8; an
/// empty name; on a cluster a name with `{` or `}`), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_count_down_latch_new(
    client: *const rlock_client,
    name: *const c_char,
    out: *mut *mut rlock_count_down_latch,
) -> rlock_result {
    // SAFETY: the header's contract.
    unsafe {
        new_named(client, name, out, |c, name| {
            Ok(rlock_count_down_latch { latch: c.core().count_down_latch(name)?, client: c })
        })
    }
}

/// Frees a count-down latch handle; NULL is a no-op. Changes nothing in Redis. Calls in
/// progress on other threads finish undisturbed; no call may start after this returned.
/// Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_count_down_latch_free(latch: *mut rlock_count_down_latch) {
    // SAFETY: NULL or from rlock_count_down_latch_new, freed once (the header's contract).
    unsafe { give_up(latch) }
}

/// Sets `latch` to `count` (0 or more) when it does not exist (is open); `*out_set` (when not
/// NULL) says whether it was set (false: it existed and nothing changed).
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL latch, negative count),
/// `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS` (the name holds another kind of key),
/// `RLOCK_CLOSED`, `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_count_down_latch_try_set_count(
    latch: *const rlock_count_down_latch,
    count: i64,
    out_set: *mut bool,
) -> rlock_result {
    guard(|| {
        let n = count_arg("count", count, 0)?;
        // SAFETY: NULL or live per the header.
        let l = unsafe { take(latch) }?;
        write_out(out_set, l.run(l.latch.try_set_count(n))?);
        Ok(())
    })
}

/// Counts `latch` down by one; at zero it opens (the key is deleted and every waiter, Java's
/// included, wakes). Counting down an open latch changes nothing. Never counts twice, also
/// when retried after a connection error.
///
/// Thread-safe. Errors as `rlock_count_down_latch_try_set_count`.
#[no_mangle]
pub unsafe extern "C" fn rlock_count_down_latch_count_down(
    latch: *const rlock_count_down_latch,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { on(latch, |l| l.run(l.latch.count_down())) }
}

/// Writes the count of `latch` to `*out_count` (0 when it is open or does not exist).
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL `out_count`), and those of
/// `rlock_count_down_latch_try_set_count`.
#[no_mangle]
pub unsafe extern "C" fn rlock_count_down_latch_count(
    latch: *const rlock_count_down_latch,
    out_count: *mut u64,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { query(latch, out_count, |l| l.run(l.latch.count())) }
}

/// Blocks until `latch` is open (count 0), waiting `wait_ms` (`RLOCK_FOREVER`: as long as it
/// takes; 0: looks once). `*out_opened` (when not NULL) is true when the latch opened, false
/// when the wait ran out. Woken by the count-down to zero of any client, Java's included.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` for a bad `wait_ms`, `RLOCK_CLOSED` when the
/// client is freed meanwhile, and those of `rlock_count_down_latch_try_set_count`.
#[no_mangle]
pub unsafe extern "C" fn rlock_count_down_latch_wait(
    latch: *const rlock_count_down_latch,
    wait_ms: i64,
    out_opened: *mut bool,
) -> rlock_result {
    guard(|| {
        let wait = wait_arg(wait_ms)?;
        // SAFETY: NULL or live per the header.
        let l = unsafe { take(latch) }?;
        write_out(out_opened, l.run(l.latch.wait(wait))?);
        Ok(())
    })
}

/// Deletes `latch` whatever its count; `*out_existed` (when not NULL) says whether it existed.
/// rlock waiters wake and find it open; Redisson waiters do not (Redisson wakes them only on a
/// count-down to zero).
///
/// Thread-safe. Errors as `rlock_count_down_latch_try_set_count`.
#[no_mangle]
pub unsafe extern "C" fn rlock_count_down_latch_delete(
    latch: *const rlock_count_down_latch,
    out_existed: *mut bool,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { answer(latch, out_existed, |l| l.run(l.latch.delete())) }
}
