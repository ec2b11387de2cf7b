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

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::Serialize;

use crate::error::{Error, Result};
use crate::keys;
use crate::millis;
use crate::records::HolderRecord;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, JsonSchema)]
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

    /// One line on what the kind is, without a surface's spelling: the surfaces' generated
    /// docs of their `Kind` (Python's literal, Node's union) say it.
    pub fn summary(self) -> &'static str {
        match self {
            Kind::Lock => "A reentrant lock (Redisson RLock); a fair lock nobody waits for looks the same.",
            Kind::FencedLock => "A fenced lock (Redisson RFencedLock): its token counter exists.",
            Kind::FairLock => "A fair lock (Redisson RFairLock): its queue or deadline keys exist.",
            Kind::ReadWriteLock => "A read-write lock (Redisson RReadWriteLock).",
            Kind::Semaphore => "A semaphore (Redisson RSemaphore) that someone waits on.",
            Kind::PermitExpirableSemaphore => {
                "A permit-expirable semaphore (Redisson RPermitExpirableSemaphore) with permits held."
            }
            Kind::CountDownLatch => "A count-down latch (Redisson RCountDownLatch) that someone waits on.",
            Kind::SemaphoreOrLatch => {
                "An integer string nobody waits on: a semaphore and a latch look the same."
            }
            Kind::Other => {
                "A key of another shape: another Redis type, or a hash or string that is none of these."
            }
            Kind::None => "Nothing under the name.",
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

/// What lives under one name: a snapshot, read without changing anything.
///
/// Durations are [`Duration`]s and instants [`SystemTime`]s. Serialized (serde) with snake_case keys, every
/// key always present (`null` where it does not apply), instants in Unix milliseconds and
/// durations in milliseconds, each key with the suffix `_ms` (`ttl_ms`, `now_ms`,
/// `held_for_ms`, ...; see [`to_json`]). Relative times use the Redis server's clock (`now`);
/// holder records and fair deadlines were written with their clients' clocks, so those assume
/// synchronized clocks.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct Description {
    /// The name (the Redis key of the primitive).
    pub name: String,
    /// The kind found, or the one the caller asked for (Rust's
    /// [`Client::describe_as`](crate::Client::describe_as)).
    pub kind: Kind,
    /// The Redis type of the key `name`: `"hash"`, `"string"`, ..., `"none"` when missing.
    pub redis_type: String,
    /// The key's remaining time to live; `None` when it does not exist or never expires.
    #[serde(rename = "ttl_ms", serialize_with = "millis::ser::opt_ms")]
    #[schemars(with = "Option<u64>")]
    pub ttl: Option<Duration>,
    /// The Redis server's clock when the keys were read.
    #[serde(rename = "now_ms", serialize_with = "millis::ser::unix_ms")]
    #[schemars(with = "u64")]
    pub now: SystemTime,
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
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct Holder {
    /// The owner as stored in Redis: `<client uuid>:<id>`.
    pub owner: String,
    /// Its client's UUID (the owner up to the last `:`).
    pub client_id: String,
    /// `"read"` or `"write"` for a read-write lock; `null` for the other locks.
    #[schemars(extend("enum" = ["read", "write", null]))]
    pub mode: Option<String>,
    /// The hold count (re-entries included).
    pub count: u64,
    /// How long the hold lasts unless renewed: the lock's TTL, or for read holds the longest
    /// of the owner's read-hold keys; `None` when unknown or never expiring.
    #[serde(rename = "ttl_ms", serialize_with = "millis::ser::opt_ms")]
    #[schemars(with = "Option<u64>")]
    pub ttl: Option<Duration>,
    /// Since when it is held (from the client's holder record).
    #[serde(rename = "since_ms", serialize_with = "millis::ser::opt_unix_ms")]
    #[schemars(with = "Option<u64>")]
    pub since: Option<SystemTime>,
    /// How long it has been held (`now - since`).
    #[serde(rename = "held_for_ms", serialize_with = "millis::ser::opt_ms")]
    #[schemars(with = "Option<u64>")]
    pub held_for: Option<Duration>,
    /// The holder record of its client; `null` when there is none (not an rlock client, e.g.
    /// Redisson; records switched off; or written within a second of the acquire).
    pub record: Option<ClientRecord>,
}

/// Who a client is, from its holder record (`rlock:client:<uuid>`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct ClientRecord {
    /// The client's UUID.
    pub client_id: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// The application name its client was given (the `app_name` option, as each surface
    /// spells it); `null` when unset.
    pub app: Option<String>,
    /// Its rlock version.
    pub version: String,
    /// When the record was last written (the client's clock).
    #[serde(rename = "written_ms", serialize_with = "millis::ser::unix_ms")]
    #[schemars(with = "u64")]
    pub written: SystemTime,
}

/// A waiter in a fair lock's queue.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct QueuedWaiter {
    /// The waiting owner: `<client uuid>:<id>`.
    pub owner: String,
    /// Its client's UUID.
    pub client_id: String,
    /// Its deadline (the waiter is dropped from the queue after it, unless it tries again);
    /// `None` when it has none.
    #[serde(rename = "deadline_ms", serialize_with = "millis::ser::opt_unix_ms")]
    #[schemars(with = "Option<u64>")]
    pub deadline: Option<SystemTime>,
    /// Time left until that deadline (zero once it passed).
    #[serde(rename = "deadline_in_ms", serialize_with = "millis::ser::opt_ms")]
    #[schemars(with = "Option<u64>")]
    pub deadline_in: Option<Duration>,
    /// The holder record of its client, when there is one (a client that only waits and holds
    /// nothing has none: records exist while a client holds something).
    pub record: Option<ClientRecord>,
}

