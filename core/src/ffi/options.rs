//! TEMPORARY stand-in for the generated setters (the generator on main writes this file from
//! `rlock::OPTIONS`); same form as the generated ones.

use std::ffi::c_char;

use super::{rlock_options, rlock_result};

/// Lease of a watchdog-renewed hold in milliseconds; the watchdog renews every third of it. At least 30. Default: 30000.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_watchdog_timeout_ms(
    options: *mut rlock_options,
    value: i64,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_duration(options, "watchdog_timeout_ms", value) }
}

/// Most holds renewed by one script call (1 to 10000). Default: 100.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_renewal_batch_size(
    options: *mut rlock_options,
    value: u32,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_count(options, "renewal_batch_size", value) }
}

/// How long one Redis command may take, in milliseconds; 0 or less waits forever. Default: 3000.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_command_timeout_ms(
    options: *mut rlock_options,
    value: i64,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_optional_duration(options, "command_timeout_ms", value) }
}

/// How long connecting (or reconnecting) may take, in milliseconds. Default: 10000.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_connect_timeout_ms(
    options: *mut rlock_options,
    value: i64,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_duration(options, "connect_timeout_ms", value) }
}

/// How often a failed command (connection error or timeout) is retried (at most 1000). Default: 3.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_retry_attempts(
    options: *mut rlock_options,
    value: u32,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_count(options, "retry_attempts", value) }
}

/// Pause between those retries, in milliseconds. Default: 1500.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_retry_delay_ms(
    options: *mut rlock_options,
    value: i64,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_duration(options, "retry_delay_ms", value) }
}

/// How long a waiter waits for its SUBSCRIBE to be confirmed before it polls, in milliseconds. Default: 7500.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_subscription_timeout_ms(
    options: *mut rlock_options,
    value: i64,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_duration(options, "subscription_timeout_ms", value) }
}

/// With pub/sub unavailable, how often a waiter re-tries, in milliseconds. Default: 100.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_poll_interval_ms(
    options: *mut rlock_options,
    value: i64,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_duration(options, "poll_interval_ms", value) }
}

/// Stop renewing a hold this long after it was acquired, in milliseconds; 0 or less renews until release. Default: none.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_max_hold_ms(
    options: *mut rlock_options,
    value: i64,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_optional_duration(options, "max_hold_ms", value) }
}

/// PEM file of the CA that signed the servers' certificates, for `rediss://` URLs; NULL trusts the system's roots. Copied. Default: none.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_tls_ca_file(
    options: *mut rlock_options,
    value: *const c_char,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_path(options, "tls_ca_file", value) }
}

/// Sharded pub/sub on a Redis Cluster: -1 decides as Redisson does, 0 off, 1 on. Default: -1 (auto).
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_sharded_pubsub(
    options: *mut rlock_options,
    value: i32,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_switch(options, "sharded_pubsub", value) }
}

/// Wait after each acquire until a replica has the hold: -1 decides as Redisson does, 0 off, 1 on. Default: -1 (auto).
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_replica_sync(
    options: *mut rlock_options,
    value: i32,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_switch(options, "replica_sync", value) }
}

/// How long one acquire waits for a replica's acknowledgement, in milliseconds. Default: 1000.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_replica_sync_timeout_ms(
    options: *mut rlock_options,
    value: i64,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_duration(options, "replica_sync_timeout_ms", value) }
}

/// Connections for commands to a single server, used in turn (1 to 8). Default: 1.
#[no_mangle]
pub unsafe extern "C" fn rlock_options_set_command_connections(
    options: *mut rlock_options,
    value: u32,
) -> rlock_result {
    // SAFETY: forwarded contract (the header's).
    unsafe { super::options_object::set_count(options, "command_connections", value) }
}
