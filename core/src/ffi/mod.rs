//! The C ABI of librlock (feature `capi`); the header `include/rlock.h` is generated from this
//! module by cbindgen.
//!
//! Conventions (as in rustls-ffi): every fallible function returns an [`rlock_result`]; on
//! failure the calling thread's last error message says why ([`rlock_last_error`]);
//! out-parameters are written only on success; NULL pointers and invalid UTF-8 are rejected
//! with `RLOCK_INVALID_ARGUMENT`; no panic ever unwinds into C (it becomes `RLOCK_PANIC`).
//! One tokio runtime per process (one worker thread, made again in a forked child) runs every
//! client's background work; blocking calls park the calling thread until their answer.
//! Every handle (client, lock, semaphore, ...) is an `Arc` behind a raw pointer (`handle`):
//! each call holds a reference for its duration, so a `_free` may race calls in progress.
//! Functions are named `rlock_<primitive>_<operation>`; strings librlock returns are allocated
//! by it and freed with [`rlock_string_free`].
//!
//! Safety contract of every `unsafe extern "C"` function here: each pointer argument is NULL or
//! valid for the access its documentation describes (strings NUL-terminated, clients and
//! options objects live: no call starts after their `_free` returned).
#![allow(non_camel_case_types, clippy::missing_safety_doc)]

mod client;
mod count_down_latch;
mod describe;
mod handle;
mod lock;
mod log;
mod lost;
mod multi_lock;
mod options_object;
mod permit_semaphore;
mod red_lock;
mod semaphore;
mod stats;

// The per-option setters, generated from `rlock::surface::OPTIONS` by `make generated` (after the object
// they set, so the header lists `rlock_options_new` first). Not reformatted: the generator's
// output is the file.
#[rustfmt::skip]
mod options;
// RLOCK_VERSION and its parts, generated from the workspace version by `make generated`.
#[rustfmt::skip]
mod version;

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};

use tokio::runtime::Handle;

use crate::error::{Error, ErrorKind};

pub use client::*;
pub use count_down_latch::*;
pub use describe::*;
pub use lock::*;
pub use log::{rlock_log_callback, rlock_log_level, rlock_set_log_callback};
pub use lost::{rlock_lost_callback, rlock_lost_event};
pub use multi_lock::*;
pub use options::*;
pub use options_object::*;
pub use permit_semaphore::*;
pub use red_lock::*;
pub use semaphore::*;
pub use stats::*;
pub use version::*;

/// The `owner` argument that means "the calling OS thread" (the same thread re-enters, other
/// threads contend, as in Redisson). Any other value is an explicit owner id, below 2^61 (ids
/// from 2^61 up are kept for threads): any thread may act for it, e.g. in an event loop.
pub const RLOCK_THREAD: u64 = u64::MAX;

/// The `wait_ms` that waits as long as it takes, and the `lease_ms` / `ttl_ms` that sets no
/// fixed end: a hold is renewed by the watchdog until released (a semaphore never expires).
pub const RLOCK_FOREVER: i64 = -1;

/// Result of every fallible librlock call. The numbers are stable.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rlock_result {
    /// Success.
    RLOCK_OK = 0,
    /// An acquire or wait whose `wait_ms` ran out (another owner held the lock, no permits were
    /// free): nothing was taken.
    RLOCK_NOT_ACQUIRED = 1,
    /// Release by a thread/owner that does not hold the lock (never did, or its lease ran out).
    RLOCK_NOT_HELD = 2,
    /// Release of a hold the watchdog had lost (it found the lock gone or could not renew it).
    RLOCK_LOST = 3,
    /// A NULL pointer, invalid UTF-8, an empty name, a bad duration, option value or URL.
    /// Nothing was done.
    RLOCK_INVALID_ARGUMENT = 4,
    /// Redis could not be reached or the connection failed.
    RLOCK_CONNECTION = 5,
    /// Redis did not answer within the command timeout.
    RLOCK_TIMEOUT = 6,
    /// Redis answered with an error (e.g. WRONGTYPE: the name holds a key that is not a lock).
    RLOCK_REDIS = 7,
    /// The client was closed (`rlock_client_free` ran while the call was in progress).
    RLOCK_CLOSED = 8,
    /// An internal error (a bug in librlock): caught before it could unwind into C.
    RLOCK_PANIC = 9,
    /// The client was created in another process and inherited over `fork()`: it cannot be
    /// used here. Create a new client in the child (the parent's client keeps working there).
    RLOCK_FORKED = 10,
    /// The call would wait forever on a hold of the same owner: a read holder of a read-write
    /// lock asked for its write lock (an upgrade), or the holder of a non-reentrant lock
    /// acquired it again. Nothing changed; release the read holds (the lock) first.
    RLOCK_WOULD_DEADLOCK = 11,
}

