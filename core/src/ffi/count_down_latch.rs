//! Count-down latch operations (Redisson `RCountDownLatch`). No owners: any thread may count
//! down.

use std::ffi::c_char;
use std::sync::Arc;
use std::time::Duration;

use super::client::{client_ref, rlock_client};
use super::{check_out, guard, rlock_result, str_arg, write_out, Failure};
use crate::count_down_latch::CountDownLatch;
use crate::semaphore::count_arg;

/// Checks the client and name and makes the latch handle.
///
/// # Safety
/// `client` is NULL or live; `name` is NULL or a NUL-terminated string.
unsafe fn target(
    client: *const rlock_client,
    name: *const c_char,
) -> Result<(Arc<rlock_client>, CountDownLatch), Failure> {
    let c = client_ref(client)?;
    // SAFETY: forwarded contract.
    let name = unsafe { str_arg(name, "name") }?;
    let latch = c.core().count_down_latch(name)?;
    Ok((c, latch))
}

/// Sets count-down latch `name` to `count` (0 or more) when it does not exist (is open);
/// `*out_set` (when not NULL) says whether it was set (false: it existed and nothing changed).
/// The latch is the STRING key `name`, as in Redisson; a missing key is an open latch.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL client or name, negative count, on a
/// cluster a name with `{` or `}`), `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS` (the
/// name holds another kind of key), `RLOCK_CLOSED`, `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_latch_try_set_count(
    client: *const rlock_client,
    name: *const c_char,
    count: i64,
    out_set: *mut bool,
) -> rlock_result {
    guard(|| {
        let n = count_arg("count", count, 0)?;
        // SAFETY: forwarded contract.
        let (c, latch) = unsafe { target(client, name) }?;
        write_out(out_set, c.block_on(latch.try_set_count(n))??);
        Ok(())
    })
}

/// Counts count-down latch `name` down by one; at zero it opens (the key is deleted and every
/// waiter, Java's included, wakes). Counting down an open latch changes nothing. Never counts
/// twice, also when retried after a connection error.
///
/// Thread-safe. Errors as `rlock_latch_try_set_count`.
#[no_mangle]
pub unsafe extern "C" fn rlock_latch_count_down(
    client: *const rlock_client,
    name: *const c_char,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, latch) = unsafe { target(client, name) }?;
        c.block_on(latch.count_down())??;
        Ok(())
    })
}

/// Writes the count of count-down latch `name` to `*out_count` (0 when it is open or does not
/// exist).
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL `out_count`), and those of
/// `rlock_latch_try_set_count`.
#[no_mangle]
pub unsafe extern "C" fn rlock_latch_count(
    client: *const rlock_client,
    name: *const c_char,
    out_count: *mut u64,
) -> rlock_result {
    guard(|| {
        check_out(out_count)?;
        // SAFETY: forwarded contract.
        let (c, latch) = unsafe { target(client, name) }?;
        write_out(out_count, c.block_on(latch.count())??);
        Ok(())
    })
}

/// Blocks until count-down latch `name` is open (count 0) or `timeout_ms` milliseconds passed
/// (-1: no limit; 0: look once). `*out_reached` (when not NULL) is true when the latch opened,
/// false when the wait ran out. Woken by the count-down to zero of any client, Java's included.
///
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` for a `timeout_ms` below -1, `RLOCK_CLOSED`
/// when the client is freed meanwhile, and those of `rlock_latch_try_set_count`.
#[no_mangle]
pub unsafe extern "C" fn rlock_latch_wait(
    client: *const rlock_client,
    name: *const c_char,
    timeout_ms: i64,
    out_reached: *mut bool,
) -> rlock_result {
    guard(|| {
        let timeout = match timeout_ms {
            -1 => None,
            ms => Some(Duration::from_millis(u64::try_from(ms).map_err(|_| {
                Failure::invalid(format!("timeout_ms must be -1 (no limit) or at least 0 (got {timeout_ms})"))
            })?)),
        };
        // SAFETY: forwarded contract.
        let (c, latch) = unsafe { target(client, name) }?;
        write_out(out_reached, c.block_on(latch.wait(timeout))??);
        Ok(())
    })
}

/// Deletes count-down latch `name` whatever its count; `*out_existed` (when not NULL) says
/// whether it existed. rlock waiters wake and find it open; Redisson waiters do not (Redisson
/// wakes them only on a count-down to zero).
///
/// Thread-safe. Errors as `rlock_latch_try_set_count`.
#[no_mangle]
pub unsafe extern "C" fn rlock_latch_delete(
    client: *const rlock_client,
    name: *const c_char,
    out_existed: *mut bool,
) -> rlock_result {
    guard(|| {
        // SAFETY: forwarded contract.
        let (c, latch) = unsafe { target(client, name) }?;
        write_out(out_existed, c.block_on(latch.delete())??);
        Ok(())
    })
}
