//! Reading a name: the describe script's reply (one atomic snapshot of every key that could
//! live under it), its channels' subscribers and its clients' holder records.

use std::collections::{BTreeSet, HashMap};

use futures_util::future::join_all;
use redis::Value;

use crate::error::{Error, Result};
use crate::keys;
use crate::records::{self, HolderRecord};
use crate::scripts;
use crate::shared::Shared;

use super::ClientRecord;

/// What the describe script read (see lua/describe.lua).
#[derive(Debug, Default)]
pub(super) struct Snapshot {
    pub(super) redis_type: String,
    pub(super) pttl: i64,
    pub(super) now_ms: u64,
    /// The hash's fields and values; `None` when not a hash or over the limit.
    pub(super) fields: Option<Vec<(String, String)>>,
    pub(super) hash_len: u64,
    pub(super) mode: Option<String>,
    /// The string (at most 32 bytes).
    pub(super) value: Option<String>,
    /// Each reader's read-hold PTTLs.
    pub(super) reads: HashMap<String, Vec<i64>>,
    pub(super) token: Option<String>,
    pub(super) queue: Option<Vec<String>>,
    pub(super) queue_len: u64,
    pub(super) deadlines: Option<Vec<(String, i64)>>,
    pub(super) permits: Option<Vec<(Vec<u8>, i64)>>,
    pub(super) permits_len: u64,
}

pub(super) fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::Int(n) => Some(n.to_string()),
        Value::Okay => Some("OK".to_owned()),
        _ => None,
    }
}

pub(super) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(n) => Some(*n),
        Value::Double(d) => Some(*d as i64),
        other => text(other).and_then(|s| s.trim().parse::<f64>().ok()).map(|f| f as i64),
    }
}

pub(super) fn items(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(a) | Value::Set(a) => Some(a),
        _ => None,
    }
}

/// Pairs of a flat array: `[a, b, c, d]` as `[(a, b), (c, d)]`.
pub(super) fn pairs<A, B>(
    v: &Value,
    a: impl Fn(&Value) -> Option<A>,
    b: impl Fn(&Value) -> Option<B>,
) -> Option<Vec<(A, B)>> {
    let list = items(v)?;
    Some(list.chunks_exact(2).filter_map(|p| Some((a(&p[0])?, b(&p[1])?))).collect())
}

pub(super) fn bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b.clone()),
        other => text(other).map(String::into_bytes),
    }
}

