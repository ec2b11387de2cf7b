//! `rlock_options`: the opaque options object (as hyper's), its `_new`/`_free`, and the typed
//! helpers behind the generated per-option setters of `options.rs`. Each helper sets one
//! option by its C name through [`ClientOptions::set`] and checks the result with
//! [`ClientOptions::validate`]; a bad value changes nothing.

use std::ffi::c_char;
use std::panic::catch_unwind;
use std::sync::Mutex;

use super::{guard, rlock_result, str_arg, Failure};
use crate::options::{ClientOptions, OptionValue, Surface};

/// An opaque set of client settings for `rlock_client_new`. Create with `rlock_options_new`
/// (every option at its default), change with the `rlock_options_set_*` functions, free with
/// `rlock_options_free`.
///
/// Every setter takes the options object and a value: durations in milliseconds (`int64_t`;
/// negative is invalid, except where an option says 0 or less means none), counts (`uint32_t`), switches (`int32_t`: -1 decided by rlock as Redisson does, 0 off, 1
/// on) and paths (a NUL-terminated UTF-8 string, copied; NULL for none). It returns `RLOCK_OK`,
/// or `RLOCK_INVALID_ARGUMENT` for a NULL options object or a bad value (out of range, or
/// invalid UTF-8; the message names the option), leaving the previous value in place. Setters
/// are thread-safe. `rlock_client_new` copies the settings, so the object may be changed,
/// reused or freed right after it.
pub struct rlock_options {
    inner: Mutex<ClientOptions>,
}

