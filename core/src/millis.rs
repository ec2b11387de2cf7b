//! How durations and instants are written in core's JSON (descriptions, stats): milliseconds,
//! whole (`*_ms`: durations, Unix times) or fractional (latency summaries). Every field's name
//! ends in `_ms`, which is what `spelling` respells for each surface (Python: float seconds
//! without the suffix; Node: camelCase).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serializer;

/// A duration as whole milliseconds.
pub(crate) fn ms<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
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
    ms(&t.duration_since(UNIX_EPOCH).unwrap_or_default(), s)
}

/// An optional instant as whole Unix milliseconds, or `null`.
pub(crate) fn opt_unix_ms<S: Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => unix_ms(t, s),
        None => s.serialize_none(),
    }
}

/// The instant `ms` Unix milliseconds name.
pub(crate) fn from_unix_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}
