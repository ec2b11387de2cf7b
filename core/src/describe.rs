//! What lives under a name, read without changing anything: `rlock status` and `rlock list`,
//! and `describe` / `list` on every surface.
//!
//! [`describe`] reads every key of every primitive that could live under a name in one atomic
//! script (the lock hash, the fenced lock's token counter, the fair lock's queue and deadlines,
//! the semaphores' count and permits, read-hold lease keys), counts the subscribers of every
//! channel of the name (waiters), and looks up the holder records of the clients that hold or
//! wait ([`crate::records`]). [`list`] finds names with SCAN (every master of a cluster) and
//! classifies each the same way. Both are snapshots: by the time the caller reads them the
//! locks may have moved on.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures_util::future::join_all;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::Value;
use serde::Serialize;

use crate::conn::{Commands, Topology};
use crate::error::{Error, Result};
use crate::keys;
use crate::records::{self, HolderRecord, RECORD_PREFIX};
use crate::scripts;
use crate::shared::Shared;

/// The permit score Redisson writes for a permit without a lease.
const NO_LEASE: i64 = 922_337_203_685_477;

/// Most items of one collection (queue, permits, holders) a description lists.
const DESCRIBE_LIMIT: usize = 1000;

/// Most items of one collection read to classify a name found by [`list`].
const LIST_LIMIT: usize = 64;

/// How many keys one SCAN call asks a node for.
const SCAN_COUNT: usize = 1000;

/// The kind of primitive found under a name (snake_case in JSON: `"lock"`, `"fenced_lock"`,
/// ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Kind {
    /// A reentrant lock (Redisson `RLock`): a hash of owners without `mode`, no token counter,
    /// no queue. A fair lock nobody waits for looks the same.
    Lock,
    /// A fenced lock (Redisson `RFencedLock`): the token counter exists (it outlives the holds,
    /// so a free fenced lock is still found).
    FencedLock,
    /// A fair lock (Redisson `RFairLock`): its queue or deadline keys exist.
    FairLock,
    /// A read-write lock (Redisson `RReadWriteLock`): a hash with `mode`.
    ReadWriteLock,
    /// A semaphore (Redisson `RSemaphore`): an integer STRING with subscribers on
    /// `redisson_sc:{name}` (and none on the latch channel).
    Semaphore,
    /// A permit-expirable semaphore (Redisson `RPermitExpirableSemaphore`): its permits ZSET
    /// `{name}:timeout` exists (while no permit is held it looks like a semaphore).
    PermitExpirableSemaphore,
    /// A count-down latch (Redisson `RCountDownLatch`): an integer STRING with subscribers on
    /// its channel (and none on the semaphore channel).
    CountDownLatch,
    /// An integer STRING that nobody waits on: a semaphore and a count-down latch look the
    /// same (as do permit-expirable semaphores with no permit held, and any integer counter).
    SemaphoreOrLatch,
    /// A key of another shape: another type (see [`Description::redis_type`]), a hash whose
    /// fields are not owners, a string that is not an integer.
    Other,
    /// Nothing under the name: no key (waiters may still be subscribed).
    None,
}

impl Kind {
    /// Every kind, in declaration order.
    pub const ALL: [Kind; 10] = [
        Kind::Lock,
        Kind::FencedLock,
        Kind::FairLock,
        Kind::ReadWriteLock,
        Kind::Semaphore,
        Kind::PermitExpirableSemaphore,
        Kind::CountDownLatch,
        Kind::SemaphoreOrLatch,
        Kind::Other,
        Kind::None,
    ];

