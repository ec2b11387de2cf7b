//! Per-client counters and histograms: what `stats()` returns on every surface and what the
//! Prometheus text shows. Every figure is a relaxed atomic, so recording costs a few
//! uncontended atomic adds per acquire; with the `metrics` option off nothing is recorded.
//!
//! Histograms keep counts in log-linear buckets of microseconds: four buckets per power of
//! two (each at most 25% wide), from 1 us to about 12 days, so p50/p99 are exact to within a
//! bucket and recording is one index computation and one add.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;

use crate::error::ErrorKind;
use crate::millis;

/// Buckets of a histogram: 0..4 us one each, then four per power of two up to 2^40 us.
const BUCKETS: usize = 4 + 38 * 4;

/// The bucket of `us` microseconds.
fn bucket(us: u64) -> usize {
    if us < 4 {
        return us as usize;
    }
    let b = 63 - us.leading_zeros() as usize; // floor(log2), >= 2
    let sub = ((us >> (b - 2)) & 3) as usize;
    (4 + (b - 2) * 4 + sub).min(BUCKETS - 1)
}

/// The exclusive upper bound of bucket `i`, in microseconds.
fn upper(i: usize) -> u64 {
    if i < 4 {
        return i as u64 + 1;
    }
    let (b, sub) = ((i - 4) / 4 + 2, (i - 4) % 4);
    (4 + sub as u64 + 1) << (b - 2)
}

/// A histogram of durations.
struct Histogram {
    buckets: [AtomicU64; BUCKETS],
    sum_us: AtomicU64,
    max_us: AtomicU64,
}

impl Histogram {
    fn new() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_us: AtomicU64::new(0),
            max_us: AtomicU64::new(0),
        }
    }

    fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        if let Some(b) = self.buckets.get(bucket(us)) {
            b.fetch_add(1, Relaxed);
        }
        self.sum_us.fetch_add(us, Relaxed);
        self.max_us.fetch_max(us, Relaxed);
    }

    fn counts(&self) -> Vec<u64> {
        self.buckets.iter().map(|b| b.load(Relaxed)).collect()
    }

    fn summary(&self) -> Summary {
        let counts = self.counts();
        let count: u64 = counts.iter().sum();
        let quantile = |q: f64| -> Duration {
            if count == 0 {
                return Duration::ZERO;
            }
            let rank = ((q * count as f64).ceil() as u64).max(1);
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return Duration::from_micros(upper(i));
                }
            }
            Duration::from_micros(upper(BUCKETS - 1))
        };
        let max = Duration::from_micros(self.max_us.load(Relaxed));
        Summary {
            count,
            sum: Duration::from_micros(self.sum_us.load(Relaxed)),
            p50: quantile(0.5).min(max),
            p99: quantile(0.99).min(max),
            max,
        }
    }
}

/// A summary of one histogram of durations.
///
/// Serialized in fractional milliseconds, each key with the suffix `_ms`: `sum_ms`, `p50_ms`,
/// ...; the surfaces call it `StatsSummary`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, JsonSchema)]
#[schemars(rename = "StatsSummary")]
#[non_exhaustive]
pub struct Summary {
    /// How many durations were recorded.
    pub count: u64,
    /// Their sum.
    #[serde(rename = "sum_ms", serialize_with = "millis::ser::float_ms")]
    #[schemars(with = "f64")]
    pub sum: Duration,
    /// The median: the upper bound of its bucket (at most 25% over), never above the maximum.
    #[serde(rename = "p50_ms", serialize_with = "millis::ser::float_ms")]
    #[schemars(with = "f64")]
    pub p50: Duration,
    /// The 99th percentile, as the median.
    #[serde(rename = "p99_ms", serialize_with = "millis::ser::float_ms")]
    #[schemars(with = "f64")]
    pub p99: Duration,
    /// The largest.
    #[serde(rename = "max_ms", serialize_with = "millis::ser::float_ms")]
    #[schemars(with = "f64")]
    pub max: Duration,
}

