//! Durations and instants as milliseconds: the one conversion core uses for its scripts'
//! arguments and its holder records, and how core's JSON (descriptions, stats) writes them,
//! whole (`*_ms`: durations, Unix times) or fractional (latency summaries). Every JSON field's
//! name ends in `_ms`, which is what `spelling` respells for each surface (Python: float
//! seconds without the suffix; Node: camelCase).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `d` in whole milliseconds (saturating).
pub(crate) fn whole_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Milliseconds since the Unix epoch (0 before it).
pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, whole_ms)
}

/// The instant `ms` Unix milliseconds name.
pub(crate) fn from_unix_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// Serde `serialize_with` functions for the fields of core's JSON.
pub(crate) mod ser {
    use std::time::{Duration, SystemTime};

    use serde::Serializer;

    /// A duration as whole milliseconds.
    pub(crate) fn ms<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(super::whole_ms(*d))
    }

    /// An optional duration as whole milliseconds, or `null`.
    pub(crate) fn opt_ms<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => ms(d, s),
            None => s.serialize_none(),
        }
    }

    /// A duration as fractional milliseconds.
    pub(crate) fn float_ms<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1000.0)
    }

    /// An instant as whole Unix milliseconds (0 before the epoch).
    pub(crate) fn unix_ms<S: Serializer>(t: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(super::unix_ms(*t))
    }

    /// An optional instant as whole Unix milliseconds, or `null`.
    pub(crate) fn opt_unix_ms<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => unix_ms(t, s),
            None => s.serialize_none(),
        }
    }
}