    /// The stable name, as in JSON: `"lock"`, `"fenced_lock"`, `"fair_lock"`,
    /// `"read_write_lock"`, `"semaphore"`, `"permit_expirable_semaphore"`, `"count_down_latch"`,
    /// `"semaphore_or_latch"`, `"other"`, `"none"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Lock => "lock",
            Kind::FencedLock => "fenced_lock",
            Kind::FairLock => "fair_lock",
            Kind::ReadWriteLock => "read_write_lock",
            Kind::Semaphore => "semaphore",
            Kind::PermitExpirableSemaphore => "permit_expirable_semaphore",
            Kind::CountDownLatch => "count_down_latch",
            Kind::SemaphoreOrLatch => "semaphore_or_latch",
            Kind::Other => "other",
            Kind::None => "none",
        }
    }

    /// The kind named `name`: a name of [`Kind::as_str`] (`-` may stand for `_`), or a short
    /// one: `reentrant`, `fenced`, `fair`, `read_write`/`rw`, `permit_semaphore`/`pes`,
    /// `latch`. Fails with `InvalidArgument` for anything else.
    pub fn parse(name: &str) -> Result<Kind> {
        let n = name.trim().to_ascii_lowercase().replace('-', "_");
        let short = match n.as_str() {
            "reentrant" | "reentrant_lock" => Some(Kind::Lock),
            "fenced" => Some(Kind::FencedLock),
            "fair" => Some(Kind::FairLock),
            "read_write" | "rw" | "rwlock" => Some(Kind::ReadWriteLock),
            "permit_semaphore" | "pes" => Some(Kind::PermitExpirableSemaphore),
            "latch" => Some(Kind::CountDownLatch),
            _ => None,
        };
        short.or_else(|| Kind::ALL.into_iter().find(|k| k.as_str() == n)).ok_or_else(|| {
            let all: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
            Error::invalid(format!("unknown kind {name:?}; one of {}", all.join(", ")))
        })
    }

    /// Whether this is one of the locks (a hash of owners).
    fn is_lock(self) -> bool {
        matches!(self, Kind::Lock | Kind::FencedLock | Kind::FairLock | Kind::ReadWriteLock)
    }

    /// Whether this is a count in a STRING (semaphores, latch).
    fn is_count(self) -> bool {
        matches!(
            self,
            Kind::Semaphore | Kind::PermitExpirableSemaphore | Kind::CountDownLatch | Kind::SemaphoreOrLatch
        )
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What lives under one name: a snapshot, read without changing anything. Serialized (serde)
/// with snake_case keys, every key always present (`null` where it does not apply), times in
/// Unix milliseconds (`*_ms`) and durations in milliseconds (`*_in_ms`, `held_for_ms`,
/// `ttl_ms`). Relative times use the Redis server's clock (`now_ms`); holder records and fair
/// deadlines were written with their clients' clocks, so those assume synchronized clocks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Description {
    /// The name (the Redis key of the primitive).
    pub name: String,
    /// The kind found (or the one asked for with [`Client::describe_as`](crate::Client::describe_as)).
    pub kind: Kind,
    /// The Redis type of the key `name`: `"hash"`, `"string"`, ..., `"none"` when missing.
    pub redis_type: String,
    /// The key's remaining time to live in ms; `null` when it does not exist or never expires.
    pub ttl_ms: Option<u64>,
    /// The Redis server's clock when the keys were read, in Unix ms.
    pub now_ms: u64,
    /// The owners holding a lock, with their hold counts (empty for other kinds).
    pub holders: Vec<Holder>,
    /// Subscribers of all the name's channels together: waiting connections (one per waiting
    /// client and name, not per waiting thread or task).
    pub waiters: u64,
    /// Every channel of the name, with its subscribers (classic and sharded pub/sub together).
    pub channels: Vec<Channel>,
    /// The fair lock's queue in order, with deadlines (at most 1000 listed).
    pub queue: Vec<QueuedWaiter>,
    /// The queue's full length; `null` when there is no queue.
    pub queue_length: Option<u64>,
    /// The fenced lock's counter: the last token given out; `null` for other kinds.
    pub token: Option<u64>,
    /// Free permits of a semaphore (missing key: 0); `null` for other kinds.
    pub available_permits: Option<i64>,
    /// A count-down latch's count (0: open); `null` for other kinds.
    pub count: Option<i64>,
    /// The held permits of a permit-expirable semaphore (at most 1000 listed).
    pub permits: Vec<HeldPermit>,
    /// How many permits are held; `null` for other kinds (a plain semaphore does not track
    /// its holders).
    pub permits_held: Option<u64>,
    /// Remarks in plain words: what could not be told apart, what was left out.
    pub notes: Vec<String>,
}

