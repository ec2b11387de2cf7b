//! Redisson's key and channel names (wire-format.md, "Notation").

/// Most bytes a lock name may have. Redis allows 512 MB keys; a lock name that long is a bug.
pub const MAX_NAME_LEN: usize = 64 * 1024;

/// `prefixed(p, N)`: `p:N` when N already has a `{` hash tag, else `p:{N}`.
pub(crate) fn prefixed(prefix: &str, name: &str) -> String {
    if name.contains('{') {
        format!("{prefix}:{name}")
    } else {
        format!("{prefix}:{{{name}}}")
    }
}

/// `suffixed(N, s)`: `N:s` when N already has a `{` hash tag, else `{N}:s` (Redisson's
/// `suffixName`).
pub(crate) fn suffixed(name: &str, suffix: &str) -> String {
    format!("{}:{suffix}", key_prefix(name))
}

/// `N` when it already has a `{` hash tag, else `{N}`: the part every suffixed key starts with.
pub(crate) fn key_prefix(name: &str) -> String {
    if name.contains('{') {
        name.to_owned()
    } else {
        format!("{{{name}}}")
    }
}

/// The channel of a read-write lock (both sides).
pub(crate) fn rwlock_channel(name: &str) -> String {
    prefixed("redisson_rwlock", name)
}

/// The prefix of `owner`'s read-hold lease keys on read-write lock `name`; hold n is
/// `<prefix>:<n>`.
pub(crate) fn read_timeout_prefix(name: &str, owner: &str) -> String {
    let mut p = suffixed(name, owner);
    p.push_str(":rwlock_timeout");
    p
}

/// The waiting queue (LIST of owners) of a fair lock.
pub(crate) fn fair_queue_key(name: &str) -> String {
    prefixed("redisson_lock_queue", name)
}

/// The waiters' deadlines (ZSET) of a fair lock.
pub(crate) fn fair_timeout_key(name: &str) -> String {
    prefixed("redisson_lock_timeout", name)
}

/// The channel of a semaphore (its messages are the new count).
pub(crate) fn semaphore_channel(name: &str) -> String {
    prefixed("redisson_sc", name)
}

/// The channel of a count-down latch: `redisson_countdownlatch__channel__{N}`, with braces
/// around the whole name whatever it holds (Redisson's `getChannelName`; not [`prefixed`]).
pub(crate) fn latch_channel(name: &str) -> String {
    format!("redisson_countdownlatch__channel__{{{name}}}")
}

/// Whether the count-down latch `name`, its channel and its request latches have one hash tag
/// (so one slot of a Redis Cluster, and one shard behind a proxy that shards by tag), as the
/// latch scripts need. Only names without `{` and `}` do: the channel's hash tag is the name up
/// to its first `}`, while a name with its own `{tag}` hashes by that tag (Redisson's latch
/// scripts fail with CROSSSLOT on such names). Tags, not slots, are compared: two tags can share
/// a slot by chance (the fuzzer found such a name), and a proxy may still split them.
pub(crate) fn latch_shares_one_tag(name: &str) -> bool {
    one_tag(name, &[latch_channel(name), suffixed(name, "x")])
}

/// Whether every key of `keys` has the hash tag of `name`.
fn one_tag(name: &str, keys: &[String]) -> bool {
    let tag = hash_tag(name);
    keys.iter().all(|k| hash_tag(k) == tag)
}

/// The unlock channel of a reentrant lock.
pub(crate) fn lock_channel(name: &str) -> String {
    prefixed("redisson_lock__channel", name)
}

/// The fencing-token counter of a fenced lock (never expires: see the README).
pub(crate) fn token_key(name: &str) -> String {
    prefixed("redisson_lock_token", name)
}

/// The latch key prefix of a release; the request id is appended after a `:`.
pub(crate) fn unlock_latch_prefix(name: &str) -> String {
    let mut p = prefixed("redisson_unlock_latch", name);
    p.push(':');
    p
}

/// Number of hash slots of a Redis Cluster.
pub(crate) const SLOTS: u16 = 16384;

/// Where in `key` the bytes lie that a Redis Cluster, and a proxy that shards by hash tag
/// (twemproxy's `hash_tag: "{}"`), hash: its hash tag (the part between the first `{` and the
/// next `}`, when not empty), else the whole key.
fn hashed(key: &[u8]) -> std::ops::Range<usize> {
    let tagged = key.iter().position(|b| *b == b'{').and_then(|open| {
        let close = key[open + 1..].iter().position(|b| *b == b'}')?;
        (close > 0).then_some(open + 1..open + 1 + close)
    });
    tagged.unwrap_or(0..key.len())
}

/// The hash tag of `key` as [`hashed`] finds it: keys with the same hash tag live together on
/// every kind of endpoint (one slot of a cluster, one shard behind a proxy), while keys of two
/// tags may not, even in one slot (a proxy that shards by tag spreads tags its own way). So a
/// command or script that touches several keys touches keys of one hash tag only.
pub(crate) fn hash_tag(key: &str) -> &str {
    // `{` and `}` are ASCII, so the range's ends are character boundaries.
    &key[hashed(key.as_bytes())]
}