/// A held permit of a permit-expirable semaphore.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct HeldPermit {
    /// The permit id: 32 lowercase hex characters.
    pub id: String,
    /// When it expires; `None` for a permit without a lease (Redisson's 922337203685477).
    #[serde(rename = "expires_ms", serialize_with = "millis::ser::opt_unix_ms")]
    #[schemars(with = "Option<u64>")]
    pub expires: Option<SystemTime>,
    /// Time left until it expires (zero: expired, given back at the next call).
    #[serde(rename = "expires_in_ms", serialize_with = "millis::ser::opt_ms")]
    #[schemars(with = "Option<u64>")]
    pub expires_in: Option<Duration>,
    /// The owner its client lists it under (`<client uuid>:0`); `null` when no record lists it
    /// (Redisson's permits; rlock permits with a lease, which the watchdog does not track).
    pub owner: Option<String>,
    /// Since when it is held (from the client's record).
    #[serde(rename = "since_ms", serialize_with = "millis::ser::opt_unix_ms")]
    #[schemars(with = "Option<u64>")]
    pub since: Option<SystemTime>,
    /// How long it has been held.
    #[serde(rename = "held_for_ms", serialize_with = "millis::ser::opt_ms")]
    #[schemars(with = "Option<u64>")]
    pub held_for: Option<Duration>,
    /// The holder record of its client: the one listing it, or for a permit with a lease the
    /// client whose UUID begins its id (rlock ids start with 8 bytes of their client's UUID);
    /// `null` when there is none (Redisson's permits have random ids).
    pub record: Option<ClientRecord>,
}

/// A channel of the name and its subscribers.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[non_exhaustive]
pub struct Channel {
    /// The channel name, e.g. `redisson_lock__channel:{orders}`.
    pub channel: String,
    /// Its subscribers (classic and sharded pub/sub together; summed over a cluster's nodes).
    pub subscribers: u64,
}

/// A name found by [`Client::list`](crate::Client::list), with the kind found under it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
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

mod classify;
mod scan;
mod snapshot;
mod sweep;

pub(crate) use sweep::sweep;
pub use sweep::{Leftover, LeftoverKind, SweepError, SweepOptions, SweepReport};

use classify::{force, CountSubscribers};
use scan::{find_records, record_prefixes};
use snapshot::{records_of, subscribers};

/// The client UUID of an owner `<uuid>:<id>`.
pub(super) fn client_of(owner: &str) -> &str {
    owner.rsplit_once(':').map_or(owner, |(c, _)| c)
}

/// Time from `now` until `at` (Unix ms; zero once passed).
pub(super) fn until(at: i64, now: u64) -> Duration {
    Duration::from_millis(u64::try_from(at).unwrap_or(0).saturating_sub(now))
}

/// The instant of Unix ms `at`; `None` before the epoch.
fn unix(at: i64) -> Option<SystemTime> {
    u64::try_from(at).ok().map(millis::from_unix_ms)
}

/// Reads `reply` as the describe script's answer and classifies it, as found and as each kind a
/// caller may force, with and without subscribers: for `crate::fuzz`, since a reply is a
/// server's input. `None` when the reply has another shape.
pub(crate) fn read_reply(reply: &redis::Value) -> Option<Kind> {
    let s = snapshot::Snapshot::parse(reply)?;
    let mut found = Kind::None;
    for subs in [CountSubscribers::default(), CountSubscribers { semaphore: 1, latch: 1, lock: 1 }] {
        let (kind, mut notes) = classify::classify(&s, subs);
        for forced in Kind::ALL {
            force(kind, forced, &mut notes);
        }
        found = kind;
    }
    Some(found)
}

/// The record `describe` shows of a holder record read from Redis: for `crate::fuzz`.
pub(crate) fn show_record(record: &HolderRecord) -> ClientRecord {
    ClientRecord::of(record)
}

/// Describes `name` (already checked): see [`Client::describe`](crate::Client::describe).
pub(crate) async fn describe(shared: &Shared, name: &str, forced: Option<Kind>) -> Result<Description> {
    shared.check_open()?;
    let s = snapshot::snapshot(shared, name, DESCRIBE_LIMIT).await?;
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
    let (found, mut notes) = classify::classify(&s, subs);
    let kind = match forced {
        Some(f) => force(found, f, &mut notes),
        None => found,
    };
    let now = s.now_ms;
    let ttl = u64::try_from(s.pttl).ok().map(Duration::from_millis);

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
                ttl: if mode == Some("read") { read_ttl.map(Duration::from_millis) } else { ttl },
                since: None,
                held_for: None,
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
                deadline: deadline.and_then(unix),
                deadline_in: deadline.map(|d| until(d, now)),
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
                expires: expires.and_then(unix),
                expires_in: expires.map(|e| until(e, now)),
                owner: None,
                since: None,
                held_for: None,
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
    let held_for = |since: u64| Duration::from_millis(now.saturating_sub(since));
    for h in &mut holders {
        if let Some(r) = found_records.get(&h.client_id) {
            let since = r.holds.iter().find(|x| x.name == name && x.owner == h.owner).map(|x| x.since_ms);
            h.since = since.map(millis::from_unix_ms);
            h.held_for = since.map(held_for);
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
            p.since = Some(millis::from_unix_ms(x.since_ms));
            p.held_for = Some(held_for(x.since_ms));
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
        ttl,
        now: millis::from_unix_ms(now),
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

pub(crate) use scan::list;

#[cfg(test)]
mod tests {
    use super::*;

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
}