impl rlock_options {
    /// A copy of the settings.
    pub(crate) fn snapshot(&self) -> ClientOptions {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A new options object with every option at its default. Free it with `rlock_options_free`.
/// Returns NULL only on an internal error. Thread-safe.
#[no_mangle]
pub extern "C" fn rlock_options_new() -> *mut rlock_options {
    catch_unwind(|| Box::into_raw(Box::new(rlock_options { inner: Mutex::new(ClientOptions::default()) })))
        .unwrap_or(std::ptr::null_mut())
}

/// Frees an options object; NULL is a no-op. Clients created with it are not affected. No
/// other call may use `options` once this started.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_free(options: *mut rlock_options) {
    let _ = guard(|| {
        if !options.is_null() {
            // SAFETY: made by Box::into_raw in rlock_options_new and freed once (the header's
            // contract).
            drop(unsafe { Box::from_raw(options) });
        }
        Ok(())
    });
}

/// Sets option `key` (C spelling) of `options` to `value`, when both it and the whole result
/// are valid; otherwise leaves `options` as it was.
///
/// # Safety
/// `options` is NULL or a live options object.
unsafe fn set(options: *mut rlock_options, key: &str, value: OptionValue<'_>) -> Result<(), Failure> {
    // SAFETY: NULL or live per the caller's contract.
    let o = unsafe { options.as_ref() }.ok_or_else(|| Failure::invalid("options is NULL"))?;
    let mut current = o.inner.lock().unwrap_or_else(|p| p.into_inner());
    let mut next = current.clone();
    next.set(Surface::C, key, value)?;
    next.validate().map_err(|e| Failure::invalid(format!("{key}: {}", e.message())))?;
    *current = next;
    Ok(())
}

/// A duration option in milliseconds; negative is `RLOCK_INVALID_ARGUMENT`.
///
/// # Safety
/// `options` is NULL or a live options object.
pub(crate) unsafe fn set_duration(options: *mut rlock_options, key: &str, value: i64) -> rlock_result {
    guard(|| {
        if value < 0 {
            return Err(Failure::invalid(format!("{key} must not be negative (got {value})")));
        }
        // SAFETY: forwarded contract.
        unsafe { set(options, key, OptionValue::Int(value)) }
    })
}

/// A duration option in milliseconds that may be none: 0 or negative means none.
///
/// # Safety
/// `options` is NULL or a live options object.
pub(crate) unsafe fn set_optional_duration(
    options: *mut rlock_options,
    key: &str,
    value: i64,
) -> rlock_result {
    let value = if value > 0 { OptionValue::Int(value) } else { OptionValue::Unset };
    // SAFETY: forwarded contract.
    guard(|| unsafe { set(options, key, value) })
}

/// A count option.
///
/// # Safety
/// `options` is NULL or a live options object.
pub(crate) unsafe fn set_count(options: *mut rlock_options, key: &str, value: u32) -> rlock_result {
    // SAFETY: forwarded contract.
    guard(|| unsafe { set(options, key, OptionValue::Int(i64::from(value))) })
}

/// An on/off option that rlock may decide: -1 none (decided as Redisson does), 0 off, 1 on;
/// anything else is `RLOCK_INVALID_ARGUMENT`.
///
/// # Safety
/// `options` is NULL or a live options object.
pub(crate) unsafe fn set_switch(options: *mut rlock_options, key: &str, value: i32) -> rlock_result {
    guard(|| {
        let value = match value {
            -1 => OptionValue::Unset,
            0 => OptionValue::Bool(false),
            1 => OptionValue::Bool(true),
            _ => {
                return Err(Failure::invalid(format!(
                    "{key} must be -1 (auto), 0 (off) or 1 (on), got {value}"
                )))
            }
        };
        // SAFETY: forwarded contract.
        unsafe { set(options, key, value) }
    })
}

/// A file path option: NULL is none, else a UTF-8 path (copied).
///
/// # Safety
/// `options` is NULL or a live options object; `value` is NULL or a NUL-terminated string.
pub(crate) unsafe fn set_path(options: *mut rlock_options, key: &str, value: *const c_char) -> rlock_result {
    guard(|| {
        let value = if value.is_null() {
            OptionValue::Unset
        } else {
            // SAFETY: non-NULL and NUL-terminated per the caller's contract.
            OptionValue::Str(unsafe { str_arg(value, key) }?)
        };
        // SAFETY: forwarded contract.
        unsafe { set(options, key, value) }
    })
}

/// An on/off option: `true` on, `false` off.
///
/// # Safety
/// `options` is NULL or a live options object.
pub(crate) unsafe fn set_flag(options: *mut rlock_options, key: &str, value: bool) -> rlock_result {
    // SAFETY: forwarded contract.
    guard(|| unsafe { set(options, key, OptionValue::Bool(value)) })
}

/// A text option: NULL is none, else a UTF-8 string (copied).
///
/// # Safety
/// `options` is NULL or a live options object; `value` is NULL or a NUL-terminated string.
pub(crate) unsafe fn set_text(options: *mut rlock_options, key: &str, value: *const c_char) -> rlock_result {
    // The same conversion as a path: NULL none, else checked UTF-8.
    // SAFETY: forwarded contract.
    unsafe { set_path(options, key, value) }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::ffi::rlock_result::{RLOCK_INVALID_ARGUMENT, RLOCK_OK};

    fn with_options(f: impl FnOnce(*mut rlock_options)) {
        let o = rlock_options_new();
        assert!(!o.is_null());
        f(o);
        // SAFETY: made above, freed once.
        unsafe { rlock_options_free(o) };
    }

    fn get(o: *mut rlock_options) -> ClientOptions {
        // SAFETY: live for the test.
        unsafe { &*o }.snapshot()
    }

    #[test]
    fn every_helper_sets_good_values_and_keeps_the_old_one_on_bad() {
        with_options(|o| {
            // SAFETY: `o` is live; strings are NUL-terminated literals.
            unsafe {
                assert_eq!(set_duration(o, "watchdog_timeout_ms", 1000), RLOCK_OK);
                assert_eq!(set_duration(o, "watchdog_timeout_ms", -1), RLOCK_INVALID_ARGUMENT);
                assert_eq!(set_duration(o, "watchdog_timeout_ms", 10), RLOCK_INVALID_ARGUMENT);
                assert_eq!(get(o).watchdog_timeout, Duration::from_secs(1));

                assert_eq!(set_optional_duration(o, "max_hold_ms", 5000), RLOCK_OK);
                assert_eq!(get(o).max_hold, Some(Duration::from_secs(5)));
                assert_eq!(set_optional_duration(o, "max_hold_ms", i64::MAX), RLOCK_INVALID_ARGUMENT);
                assert_eq!(get(o).max_hold, Some(Duration::from_secs(5)));
                assert_eq!(set_optional_duration(o, "max_hold_ms", 0), RLOCK_OK);
                assert_eq!(get(o).max_hold, None);
                assert_eq!(set_optional_duration(o, "command_timeout_ms", -3), RLOCK_OK);
                assert_eq!(get(o).command_timeout, None);

                assert_eq!(set_count(o, "command_connections", 2), RLOCK_OK);
                assert_eq!(set_count(o, "command_connections", 9), RLOCK_INVALID_ARGUMENT);
                assert_eq!(get(o).command_connections, 2);

                assert_eq!(set_switch(o, "replica_sync", 1), RLOCK_OK);
                assert_eq!(set_switch(o, "replica_sync", 2), RLOCK_INVALID_ARGUMENT);
                assert_eq!(get(o).replica_sync, Some(true));
                assert_eq!(set_switch(o, "replica_sync", 0), RLOCK_OK);
                assert_eq!(get(o).replica_sync, Some(false));
                assert_eq!(set_switch(o, "replica_sync", -1), RLOCK_OK);
                assert_eq!(get(o).replica_sync, None);

                assert_eq!(set_path(o, "tls_ca_file", c"/ca.pem".as_ptr()), RLOCK_OK);
                assert_eq!(set_path(o, "tls_ca_file", c"".as_ptr()), RLOCK_INVALID_ARGUMENT);
                assert_eq!(set_path(o, "tls_ca_file", c"\xff.pem".as_ptr()), RLOCK_INVALID_ARGUMENT);
                assert_eq!(get(o).tls_ca_file, Some(PathBuf::from("/ca.pem")));
                assert_eq!(set_path(o, "tls_ca_file", std::ptr::null()), RLOCK_OK);
                assert_eq!(get(o).tls_ca_file, None);

                assert_eq!(set_flag(o, "holder_record", false), RLOCK_OK);
                assert!(!get(o).holder_record);
                assert_eq!(set_text(o, "app_name", c"billing".as_ptr()), RLOCK_OK);
                assert_eq!(set_text(o, "app_name", c"".as_ptr()), RLOCK_INVALID_ARGUMENT);
                assert_eq!(get(o).app_name.as_deref(), Some("billing"));

                assert_eq!(set_count(o, "no_such_option", 1), RLOCK_INVALID_ARGUMENT);
            }
        });
    }

    #[test]
    fn null_options_are_refused() {
        let null = std::ptr::null_mut();
        // SAFETY: NULL is allowed.
        unsafe {
            assert_eq!(set_duration(null, "watchdog_timeout_ms", 1000), RLOCK_INVALID_ARGUMENT);
            assert_eq!(set_optional_duration(null, "max_hold_ms", 1000), RLOCK_INVALID_ARGUMENT);
            assert_eq!(set_count(null, "retry_attempts", 1), RLOCK_INVALID_ARGUMENT);
            assert_eq!(set_switch(null, "replica_sync", 1), RLOCK_INVALID_ARGUMENT);
            assert_eq!(set_path(null, "tls_ca_file", std::ptr::null()), RLOCK_INVALID_ARGUMENT);
            rlock_options_free(null);
        }
    }

    #[test]
    fn every_c_option_has_a_helper_kind() {
        // The generated setters use one helper per kind; each C name is accepted by `set`.
        use crate::options::{OptionKind, OPTIONS};
        with_options(|o| {
            for spec in OPTIONS {
                let key = spec.spelling(Surface::C);
                // SAFETY: `o` is live.
                let r = unsafe {
                    match spec.kind {
                        OptionKind::Duration => set_duration(o, &key, 1000),
                        OptionKind::OptionalDuration => set_optional_duration(o, &key, 0),
                        OptionKind::Count => set_count(o, &key, 1),
                        OptionKind::Switch => set_switch(o, &key, -1),
                        OptionKind::Path => set_path(o, &key, std::ptr::null()),
                        OptionKind::Flag => set_flag(o, &key, true),
                        OptionKind::Text => set_text(o, &key, std::ptr::null()),
                    }
                };
                assert_eq!(r, RLOCK_OK, "{key}");
            }
        });
    }
}
