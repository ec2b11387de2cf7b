//! `rlock_client_describe` and `rlock_client_list`: what lives under names, as core's JSON
//! text (a string the caller frees with `rlock_string_free`).

use std::ffi::c_char;

use super::client::client_ref;
use super::handle::Handle;
use super::{check_out, guard, rlock_result, str_arg, write_string};

/// Describes what lives under `name`, reading without changing anything, and writes it to
/// `*json_out` as a JSON object (a new NUL-terminated UTF-8 string the caller frees with
/// `rlock_string_free`): `{"name", "kind", "redis_type", "ttl_ms", "now_ms", "holders",
/// "waiters", "channels", "queue", "queue_length", "token", "available_permits", "count",
/// "permits", "permits_held", "notes"}`. `kind` is one of `"lock"`, `"fenced_lock"`,
/// `"fair_lock"`, `"read_write_lock"`, `"semaphore"`, `"permit_expirable_semaphore"`,
/// `"count_down_latch"`, `"semaphore_or_latch"` (nobody waits to tell them apart), `"other"`
/// (a key of another shape), `"none"`. Each holder: `{"owner", "client_id", "mode", "count",
/// "ttl_ms", "since_ms", "held_for_ms", "record"}`, `record` being `{"client_id", "host",
/// "pid", "app", "version", "written_ms"}` from the holder's client, or null (not an rlock
/// client). Each channel: `{"channel", "subscribers"}`. Each fair-queue waiter: `{"owner",
/// "client_id", "deadline_ms", "deadline_in_ms", "record"}`. Each held permit: `{"id",
/// "expires_ms", "expires_in_ms", "owner", "since_ms", "held_for_ms", "record"}`. Times in Unix
/// ms, durations in ms; every key is always present (null where it does not apply). The keys
/// are core's (`make generated-check` compares them); the README's `rlock status` section shows
/// a full example.
///
/// Blocks until Redis answered. Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL client,
/// name or json_out; an empty name, one over 64 KiB, or on a cluster one with an empty `{}`;
/// nothing is sent), `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS`, `RLOCK_CLOSED`,
/// `RLOCK_FORKED`. A key of another type is kind `"other"`, not an error.
#[no_mangle]
pub unsafe extern "C" fn rlock_client_describe(
    client: *const super::rlock_client,
    name: *const c_char,
    json_out: *mut *mut c_char,
) -> rlock_result {
    guard(|| {
        check_out(json_out)?;
        let c = client_ref(client)?;
        // SAFETY: NULL or NUL-terminated per the header.
        let name = unsafe { str_arg(name, "name") }?;
        write_string(json_out, crate::describe::to_json(&c.run(c.core().describe(name))?))
    })
}

/// Lists the names of locks and synchronizers in Redis whose key or helper keys match the Redis
/// glob `pattern` (NULL: every key), found with SCAN (on every master of a cluster) and sorted,
/// at most `limit` of them (0: all), and writes them to `*json_out` as a JSON array of
/// `{"name", "kind"}` objects (a new string the caller frees with `rlock_string_free`). Kinds as
/// in `rlock_client_describe`; keys of other shapes are left out, and any integer string counts
/// as a `"semaphore_or_latch"`. Costs time in proportion to the number of keys in Redis.
///
/// Blocks until done. Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL client or json_out,
/// invalid UTF-8), `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS`, `RLOCK_CLOSED`,
/// `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_client_list(
    client: *const super::rlock_client,
    pattern: *const c_char,
    limit: usize,
    json_out: *mut *mut c_char,
) -> rlock_result {
    guard(|| {
        check_out(json_out)?;
        let c = client_ref(client)?;
        // SAFETY: NULL or NUL-terminated per the header.
        let pattern = if pattern.is_null() { None } else { Some(unsafe { str_arg(pattern, "pattern") }?) };
        let limit = (limit > 0).then_some(limit);
        write_string(json_out, crate::describe::to_json(&c.run(c.core().list(pattern, limit))?))
    })
}
