//! Core's log records (a give-back that could not reach Redis, levels left to their lease, a
//! refused probe, an evicting server), handed to the surface that embeds core: Python's
//! `logging`, Node's `process.emitWarning`, a C callback, the CLI's stderr. Rust users keep the
//! `log` crate's own logger: nothing here is installed unless a surface asks.
//!
//! One process-wide logger (the `log` crate allows one), installed on the first
//! [`set_log_sink`]; the sink behind it can be replaced or cleared at any time. Records below
//! `Info` and those of other crates never reach a sink.

use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// How severe a record is, as every surface maps it (Python's levels, Node's warning types,
/// C's `rlock_log_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Something failed that rlock could not make good (a listener panicked).
    Error,
    /// Something failed or is unsafe, and rlock went on (a give-back that did not reach Redis,
    /// an evicting server).
    Warn,
    /// A change worth knowing (a connection's protocol chosen).
    Info,
}

/// A surface's receiver of core's records: level, target (the module path, `rlock::...`) and
/// message. Called on whatever thread logged (a runtime worker, a caller's thread): it must not
/// block, and must not call back into rlock.
pub type LogSink = Arc<dyn Fn(LogLevel, &str, &str) + Send + Sync>;

static SINK: RwLock<Option<LogSink>> = RwLock::new(None);

struct Forward;

static FORWARD: Forward = Forward;

impl log::Log for Forward {
    fn enabled(&self, meta: &log::Metadata<'_>) -> bool {
        meta.level() <= log::Level::Info && is_ours(meta.target())
    }

    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = match record.level() {
            log::Level::Error => LogLevel::Error,
            log::Level::Warn => LogLevel::Warn,
            _ => LogLevel::Info,
        };
        let message = record.args().to_string();
        if repeated(&message) {
            return;
        }
        // Held during the call, so once `set_log_sink` returns no call of the sink it replaced
        // is still running (C frees the userdata then). Sinks neither log nor call rlock.
        let sink = SINK.read().unwrap_or_else(|p| p.into_inner());
        if let Some(sink) = sink.as_ref() {
            sink(level, record.target(), &message);
        }
    }

    fn flush(&self) {}
}

/// How long a message is passed on once only: a warning that repeats (a SUBSCRIBE failing
/// every poll interval through an outage, each stray try on a stopped RedLock member) would
/// otherwise bury the rest.
const REPEAT_WINDOW: Duration = Duration::from_secs(30);

/// The messages passed on within the last [`REPEAT_WINDOW`], by when.
static RECENT: Mutex<Vec<(String, Instant)>> = Mutex::new(Vec::new());

/// Whether `message` was passed on within the last [`REPEAT_WINDOW`] (else it is recorded as
/// passed on now). Never waits: when another thread has the list (or held it at `fork()`,
/// leaving it locked for good in the child) the record is passed on unchecked.
fn repeated(message: &str) -> bool {
    let Ok(mut recent) = RECENT.try_lock() else {
        return false;
    };
    let now = Instant::now();
    recent.retain(|(_, at)| now.duration_since(*at) < REPEAT_WINDOW);
    if recent.iter().any(|(m, _)| m == message) {
        return true;
    }
    // Bounded: distinct messages (each naming its lock) are passed on all the same.
    if recent.len() < 256 {
        recent.push((message.to_owned(), now));
    }
    false
}

/// Whether `target` is one of core's modules (`rlock` or `rlock::...`).
fn is_ours(target: &str) -> bool {
    target == "rlock" || target.starts_with("rlock::")
}

/// Sends core's records from now on to `sink` (`None`: to nobody); returns once no call of the
/// sink it replaced is running. A message repeated within 30 s is passed on once. The first
/// call installs the process's `log` logger; when another logger was installed first (a Rust
/// program with its own), records keep going there and `false` is returned. Never fails
/// otherwise.
pub fn set_log_sink(sink: Option<LogSink>) -> bool {
    *SINK.write().unwrap_or_else(|p| p.into_inner()) = sink;
    static INSTALLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INSTALLED.get_or_init(|| {
        let ok = log::set_logger(&FORWARD).is_ok();
        if ok {
            log::set_max_level(log::LevelFilter::Info);
        }
        ok
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn records_of_core_at_info_and_above_reach_the_sink() {
        let got: Arc<Mutex<Vec<(LogLevel, String, String)>>> = Arc::default();
        let into = got.clone();
        assert!(set_log_sink(Some(Arc::new(move |l, t: &str, m: &str| {
            into.lock().unwrap().push((l, t.to_owned(), m.to_owned()));
        }))));
        log::warn!(target: "rlock::lock", "a give-back failed");
        log::warn!(target: "rlock::lock", "a give-back failed");
        log::info!(target: "rlock", "connected");
        log::debug!(target: "rlock::lock", "not passed on");
        log::warn!(target: "other_crate", "not ours");
        set_log_sink(None);
        log::warn!(target: "rlock::lock", "after the sink was cleared");
        let got = got.lock().unwrap().clone();
        assert_eq!(
            got,
            vec![
                (LogLevel::Warn, "rlock::lock".to_owned(), "a give-back failed".to_owned()),
                (LogLevel::Info, "rlock".to_owned(), "connected".to_owned()),
            ]
        );
    }
}