impl Snapshot {
    /// Reads the script's reply; `None` when it has another shape.
    pub(super) fn parse(reply: &Value) -> Option<Snapshot> {
        let r = items(reply)?;
        let get = |i: usize| r.get(i).unwrap_or(&Value::Nil);
        let seconds = u64::try_from(int(get(2))?).ok()?;
        let micros = u64::try_from(int(get(3))?).ok()?;
        let reads = items(get(8))
            .map(|list| {
                list.chunks_exact(2)
                    .filter_map(|p| {
                        let ttls = items(&p[1])?.iter().filter_map(int).collect();
                        Some((text(&p[0])?, ttls))
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(Snapshot {
            redis_type: text(get(0))?,
            pttl: int(get(1))?,
            now_ms: seconds.saturating_mul(1000).saturating_add(micros / 1000),
            fields: pairs(get(4), text, text),
            hash_len: int(get(5)).and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
            mode: text(get(6)),
            value: text(get(7)),
            reads,
            token: text(get(9)),
            queue: items(get(10)).map(|q| q.iter().filter_map(text).collect()),
            queue_len: int(get(11)).and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
            deadlines: pairs(get(12), text, int),
            permits: pairs(get(13), bytes, int),
            permits_len: int(get(14)).and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
        })
    }

    /// The key `name` holds an integer, as semaphores and latches do.
    pub(super) fn integer(&self) -> Option<i64> {
        self.value.as_deref().and_then(|v| v.trim().parse().ok())
    }
}

/// The keys the describe script reads for `name`.
pub(super) fn describe_keys(name: &str) -> [String; 5] {
    [
        name.to_owned(),
        keys::token_key(name),
        keys::fair_queue_key(name),
        keys::fair_timeout_key(name),
        keys::suffixed(name, "timeout"),
    ]
}

/// Runs the describe script for `name`.
pub(super) async fn snapshot(shared: &Shared, name: &str, limit: usize) -> Result<Snapshot> {
    let keys = describe_keys(name);
    let prefix = keys::key_prefix(name);
    let reply = shared
        .retrying(|mut c| {
            let (keys, prefix) = (&keys, &prefix);
            async move {
                let k = [keys[0].as_str(), &keys[1], &keys[2], &keys[3], &keys[4]];
                scripts::describe(&mut c, k, prefix, limit)
                    .await
                    .map_err(|e| Error::from_redis(&format!("describe of '{name}' failed"), e))
            }
        })
        .await?;
    Snapshot::parse(&reply).ok_or_else(|| {
        Error::new(crate::error::ErrorKind::Redis, format!("describe of '{name}': unexpected reply"))
    })
}

/// Subscribers of each of `channels` (PUBSUB NUMSUB, and SHARDNUMSUB with sharded pub/sub; on
/// a cluster summed over every node by the `redis` crate's routing).
pub(super) async fn subscribers(shared: &Shared, channels: &[String]) -> Result<HashMap<String, u64>> {
    let mut counts: HashMap<String, u64> = channels.iter().map(|c| (c.clone(), 0)).collect();
    if channels.is_empty() {
        return Ok(counts);
    }
    let mut kinds = vec!["NUMSUB"];
    if shared.sharded() {
        kinds.push("SHARDNUMSUB");
    }
    for kind in kinds {
        let reply: Value = shared
            .retrying(|mut c| async move {
                let mut cmd = redis::cmd("PUBSUB");
                cmd.arg(kind).arg(channels);
                cmd.query_async(&mut c)
                    .await
                    .map_err(|e| Error::from_redis(&format!("PUBSUB {kind} failed"), e))
            })
            .await?;
        let flat = match &reply {
            Value::Map(m) => m.iter().filter_map(|(k, v)| Some((text(k)?, int(v)?))).collect(),
            other => pairs(other, text, int).unwrap_or_default(),
        };
        for (channel, n) in flat {
            if let Some(c) = counts.get_mut(&channel) {
                *c += u64::try_from(n).unwrap_or(0);
            }
        }
    }
    Ok(counts)
}

/// The records of clients `ids` that exist (GET `rlock:client:<id>` each).
pub(super) async fn records_of(
    shared: &Shared,
    ids: &BTreeSet<String>,
) -> Result<HashMap<String, HolderRecord>> {
    let gets = ids.iter().map(|id| async move {
        let key = records::record_key(id);
        let json: Option<String> = shared
            .retrying(|mut c| {
                let key = &key;
                async move {
                    redis::AsyncCommands::get(&mut c, key)
                        .await
                        .map_err(|e| Error::from_redis("reading a holder record failed", e))
                }
            })
            .await?;
        Ok::<_, Error>(
            json.and_then(|j| serde_json::from_str::<HolderRecord>(&j).ok()).map(|r| (id.clone(), r)),
        )
    });
    let mut out = HashMap::new();
    for r in join_all(gets).await {
        if let Some((id, record)) = r? {
            out.insert(id, record);
        }
    }
    Ok(out)
}

impl ClientRecord {
    pub(super) fn of(r: &HolderRecord) -> ClientRecord {
        ClientRecord {
            client_id: r.client.clone(),
            host: r.host.clone(),
            pid: r.pid,
            app: r.app.clone(),
            version: r.version.clone(),
            written: crate::millis::from_unix_ms(r.written_ms),
        }
    }
}
