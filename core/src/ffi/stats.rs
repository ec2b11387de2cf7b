//! The client's figures for C: `rlock_client_stats` (a struct) and
//! `rlock_client_prometheus_text` (the Prometheus text, a string librlock allocates).

use std::ffi::c_char;

use super::client::{client_ref, rlock_client};
use super::handle::on;
use super::{guard, rlock_result, write_string};
use crate::metrics::Summary;

/// Length of `rlock_stats.errors`: one slot per result code (index 0, `RLOCK_OK`, and 9,
/// `RLOCK_PANIC`, stay 0).
pub const RLOCK_STATS_ERROR_SLOTS: usize = 16;

/// Size of `rlock_stats.eviction_policy`, its NUL included.
pub const RLOCK_STATS_POLICY_LEN: usize = 32;

/// One histogram of durations, summarized; every time in milliseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct rlock_stats_summary {
    /// How many durations were recorded.
    pub count: u64,
    /// Their sum.
    pub sum_ms: f64,
    /// The median: the upper bound of its bucket (at most 25% over), never above the maximum.
    pub p50_ms: f64,
    /// The 99th percentile, as the median.
    pub p99_ms: f64,
    /// The largest.
    pub max_ms: f64,
}

impl From<Summary> for rlock_stats_summary {
    fn from(s: Summary) -> Self {
        rlock_stats_summary {
            count: s.count,
            sum_ms: s.sum.as_secs_f64() * 1000.0,
            p50_ms: s.p50.as_secs_f64() * 1000.0,
            p99_ms: s.p99.as_secs_f64() * 1000.0,
            max_ms: s.max.as_secs_f64() * 1000.0,
        }
    }
}

/// A client's figures since it was created (all zero with the `metrics` option off).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct rlock_stats {
    /// Acquires that succeeded (locks of every kind, semaphore and permit acquires; each re-entry
    /// counts).
    pub acquires: u64,
    /// Of those, the ones that found the lock (or permits) taken at first and waited.
    pub contended_acquires: u64,
    /// Acquires whose wait ran out.
    pub acquire_timeouts: u64,
    /// Final releases of locks and permits, and semaphore releases.
    pub releases: u64,
    /// Holds the watchdog renewed (one per hold per renewal).
    pub renewals: u64,
    /// Holds whose renewal failed (Redis erroring or unreachable; retried while the lease lasts).
    pub renewal_failures: u64,
    /// Holds the watchdog lost (found gone, or not renewed within the lease).
    pub lost_holds: u64,
    /// Waiters woken by a pub/sub message (not by a timeout).
    pub wakeups: u64,
    /// Times the connection to Redis dropped, or was replaced (a Sentinel failover, a rebuilt
    /// cluster connection).
    pub reconnects: u64,
    /// How long successful acquires waited (uncontended ones included).
    pub wait: rlock_stats_summary,
    /// How long holds lasted, from acquire to final release.
    pub hold: rlock_stats_summary,
    /// Errors returned by acquires and releases, by result code: `errors[RLOCK_TIMEOUT]` is
    /// the number of timeouts.
    pub errors: [u64; RLOCK_STATS_ERROR_SLOTS],
    /// The server's `maxmemory-policy` when it may evict a held lock's key (anything but
    /// `noeviction`), as read at connect, NUL-terminated; empty for `noeviction` or where
    /// `CONFIG` is refused. Set whether or not `metrics` is on.
    pub eviction_policy: [c_char; RLOCK_STATS_POLICY_LEN],
}

/// Writes `client`'s figures to `*out`. Does not block and sends nothing. Thread-safe.
/// Errors: `RLOCK_INVALID_ARGUMENT` (NULL client or out), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_client_stats(
    client: *const rlock_client,
    out: *mut rlock_stats,
) -> rlock_result {
    guard(|| {
        let c = client_ref(client)?;
        super::check_out(out)?;
        let s = c.core().stats();
        let mut errors = [0u64; RLOCK_STATS_ERROR_SLOTS];
        for kind in crate::error::ErrorKind::ALL {
            let n = s.errors.get(kind.as_str()).copied().unwrap_or(0);
            if let Some(slot) = usize::try_from(kind.code()).ok().and_then(|i| errors.get_mut(i)) {
                *slot = n;
            }
        }
        let stats = rlock_stats {
            acquires: s.acquires,
            contended_acquires: s.contended_acquires,
            acquire_timeouts: s.acquire_timeouts,
            releases: s.releases,
            renewals: s.renewals,
            renewal_failures: s.renewal_failures,
            lost_holds: s.lost_holds,
            wakeups: s.wakeups,
            reconnects: s.reconnects,
            wait: s.wait.into(),
            hold: s.hold.into(),
            errors,
            eviction_policy: policy_chars(s.eviction_policy.as_deref()),
        };
        super::write_out(out, stats);
        Ok(())
    })
}

/// Renders `client`'s figures in the Prometheus text exposition format and writes them to
/// `*text_out` as a new NUL-terminated string the caller frees with `rlock_string_free`. Does
/// not block and sends nothing. Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL client or
/// text_out), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_client_prometheus_text(
    client: *const rlock_client,
    text_out: *mut *mut c_char,
) -> rlock_result {
    // SAFETY: NULL or live per the header.
    unsafe { on(client, |c| write_string(text_out, c.core().prometheus_text())) }
}

/// `policy` as a NUL-terminated C string in a fixed array (empty for `None`; cut at the
/// array's length, which every Redis and Valkey policy name fits).
fn policy_chars(policy: Option<&str>) -> [c_char; RLOCK_STATS_POLICY_LEN] {
    let mut out = [0 as c_char; RLOCK_STATS_POLICY_LEN];
    for (slot, b) in out.iter_mut().zip(policy.unwrap_or("").bytes().take(RLOCK_STATS_POLICY_LEN - 1)) {
        *slot = b as c_char;
    }
    out
}