/// One owner holding a lock.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Holder {
    /// The owner as stored in Redis: `<client uuid>:<id>`.
    pub owner: String,
    /// Its client's UUID (the owner up to the last `:`).
    pub client_id: String,
    /// `"read"` or `"write"` for a read-write lock; `null` for the other locks.
    pub mode: Option<String>,
    /// The hold count (re-entries included).
    pub count: u64,
    /// How long the hold lasts unless renewed, in ms: the lock's TTL, or for read holds the
    /// longest of the owner's read-hold keys; `null` when unknown or never expiring.
    pub ttl_ms: Option<u64>,
    /// Since when it is held, in Unix ms (from the client's holder record).
    pub since_ms: Option<u64>,
    /// How long it has been held, in ms (`now_ms - since_ms`).
    pub held_for_ms: Option<u64>,
    /// The holder record of its client; `null` when there is none (not an rlock client, e.g.
    /// Redisson; records switched off; or written within a second of the acquire).
    pub record: Option<ClientRecord>,
}

/// Who a client is, from its holder record (`rlock:client:<uuid>`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ClientRecord {
    /// The client's UUID.
    pub client_id: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// Its `app_name` option; `null` when unset.
    pub app: Option<String>,
    /// Its rlock version.
    pub version: String,
    /// When the record was last written, in Unix ms (the client's clock).
    pub written_ms: u64,
}

/// A waiter in a fair lock's queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct QueuedWaiter {
    /// The waiting owner: `<client uuid>:<id>`.
    pub owner: String,
    /// Its client's UUID.
    pub client_id: String,
    /// Its deadline in Unix ms (the waiter is dropped from the queue after it, unless it
    /// tries again); `null` when it has none.
    pub deadline_ms: Option<u64>,
    /// Time left until that deadline, in ms (negative: passed).
    pub deadline_in_ms: Option<i64>,
    /// The holder record of its client, when there is one (a client that only waits and holds
    /// nothing has none: records exist while a client holds something).
    pub record: Option<ClientRecord>,
}

/// A held permit of a permit-expirable semaphore.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct HeldPermit {
    /// The permit id: 32 lowercase hex characters.
    pub id: String,
    /// When it expires, in Unix ms; `null` for a permit without a lease (Redisson's
    /// 922337203685477).
    pub expires_ms: Option<u64>,
    /// Time left until it expires, in ms (negative: expired, given back at the next call).
    pub expires_in_ms: Option<i64>,
    /// The owner its client lists it under (`<client uuid>:0`); `null` when no record lists it
    /// (Redisson's permits; rlock permits with a lease, which the watchdog does not track).
    pub owner: Option<String>,
    /// Since when it is held, in Unix ms (from the client's record).
    pub since_ms: Option<u64>,
    /// How long it has been held, in ms.
    pub held_for_ms: Option<u64>,
    /// The holder record of its client: the one listing it, or for a permit with a lease the
    /// client whose UUID begins its id (rlock ids start with 8 bytes of their client's UUID);
    /// `null` when there is none (Redisson's permits have random ids).
    pub record: Option<ClientRecord>,
}

/// A channel of the name and its subscribers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Channel {
    /// The channel name, e.g. `redisson_lock__channel:{orders}`.
    pub channel: String,
    /// Its subscribers (classic and sharded pub/sub together; summed over a cluster's nodes).
    pub subscribers: u64,
}

/// A name found by [`Client::list`](crate::Client::list), with the kind found under it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[non_exhaustive]
pub struct Listed {
    /// The name (the primitive's Redis key).
    pub name: String,
    /// What it is.
    pub kind: Kind,
}