/// A client's figures since it connected (all zero with the `metrics` option off): what
/// `stats()` returns on every surface.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct Stats {
    /// Acquires that succeeded (locks of every kind, semaphore and permit acquires; each
    /// re-entry counts).
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
    pub wait: Summary,
    /// How long holds lasted, from acquire to final release.
    pub hold: Summary,
    /// Errors returned by acquires, releases and other calls that reached Redis, by kind
    /// (`"timeout"`, `"not_held"`, ...); every kind is present.
    pub errors: BTreeMap<&'static str, u64>,
    /// The server's `maxmemory-policy` when it may evict keys under memory pressure (anything
    /// but `noeviction`: a held lock's key can then be evicted, and another owner takes the
    /// lock), as read with `CONFIG GET` at connect (on a cluster, slot 0's master's); `None`
    /// for `noeviction`, or where `CONFIG` is refused. Set whether or not `metrics` is on.
    pub eviction_policy: Option<String>,
}

impl Stats {
    /// The figures as JSON (the field names above, times in milliseconds under names with the
    /// suffix `_ms`), as C spells them.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".to_owned())
    }
}

/// The live figures of one client.
pub(crate) struct Metrics {
    on: bool,
    acquires: AtomicU64,
    contended: AtomicU64,
    timeouts: AtomicU64,
    releases: AtomicU64,
    renewals: AtomicU64,
    renewal_failures: AtomicU64,
    lost: AtomicU64,
    wakeups: AtomicU64,
    reconnects: AtomicU64,
    errors: [AtomicU64; ErrorKind::ALL.len()],
    wait: Histogram,
    hold: Histogram,
}

impl Metrics {
    /// Figures at zero; `on` false records nothing.
    pub(crate) fn new(on: bool) -> Self {
        Metrics {
            on,
            acquires: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            releases: AtomicU64::new(0),
            renewals: AtomicU64::new(0),
            renewal_failures: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            reconnects: AtomicU64::new(0),
            errors: std::array::from_fn(|_| AtomicU64::new(0)),
            wait: Histogram::new(),
            hold: Histogram::new(),
        }
    }

    fn add(&self, c: &AtomicU64, n: u64) {
        if self.on && n > 0 {
            c.fetch_add(n, Relaxed);
        }
    }

    /// An acquire succeeded after waiting `waited` (`contended`: it found the lock taken).
    pub(crate) fn acquired(&self, waited: Duration, contended: bool) {
        if self.on {
            self.acquires.fetch_add(1, Relaxed);
            if contended {
                self.contended.fetch_add(1, Relaxed);
            }
            self.wait.record(waited);
        }
    }

    /// An acquire's wait ran out.
    pub(crate) fn timed_out(&self) {
        self.add(&self.timeouts, 1);
    }

    /// A hold ended after `held` (`None`: a release with no known start, a semaphore's).
    pub(crate) fn released(&self, held: Option<Duration>) {
        if self.on {
            self.releases.fetch_add(1, Relaxed);
            if let Some(h) = held {
                self.hold.record(h);
            }
        }
    }

    /// A renewal batch: `renewed` holds renewed, `failed` whose renewal failed.
    pub(crate) fn renewed(&self, renewed: u64, failed: u64) {
        self.add(&self.renewals, renewed);
        self.add(&self.renewal_failures, failed);
    }

    /// A hold was lost.
    pub(crate) fn lost(&self) {
        self.add(&self.lost, 1);
    }

    /// A waiter was woken by a message.
    pub(crate) fn woken(&self) {
        self.add(&self.wakeups, 1);
    }

    /// The connection dropped or was replaced.
    pub(crate) fn reconnected(&self) {
        self.add(&self.reconnects, 1);
    }

