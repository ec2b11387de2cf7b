//! `rlock sweep`: keys in Redisson's layout holding what nothing can use any more (issue 45,
//! item 7; operators asked for it in redisson#6302 and #6259), found with SCAN, reported, and
//! removed only when asked, each key re-checked by a script in the step that removes.
//!
//! Three kinds of leftovers are looked for:
//! - a fair lock's waiters whose deadline passed long ago (they crashed without giving up;
//!   the lock's next acquire would drop the ones at the head, but a lock nobody takes again
//!   keeps them for good), and queued owners with no deadline at all;
//! - a permit-expirable semaphore's permits whose lease ended (given back to the count and
//!   announced, as the semaphore's next script would; without one they stay taken);
//! - request latches without an expiry (every client writes them with a TTL; one without
//!   stays forever).
//!
//! A fenced lock's token counter is never touched, although nothing expires it: deleted, it
//! restarts at 1, and a store that keeps the highest token it saw refuses every later write.

use std::time::{Duration, SystemTime};

use futures_util::future::join_all;
use serde::Serialize;

use crate::conn::Topology;
use crate::error::{Error, Result};
use crate::keys;
use crate::millis;
use crate::scripts::{self, SweepStep};
use crate::shared::Shared;

use super::scan::{unprefixed, Scan};
use super::to_json;

/// What [`Client::sweep`](crate::Client::sweep) looks at and does.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SweepOptions {
    /// SCAN's `MATCH` pattern over key names, as [`Client::list`](crate::Client::list) takes
    /// it (`*orders*` finds `redisson_lock_timeout:{orders}`); `None`: every key.
    pub pattern: Option<String>,
    /// Remove what is found (each key re-checked in the step that removes); `false` only
    /// reports.
    pub delete: bool,
    /// How long past its deadline or lease an entry must be to count (default 60 s): fair-lock
    /// deadlines are on the waiters' clocks, a permit's lease on the server's, so this covers
    /// their skew against the sweeper's and the server's.
    pub grace: Duration,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions { pattern: None, delete: false, grace: Duration::from_secs(60) }
    }
}

impl SweepOptions {
    /// The options with `pattern` as SCAN's `MATCH`.
    #[must_use]
    pub fn with_pattern(mut self, pattern: impl Into<String>) -> Self {
        self.pattern = Some(pattern.into());
        self
    }

    /// The options removing what is found (`true`) or only reporting it.
    #[must_use]
    pub fn with_delete(mut self, delete: bool) -> Self {
        self.delete = delete;
        self
    }

    /// The options with `grace` past a deadline or lease before an entry counts.
    #[must_use]
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }
}

/// What a [`Leftover`] is (snake_case in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LeftoverKind {
    /// A fair lock's waiters past their deadline by more than the grace, or queued without a
    /// deadline.
    GoneWaiters,
    /// A permit-expirable semaphore's permits past their lease by more than the grace.
    ExpiredPermits,
    /// A request latch without an expiry.
    LatchWithoutExpiry,
}

impl LeftoverKind {
    /// The snake_case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            LeftoverKind::GoneWaiters => "gone_waiters",
            LeftoverKind::ExpiredPermits => "expired_permits",
            LeftoverKind::LatchWithoutExpiry => "latch_without_expiry",
        }
    }
}

/// One key holding leftovers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Leftover {
    /// What it holds.
    pub kind: LeftoverKind,
    /// The key.
    pub key: String,
    /// The primitive's name (as `rlock status` takes it); for a latch, the name its key
    /// carries.
    pub name: String,
    /// Entries found stale: waiters, permits, or 1 for a latch.
    pub stale: u64,
    /// Entries removed (with `delete`; fewer than `stale` when the key changed in between).
    pub removed: u64,
}

/// A key that could not be looked at (a script refused, a connection lost): the sweep goes on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SweepError {
    /// The key.
    pub key: String,
    /// Why.
    pub error: String,
}

/// What [`Client::sweep`](crate::Client::sweep) found and did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SweepReport {
    /// Keys SCAN returned.
    pub keys_scanned: u64,
    /// Whether leftovers were removed (`SweepOptions::delete`).
    pub delete: bool,
    /// The grace, ms.
    pub grace_ms: u64,
    /// Keys holding leftovers, in the order found.
    pub leftovers: Vec<Leftover>,
    /// Keys that could not be looked at.
    pub errors: Vec<SweepError>,
}

