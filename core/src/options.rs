//! Client options: each defined once here (name, type, default, meaning), with their
//! validation. Every surface sets options through [`ClientOptions::set`] with the names and
//! units of its language ([`Surface`]); `make test` checks that the typed option lists of the
//! surfaces (C setters, Python `ClientOptions`, Node `ClientOptions`) match [`OPTIONS`].

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};

/// The surfaces, for the spelling of option names and the unit of durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Surface {
    /// Rust: `watchdog_timeout`, durations as [`Duration`].
    Rust,
    /// C: `watchdog_timeout_ms`, durations in milliseconds.
    C,
    /// Python: `watchdog_timeout`, durations in (float) seconds.
    Python,
    /// Node: `watchdogTimeoutMs`, durations in milliseconds.
    Node,
}

/// The type of an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionKind {
    /// A duration.
    Duration,
    /// A duration, or none (its meaning is in the option's documentation).
    OptionalDuration,
    /// A whole number.
    Count,
    /// On, off, or none: decided by rlock as Redisson does.
    Switch,
    /// A file path, or none.
    Path,
    /// On or off.
    Flag,
    /// A short text, or none.
    Text,
}

/// A value given by a surface for one option.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum OptionValue<'a> {
    /// No value (`None`, `null`, NULL): the option's "none" meaning, where it has one.
    Unset,
    /// A boolean.
    Bool(bool),
    /// An integer (a count, or a duration in the surface's unit).
    Int(i64),
    /// A number (a duration in the surface's unit).
    Float(f64),
    /// A string (a path).
    Str(&'a str),
}

/// One client option: what every surface derives its option list from.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    /// The option's name (Rust and Python spelling).
    pub name: &'static str,
    /// Its type.
    pub kind: OptionKind,
    /// What it does (the documentation of the field).
    pub doc: &'static str,
}

impl OptionSpec {
    /// The option's name as `surface` spells it.
    pub fn spelling(&self, surface: Surface) -> String {
        let ms = matches!(self.kind, OptionKind::Duration | OptionKind::OptionalDuration);
        match surface {
            Surface::Rust | Surface::Python => self.name.to_owned(),
            Surface::C if ms => format!("{}_ms", self.name),
            Surface::C => self.name.to_owned(),
            Surface::Node if ms => camel_case(&format!("{}_ms", self.name)),
            Surface::Node => camel_case(self.name),
        }
    }
}

/// `snake_case` as Node spells it: `camelCase`.
pub(crate) fn camel_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Converts surface values into one option type.
trait OptionType: Sized {
    const KIND: OptionKind;
    fn from_value(what: &str, v: OptionValue<'_>, surface: Surface) -> Result<Self>;
    fn to_value(&self, surface: Surface) -> OwnedValue;
}

/// An option's value as a surface shows it (defaults in generated documentation).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OwnedValue {
    /// None.
    Unset,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number.
    Float(f64),
    /// A string.
    Str(String),
}

fn duration_from(what: &str, v: OptionValue<'_>, surface: Surface) -> Result<Duration> {
    let n = match v {
        OptionValue::Int(i) => i as f64,
        OptionValue::Float(f) => f,
        _ => return Err(Error::invalid(format!("{what} must be a number"))),
    };
    if !n.is_finite() || n < 0.0 {
        return Err(Error::invalid(format!("{what} must be a finite number >= 0 (got {n})")));
    }
    let secs = if surface == Surface::Python { n } else { n / 1000.0 };
    let d = Duration::try_from_secs_f64(secs)
        .map_err(|_| Error::invalid(format!("{what} is too large ({n})")))?;
    check_duration(what, d)?;
    Ok(d)
}

/// Reads a duration argument a surface was given (float seconds in Python, milliseconds in C
/// and Node) with the checks every duration gets: `InvalidArgument` naming `what` for a
/// negative, NaN, infinite or over-100-years value. (Zero passes; callers that need at least
/// 1 ms, such as a lease, check that in core.)
pub fn duration_arg(surface: Surface, what: &str, value: f64) -> Result<Duration> {
    duration_from(what, OptionValue::Float(value), surface)
}

