//! The handles C keeps (`rlock_lock`, `rlock_semaphore`, ...), as in rustls-ffi: each is an
//! `Arc` behind a raw pointer. `_new` hands C one reference (`Arc::into_raw`); every call takes
//! its own for its duration (`Arc::increment_strong_count` + `Arc::from_raw`), so a `_free`
//! racing calls in progress on other threads only gives up C's reference and the memory goes
//! when the last call returns. Each handle also holds its client, so freeing the client first
//! closes it (calls then fail with `RLOCK_CLOSED`) without freeing memory a handle still uses.

use std::sync::Arc;

use super::client::rlock_client;
use super::Failure;

/// A handle type: it names itself in errors and knows the client it was made on.
pub(crate) trait Handle {
    /// The argument name in error messages ("lock", "semaphore", ...).
    const WHAT: &'static str;
    /// The client every call on the handle goes through.
    fn client(&self) -> &rlock_client;
}

/// Writes a new handle to `*out` (checked non-NULL by the caller), giving C its reference.
///
/// # Safety
/// `out` is non-NULL and writable.
pub(crate) unsafe fn hand_out<T: Handle>(value: T, out: *mut *mut T) {
    // SAFETY: the caller's contract.
    unsafe { out.write(Arc::into_raw(Arc::new(value)).cast_mut()) }
}

/// Takes a reference to the handle behind a C pointer for the duration of a call. Fails with
/// `RLOCK_INVALID_ARGUMENT` for NULL and `RLOCK_FORKED` in a process other than the client's.
///
/// # Safety
/// `p` is NULL or a pointer from [`hand_out`] whose C reference was not given up yet (no call
/// starts after its `_free` returned: the header's contract).
pub(crate) unsafe fn take<T: Handle>(p: *const T) -> Result<Arc<T>, Failure> {
    if p.is_null() {
        return Err(Failure::invalid(format!("{} is NULL", T::WHAT)));
    }
    // SAFETY: C's reference is alive (the caller's contract), so the count is at least 1
    // while we take our own.
    let h = unsafe {
        Arc::increment_strong_count(p);
        Arc::from_raw(p)
    };
    h.client().check_process()?;
    Ok(h)
}

/// Gives up C's reference to a handle (NULL: nothing), under the panic boundary (a `_free`
/// returns nothing, so a panic is only recorded as the last error). In a child after `fork()`
/// the handle is left alone: dropping it could reach the parent's runtime, whose threads do not
/// exist here.
///
/// # Safety
/// `p` is NULL or a pointer from [`hand_out`], given up once.
pub(crate) unsafe fn give_up<T: Handle>(p: *mut T) {
    let _ = super::guard(|| {
        if !p.is_null() {
            // SAFETY: from Arc::into_raw in hand_out; C's reference, given up once (the contract).
            let h = unsafe { Arc::from_raw(p.cast_const()) };
            if h.client().check_process().is_err() {
                std::mem::forget(h);
            }
        }
        Ok(())
    });
}