/// The Redis Cluster hash slot of `key`: CRC16 (XMODEM) of its hash tag (see [`hash_tag`]),
/// modulo 16384.
pub(crate) fn slot(key: &[u8]) -> u16 {
    crc16::State::<crc16::XMODEM>::calculate(&key[hashed(key)]) % SLOTS
}

/// Whether the lock `name` and its channel and latch keys have one hash tag (so one slot of a
/// Redis Cluster, and one shard behind a proxy that shards by tag), as the lock scripts need.
/// Names with an empty `{}` tag, an unclosed `{` or a `}` before any `{` do not (Redisson has the
/// same limit: its scripts fail with CROSSSLOT on such names). Tags, not slots, are compared:
/// two tags can share a slot by chance, and every script touches keys of one hash tag.
pub(crate) fn shares_one_tag(name: &str) -> bool {
    one_tag(
        name,
        &[
            lock_channel(name),
            unlock_latch_prefix(name),
            token_key(name),
            rwlock_channel(name),
            suffixed(name, "x"),
            fair_queue_key(name),
            fair_timeout_key(name),
            semaphore_channel(name),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // Values from CLUSTER KEYSLOT on Redis 7.
        assert_eq!(slot(b"orders"), 105);
        assert_eq!(slot(b"foo"), 12_182);
        assert_eq!(slot(b"123456789"), 12_739);
        assert_eq!(slot(b"{user1000}.following"), 3443);
        assert_eq!(slot(b"a{}b"), 13_694);
        assert_eq!(slot(b"{open"), 7674);
        assert!(shares_one_tag("orders"));
        assert!(shares_one_tag("a{b}c"));
        assert!(!shares_one_tag("a{}c"));
        assert!(!shares_one_tag("{open"));
        assert!(latch_shares_one_tag("orders"));
        assert!(latch_shares_one_tag("jobs:2026-11"));
        assert!(!latch_shares_one_tag("a{b}c"), "the channel hashes by 'a{{b', the key by 'b'");
        assert!(!latch_shares_one_tag("{b}"));
        assert!(!latch_shares_one_tag("a}b"));
    }

    /// Found by `make fuzz` (target `names`): a name whose latch channel has another hash tag
    /// but, by chance, the same slot. Compared by slot, it passed as one that a cluster accepts.
    #[test]
    fn a_slot_shared_by_chance_is_not_one_tag() {
        let name = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fuzz/corpus/names/crash-0e39465fa2f5cfacd341b51d5ecb2d9f11eb0d04"
        ))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
        let channel = latch_channel(&name);
        assert_eq!(slot(name.as_bytes()), slot(channel.as_bytes()), "one slot");
        assert_ne!(hash_tag(&name), hash_tag(&channel), "two tags");
        assert!(!latch_shares_one_tag(&name));
    }

    #[test]
    fn hash_tags_are_what_slots_hash() {
        assert_eq!(hash_tag("orders"), "orders");
        assert_eq!(hash_tag("redisson_lock__channel:{orders}"), "orders");
        assert_eq!(hash_tag("redisson_unlock_latch:{orders}:0af3"), "orders");
        assert_eq!(hash_tag("a{b}c"), "b");
        assert_eq!(hash_tag("{orders}:u:1:rwlock_timeout"), "orders");
        assert_eq!(hash_tag("a{}c"), "a{}c");
        assert_eq!(hash_tag("{open"), "{open");
        assert_eq!(hash_tag("ü{é}ß"), "é");
        // Every key of one lock has the lock name's tag.
        for name in ["orders", "a{b}c", "jobs:2026-11"] {
            for key in [lock_channel(name), token_key(name), unlock_latch_prefix(name), suffixed(name, "x")] {
                assert_eq!(hash_tag(&key), hash_tag(name), "{key}");
            }
        }
    }

    #[test]
    fn names_follow_redisson() {
        assert_eq!(lock_channel("orders"), "redisson_lock__channel:{orders}");
        assert_eq!(lock_channel("a{b}c"), "redisson_lock__channel:a{b}c");
        assert_eq!(unlock_latch_prefix("orders"), "redisson_unlock_latch:{orders}:");
        assert_eq!(token_key("orders"), "redisson_lock_token:{orders}");
        assert_eq!(token_key("a{b}c"), "redisson_lock_token:a{b}c");
        assert_eq!(rwlock_channel("orders"), "redisson_rwlock:{orders}");
        assert_eq!(read_timeout_prefix("orders", "u:1"), "{orders}:u:1:rwlock_timeout");
        assert_eq!(read_timeout_prefix("a{b}c", "u:1"), "a{b}c:u:1:rwlock_timeout");
        assert_eq!(key_prefix("orders"), "{orders}");
        assert_eq!(fair_queue_key("orders"), "redisson_lock_queue:{orders}");
        assert_eq!(fair_timeout_key("orders"), "redisson_lock_timeout:{orders}");
        assert_eq!(semaphore_channel("slots"), "redisson_sc:{slots}");
        assert_eq!(latch_channel("jobs"), "redisson_countdownlatch__channel__{jobs}");
        assert_eq!(latch_channel("a{b}c"), "redisson_countdownlatch__channel__{a{b}c}");
    }
}