fn duration_to(d: Duration, surface: Surface) -> OwnedValue {
    match surface {
        Surface::Python | Surface::Rust => OwnedValue::Float(d.as_secs_f64()),
        _ => OwnedValue::Int(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
    }
}

impl OptionType for Duration {
    const KIND: OptionKind = OptionKind::Duration;
    fn from_value(what: &str, v: OptionValue<'_>, surface: Surface) -> Result<Self> {
        duration_from(what, v, surface)
    }
    fn to_value(&self, surface: Surface) -> OwnedValue {
        duration_to(*self, surface)
    }
}

impl OptionType for Option<Duration> {
    const KIND: OptionKind = OptionKind::OptionalDuration;
    fn from_value(what: &str, v: OptionValue<'_>, surface: Surface) -> Result<Self> {
        match v {
            OptionValue::Unset => Ok(None),
            v => duration_from(what, v, surface).map(Some),
        }
    }
    fn to_value(&self, surface: Surface) -> OwnedValue {
        self.map_or(OwnedValue::Unset, |d| duration_to(d, surface))
    }
}

fn count_from(what: &str, v: OptionValue<'_>) -> Result<u64> {
    let n = match v {
        OptionValue::Int(i) => i,
        OptionValue::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => f as i64,
        _ => return Err(Error::invalid(format!("{what} must be a whole number"))),
    };
    u64::try_from(n).map_err(|_| Error::invalid(format!("{what} must not be negative (got {n})")))
}

impl OptionType for usize {
    const KIND: OptionKind = OptionKind::Count;
    fn from_value(what: &str, v: OptionValue<'_>, _: Surface) -> Result<Self> {
        usize::try_from(count_from(what, v)?).map_err(|_| Error::invalid(format!("{what} is too large")))
    }
    fn to_value(&self, _: Surface) -> OwnedValue {
        OwnedValue::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl OptionType for u32 {
    const KIND: OptionKind = OptionKind::Count;
    fn from_value(what: &str, v: OptionValue<'_>, _: Surface) -> Result<Self> {
        u32::try_from(count_from(what, v)?).map_err(|_| Error::invalid(format!("{what} is too large")))
    }
    fn to_value(&self, _: Surface) -> OwnedValue {
        OwnedValue::Int(i64::from(*self))
    }
}

impl OptionType for Option<bool> {
    const KIND: OptionKind = OptionKind::Switch;
    fn from_value(what: &str, v: OptionValue<'_>, _: Surface) -> Result<Self> {
        match v {
            OptionValue::Unset => Ok(None),
            OptionValue::Bool(b) => Ok(Some(b)),
            _ => Err(Error::invalid(format!("{what} must be true, false or none (auto)"))),
        }
    }
    fn to_value(&self, _: Surface) -> OwnedValue {
        self.map_or(OwnedValue::Unset, OwnedValue::Bool)
    }
}

impl OptionType for Option<PathBuf> {
    const KIND: OptionKind = OptionKind::Path;
    fn from_value(what: &str, v: OptionValue<'_>, _: Surface) -> Result<Self> {
        match v {
            OptionValue::Unset => Ok(None),
            OptionValue::Str(s) if !s.is_empty() => Ok(Some(PathBuf::from(s))),
            _ => Err(Error::invalid(format!("{what} must be a file path or none"))),
        }
    }
    fn to_value(&self, _: Surface) -> OwnedValue {
        self.as_ref().map_or(OwnedValue::Unset, |p| OwnedValue::Str(p.display().to_string()))
    }
}

impl OptionType for bool {
    const KIND: OptionKind = OptionKind::Flag;
    fn from_value(what: &str, v: OptionValue<'_>, _: Surface) -> Result<Self> {
        match v {
            OptionValue::Bool(b) => Ok(b),
            _ => Err(Error::invalid(format!("{what} must be true or false"))),
        }
    }
    fn to_value(&self, _: Surface) -> OwnedValue {
        OwnedValue::Bool(*self)
    }
}

impl OptionType for Option<String> {
    const KIND: OptionKind = OptionKind::Text;
    fn from_value(what: &str, v: OptionValue<'_>, _: Surface) -> Result<Self> {
        match v {
            OptionValue::Unset => Ok(None),
            OptionValue::Str(s) => Ok(Some(s.to_owned())),
            _ => Err(Error::invalid(format!("{what} must be a string or none"))),
        }
    }
    fn to_value(&self, _: Surface) -> OwnedValue {
        self.as_ref().map_or(OwnedValue::Unset, |s| OwnedValue::Str(s.clone()))
    }
}

/// Defines the options once: the struct, its defaults, its `with_*` setters, [`OPTIONS`] and
/// the by-name [`ClientOptions::set`] / [`ClientOptions::get`].
macro_rules! options {
    ($(
        $(#[doc = $doc:literal])+
        $name:ident, $with:ident: $ty:ty = $default:expr;
    )+) => {
        /// Settings of one [`Client`](crate::Client). Build with [`ClientOptions::default`] and
        /// the `with_*` methods (or [`ClientOptions::set`] by name); every value is checked when
        /// the client connects ([`ClientOptions::validate`]).
        #[derive(Debug, Clone)]
        #[non_exhaustive]
        pub struct ClientOptions {
            $( $(#[doc = $doc])+ pub $name: $ty, )+
        }

        impl Default for ClientOptions {
            fn default() -> Self {
                ClientOptions { $( $name: $default, )+ }
            }
        }

        /// Every client option, in a stable order.
        pub const OPTIONS: &[OptionSpec] = &[
            $( OptionSpec { name: stringify!($name), kind: <$ty as OptionType>::KIND, doc: concat!($($doc, "\n"),+) }, )+
        ];

        impl ClientOptions {
            $(
                #[doc = concat!("Sets [`", stringify!($name), "`](Self::", stringify!($name), ").")]
                pub fn $with(mut self, value: $ty) -> Self {
                    self.$name = value;
                    self
                }
            )+

            /// Sets the option that `surface` spells `key` from `value` (durations in that
            /// surface's unit). `InvalidArgument` for an unknown name or a value of the wrong
            /// type or range; the error names the option as the surface spells it.
            pub fn set(&mut self, surface: Surface, key: &str, value: OptionValue<'_>) -> Result<()> {
                let spec = find(surface, key)?;
                match spec.name {
                    $( stringify!($name) => self.$name = <$ty as OptionType>::from_value(key, value, surface)?, )+
                    _ => return Err(unknown(surface, key)),
                }
                Ok(())
            }

            /// The value of option `name` (Rust spelling) as `surface` shows it; `None` for an
            /// unknown name.
            pub fn get(&self, surface: Surface, name: &str) -> Option<OwnedValue> {
                match name {
                    $( stringify!($name) => Some(<$ty as OptionType>::to_value(&self.$name, surface)), )+
                    _ => None,
                }
            }
        }
    };
}

fn find(surface: Surface, key: &str) -> Result<&'static OptionSpec> {
    OPTIONS.iter().find(|o| o.spelling(surface) == key).ok_or_else(|| unknown(surface, key))
}

fn unknown(surface: Surface, key: &str) -> Error {
    let known: Vec<String> = OPTIONS.iter().map(|o| o.spelling(surface)).collect();
    Error::invalid(format!("unknown client option '{key}'; the options are: {}", known.join(", ")))
}

options! {
    /// Lease of a watchdog-renewed hold; the watchdog renews every third of it. Default 30 s
    /// (Redisson's `lockWatchdogTimeout`). At least 30 ms.
    watchdog_timeout, with_watchdog_timeout: Duration = Duration::from_secs(30);
    /// Most holds renewed by one script call (1 to 10000). Default 100.
    renewal_batch_size, with_renewal_batch_size: usize = 100;
    /// How long one Redis command may take before it fails with a timeout error. None waits
    /// forever. Default 3 s.
    command_timeout, with_command_timeout: Option<Duration> = Some(Duration::from_secs(3));
    /// How long connecting (or reconnecting) may take. Default 10 s.
    connect_timeout, with_connect_timeout: Duration = Duration::from_secs(10);
    /// How often a failed command (connection error or timeout) is retried before the error is
    /// returned (at most 1000). Default 3.
    retry_attempts, with_retry_attempts: u32 = 3;
    /// Pause between those retries. Default 1.5 s (Redisson's `retryInterval`).
    retry_delay, with_retry_delay: Duration = Duration::from_millis(1500);
    /// How long a waiter waits for its SUBSCRIBE to be confirmed before it falls back to
    /// polling; also, while anyone waits, how long the pub/sub connection may leave a PING
    /// (sent every third of it) unanswered before it is replaced (one server). Default 7.5 s
    /// (Redisson's `subscriptionTimeout`).
    subscription_timeout, with_subscription_timeout: Duration = Duration::from_millis(7500);
    /// With pub/sub unavailable, the longest pause of a waiter between tries: pauses back off
    /// from a sixteenth of it up to it, with jitter (and never past the holder's lease), so a
    /// release is taken over within it plus a round trip. Default 100 ms.
    poll_interval, with_poll_interval: Duration = Duration::from_millis(100);
    /// When set, the watchdog stops renewing a hold this long after it was acquired, so the
    /// lease runs out at most one watchdog timeout later. None (the default) renews until
    /// release.
    max_hold, with_max_hold: Option<Duration> = None;
    /// Lease doubt: a hold whose lease is not proven to run longer than this (at most a
    /// quarter of its lease) is lost at once, with reason `lease_doubt` when renewals could not
    /// be confirmed in time (Redis unreachable or slow) and `lease_ending` for a lease nobody
    /// renews. A lease counts from the send of the command that set it, so the holder hears
    /// this before the lease can end on the server and another owner take the lock; the margin
    /// is the time it has to stop. Default 1 s.
    lease_doubt_margin, with_lease_doubt_margin: Duration = Duration::from_secs(1);
    /// PEM file of the CA that signed the servers' certificates, for `rediss://` URLs (and the
    /// `rediss+cluster://` / `rediss+sentinel://` variants). None trusts the system's roots.
    tls_ca_file, with_tls_ca_file: Option<PathBuf> = None;
    /// Sharded pub/sub (SSUBSCRIBE / SPUBLISH) on a Redis Cluster. None (the default) decides
    /// as Redisson does: on when the cluster answers `PUBSUB SHARDNUMSUB` (Redis 7+), else off.
    /// Forced on where the cluster does not answer it, connect fails `InvalidArgument`.
    /// Every client sharing locks must make the same choice. Ignored off a cluster.
    sharded_pubsub, with_sharded_pubsub: Option<bool> = None;
    /// After each acquire, `WAIT` until at least one replica has the hold, and undo and retry
    /// the acquire when none acknowledged within `replica_sync_timeout`. None (the default)
    /// decides as Redisson does: on for Cluster and Sentinel URLs, off for a single server.
    /// Masters without connected replicas are never waited on. This narrows, but does not
    /// close, the window in which a failover loses a fresh hold.
    replica_sync, with_replica_sync: Option<bool> = None;
    /// How long one acquire waits for a replica's acknowledgement. Default 1 s (Redisson's).
    replica_sync_timeout, with_replica_sync_timeout: Duration = Duration::from_secs(1);
    /// With replica sync, acquires wait with `WAITAOF` instead of `WAIT`: until the hold is
    /// fsynced to the append-only file of one replica, and of its master too when the master
    /// has `appendonly yes` (a master with neither is not waited on). Needs a server that has
    /// `WAITAOF` (Redis 7.2 and Valkey 7.2 on): where it has none, connect fails
    /// `InvalidArgument`. The replicas need `appendonly yes`, or no acquire is acknowledged.
    /// On, it turns replica sync on; with `replica_sync` set off it is refused
    /// (`InvalidArgument`). Default off.
    replica_sync_aof, with_replica_sync_aof: bool = false;
    /// Connections for commands to a single server, used in turn (1 to 8). Default 1: one
    /// multiplexed connection already pipelines concurrent requests; 2 raises throughput with
    /// tens of concurrent owners. Ignored for Cluster and Sentinel URLs.
    command_connections, with_command_connections: usize = 1;
    /// Connections of their own for the threads that make blocking calls (C, Python's sync
    /// API) to a single server over plain TCP or a Unix socket: a thread's commands are then
    /// written and their replies read on the thread itself, with no hand-off to the runtime's
    /// worker. At most this many threads of a client have one at a time, each from its
    /// second blocking call on, and they use them only while at most this many threads of the
    /// process are inside blocking calls at once: past that, every command goes on the shared
    /// connection, pipelined with the others (cheaper for Redis with many threads). Other
    /// threads, and async calls, use the shared connection. 0 turns them off (0 to 1024).
    /// Default 32. Ignored with `command_connections` > 1, TLS, Cluster and Sentinel.
    thread_connections, with_thread_connections: usize = 32;
    /// How long a fair-lock waiter may go without re-trying before the other waiters drop it
    /// from the queue (so a crashed waiter holds up those behind it at most this long), when
    /// its acquire has no wait time of its own. Default 300 s (Redisson's
    /// `fairLockWaitTimeout`); every client sharing fair locks should use the same.
    fair_lock_wait_timeout, with_fair_lock_wait_timeout: Duration = Duration::from_secs(300);
    /// Publish a holder record while this client holds anything: a small JSON value under the
    /// key `rlock:client:<client uuid>` with the host name, process id, `app_name` and library
    /// version (never a URL or password), expiring one watchdog timeout after its last refresh.
    /// `rlock status` and `describe` use it to say who holds a lock. Redisson ignores the key.
    /// Default on.
    holder_record, with_holder_record: bool = true;
    /// A name for this application, shown with its holds (holder records, `rlock status`). At
    /// most 128 characters, none of them control characters. Default none.
    app_name, with_app_name: Option<String> = None;
    /// Keep the client's counters and histograms (`stats()`, Prometheus text). Default on; off
    /// leaves every figure at zero.
    metrics, with_metrics: bool = true;
}

/// The longest duration rlock accepts anywhere (about 292 million years would overflow Redis'
/// millisecond arithmetic long before; we cap at 100 years).
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

impl ClientOptions {
    /// Checks every setting; the error names the bad one.
    pub fn validate(&self) -> Result<()> {
        positive_ms("watchdog_timeout", self.watchdog_timeout)?;
        if self.watchdog_timeout < Duration::from_millis(30) {
            return Err(Error::invalid("watchdog_timeout must be at least 30 ms"));
        }
        if self.renewal_batch_size == 0 || self.renewal_batch_size > 10_000 {
            return Err(Error::invalid("renewal_batch_size must be between 1 and 10000"));
        }
        if let Some(t) = self.command_timeout {
            positive_ms("command_timeout", t)?;
        }
        positive_ms("connect_timeout", self.connect_timeout)?;
        if self.retry_attempts > 1000 {
            return Err(Error::invalid("retry_attempts must be at most 1000"));
        }
        check_duration("retry_delay", self.retry_delay)?;
        positive_ms("subscription_timeout", self.subscription_timeout)?;
        positive_ms("poll_interval", self.poll_interval)?;
        if let Some(m) = self.max_hold {
            positive_ms("max_hold", m)?;
        }
        check_duration("lease_doubt_margin", self.lease_doubt_margin)?;
        if !(1..=8).contains(&self.command_connections) {
            return Err(Error::invalid("command_connections must be between 1 and 8"));
        }
        if self.thread_connections > 1024 {
            return Err(Error::invalid("thread_connections must be between 0 and 1024"));
        }
        // WAIT takes whole milliseconds; 0 would mean "wait forever".
        positive_ms("replica_sync_timeout", self.replica_sync_timeout)?;
        if self.replica_sync_aof && self.replica_sync == Some(false) {
            return Err(Error::invalid(
                "replica_sync_aof waits for replicas, but replica_sync is off: turn it on or leave it unset",
            ));
        }
        positive_ms("fair_lock_wait_timeout", self.fair_lock_wait_timeout)?;
        if let Some(app) = &self.app_name {
            if app.is_empty() || app.chars().count() > 128 || app.chars().any(char::is_control) {
                return Err(Error::invalid(
                    "app_name must be 1 to 128 characters, none of them control characters",
                ));
            }
        }
        Ok(())
    }
}

/// Checks a duration is at most [`MAX_DURATION`].
pub(crate) fn check_duration(what: &str, d: Duration) -> Result<()> {
    if d > MAX_DURATION {
        return Err(Error::invalid(format!("{what} is too long ({d:?}); the limit is 100 years")));
    }
    Ok(())
}

/// Checks a duration is at least 1 ms and at most [`MAX_DURATION`]; returns whole milliseconds.
pub(crate) fn positive_ms(what: &str, d: Duration) -> Result<u64> {
    check_duration(what, d)?;
    let ms = d.as_millis();
    if ms == 0 {
        return Err(Error::invalid(format!("{what} must be at least 1 ms (got {d:?})")));
    }
    Ok(ms as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        let spec = |n: &str| OPTIONS.iter().find(|o| o.name == n).copied().unwrap_or_else(|| unreachable!());
        assert_eq!(spec("watchdog_timeout").spelling(Surface::C), "watchdog_timeout_ms");
        assert_eq!(spec("watchdog_timeout").spelling(Surface::Node), "watchdogTimeoutMs");
        assert_eq!(spec("watchdog_timeout").spelling(Surface::Python), "watchdog_timeout");
        assert_eq!(spec("tls_ca_file").spelling(Surface::Node), "tlsCaFile");
        assert_eq!(spec("command_connections").spelling(Surface::C), "command_connections");
        assert_eq!(spec("lease_doubt_margin").spelling(Surface::Node), "leaseDoubtMarginMs");
        assert_eq!(OPTIONS.len(), 21);
        assert_eq!(spec("replica_sync_aof").spelling(Surface::Node), "replicaSyncAof");
        assert_eq!(spec("app_name").spelling(Surface::Node), "appName");
    }

    #[test]
    fn set_by_name_in_each_unit() -> Result<()> {
        let mut o = ClientOptions::default();
        o.set(Surface::Python, "watchdog_timeout", OptionValue::Float(1.5))?;
        assert_eq!(o.watchdog_timeout, Duration::from_millis(1500));
        o.set(Surface::C, "watchdog_timeout_ms", OptionValue::Int(2500))?;
        assert_eq!(o.watchdog_timeout, Duration::from_millis(2500));
        o.set(Surface::Node, "commandTimeoutMs", OptionValue::Unset)?;
        assert_eq!(o.command_timeout, None);
        o.set(Surface::Node, "replicaSync", OptionValue::Bool(false))?;
        assert_eq!(o.replica_sync, Some(false));
        o.set(Surface::Python, "tls_ca_file", OptionValue::Str("/ca.pem"))?;
        assert_eq!(o.tls_ca_file, Some(PathBuf::from("/ca.pem")));
        o.set(Surface::Python, "command_connections", OptionValue::Int(2))?;
        assert_eq!(o.command_connections, 2);
        assert_eq!(o.get(Surface::C, "watchdog_timeout"), Some(OwnedValue::Int(2500)));
        assert_eq!(o.get(Surface::Python, "max_hold"), Some(OwnedValue::Unset));
        Ok(())
    }

    #[test]
    fn bad_values_are_typed_errors_naming_the_option() {
        let mut o = ClientOptions::default();
        let bad = [
            (Surface::Python, "watchdog_timeout", OptionValue::Float(-1.0)),
            (Surface::Python, "watchdog_timeout", OptionValue::Float(f64::NAN)),
            (Surface::Python, "watchdog_timeout", OptionValue::Float(f64::INFINITY)),
            (Surface::Python, "watchdog_timeout", OptionValue::Unset),
            (Surface::Python, "watchdog_timeout", OptionValue::Str("3s")),
            (Surface::C, "retry_attempts", OptionValue::Int(-3)),
            (Surface::Node, "retryAttempts", OptionValue::Float(1.5)),
            (Surface::Node, "replicaSync", OptionValue::Int(1)),
            (Surface::Python, "tls_ca_file", OptionValue::Str("")),
            (Surface::Python, "watchdog_timeout_ms", OptionValue::Int(1)),
            (Surface::Node, "watchdog_timeout", OptionValue::Int(1)),
            (Surface::Python, "nope", OptionValue::Int(1)),
        ];
        for (surface, key, value) in bad {
            let e =
                o.set(surface, key, value).err().unwrap_or_else(|| unreachable!("{key} {value:?} accepted"));
            assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument);
            assert!(e.message().contains(key), "{}", e.message());
        }
        // Nothing changed.
        assert_eq!(o.watchdog_timeout, Duration::from_secs(30));
    }

    #[test]
    fn duration_arguments_in_each_unit() {
        assert_eq!(duration_arg(Surface::Python, "t", 1.5).ok(), Some(Duration::from_millis(1500)));
        assert_eq!(duration_arg(Surface::Node, "t", 1.5).ok(), Some(Duration::from_micros(1500)));
        assert_eq!(duration_arg(Surface::C, "t", 0.0).ok(), Some(Duration::ZERO));
        for bad in [-1.0, f64::NAN, f64::INFINITY, 1e300] {
            let e = duration_arg(Surface::Python, "waitx", bad)
                .err()
                .map(|e| (e.kind(), e.message().contains("waitx")));
            assert_eq!(e, Some((crate::error::ErrorKind::InvalidArgument, true)), "{bad}");
        }
    }

    #[test]
    fn validation() {
        assert!(ClientOptions::default().validate().is_ok());
        let bad = [
            ClientOptions::default().with_watchdog_timeout(Duration::from_millis(10)),
            ClientOptions::default().with_renewal_batch_size(0),
            ClientOptions::default().with_command_timeout(Some(Duration::ZERO)),
            ClientOptions::default().with_command_connections(9),
            ClientOptions::default().with_retry_attempts(1001),
            ClientOptions::default().with_replica_sync_timeout(Duration::from_micros(10)),
            ClientOptions::default().with_max_hold(Some(MAX_DURATION * 2)),
            ClientOptions::default().with_app_name(Some(String::new())),
            ClientOptions::default().with_app_name(Some("a\nb".into())),
            ClientOptions::default().with_app_name(Some("x".repeat(129))),
        ];
        for o in bad {
            assert_eq!(
                o.validate().map_err(|e| e.kind()),
                Err(crate::error::ErrorKind::InvalidArgument),
                "{o:?}"
            );
        }
    }
}