    /// A call returned an error of `kind`.
    pub(crate) fn error(&self, kind: ErrorKind) {
        if let Some(i) = ErrorKind::ALL.iter().position(|k| *k == kind) {
            if let Some(c) = self.errors.get(i) {
                self.add(c, 1);
            }
        }
    }

    /// The figures now.
    pub(crate) fn stats(&self) -> Stats {
        Stats {
            acquires: self.acquires.load(Relaxed),
            contended_acquires: self.contended.load(Relaxed),
            acquire_timeouts: self.timeouts.load(Relaxed),
            releases: self.releases.load(Relaxed),
            renewals: self.renewals.load(Relaxed),
            renewal_failures: self.renewal_failures.load(Relaxed),
            lost_holds: self.lost.load(Relaxed),
            wakeups: self.wakeups.load(Relaxed),
            reconnects: self.reconnects.load(Relaxed),
            wait: self.wait.summary(),
            hold: self.hold.summary(),
            errors: ErrorKind::ALL
                .iter()
                .zip(&self.errors)
                .map(|(k, c)| (k.as_str(), c.load(Relaxed)))
                .collect(),
            eviction_policy: None,
        }
    }

    /// The figures in the Prometheus text exposition format (version 0.0.4), each series
    /// labelled with `labels` (already escaped `name="value"` pairs, comma-separated).
    pub(crate) fn prometheus(&self, labels: &str) -> String {
        let s = self.stats();
        let mut out = String::new();
        let with = |extra: &str| match (labels.is_empty(), extra.is_empty()) {
            (true, _) => format!("{{{extra}}}"),
            (false, true) => format!("{{{labels}}}"),
            (false, false) => format!("{{{labels},{extra}}}"),
        };
        let plain = with("");
        let plain = if plain == "{}" { String::new() } else { plain };
        let counters: [(&str, &str, u64); 9] = [
            ("acquires", "Acquires that succeeded.", s.acquires),
            (
                "contended_acquires",
                "Acquires that found the lock or permits taken and waited.",
                s.contended_acquires,
            ),
            ("acquire_timeouts", "Acquires whose wait ran out.", s.acquire_timeouts),
            ("releases", "Final releases of locks and permits, and semaphore releases.", s.releases),
            ("renewals", "Holds renewed by the watchdog.", s.renewals),
            ("renewal_failures", "Hold renewals that failed.", s.renewal_failures),
            ("lost_holds", "Holds the watchdog lost.", s.lost_holds),
            ("wakeups", "Waiters woken by a pub/sub message.", s.wakeups),
            ("reconnects", "Connections to Redis dropped or replaced.", s.reconnects),
        ];
        for (name, help, v) in counters {
            let _ = writeln!(out, "# HELP rlock_{name}_total {help}\n# TYPE rlock_{name}_total counter");
            let _ = writeln!(out, "rlock_{name}_total{plain} {v}");
        }
        let _ = writeln!(
            out,
            "# HELP rlock_errors_total Errors returned, by kind.\n# TYPE rlock_errors_total counter"
        );
        for (kind, v) in &s.errors {
            let _ = writeln!(out, "rlock_errors_total{} {v}", with(&format!("kind=\"{kind}\"")));
        }
        for (name, help, h) in [
            ("wait", "How long successful acquires waited.", &self.wait),
            ("hold", "How long holds lasted, acquire to final release.", &self.hold),
        ] {
            let _ =
                writeln!(out, "# HELP rlock_{name}_seconds {help}\n# TYPE rlock_{name}_seconds histogram");
            let counts = h.counts();
            let mut seen = 0u64;
            let mut next = 0usize;
            // Cumulative counts at every power of two from 64 us to about 9.5 hours.
            for k in 6..=35u32 {
                let le_us = 1u64 << k;
                while next < BUCKETS && upper(next) <= le_us {
                    seen += counts.get(next).copied().unwrap_or(0);
                    next += 1;
                }
                let le = format!("le=\"{}\"", le_us as f64 / 1e6);
                let _ = writeln!(out, "rlock_{name}_seconds_bucket{} {seen}", with(&le));
            }
            let total: u64 = counts.iter().sum();
            let _ = writeln!(out, "rlock_{name}_seconds_bucket{} {total}", with("le=\"+Inf\""));
            let _ = writeln!(out, "rlock_{name}_seconds_sum{plain} {}", h.sum_us.load(Relaxed) as f64 / 1e6);
            let _ = writeln!(out, "rlock_{name}_seconds_count{plain} {total}");
        }
        out
    }
}

