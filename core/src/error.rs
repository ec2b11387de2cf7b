//! The one error type of rlock. Every surface maps [`ErrorKind`] once: C result codes, Python
//! exceptions, Node error codes.

use std::fmt;

/// What went wrong, in the categories callers act on. New kinds may be added. This is the one
/// list of error kinds: C result codes, Python exception classes and Node error codes are
/// derived from it (and checked against it by `make test`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The wait ran out while another owner held the lock (surfaces whose acquire reports this
    /// as an error: C `RLOCK_NOT_ACQUIRED`, Node `RLOCK_NOT_ACQUIRED`; elsewhere a `false`).
    NotAcquired,
    /// The caller passed something unusable (empty name, bad duration, bad URL). Nothing was
    /// sent to Redis.
    InvalidArgument,
    /// Release by an owner that does not hold the lock (never held it, or its lease expired).
    NotHeld,
    /// Release of a hold whose holder was told it was lost (a renewal found it gone, its lease
    /// was in doubt, or its lease nobody renews was ending).
    Lost,
    /// Redis did not answer within the command timeout (or the subscription timeout).
    Timeout,
    /// The connection to Redis failed or was refused, or Redis cannot serve the key right now
    /// (CLUSTERDOWN, TRYAGAIN, MASTERDOWN, LOADING, READONLY, or the sentinels name no usable
    /// master: a failover or restart).
    Connection,
    /// Redis answered with an error (for example WRONGTYPE when the lock name holds a
    /// non-lock key, or NOPERM).
    Redis,
    /// The client was closed.
    Closed,
    /// The client was made in another process: it was inherited over `fork()` and cannot be
    /// used in the child (make a new client there).
    Forked,
    /// The call would wait forever on a hold of its own owner: a read holder of a read-write
    /// lock asking for the write lock (an upgrade; Redisson's waits forever), or the holder of a
    /// non-reentrant lock acquiring it again. Nothing changed in Redis: release the read holds
    /// (the lock) first.
    WouldDeadlock,
}

impl ErrorKind {
    /// Every kind, in the order of their stable C result codes (1, 2, ...; 0 is success).
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::NotAcquired,
        ErrorKind::NotHeld,
        ErrorKind::Lost,
        ErrorKind::InvalidArgument,
        ErrorKind::Connection,
        ErrorKind::Timeout,
        ErrorKind::Redis,
        ErrorKind::Closed,
        ErrorKind::Forked,
        ErrorKind::WouldDeadlock,
    ];

    /// The stable number of this kind (the C result code; 0 is success, 9 is reserved for
    /// `RLOCK_PANIC`, so kinds after it count on from 10).
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::NotAcquired => 1,
            ErrorKind::NotHeld => 2,
            ErrorKind::Lost => 3,
            ErrorKind::InvalidArgument => 4,
            ErrorKind::Connection => 5,
            ErrorKind::Timeout => 6,
            ErrorKind::Redis => 7,
            ErrorKind::Closed => 8,
            ErrorKind::Forked => 10,
            ErrorKind::WouldDeadlock => 11,
        }
    }

    /// The error code as C and Node spell it: `"RLOCK_NOT_HELD"`.
    pub fn code_name(self) -> String {
        format!("RLOCK_{}", self.as_str().to_ascii_uppercase())
    }

    /// The exception class a surface with exception classes raises for this kind (Python's
    /// `rlock.NotHeldError`); `tools/generate` writes Python's classes from these names.
    pub fn class_name(self) -> &'static str {
        match self {
            ErrorKind::NotAcquired => "NotAcquiredError",
            ErrorKind::InvalidArgument => "InvalidArgumentError",
            ErrorKind::NotHeld => "NotHeldError",
            ErrorKind::Lost => "LockLostError",
            ErrorKind::Timeout => "TimeoutError",
            ErrorKind::Connection => "ConnectionError",
            ErrorKind::Redis => "RedisError",
            ErrorKind::Closed => "ClosedError",
            ErrorKind::Forked => "ForkedError",
            ErrorKind::WouldDeadlock => "WouldDeadlockError",
        }
    }

    /// A short stable name for the kind, e.g. `"not_held"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotAcquired => "not_acquired",
            ErrorKind::InvalidArgument => "invalid_argument",
            ErrorKind::NotHeld => "not_held",
            ErrorKind::Lost => "lost",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connection => "connection",
            ErrorKind::Redis => "redis",
            ErrorKind::Closed => "closed",
            ErrorKind::Forked => "forked",
            ErrorKind::WouldDeadlock => "would_deadlock",
        }
    }
}

/// An rlock error: a [`ErrorKind`] and a message that says what happened and what to do.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    source: Option<redis::RedisError>,
}

