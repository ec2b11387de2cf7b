//! The handles C keeps (`rlock_lock`, `rlock_semaphore`, ...), as in rustls-ffi: each is an
//! `Arc` behind a raw pointer. `_new` hands C one reference (`Arc::into_raw`); every call takes
//! its own for its duration (`Arc::increment_strong_count` + `Arc::from_raw`), so a `_free`
//! racing calls in progress on other threads only gives up C's reference and the memory goes
//! when the last call returns. Each handle also holds its client, so freeing the client first
//! closes it (calls then fail with `RLOCK_CLOSED`) without freeing memory a handle still uses.

use std::ffi::c_char;
use std::future::Future;
use std::sync::Arc;

use super::client::{client_ref, rlock_client};
use super::lock::owner_of;
use super::{check_out, guard, rlock_result, str_arg, write_out, Failure};
use crate::owner::Owner;

/// A handle type: it names itself in errors and knows the client it was made on.
pub(crate) trait Handle {
    /// The argument name in error messages ("lock", "semaphore", ...).
    const WHAT: &'static str;
    /// The client every call on the handle goes through.
    fn client(&self) -> &rlock_client;

    /// Blocks the calling thread on the core call `fut` under the client's runtime; fails as
    /// the call does, or as `rlock_client::block_on` refuses.
    fn run<T>(&self, fut: impl Future<Output = crate::error::Result<T>>) -> Result<T, Failure> {
        Ok(self.client().block_on(fut)??)
    }

    /// The owner an `owner` argument (`RLOCK_THREAD` or an explicit id) names on the client.
    fn owner(&self, owner: u64) -> Owner {
        owner_of(self.client(), owner)
    }
}

/// Implements [`Handle`] for a handle type that keeps its client in its field `client`, named
/// `what` in error messages.
macro_rules! handle {
    ($t:ty, $what:literal) => {
        impl $crate::ffi::handle::Handle for $t {
            const WHAT: &'static str = $what;
            fn client(&self) -> &$crate::ffi::client::rlock_client {
                &self.client
            }
        }
    };
}
pub(crate) use handle;

/// The body of `rlock_<primitive>_new`: under the panic guard, checks `out`, takes `client`
/// ([`client_ref`]) and reads `name`, makes the handle with `make` and hands it out to `*out`
/// ([`hand_out`]).
///
/// # Safety
/// As every `_new`: `client` NULL or live, `name` NULL or NUL-terminated, `out` NULL or
/// writable.
pub(crate) unsafe fn new_named<H: Handle>(
    client: *const rlock_client,
    name: *const c_char,
    out: *mut *mut H,
    make: impl FnOnce(Arc<rlock_client>, &str) -> Result<H, Failure>,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        let c = client_ref(client)?;
        // SAFETY: NULL or NUL-terminated (the caller's contract).
        let h = make(c, unsafe { str_arg(name, "name") }?)?;
        // SAFETY: checked non-NULL; writable (the caller's contract).
        unsafe { hand_out(h, out) };
        Ok(())
    })
}

/// The body of a call on the handle behind `p`: under the panic guard, takes it ([`take`]) and
/// runs `f` on it; `f`'s failure (or the take's) is the call's result code and last error.
///
/// # Safety
/// As [`take`].
pub(crate) unsafe fn on<H: Handle>(p: *const H, f: impl FnOnce(&H) -> Result<(), Failure>) -> rlock_result {
    // SAFETY: the caller's contract.
    guard(|| unsafe { take(p) }.and_then(|h| f(&h)))
}

/// [`on`] for a call answering one value in the optional out-parameter `out`: `f`'s value is
/// written there (NULL: not wanted).
///
/// # Safety
/// As [`take`]; `out` is NULL or writable.
pub(crate) unsafe fn answer<H: Handle, T>(
    p: *const H,
    out: *mut T,
    f: impl FnOnce(&H) -> Result<T, Failure>,
) -> rlock_result {
    // SAFETY: the caller's contract.
    unsafe { on(p, |h| f(h).map(|v| write_out(out, v))) }
}

/// [`answer`] for a required `out`: NULL is refused (`RLOCK_INVALID_ARGUMENT`) before the
/// handle is taken.
///
/// # Safety
/// As [`answer`].
pub(crate) unsafe fn query<H: Handle, T>(
    p: *const H,
    out: *mut T,
    f: impl FnOnce(&H) -> Result<T, Failure>,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        // SAFETY: the caller's contract.
        unsafe { take(p) }.and_then(|h| f(&h)).map(|v| write_out(out, v))
    })
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