impl From<ErrorKind> for rlock_result {
    fn from(kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::NotAcquired => rlock_result::RLOCK_NOT_ACQUIRED,
            ErrorKind::NotHeld => rlock_result::RLOCK_NOT_HELD,
            ErrorKind::Lost => rlock_result::RLOCK_LOST,
            ErrorKind::InvalidArgument => rlock_result::RLOCK_INVALID_ARGUMENT,
            ErrorKind::Connection => rlock_result::RLOCK_CONNECTION,
            ErrorKind::Timeout => rlock_result::RLOCK_TIMEOUT,
            ErrorKind::Redis => rlock_result::RLOCK_REDIS,
            ErrorKind::Closed => rlock_result::RLOCK_CLOSED,
            ErrorKind::Forked => rlock_result::RLOCK_FORKED,
            ErrorKind::WouldDeadlock => rlock_result::RLOCK_WOULD_DEADLOCK,
        }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A failure on its way to C: the code and the thread's new last-error message.
pub(crate) struct Failure(rlock_result, String);

impl Failure {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Failure(rlock_result::RLOCK_INVALID_ARGUMENT, message.into())
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(e.kind().into(), e.message().to_owned())
    }
}

fn set_last_error(message: &str) {
    LAST_ERROR.with(|m| {
        let mut m = m.borrow_mut();
        m.clear();
        // An interior NUL would cut the message short in C; replace it.
        m.extend(message.bytes().map(|b| if b == 0 { b'?' } else { b }));
    });
}

/// A lease or TTL in ms from C: `RLOCK_FOREVER` is `None` (the watchdog renews; no expiry),
/// above 0 a fixed one; 0 and other negatives are `RLOCK_INVALID_ARGUMENT`.
pub(crate) fn lease_arg(lease_ms: i64, what: &str) -> Result<Option<std::time::Duration>, Failure> {
    match lease_ms {
        RLOCK_FOREVER => Ok(None),
        ms if ms > 0 => Ok(Some(std::time::Duration::from_millis(ms.unsigned_abs()))),
        ms => Err(Failure::invalid(format!("{what} must be RLOCK_FOREVER (-1) or above 0 (got {ms})"))),
    }
}

/// A wait in ms from C: `RLOCK_FOREVER` is `None` (as long as it takes), 0 tries once; other
/// negatives are `RLOCK_INVALID_ARGUMENT`.
pub(crate) fn wait_arg(wait_ms: i64) -> Result<Option<std::time::Duration>, Failure> {
    match wait_ms {
        RLOCK_FOREVER => Ok(None),
        ms => u64::try_from(ms).map(|ms| Some(std::time::Duration::from_millis(ms))).map_err(|_| {
            Failure::invalid(format!("wait_ms must be RLOCK_FOREVER (-1) or at least 0 (got {ms})"))
        }),
    }
}

/// Writes `text` to the required out-parameter `out` (checked non-NULL) as a new
/// NUL-terminated string the caller frees with `rlock_string_free`.
pub(crate) fn write_string(out: *mut *mut c_char, text: String) -> Result<(), Failure> {
    check_out(out)?;
    let s = CString::new(text).map_err(|_| Failure::invalid("the text has a NUL byte"))?;
    // SAFETY: `out` is non-NULL and writable per the header.
    unsafe { out.write(s.into_raw()) };
    Ok(())
}

/// Frees a string librlock returned (through a `char **` out-parameter, or from
/// `rlock_last_error`). NULL is a no-op. Each string is freed once, and only with this
/// function (not `free`). Thread-safe.
#[no_mangle]
pub unsafe extern "C" fn rlock_string_free(s: *mut c_char) {
    let _ = guard(|| {
        if !s.is_null() {
            // SAFETY: made by CString::into_raw in this module, freed once (the header's contract).
            drop(unsafe { CString::from_raw(s) });
        }
        Ok(())
    });
}