/// The JSON text of a [`Description`], a list of them, or of [`Listed`] names: core's one shape,
/// which every surface hands on (C as a string, Python and Node parsed). Compact, no newline.
/// Never fails: these types hold only strings, numbers, lists and optional values.
pub fn to_json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string())
}

/// What the describe script read (see lua/describe.lua).
#[derive(Debug, Default)]
struct Snapshot {
    redis_type: String,
    pttl: i64,
    now_ms: u64,
    /// The hash's fields and values; `None` when not a hash or over the limit.
    fields: Option<Vec<(String, String)>>,
    hash_len: u64,
    mode: Option<String>,
    /// The string (at most 32 bytes).
    value: Option<String>,
    /// Each reader's read-hold PTTLs.
    reads: HashMap<String, Vec<i64>>,
    token: Option<String>,
    queue: Option<Vec<String>>,
    queue_len: u64,
    deadlines: Option<Vec<(String, i64)>>,
    permits: Option<Vec<(Vec<u8>, i64)>>,
    permits_len: u64,
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        Value::VerbatimString { text, .. } => Some(text.clone()),
        Value::Int(n) => Some(n.to_string()),
        Value::Okay => Some("OK".to_owned()),
        _ => None,
    }
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(n) => Some(*n),
        Value::Double(d) => Some(*d as i64),
        other => text(other).and_then(|s| s.trim().parse::<f64>().ok()).map(|f| f as i64),
    }
}

fn items(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(a) | Value::Set(a) => Some(a),
        _ => None,
    }
}

/// Pairs of a flat array: `[a, b, c, d]` as `[(a, b), (c, d)]`.
fn pairs<A, B>(
    v: &Value,
    a: impl Fn(&Value) -> Option<A>,
    b: impl Fn(&Value) -> Option<B>,
) -> Option<Vec<(A, B)>> {
    let list = items(v)?;
    Some(list.chunks_exact(2).filter_map(|p| Some((a(&p[0])?, b(&p[1])?))).collect())
}

fn bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::BulkString(b) => Some(b.clone()),
        other => text(other).map(String::into_bytes),
    }
}

