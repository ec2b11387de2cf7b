//! Finding names: SCAN over every master, helper keys mapped back to their primitive's name,
//! and holder records found by their clients' ids.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::future::join_all;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::Value;

use crate::conn::{Commands, Topology};
use crate::error::{Error, Result};
use crate::keys;
use crate::records::RECORD_PREFIX;
use crate::shared::Shared;

use super::classify::{self, CountSubscribers};
use super::snapshot::{self, int, items, subscribers, text, Snapshot};
use super::{Kind, Listed, LIST_LIMIT, SCAN_COUNT};

/// Where SCAN goes: the one server, or each master of a cluster (by a slot it serves).
pub(super) async fn scan_targets(shared: &Shared) -> Result<Vec<Option<RoutingInfo>>> {
    if shared.topology() != Topology::Cluster {
        return Ok(vec![None]);
    }
    let reply: Value = shared
        .retrying(|mut c| async move {
            redis::cmd("CLUSTER")
                .arg("SLOTS")
                .query_async(&mut c)
                .await
                .map_err(|e| Error::from_redis("CLUSTER SLOTS failed", e))
        })
        .await?;
    // Each range: [start, end, [host, port, id...], replicas...]; one slot per master.
    let mut masters: BTreeMap<String, u16> = BTreeMap::new();
    for range in items(&reply).unwrap_or_default() {
        let Some(r) = items(range) else { continue };
        let (Some(start), Some(master)) = (r.first().and_then(int), r.get(2).and_then(items)) else {
            continue;
        };
        let addr = master.iter().take(2).filter_map(text).collect::<Vec<_>>().join(":");
        if let Ok(slot) = u16::try_from(start) {
            masters.entry(addr).or_insert(slot);
        }
    }
    Ok(masters
        .into_values()
        .map(|slot| {
            Some(RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(
                slot,
                SlotAddr::Master,
            ))))
        })
        .collect())
}

/// A SCAN over every target, one page at a time.
pub(super) struct Scan {
    pub(super) targets: Vec<Option<RoutingInfo>>,
    pub(super) pattern: String,
    pub(super) cursor: u64,
    pub(super) done: bool,
}

impl Scan {
    pub(super) async fn new(shared: &Shared, pattern: &str) -> Result<Scan> {
        Ok(Scan { targets: scan_targets(shared).await?, pattern: pattern.to_owned(), cursor: 0, done: false })
    }

    /// The next page of keys (valid UTF-8 only); `None` when every target was scanned.
    pub(super) async fn next(&mut self, shared: &Shared) -> Result<Option<Vec<String>>> {
        if self.done {
            return Ok(None);
        }
        let Some(target) = self.targets.last().cloned() else { return Ok(None) };
        let (cursor, pattern) = (self.cursor, &self.pattern);
        let reply: Value = shared
            .retrying(|c| {
                let target = target.clone();
                async move {
                    let mut cmd = redis::cmd("SCAN");
                    cmd.arg(cursor).arg("MATCH").arg(pattern).arg("COUNT").arg(SCAN_COUNT);
                    scan_call(c, cmd, target).await.map_err(|e| Error::from_redis("SCAN failed", e))
                }
            })
            .await?;
        let r = items(&reply).unwrap_or_default();
        let next = r.first().and_then(int).and_then(|n| u64::try_from(n).ok()).unwrap_or(0);
        let keys = r
            .get(1)
            .and_then(items)
            .unwrap_or_default()
            .iter()
            .filter_map(|k| match k {
                Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
                other => text(other),
            })
            .collect();
        if next == 0 {
            self.targets.pop();
            self.done = self.targets.is_empty();
        }
        self.cursor = next;
        Ok(Some(keys))
    }
}

/// Sends one SCAN to `target` (a cluster master), or to the one server.
pub(super) async fn scan_call(
    mut c: Commands,
    cmd: redis::Cmd,
    target: Option<RoutingInfo>,
) -> redis::RedisResult<Value> {
    match target {
        Some(routing) => c.route(cmd, routing).await,
        None => cmd.query_async(&mut c).await,
    }
}

