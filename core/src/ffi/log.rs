//! Core's log records in C (`rlock_set_log_callback`): warnings such as a give-back that could
//! not reach Redis or a server that may evict a held lock's key.

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use super::{guard, rlock_result};
use crate::log_sink::{set_log_sink, LogLevel};

/// How severe a log record is.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rlock_log_level {
    /// Something failed that librlock could not make good.
    RLOCK_LOG_ERROR = 1,
    /// Something failed or is unsafe, and librlock went on (a give-back that did not reach
    /// Redis, a server that may evict a held lock's key).
    RLOCK_LOG_WARN = 2,
    /// A change worth knowing.
    RLOCK_LOG_INFO = 3,
}

/// Called with each of librlock's log records: `userdata` as given to
/// `rlock_set_log_callback`, the level, the module that logged (`"rlock::..."`) and the
/// message (both NUL-terminated, valid only during the call).
pub type rlock_log_callback = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        level: rlock_log_level,
        target: *const c_char,
        message: *const c_char,
    ),
>;

struct Callback {
    f: unsafe extern "C" fn(*mut c_void, rlock_log_level, *const c_char, *const c_char),
    userdata: *mut c_void,
}
// SAFETY: the header requires the callback and its userdata to be usable from any thread.
unsafe impl Send for Callback {}
// SAFETY: as above.
unsafe impl Sync for Callback {}

/// Sends librlock's log records (levels error, warn and info) to `callback`, with `userdata`
/// as its first argument, for the whole process; NULL `callback` stops them (the default: none
/// are printed). It is called on whatever thread logged (librlock's, or one in a librlock
/// call), so it and `userdata` must be thread-safe; it must return quickly and must not call
/// librlock. A message repeated within 30 s is passed on once. Replaces any earlier callback
/// and returns once no call of it is running, so its `userdata` may be freed then. Thread-safe;
/// in a child after `fork()`, call it only when no thread of the parent was logging (a log call
/// under way at the fork leaves it waiting). Never fails (`RLOCK_OK`; `RLOCK_PANIC` on a bug).
#[no_mangle]
pub unsafe extern "C" fn rlock_set_log_callback(
    callback: rlock_log_callback,
    userdata: *mut c_void,
) -> rlock_result {
    guard(|| {
        let sink = callback.map(|f| {
            let cb = Callback { f, userdata };
            Arc::new(move |level: LogLevel, target: &str, message: &str| {
                let level = match level {
                    LogLevel::Error => rlock_log_level::RLOCK_LOG_ERROR,
                    LogLevel::Warn => rlock_log_level::RLOCK_LOG_WARN,
                    LogLevel::Info => rlock_log_level::RLOCK_LOG_INFO,
                };
                // An interior NUL (none is expected) would cut the text short: replaced.
                let text = |s: &str| CString::new(s.replace('\0', "?")).unwrap_or_default();
                let (target, message) = (text(target), text(message));
                let cb = &cb;
                // SAFETY: the callback contract is the caller's (see above); the strings
                // outlive the call.
                unsafe { (cb.f)(cb.userdata, level, target.as_ptr(), message.as_ptr()) };
            }) as crate::log_sink::LogSink
        });
        set_log_sink(sink);
        Ok(())
    })
}