impl SweepReport {
    /// Stale entries found and not removed.
    pub fn left(&self) -> u64 {
        self.leftovers.iter().map(|l| l.stale.saturating_sub(l.removed)).sum()
    }

    /// The report as one compact JSON object (the fields above, plus `left`).
    pub fn to_json(&self) -> String {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("left".to_owned(), self.left().into());
        }
        to_json(&v)
    }

    /// The report as lines for a terminal: one per key, then a summary.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for l in &self.leftovers {
            let what = match l.kind {
                LeftoverKind::GoneWaiters => format!("fair lock '{}': {} waiter(s) gone", l.name, l.stale),
                LeftoverKind::ExpiredPermits => {
                    format!("permit-expirable semaphore '{}': {} permit(s) past their lease", l.name, l.stale)
                }
                LeftoverKind::LatchWithoutExpiry => {
                    format!("request latch of '{}' without an expiry", l.name)
                }
            };
            let done = if self.delete { format!(", {} removed", l.removed) } else { String::new() };
            out.push_str(&format!("{}  {what}{done}\n", l.key));
        }
        for e in &self.errors {
            out.push_str(&format!("{}  not looked at: {}\n", e.key, e.error));
        }
        let grace = self.grace_ms / 1000;
        out.push_str(&format!(
            "{} keys scanned; {} with leftovers ({} entries{}); grace {grace} s. Fenced-lock token \
             counters are never touched.\n",
            self.keys_scanned,
            self.leftovers.len(),
            self.leftovers.iter().map(|l| l.stale).sum::<u64>(),
            if self.delete {
                format!(", {} removed", self.leftovers.iter().map(|l| l.removed).sum::<u64>())
            } else if self.leftovers.is_empty() {
                String::new()
            } else {
                "; --delete removes them".to_owned()
            },
        ));
        out
    }
}

/// A key SCAN found that may hold leftovers, with the keys its step names.
struct Candidate {
    kind: LeftoverKind,
    name: String,
    keys: Vec<String>,
}

/// What `key` may hold, as a [`Candidate`] (a permit set's `keys` are only itself: its count
/// key is [`resolve`]d), with the names it may be of; `None` for anything else.
fn candidate(key: &str) -> Option<(Candidate, Vec<String>)> {
    if let Some(rest) = key.strip_prefix("redisson_lock_timeout:") {
        let name = unprefixed(rest).into_iter().next()?;
        let keys = vec![key.to_owned(), keys::fair_queue_key(&name), keys::lock_channel(&name)];
        return Some((Candidate { kind: LeftoverKind::GoneWaiters, name, keys }, vec![]));
    }
    if key.starts_with("redisson_unlock_latch:") || (key.contains(":rlock_") && key.contains("_latch:")) {
        let c = Candidate {
            kind: LeftoverKind::LatchWithoutExpiry,
            name: latch_name(key),
            keys: vec![key.to_owned()],
        };
        return Some((c, vec![]));
    }
    let names = unprefixed(key.strip_suffix(":timeout")?);
    let name = names.last()?.clone();
    Some((Candidate { kind: LeftoverKind::ExpiredPermits, name, keys: vec![key.to_owned()] }, names))
}

/// The name a latch key carries (`redisson_unlock_latch:{N}:<id>`, `{N}:rlock_x_latch:<id>`).
fn latch_name(key: &str) -> String {
    let rest = key.strip_prefix("redisson_unlock_latch:").unwrap_or(key);
    let base = rest.rsplit_once(':').map_or(rest, |(b, _)| b);
    let base = base.split(":rlock_").next().unwrap_or(base);
    unprefixed(base).into_iter().next().unwrap_or_else(|| base.to_owned())
}