/// The names whose records may list permits `ids`: rlock permit ids start with their client's
/// UUID (the first 8 bytes; Redisson's are random), so only ids whose UUID version digit is 4
/// are looked for. Returns the UUID prefix (`xxxxxxxx-xxxx-xxxx`) of each.
pub(super) fn record_prefixes(ids: &[String]) -> BTreeSet<String> {
    ids.iter()
        .filter(|id| {
            id.len() == 32
                && id.bytes().all(|b| b.is_ascii_hexdigit())
                && id.as_bytes().get(12) == Some(&b'4')
        })
        .map(|id| format!("{}-{}-{}", &id[..8], &id[8..12], &id[12..16]))
        .collect()
}

/// Finds the record keys of clients whose UUIDs start with `prefixes` (one SCAN pass over
/// `rlock:client:*`, stopping once each prefix was found). Returns their UUIDs.
pub(super) async fn find_records(shared: &Shared, prefixes: &BTreeSet<String>) -> Result<BTreeSet<String>> {
    let mut found = BTreeSet::new();
    if prefixes.is_empty() {
        return Ok(found);
    }
    let mut left = prefixes.clone();
    let mut scan = Scan::new(shared, &format!("{RECORD_PREFIX}*")).await?;
    while let Some(page) = scan.next(shared).await? {
        for key in page {
            let Some(id) = key.strip_prefix(RECORD_PREFIX) else { continue };
            if let Some(p) = prefixes.iter().find(|p| id.starts_with(p.as_str())) {
                left.remove(p);
                found.insert(id.to_owned());
            }
        }
        if left.is_empty() {
            break;
        }
    }
    Ok(found)
}

/// What a key found by SCAN says about names.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// Not a primitive's key of its own: skip it.
    Skip,
    /// Maybe the main key of a primitive named as the key.
    Main,
    /// A helper key of the primitive(s) named so (two names when the helper key cannot tell
    /// `{a}` from `a` apart: Redisson names both alike); maybe also a main key itself.
    Helper(Vec<String>, bool),
}

/// The name(s) a `prefixed(p, N)` rest (`{N}` or `N` with its own `{`) stands for.
pub(super) fn unprefixed(rest: &str) -> Vec<String> {
    match rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        Some(inner) if !inner.is_empty() && !inner.contains('{') => vec![inner.to_owned(), rest.to_owned()],
        _ if rest.contains('{') => vec![rest.to_owned()],
        _ => vec![],
    }
}

/// What `key` is to [`list`].
pub(super) fn sort_key(key: &str) -> Found {
    const HELPERS: [&str; 3] = ["redisson_lock_token:", "redisson_lock_queue:", "redisson_lock_timeout:"];
    if key.starts_with(RECORD_PREFIX) || key.starts_with("redisson_unlock_latch:") {
        return Found::Skip;
    }
    if let Some(rest) = HELPERS.iter().find_map(|p| key.strip_prefix(p)) {
        return Found::Helper(unprefixed(rest), false);
    }
    if let Some((_, n)) = key.rsplit_once(":rwlock_timeout:") {
        if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
            return Found::Skip;
        }
    }
    if key.contains(":rlock_") && key.contains("_latch:") {
        return Found::Skip;
    }
    if let Some(base) = key.strip_suffix(":timeout") {
        let names = unprefixed(base);
        if !names.is_empty() {
            return Found::Helper(names, true);
        }
    }
    Found::Main
}