/// Fails with `RLOCK_INVALID_ARGUMENT` for a NULL required out-parameter.
pub(crate) fn check_out<T>(out: *mut T) -> Result<(), Failure> {
    if out.is_null() {
        Err(Failure::invalid("out is NULL"))
    } else {
        Ok(())
    }
}

/// Writes `value` to an out-parameter, unless it is NULL (optional ones may be; required ones
/// were checked with [`check_out`] before anything was done).
pub(crate) fn write_out<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-NULL and writable per the header.
        unsafe { out.write(value) }
    }
}

/// Runs `f`, turning its failure or a panic into a result code and the last-error message.
pub(crate) fn guard(f: impl FnOnce() -> Result<(), Failure>) -> rlock_result {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => rlock_result::RLOCK_OK,
        Ok(Err(Failure(code, message))) => {
            set_last_error(&message);
            code
        }
        Err(_) => {
            set_last_error("internal error in librlock (a bug: please report it)");
            rlock_result::RLOCK_PANIC
        }
    }
}

/// The runtime of this process (core's per-process runtime, made anew in a forked child): its
/// worker runs every client's connections, watchdog and pub/sub tasks; calls are polled on the
/// calling threads.
pub(crate) fn runtime() -> Result<Handle, Failure> {
    Ok(crate::runtime::process_runtime(crate::runtime::SURFACE_WORKERS)?.1)
}

/// Blocks the calling thread on `fut`, run under the librlock runtime `rt`, as a blocking
/// call: its commands may go out on the thread's own connection (`thread_connections`).
pub(crate) fn block_on<F: Future>(rt: &Handle, fut: F) -> Result<F::Output, Failure> {
    if Handle::try_current().is_ok() {
        return Err(Failure::invalid(
            "blocking librlock calls cannot be made from a librlock callback or a tokio runtime thread",
        ));
    }
    Ok(crate::blocking(|| rt.block_on(fut)))
}

/// Borrows a C string as UTF-8; `what` names the argument in the error.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string valid for the call.
pub(crate) unsafe fn str_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated per the caller's contract.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().map_err(|_| Failure::invalid(format!("{what} is not valid UTF-8")))
}

/// The calling thread's last error message, as a new string to free with
/// `rlock_string_free`: "" when no call on this thread has failed yet, NULL only when the
/// memory for it could not be had. Does not change the message. Thread-safe: each thread has
/// its own.
#[no_mangle]
pub extern "C" fn rlock_last_error() -> *mut c_char {
    catch_unwind(|| {
        // set_last_error keeps interior NULs out, so this cannot fail; NULL if it did.
        LAST_ERROR.with(|m| CString::new(m.borrow().clone()).map_or(std::ptr::null_mut(), CString::into_raw))
    })
    .unwrap_or(std::ptr::null_mut())
}

/// A static, NUL-terminated name for a result code, e.g. "RLOCK_NOT_HELD"; "RLOCK_UNKNOWN"
/// for a number that is not an `rlock_result`. Takes an `int` so any value is safe to pass.
#[no_mangle]
pub extern "C" fn rlock_result_str(r: c_int) -> *const c_char {
    let s: &'static CStr = match r {
        0 => c"RLOCK_OK",
        1 => c"RLOCK_NOT_ACQUIRED",
        2 => c"RLOCK_NOT_HELD",
        3 => c"RLOCK_LOST",
        4 => c"RLOCK_INVALID_ARGUMENT",
        5 => c"RLOCK_CONNECTION",
        6 => c"RLOCK_TIMEOUT",
        7 => c"RLOCK_REDIS",
        8 => c"RLOCK_CLOSED",
        9 => c"RLOCK_PANIC",
        10 => c"RLOCK_FORKED",
        11 => c"RLOCK_WOULD_DEADLOCK",
        _ => c"RLOCK_UNKNOWN",
    };
    s.as_ptr()
}