/// Escapes a Prometheus label value (backslash, double quote, newline).
pub(crate) fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_at_most_a_quarter_wide() {
        for us in [0u64, 1, 3, 4, 5, 7, 8, 9, 100, 1000, 123_456, 1 << 39] {
            let b = bucket(us);
            assert!(upper(b) > us, "{us} below the upper bound of its bucket {b}");
            assert!(b == 0 || upper(b - 1) <= us, "{us} above the previous bucket");
            if us >= 4 {
                assert!((upper(b) - us) as f64 <= us as f64 * 0.25 + 1.0, "{us}: bucket too wide");
            }
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn summaries_match_what_was_recorded() {
        let m = Metrics::new(true);
        for ms in 1..=100u64 {
            m.acquired(Duration::from_millis(ms), ms > 50);
        }
        m.timed_out();
        m.error(ErrorKind::Timeout);
        let s = m.stats();
        assert_eq!((s.acquires, s.contended_acquires, s.acquire_timeouts), (100, 50, 1));
        assert_eq!(s.errors.get("timeout"), Some(&1));
        assert_eq!(s.errors.get("not_held"), Some(&0));
        assert_eq!(s.wait.count, 100);
        let ms = Duration::from_millis;
        assert_eq!(s.wait.sum, ms(5050));
        assert!(s.wait.p50 >= ms(50) && s.wait.p50.as_secs_f64() <= 0.050 * 1.25, "{:?}", s.wait.p50);
        assert!(s.wait.p99 >= ms(99) && s.wait.p99 <= ms(100), "{:?}", s.wait.p99);
        assert_eq!(s.wait.max, ms(100));
        assert_eq!(s.hold, Summary::default());
    }

    #[test]
    fn off_records_nothing() {
        let m = Metrics::new(false);
        m.acquired(Duration::from_millis(1), true);
        m.released(Some(Duration::from_millis(1)));
        m.error(ErrorKind::Lost);
        assert_eq!(m.stats(), Metrics::new(true).stats());
    }

    #[test]
    fn prometheus_text_is_well_formed() {
        let m = Metrics::new(true);
        m.acquired(Duration::from_micros(100), false);
        m.acquired(Duration::from_millis(3), true);
        m.released(Some(Duration::from_secs(2)));
        let text = m.prometheus(&format!("app=\"{}\"", label_value("a\"b")));
        assert!(text.contains("rlock_acquires_total{app=\"a\\\"b\"} 2\n"), "{text}");
        assert!(text.contains("rlock_errors_total{app=\"a\\\"b\",kind=\"lost\"} 0\n"));
        assert!(text.contains("rlock_wait_seconds_bucket{app=\"a\\\"b\",le=\"0.000128\"} 1\n"), "{text}");
        assert!(text.contains("rlock_wait_seconds_bucket{app=\"a\\\"b\",le=\"+Inf\"} 2\n"));
        assert!(text.contains("rlock_hold_seconds_count{app=\"a\\\"b\"} 1\n"));
        // Every sample line is `name{labels} value`, and every family has HELP and TYPE.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').unwrap_or_default();
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
        assert_eq!(text.matches("# TYPE").count(), text.matches("# HELP").count());
        let bare = m.prometheus("");
        assert!(bare.contains("rlock_acquires_total 2\n") && bare.contains("le=\"+Inf\"} 2\n"), "{bare}");
    }
}