/// Lists names: see [`Client::list`](crate::Client::list).
pub(crate) async fn list(
    shared: &Shared,
    pattern: Option<&str>,
    limit: Option<usize>,
) -> Result<Vec<Listed>> {
    shared.check_open()?;
    let cluster = shared.topology() == Topology::Cluster;
    // On a cluster, names whose helper keys live in other slots cannot be read in one script.
    let usable = |n: &str| !cluster || keys::shares_one_tag(n);
    let limit = limit.unwrap_or(usize::MAX);
    let mut scan = Scan::new(shared, pattern.unwrap_or("*")).await?;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut mains: BTreeSet<String> = BTreeSet::new();
    let mut twins: Vec<(String, String)> = Vec::new();
    let mut listed: BTreeMap<String, Kind> = BTreeMap::new();
    while listed.len() < limit {
        let Some(page) = scan.next(shared).await? else { break };
        let mut names: Vec<String> = Vec::new();
        for key in page {
            let (derived, main) = match sort_key(&key) {
                Found::Skip => (vec![], false),
                Found::Main => (vec![], true),
                Found::Helper(n, main) => (n, main),
            };
            if let [inner, tagged] = derived.as_slice() {
                twins.push((inner.clone(), tagged.clone()));
            }
            let main = main.then_some(key);
            for n in main.into_iter().chain(derived) {
                if usable(&n) && seen.insert(n.clone()) {
                    names.push(n);
                }
            }
        }
        let snaps = join_all(names.iter().map(|n| snapshot::snapshot(shared, n, LIST_LIMIT))).await;
        let snaps: Vec<(String, Snapshot)> =
            names.into_iter().zip(snaps).map(|(n, s)| s.map(|s| (n, s))).collect::<Result<_>>()?;
        // Strings are told apart by who waits on them (one PUBSUB for the page).
        let channels: Vec<String> = snaps
            .iter()
            .filter(|(_, s)| s.redis_type == "string" && s.permits.is_none())
            .flat_map(|(n, _)| [keys::semaphore_channel(n), keys::latch_channel(n)])
            .collect();
        let counts = subscribers(shared, &channels).await?;
        let get = |c: String| counts.get(&c).copied().unwrap_or(0);
        for (name, s) in snaps {
            let subs = CountSubscribers {
                semaphore: get(keys::semaphore_channel(&name)),
                latch: get(keys::latch_channel(&name)),
                lock: 0,
            };
            let (kind, _) = classify::classify(&s, subs);
            if s.redis_type != "none" {
                mains.insert(name.clone());
            }
            if !matches!(kind, Kind::Other | Kind::None) {
                listed.insert(name, kind);
            }
        }
    }
    // `a` and `{a}` share their helper keys (Redisson names both alike): a name found only
    // through them is listed once, as `{a}` when that key exists, else as `a`.
    for (inner, tagged) in twins {
        if mains.contains(&tagged) {
            if !mains.contains(&inner) {
                listed.remove(&inner);
            }
        } else {
            listed.remove(&tagged);
        }
    }
    Ok(listed.into_iter().take(limit).map(|(name, kind)| Listed { name, kind }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::classify::owner_field;

    #[test]
    fn helper_keys_name_their_primitive() {
        assert_eq!(sort_key("orders"), Found::Main);
        assert_eq!(sort_key("rlock:client:abc"), Found::Skip);
        assert_eq!(sort_key("redisson_unlock_latch:{orders}:00ff"), Found::Skip);
        assert_eq!(sort_key("{orders}:u:1:rwlock_timeout:2"), Found::Skip);
        assert_eq!(sort_key("{gpu}:rlock_permits_latch:00ff"), Found::Skip);
        assert_eq!(
            sort_key("redisson_lock_token:{orders}"),
            Found::Helper(vec!["orders".into(), "{orders}".into()], false)
        );
        assert_eq!(sort_key("redisson_lock_queue:a{b}c"), Found::Helper(vec!["a{b}c".into()], false));
        assert_eq!(sort_key("{gpu}:timeout"), Found::Helper(vec!["gpu".into(), "{gpu}".into()], true));
        assert_eq!(sort_key("session:timeout"), Found::Main);
        assert!(owner_field("7c1e-aa:12") && owner_field("u:1:write"));
        assert!(!owner_field("mode") && !owner_field("u:x") && !owner_field(":1"));
        assert_eq!(
            record_prefixes(&[
                "0123456789ab4def0123456789abcdef".into(),
                "0123456789abcdef0123456789abcdef".into()
            ]),
            BTreeSet::from(["01234567-89ab-4def".to_owned()])
        );
    }
}