/// The loaded librlock's version, "MAJOR.MINOR.PATCH" (static, NUL-terminated; never NULL).
/// Compare it with the header's `RLOCK_VERSION` (made of `RLOCK_VERSION_MAJOR`, `_MINOR`,
/// `_PATCH`) to catch a program built against another header than the library it runs with.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn rlock_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_the_crate_version() {
        // SAFETY: rlock_version returns a static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(rlock_version()) };
        assert_eq!(v.to_str().ok(), Some(env!("CARGO_PKG_VERSION")));
        let parts: Vec<u32> = env!("CARGO_PKG_VERSION").split('.').filter_map(|p| p.parse().ok()).collect();
        assert_eq!(parts, [RLOCK_VERSION_MAJOR, RLOCK_VERSION_MINOR, RLOCK_VERSION_PATCH]);
    }

    #[test]
    fn durations_follow_one_convention() {
        use std::time::Duration;
        assert!(matches!(wait_arg(RLOCK_FOREVER), Ok(None)));
        assert!(matches!(wait_arg(0), Ok(Some(d)) if d.is_zero()));
        assert!(matches!(wait_arg(250), Ok(Some(d)) if d == Duration::from_millis(250)));
        assert!(wait_arg(-2).is_err());
        assert!(matches!(lease_arg(RLOCK_FOREVER, "lease_ms"), Ok(None)));
        assert!(matches!(lease_arg(1, "lease_ms"), Ok(Some(d)) if d == Duration::from_millis(1)));
        for bad in [0, -2, i64::MIN] {
            assert!(lease_arg(bad, "lease_ms").is_err(), "{bad}");
        }
    }

    /// Reads the last error through the C function, freeing its string.
    fn last_error() -> String {
        let p = rlock_last_error();
        assert!(!p.is_null());
        // SAFETY: a NUL-terminated string from rlock_last_error, freed once right after.
        let s = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        // SAFETY: as above.
        unsafe { rlock_string_free(p) };
        s
    }

    #[test]
    fn last_error_is_an_allocated_string_and_handles_reject_null() {
        std::thread::spawn(|| {
            assert_eq!(last_error(), "");
            let mut lock: *mut rlock_lock = std::ptr::null_mut();
            // SAFETY: NULL client and a valid out-parameter: refused before anything is read.
            let r = unsafe { rlock_lock_new(std::ptr::null(), c"x".as_ptr(), 0, &mut lock) };
            assert_eq!(r, rlock_result::RLOCK_INVALID_ARGUMENT);
            assert!(lock.is_null());
            assert_eq!(last_error(), "client is NULL");
            assert_eq!(last_error(), "client is NULL"); // reading does not clear it
                                                        // SAFETY: a NULL handle is refused before anything is read.
            let r = unsafe {
                rlock_lock_acquire(
                    std::ptr::null(),
                    RLOCK_THREAD,
                    RLOCK_FOREVER,
                    RLOCK_FOREVER,
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(r, rlock_result::RLOCK_INVALID_ARGUMENT);
            assert_eq!(last_error(), "lock is NULL");
            // SAFETY: freeing NULL handles and strings is a no-op.
            unsafe {
                rlock_lock_free(std::ptr::null_mut());
                rlock_semaphore_free(std::ptr::null_mut());
                rlock_permit_expirable_semaphore_free(std::ptr::null_mut());
                rlock_count_down_latch_free(std::ptr::null_mut());
                rlock_multi_lock_free(std::ptr::null_mut());
                rlock_red_lock_free(std::ptr::null_mut());
                rlock_string_free(std::ptr::null_mut());
            }
        })
        .join()
        .expect("the test thread panicked");
    }

    #[test]
    fn result_codes_follow_the_error_kinds() {
        for kind in ErrorKind::ALL {
            let r = rlock_result::from(kind);
            assert_eq!(r as i32, kind.code(), "{kind:?}");
            // SAFETY: rlock_result_str returns a static NUL-terminated string.
            let name = unsafe { CStr::from_ptr(rlock_result_str(kind.code())) };
            assert_eq!(name.to_str().ok(), Some(kind.code_name().as_str()), "{kind:?}");
        }
        // SAFETY: as above.
        let name = |r: c_int| unsafe { CStr::from_ptr(rlock_result_str(r)) }.to_str().unwrap_or("");
        assert_eq!(name(rlock_result::RLOCK_OK as c_int), "RLOCK_OK");
        assert_eq!(name(rlock_result::RLOCK_PANIC as c_int), "RLOCK_PANIC");
        assert_eq!(rlock_result::RLOCK_PANIC as i32, 9);
        assert_eq!(name(11), "RLOCK_WOULD_DEADLOCK");
        assert_eq!(name(12), "RLOCK_UNKNOWN");
        assert_eq!(name(-1), "RLOCK_UNKNOWN");
    }
}
