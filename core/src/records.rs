//! Holder records: who a client is, published while it holds anything, so `rlock status` and
//! `describe` can say "held by billing on worker-3, pid 4121, for 12 s".
//!
//! The record is a JSON STRING under `rlock:client:<client uuid>` (Redisson never reads it)
//! with a TTL of one watchdog timeout. A task per client writes it soon after the client first
//! holds something and refreshes it every second (or every renewal period, when shorter) while
//! it holds anything, listing its longest-held holds. Once the client holds nothing, or dies,
//! the record expires: after a SIGKILL it is gone within one watchdog timeout, as the dead
//! client's watchdog-renewed holds are. It never contains a URL, password or other secret.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::conn::Commands;
use crate::millis::unix_ms;
use crate::watchdog::Watchdog;

/// The key prefix of every holder record.
pub const RECORD_PREFIX: &str = "rlock:client:";

/// Most holds one record lists (the longest-held ones).
const MAX_LISTED: usize = 64;

/// The key of client `id`'s holder record.
pub fn record_key(id: &str) -> String {
    format!("{RECORD_PREFIX}{id}")
}

/// A client's holder record, as stored (JSON) under [`record_key`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HolderRecord {
    /// The client's UUID: the first part of its owners (`<uuid>:<id>`).
    pub client: String,
    /// The host name of the machine the client runs on.
    pub host: String,
    /// The process id.
    pub pid: u32,
    /// The `app_name` option, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
    /// The rlock version (`"0.1.0"`).
    pub version: String,
    /// When the record was written, in Unix milliseconds (the writer's clock).
    pub written_ms: u64,
    /// The client's longest-held holds (at most 64) when the record was written.
    #[serde(default)]
    pub holds: Vec<RecordedHold>,
}

/// One hold listed in a [`HolderRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RecordedHold {
    /// The lock (or semaphore) name.
    pub name: String,
    /// `"lock"`, `"read"`, `"write"` or `"permit"` (as in lost events).
    pub kind: String,
    /// The owner as stored in Redis (`<client uuid>:<id>`).
    pub owner: String,
    /// The permit id, for a permit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permit: Option<String>,
    /// Since when it is held, in Unix milliseconds (the writer's clock).
    pub since_ms: u64,
}

/// The host name, or `"unknown"`.
fn host_name() -> String {
    gethostname::gethostname().into_string().unwrap_or_else(|_| "unknown".to_owned())
}

impl HolderRecord {
    /// The record of client `id` now, listing `wd`'s longest-held holds.
    fn now(id: Uuid, app: Option<&str>, wd: &Watchdog) -> HolderRecord {
        let now = SystemTime::now();
        let holds = wd
            .oldest_holds(MAX_LISTED)
            .into_iter()
            .map(|h| RecordedHold {
                name: h.name.to_string(),
                kind: h.kind.to_owned(),
                owner: h.owner.as_str().to_owned(),
                permit: h.permit.map(|p| p.to_string()),
                since_ms: unix_ms(now.checked_sub(h.age).unwrap_or(now)),
            })
            .collect();
        HolderRecord {
            client: id.hyphenated().to_string(),
            // Read each time: a forked child has another pid (and maybe host).
            host: host_name(),
            pid: std::process::id(),
            app: app.map(str::to_owned),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            written_ms: unix_ms(now),
            holds,
        }
    }
}

/// How often a record is refreshed while the client holds something: every second, or every
/// renewal period of `lease` when that is shorter, so it never lapses while a hold lives.
fn refresh_period(lease: Duration) -> Duration {
    (lease / 3).clamp(Duration::from_millis(10), Duration::from_secs(1))
}

/// Writes client `id`'s record while it holds anything, until `stop` is cancelled.
pub(crate) async fn run(
    wd: Arc<Watchdog>,
    commands: Commands,
    id: Uuid,
    app: Option<String>,
    stop: CancellationToken,
) {
    let key = record_key(&id.hyphenated().to_string());
    let lease = wd.lease();
    let ttl_ms = crate::millis::whole_ms(lease).max(1);
    let period = refresh_period(lease);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = wd.holding() => {}
        }
        let record = HolderRecord::now(id, app.as_deref(), &wd);
        match serde_json::to_string(&record) {
            Ok(json) => {
                let mut conn = commands.clone();
                let mut cmd = redis::cmd("SET");
                cmd.arg(&key).arg(json).arg("PX").arg(ttl_ms);
                let set = cmd.exec_async(&mut conn);
                tokio::select! {
                    _ = stop.cancelled() => return,
                    r = set => if let Err(e) = r {
                        log::debug!("rlock: could not write the holder record: {e}");
                    },
                }
            }
            Err(e) => log::debug!("rlock: could not encode the holder record: {e}"),
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(period) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refreshes_at_least_every_second_and_within_a_renewal_period() {
        assert_eq!(refresh_period(Duration::from_secs(30)), Duration::from_secs(1));
        assert_eq!(refresh_period(Duration::from_millis(300)), Duration::from_millis(100));
        assert_eq!(refresh_period(Duration::from_millis(3)), Duration::from_millis(10));
    }

    #[test]
    fn a_record_round_trips_and_omits_what_is_unset() -> serde_json::Result<()> {
        let r = HolderRecord {
            client: "c".into(),
            host: "h".into(),
            pid: 7,
            app: None,
            version: "0.1.0".into(),
            written_ms: 5,
            holds: vec![RecordedHold {
                name: "n".into(),
                kind: "lock".into(),
                owner: "c:1".into(),
                permit: None,
                since_ms: 3,
            }],
        };
        let json = serde_json::to_string(&r)?;
        assert!(!json.contains("app") && !json.contains("permit"), "{json}");
        assert_eq!(serde_json::from_str::<HolderRecord>(&json)?, r);
        Ok(())
    }
}