/// The step's keys for a key SCAN found. A permit set `{x}:timeout` is `x`'s and `{x}`'s
/// (Redisson names both alike): its count is `{x}` where that exists or on a cluster (the
/// only one in its slot), else `x` where that exists.
async fn resolve(shared: &Shared, key: &str) -> Result<Option<Candidate>> {
    let Some((mut c, names)) = candidate(key) else { return Ok(None) };
    if c.kind != LeftoverKind::ExpiredPermits {
        return Ok(Some(c));
    }
    if let [inner, tagged] = names.as_slice() {
        if shared.topology() != Topology::Cluster {
            let (t, i) = (tagged.as_str(), inner.as_str());
            let (tagged_exists, inner_exists): (bool, bool) = shared
                .retrying(|mut conn| async move {
                    redis::pipe()
                        .exists(t)
                        .exists(i)
                        .query_async(&mut conn)
                        .await
                        .map_err(|e| Error::from_redis("EXISTS failed", e))
                })
                .await?;
            if inner_exists && !tagged_exists {
                c.name = inner.clone();
            }
        }
    }
    c.keys.push(c.name.clone());
    c.keys.push(keys::semaphore_channel(&c.name));
    Ok(Some(c))
}

/// Sweeps: see [`Client::sweep`](crate::Client::sweep).
pub(crate) async fn sweep(shared: &Shared, options: &SweepOptions) -> Result<SweepReport> {
    shared.check_open()?;
    let grace_ms = u64::try_from(options.grace.as_millis()).unwrap_or(u64::MAX);
    let mut report = SweepReport {
        keys_scanned: 0,
        delete: options.delete,
        grace_ms,
        leftovers: Vec::new(),
        errors: Vec::new(),
    };
    let publish = shared.publish_command();
    let mut scan = Scan::new(shared, options.pattern.as_deref().unwrap_or("*")).await?;
    while let Some(page) = scan.next(shared).await? {
        report.keys_scanned += page.len() as u64;
        let now_ms = millis::unix_ms(SystemTime::now());
        let steps = page.iter().map(|key| async move {
            let c = resolve(shared, key).await?;
            let Some(c) = c else { return Ok(None) };
            let what = match c.kind {
                LeftoverKind::GoneWaiters => "waiters",
                LeftoverKind::ExpiredPermits => "permits",
                LeftoverKind::LatchWithoutExpiry => "latch",
            };
            let step = SweepStep { what, keys: &c.keys, remove: options.delete, grace_ms, now_ms };
            let counts = shared
                .retrying(|mut conn| {
                    let step = &step;
                    async move {
                        scripts::sweep(&mut conn, step, publish)
                            .await
                            .map_err(|e| Error::from_redis("the sweep step failed", e))
                    }
                })
                .await?;
            Ok(counts.filter(|(stale, _)| *stale > 0).map(|(stale, removed)| Leftover {
                kind: c.kind,
                key: key.clone(),
                name: c.name,
                stale,
                removed,
            }))
        });
        for (key, r) in page.iter().zip(join_all(steps).await) {
            match r {
                Ok(Some(l)) => report.leftovers.push(l),
                Ok(None) => {}
                Err(e) if shared.is_closed() => return Err(e),
                Err(e) => report.errors.push(SweepError { key: key.clone(), error: e.to_string() }),
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_told_apart_by_their_layout() {
        let (c, _) = candidate("redisson_lock_timeout:{orders}").unwrap();
        assert_eq!((c.kind, c.name.as_str()), (LeftoverKind::GoneWaiters, "orders"));
        assert_eq!(
            c.keys,
            [
                "redisson_lock_timeout:{orders}",
                "redisson_lock_queue:{orders}",
                "redisson_lock__channel:{orders}"
            ]
        );
        let (c, names) = candidate("{gpu}:timeout").unwrap();
        assert_eq!((c.kind, c.name.as_str()), (LeftoverKind::ExpiredPermits, "{gpu}"));
        assert_eq!(names, ["gpu", "{gpu}"]);
        let (c, names) = candidate("a{b}c:timeout").unwrap();
        assert_eq!((c.name.as_str(), names), ("a{b}c", vec!["a{b}c".to_owned()]));
        let (c, _) = candidate("redisson_unlock_latch:{orders}:00ff").unwrap();
        assert_eq!((c.kind, c.name.as_str()), (LeftoverKind::LatchWithoutExpiry, "orders"));
        let (c, _) = candidate("{gpu}:rlock_permits_latch:00ff").unwrap();
        assert_eq!((c.kind, c.name.as_str()), (LeftoverKind::LatchWithoutExpiry, "gpu"));
        // Never a token counter, a lock, a plain key that ends in :timeout, a queue.
        for k in ["redisson_lock_token:{orders}", "orders", "session:timeout", "redisson_lock_queue:{orders}"]
        {
            assert!(candidate(k).is_none(), "{k}");
        }
    }
}