impl Snapshot {
    /// Reads the script's reply; `None` when it has another shape.
    fn parse(reply: &Value) -> Option<Snapshot> {
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
    fn integer(&self) -> Option<i64> {
        self.value.as_deref().and_then(|v| v.trim().parse().ok())
    }
}

/// Whether `field` looks like an owner: `<something>:<integer>`, optionally `:write` after it
/// (the write hold of a read-write lock).
fn owner_field(field: &str) -> bool {
    let owner = field.strip_suffix(":write").unwrap_or(field);
    owner.rsplit_once(':').is_some_and(|(client, id)| {
        !client.is_empty() && !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Whether every field of the hash is an owner with a positive count (and `mode` when `rw`).
fn owners_only(fields: &[(String, String)], rw: bool) -> bool {
    fields.iter().all(|(f, v)| {
        if rw && f == "mode" {
            return v == "read" || v == "write";
        }
        owner_field(f) && v.parse::<u64>().is_ok_and(|n| n > 0)
    })
}

/// Subscribers of the semaphore and latch channels, where they decide a STRING's kind.
#[derive(Debug, Clone, Copy, Default)]
struct CountSubscribers {
    semaphore: u64,
    latch: u64,
    /// On the reentrant lock's channel (a fair lock's waiters each have their own).
    lock: u64,
}

/// The kind of what `s` read, with remarks.
fn classify(s: &Snapshot, subs: CountSubscribers) -> (Kind, Vec<String>) {
    let mut notes = Vec::new();
    let queued = s.queue.is_some() || s.deadlines.is_some();
    let kind = match s.redis_type.as_str() {
        "hash" => match (&s.mode, &s.fields) {
            (Some(m), Some(f)) if (m == "read" || m == "write") && owners_only(f, true) => {
                Kind::ReadWriteLock
            }
            (Some(m), None) if m == "read" || m == "write" => {
                notes.push(format!("{} fields: holders not listed", s.hash_len));
                Kind::ReadWriteLock
            }
            (None, Some(f)) if owners_only(f, false) => {
                if s.token.is_some() {
                    Kind::FencedLock
                } else if queued {
                    Kind::FairLock
                } else {
                    if subs.lock == 0 {
                        notes.push(
                            "a reentrant lock, or a fair lock that nobody waits for (they look the same)"
                                .into(),
                        );
                    }
                    Kind::Lock
                }
            }
            _ => Kind::Other,
        },
        "string" => match s.integer() {
            None => Kind::Other,
            Some(_) if s.permits.is_some() => Kind::PermitExpirableSemaphore,
            Some(_) => match (subs.semaphore > 0, subs.latch > 0) {
                (true, false) => Kind::Semaphore,
                (false, true) => Kind::CountDownLatch,
                _ => {
                    notes.push(
                        "a semaphore or a count-down latch (or a permit-expirable semaphore with no permit \
                         held): nobody waits on either channel to tell them apart"
                            .into(),
                    );
                    Kind::SemaphoreOrLatch
                }
            },
        },
        "none" if s.token.is_some() => {
            notes.push("free; the token counter stays for good (Redisson's layout)".into());
            Kind::FencedLock
        }
        "none" if queued => Kind::FairLock,
        "none" if s.permits.is_some() => Kind::PermitExpirableSemaphore,
        "none" => Kind::None,
        _ => Kind::Other,
    };
    (kind, notes)
}

/// The kind to report when the caller asked for `forced`: it replaces `found` within its
/// family (locks; counts) and when nothing was found; otherwise `found` stays, with a note.
fn force(found: Kind, forced: Kind, notes: &mut Vec<String>) -> Kind {
    let fits = found == forced
        || found == Kind::None
        || (found.is_lock() && forced.is_lock())
        || (found.is_count() && forced.is_count());
    if fits {
        if found != forced {
            notes.push(format!("read as a {forced} as asked (found: {found})"));
        }
        forced
    } else {
        notes.push(format!("not read as a {forced} as asked: the name holds a {found}"));
        found
    }
}

/// The client UUID of an owner `<uuid>:<id>`.
fn client_of(owner: &str) -> &str {
    owner.rsplit_once(':').map_or(owner, |(c, _)| c)
}

/// Milliseconds from `now` until `at` (negative: passed).
fn until(at: i64, now: u64) -> i64 {
    at.saturating_sub(i64::try_from(now).unwrap_or(i64::MAX))
}

/// The keys the describe script reads for `name`.
fn describe_keys(name: &str) -> [String; 5] {
    [
        name.to_owned(),
        keys::token_key(name),
        keys::fair_queue_key(name),
        keys::fair_timeout_key(name),
        keys::suffixed(name, "timeout"),
    ]
}

/// Runs the describe script for `name`.
async fn snapshot(shared: &Shared, name: &str, limit: usize) -> Result<Snapshot> {
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
    Snapshot::parse(&reply)
        .ok_or_else(|| Error::new(crate::ErrorKind::Redis, format!("describe of '{name}': unexpected reply")))
}

/// Subscribers of each of `channels` (PUBSUB NUMSUB, and SHARDNUMSUB with sharded pub/sub; on
/// a cluster summed over every node by the `redis` crate's routing).
async fn subscribers(shared: &Shared, channels: &[String]) -> Result<HashMap<String, u64>> {
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
async fn records_of(shared: &Shared, ids: &BTreeSet<String>) -> Result<HashMap<String, HolderRecord>> {
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
    fn of(r: &HolderRecord) -> ClientRecord {
        ClientRecord {
            client_id: r.client.clone(),
            host: r.host.clone(),
            pid: r.pid,
            app: r.app.clone(),
            version: r.version.clone(),
            written_ms: r.written_ms,
        }
    }
}

/// Where SCAN goes: the one server, or each master of a cluster (by a slot it serves).
async fn scan_targets(shared: &Shared) -> Result<Vec<Option<RoutingInfo>>> {
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
struct Scan {
    targets: Vec<Option<RoutingInfo>>,
    pattern: String,
    cursor: u64,
    done: bool,
}

impl Scan {
    async fn new(shared: &Shared, pattern: &str) -> Result<Scan> {
        Ok(Scan { targets: scan_targets(shared).await?, pattern: pattern.to_owned(), cursor: 0, done: false })
    }

    /// The next page of keys (valid UTF-8 only); `None` when every target was scanned.
    async fn next(&mut self, shared: &Shared) -> Result<Option<Vec<String>>> {
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
async fn scan_call(
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
fn record_prefixes(ids: &[String]) -> BTreeSet<String> {
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
async fn find_records(shared: &Shared, prefixes: &BTreeSet<String>) -> Result<BTreeSet<String>> {
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

/// Describes `name` (already checked): see [`Client::describe`](crate::Client::describe).
pub(crate) async fn describe(shared: &Shared, name: &str, forced: Option<Kind>) -> Result<Description> {
    shared.check_open()?;
    let s = snapshot(shared, name, DESCRIBE_LIMIT).await?;
    let queue = s.queue.clone().unwrap_or_default();
    let lock_channel = keys::lock_channel(name);
    let sem_channel = keys::semaphore_channel(name);
    let latch_channel = keys::latch_channel(name);
    let mut channels =
        vec![lock_channel.clone(), keys::rwlock_channel(name), sem_channel.clone(), latch_channel.clone()];
    channels.extend(queue.iter().map(|owner| format!("{lock_channel}:{owner}")));
    let counts = subscribers(shared, &channels).await?;
    let count_of = |c: &str| counts.get(c).copied().unwrap_or(0);
    let subs = CountSubscribers {
        semaphore: count_of(&sem_channel),
        latch: count_of(&latch_channel),
        lock: count_of(&lock_channel),
    };
    let (found, mut notes) = classify(&s, subs);
    let kind = match forced {
        Some(f) => force(found, f, &mut notes),
        None => found,
    };
    let now = s.now_ms;
    let ttl_ms = u64::try_from(s.pttl).ok();

    // Holders, from the hash of a lock.
    let mut holders = Vec::new();
    if kind.is_lock() {
        for (field, count) in s.fields.iter().flatten() {
            if field == "mode" && s.mode.is_some() {
                continue;
            }
            let (owner, mode) = match field.strip_suffix(":write") {
                Some(o) if s.mode.is_some() => (o.to_owned(), Some("write")),
                _ => (field.clone(), s.mode.as_ref().map(|_| "read")),
            };
            let read_ttl =
                s.reads.get(&owner).and_then(|t| t.iter().copied().max()).and_then(|t| u64::try_from(t).ok());
            holders.push(Holder {
                client_id: client_of(&owner).to_owned(),
                owner,
                mode: mode.map(str::to_owned),
                count: count.parse().unwrap_or(0),
                ttl_ms: if mode == Some("read") { read_ttl } else { ttl_ms },
                since_ms: None,
                held_for_ms: None,
                record: None,
            });
        }
    }

    // The fair queue, in order, with deadlines.
    let deadlines: HashMap<&str, i64> = s.deadlines.iter().flatten().map(|(o, d)| (o.as_str(), *d)).collect();
    let mut waiting: Vec<QueuedWaiter> = queue
        .iter()
        .map(|owner| {
            let deadline = deadlines.get(owner.as_str()).copied();
            QueuedWaiter {
                owner: owner.clone(),
                client_id: client_of(owner).to_owned(),
                deadline_ms: deadline.and_then(|d| u64::try_from(d).ok()),
                deadline_in_ms: deadline.map(|d| until(d, now)),
                record: None,
            }
        })
        .collect();

    // Permits of a permit-expirable semaphore.
    let mut permits: Vec<HeldPermit> = s
        .permits
        .iter()
        .flatten()
        .map(|(id, score)| {
            let expires = (*score != NO_LEASE).then_some(*score);
            HeldPermit {
                id: id.iter().map(|b| format!("{b:02x}")).collect(),
                expires_ms: expires.and_then(|e| u64::try_from(e).ok()),
                expires_in_ms: expires.map(|e| until(e, now)),
                owner: None,
                since_ms: None,
                held_for_ms: None,
                record: None,
            }
        })
        .collect();

    // Holder records: by owner for holders and waiters, by permit id for permits.
    let mut ids: BTreeSet<String> = holders.iter().map(|h| h.client_id.clone()).collect();
    ids.extend(waiting.iter().map(|w| w.client_id.clone()));
    let permit_ids: Vec<String> = permits.iter().map(|p| p.id.clone()).collect();
    ids.extend(find_records(shared, &record_prefixes(&permit_ids)).await?);
    let found_records = records_of(shared, &ids).await?;
    let held_for = |since: u64| now.saturating_sub(since);
    for h in &mut holders {
        if let Some(r) = found_records.get(&h.client_id) {
            h.since_ms = r.holds.iter().find(|x| x.name == name && x.owner == h.owner).map(|x| x.since_ms);
            h.held_for_ms = h.since_ms.map(held_for);
            h.record = Some(ClientRecord::of(r));
        }
    }
    for w in &mut waiting {
        w.record = found_records.get(&w.client_id).map(ClientRecord::of);
    }
    for p in &mut permits {
        let listed = found_records.values().find_map(|r| {
            r.holds
                .iter()
                .find(|x| x.name == name && x.permit.as_deref() == Some(p.id.as_str()))
                .map(|x| (r, x))
        });
        if let Some((r, x)) = listed {
            p.owner = Some(x.owner.clone());
            p.since_ms = Some(x.since_ms);
            p.held_for_ms = Some(held_for(x.since_ms));
            p.record = Some(ClientRecord::of(r));
        } else if let Some(prefix) = record_prefixes(std::slice::from_ref(&p.id)).first() {
            // Not listed (a permit with a lease): its client by the UUID its id begins with.
            let mut by_prefix = found_records.values().filter(|r| r.client.starts_with(prefix.as_str()));
            if let (Some(r), None) = (by_prefix.next(), by_prefix.next()) {
                p.record = Some(ClientRecord::of(r));
            }
        }
    }
    if s.queue_len > queue.len() as u64 {
        notes.push(format!("the first {} of {} queued waiters are listed", queue.len(), s.queue_len));
    }
    if s.permits_len > permits.len() as u64 {
        notes.push(format!("the first {} of {} held permits are listed", permits.len(), s.permits_len));
    }
    if holders.iter().any(|h| h.record.is_none()) {
        notes.push(
            "no holder record for some owners: not rlock clients (e.g. Redisson), records off, \
             or acquired within the last second"
                .into(),
        );
    }

    let channels: Vec<Channel> =
        channels.into_iter().map(|c| Channel { subscribers: count_of(&c), channel: c }).collect();
    let integer = s.integer().or((s.redis_type == "none").then_some(0));
    Ok(Description {
        name: name.to_owned(),
        kind,
        ttl_ms,
        now_ms: now,
        holders,
        waiters: channels.iter().map(|c| c.subscribers).sum(),
        channels,
        queue: waiting,
        queue_length: s.queue.as_ref().map(|_| s.queue_len),
        token: if kind == Kind::FencedLock { s.token.as_deref().and_then(|t| t.parse().ok()) } else { None },
        available_permits: if matches!(
            kind,
            Kind::Semaphore | Kind::PermitExpirableSemaphore | Kind::SemaphoreOrLatch
        ) {
            integer
        } else {
            None
        },
        count: if matches!(kind, Kind::CountDownLatch | Kind::SemaphoreOrLatch) { integer } else { None },
        permits_held: (kind == Kind::PermitExpirableSemaphore).then_some(s.permits_len),
        permits,
        redis_type: s.redis_type,
        notes,
    })
}

/// What a key found by SCAN says about names.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// Not a primitive's key of its own: skip it.
    Skip,
    /// Maybe the main key of a primitive named as the key.
    Main,
    /// A helper key of the primitive(s) named so (two names when the helper key cannot tell
    /// `{a}` from `a` apart: Redisson names both alike); maybe also a main key itself.
    Helper(Vec<String>, bool),
}

/// The name(s) a `prefixed(p, N)` rest (`{N}` or `N` with its own `{`) stands for.
fn unprefixed(rest: &str) -> Vec<String> {
    match rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        Some(inner) if !inner.is_empty() && !inner.contains('{') => vec![inner.to_owned(), rest.to_owned()],
        _ if rest.contains('{') => vec![rest.to_owned()],
        _ => vec![],
    }
}

/// What `key` is to [`list`].
fn sort_key(key: &str) -> Found {
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
    let usable = |n: &str| !cluster || keys::shares_one_slot(n);
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
        let snaps = join_all(names.iter().map(|n| snapshot(shared, n, LIST_LIMIT))).await;
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
            let (kind, _) = classify(&s, subs);
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

    fn snap(t: &str) -> Snapshot {
        Snapshot { redis_type: t.into(), pttl: -2, ..Default::default() }
    }

    fn fields(f: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(f.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect())
    }

    #[test]
    fn kinds_follow_the_keys() {
        let none = CountSubscribers::default();
        let mut s = snap("hash");
        s.fields = fields(&[("7c1e:1", "2")]);
        assert_eq!(classify(&s, none).0, Kind::Lock);
        s.token = Some("3".into());
        assert_eq!(classify(&s, none).0, Kind::FencedLock);
        s.token = None;
        s.queue = Some(vec!["u:2".into()]);
        assert_eq!(classify(&s, none).0, Kind::FairLock);
        let mut rw = snap("hash");
        rw.mode = Some("write".into());
        rw.fields = fields(&[("mode", "write"), ("u:1:write", "1"), ("u:1", "2")]);
        assert_eq!(classify(&rw, none).0, Kind::ReadWriteLock);
        let mut user = snap("hash");
        user.fields = fields(&[("email", "a@b")]);
        assert_eq!(classify(&user, none).0, Kind::Other);

        let mut st = snap("string");
        st.value = Some("3".into());
        assert_eq!(classify(&st, none).0, Kind::SemaphoreOrLatch);
        assert_eq!(classify(&st, CountSubscribers { semaphore: 1, ..none }).0, Kind::Semaphore);
        assert_eq!(classify(&st, CountSubscribers { latch: 2, ..none }).0, Kind::CountDownLatch);
        st.permits = Some(vec![]);
        assert_eq!(classify(&st, none).0, Kind::PermitExpirableSemaphore);
        let mut text = snap("string");
        text.value = Some("hello".into());
        assert_eq!(classify(&text, none).0, Kind::Other);

        let mut free = snap("none");
        assert_eq!(classify(&free, none).0, Kind::None);
        free.token = Some("9".into());
        assert_eq!(classify(&free, none).0, Kind::FencedLock);
        assert_eq!(classify(&snap("list"), none).0, Kind::Other);
    }

    #[test]
    fn forcing_stays_within_a_family() {
        let mut notes = vec![];
        assert_eq!(force(Kind::SemaphoreOrLatch, Kind::CountDownLatch, &mut notes), Kind::CountDownLatch);
        assert_eq!(force(Kind::None, Kind::Semaphore, &mut notes), Kind::Semaphore);
        assert_eq!(force(Kind::Lock, Kind::FairLock, &mut notes), Kind::FairLock);
        assert_eq!(force(Kind::Lock, Kind::Semaphore, &mut notes), Kind::Lock);
        assert_eq!(notes.len(), 4);
    }

    #[test]
    fn kind_names_parse_back() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.as_str()).ok(), Some(k));
            assert_eq!(serde_json::to_value(k).ok(), Some(serde_json::Value::String(k.as_str().into())));
        }
        assert_eq!(Kind::parse("latch").ok(), Some(Kind::CountDownLatch));
        assert_eq!(Kind::parse("read-write").ok(), Some(Kind::ReadWriteLock));
        assert!(Kind::parse("mutex").is_err());
    }

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