/// `Result` with rlock's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), source: None }
    }

    /// The one "not acquired in time" error (`NotAcquired`), for every primitive and surface:
    /// `what` names what was waited for ("lock 'orders'", "2 permit(s) of semaphore 'jobs'"),
    /// `wait` is the wait that ran out (`None`: a wait without a bound, which ends this way only
    /// when it is interrupted).
    pub fn not_acquired(what: impl std::fmt::Display, wait: Option<std::time::Duration>) -> Self {
        let message = match wait {
            Some(w) => format!("{what} was not acquired within {} ms", w.as_millis()),
            None => format!("{what} was not acquired"),
        };
        Self::new(ErrorKind::NotAcquired, message)
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    pub(crate) fn closed() -> Self {
        Self::new(ErrorKind::Closed, "the rlock client is closed; create a new client")
    }

    /// Wraps a `redis` crate error, with `context` saying what rlock was doing.
    pub(crate) fn from_redis(context: &str, err: redis::RedisError) -> Self {
        // Errors a failover or a restart answers with: the key has no serving master right now.
        let unavailable = matches!(err.code(), Some("CLUSTERDOWN" | "TRYAGAIN" | "MASTERDOWN" | "LOADING" | "READONLY"))
                // The sentinels know no usable master of that name (mid-failover, or none).
                || err.kind() == redis::ErrorKind::MasterNameNotFoundBySentinel;
        let kind = if err.is_timeout() {
            ErrorKind::Timeout
        } else if err.kind() == redis::ErrorKind::AuthenticationFailed
            // The cluster client reports a login every seed node refused as an I/O error
            // ("Failed to create initial connections") that names the refusal in its detail.
            || err.detail().is_some_and(|d| d.contains("AuthenticationFailed"))
        {
            // Redis answered and refused the login (WRONGPASS): not a connection failure, and
            // not worth retrying. The crate counts it as "reconnect", so test it first.
            ErrorKind::Redis
        } else if err.is_io_error()
            || err.is_connection_refusal()
            || err.is_connection_dropped()
            || err.is_unrecoverable_error()
            || unavailable
        {
            ErrorKind::Connection
        } else if err.kind() == redis::ErrorKind::InvalidClientConfig {
            ErrorKind::InvalidArgument
        } else {
            ErrorKind::Redis
        };
        let hint = match kind {
            _ if err.kind() == redis::ErrorKind::AuthenticationFailed => {
                " (check the user name and password in the URL)"
            }
            ErrorKind::Timeout => " (Redis did not answer within the command timeout)",
            ErrorKind::Connection if unavailable => " (Redis is failing over or loading; try again)",
            ErrorKind::Connection => " (check that Redis is reachable at the configured URL)",
            _ => "",
        };
        let message = format!("{context}: {err}{hint}");
        Error { kind, message, source: Some(err) }
    }

    /// Whether the command that failed with this error may have run on the server all the same:
    /// its reply was lost (a timeout, a connection that dropped, or a link that ended, with it
    /// in flight), so what it would have taken may be held now. Not for a refused connection
    /// or a server's error answer (CLUSTERDOWN, LOADING, ...): nothing ran then, and a
    /// give-back would only slow the retries of an outage down.
    pub(crate) fn outcome_unknown(&self) -> bool {
        match (self.kind, &self.source) {
            (ErrorKind::Timeout, _) => true,
            (ErrorKind::Connection, Some(e)) => {
                (e.is_io_error() || e.is_connection_dropped())
                    && !e.is_connection_refusal()
                    && e.code().is_none()
            }
            _ => false,
        }
    }

    /// The category of this error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The human-readable message (also what `Display` prints).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_ref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_distinct_stable_codes_and_names() {
        let mut codes: Vec<i32> = ErrorKind::ALL.iter().map(|k| k.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes, [1, 2, 3, 4, 5, 6, 7, 8, 10, 11]);
        assert_eq!(ErrorKind::NotHeld.code_name(), "RLOCK_NOT_HELD");
        assert_eq!(ErrorKind::InvalidArgument.code_name(), "RLOCK_INVALID_ARGUMENT");
    }

    fn kind_of(err: redis::RedisError) -> ErrorKind {
        Error::from_redis("op", err).kind()
    }

    #[test]
    fn redis_errors_are_classified() {
        use redis::{ErrorKind as R, RedisError};
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(kind_of(RedisError::from(io)), ErrorKind::Connection);
        let timeout = std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out");
        assert_eq!(kind_of(RedisError::from(timeout)), ErrorKind::Timeout);
        assert_eq!(kind_of(RedisError::from((R::AuthenticationFailed, "WRONGPASS"))), ErrorKind::Redis);
        assert_eq!(kind_of(RedisError::from((R::InvalidClientConfig, "bad"))), ErrorKind::InvalidArgument);
        let msg = Error::from_redis("acquire", RedisError::from((R::AuthenticationFailed, "WRONGPASS")));
        assert!(msg.message().contains("check the user name and password"));
    }
}
