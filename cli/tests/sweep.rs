//! `rlock sweep` as an operator runs it: the real binary against a private server holding each
//! kind of leftover beside what must stay (live waiters and permits, a latch with its TTL, a
//! fenced lock's token counter, a user's keys that look alike).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::process::Output;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redis::Commands as _;
mod common;

use common::{json, rlock};
use rlock_testbed::{standin, Server};
use serde_json::Value;

const NO_LEASE: i64 = 922_337_203_685_477;

fn sweep(url: &str, args: &[&str]) -> Output {
    rlock(&[&["sweep", "--url", url], args].concat())
}

fn conn(server: &Server) -> redis::Connection {
    redis::Client::open(server.url()).unwrap().get_connection().unwrap()
}

fn now_ms() -> i64 {
    i64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// Every key with its serialized value and whether it expires: what "nothing changed" means.
fn snapshot(c: &mut redis::Connection) -> BTreeMap<String, (Vec<u8>, bool)> {
    let keys: Vec<String> = c.keys("*").unwrap();
    keys.into_iter()
        .map(|k| {
            let dump: Vec<u8> = redis::cmd("DUMP").arg(&k).query(c).unwrap();
            let pttl: i64 = c.pttl(&k).unwrap();
            (k, (dump, pttl >= 0))
        })
        .collect()
}

/// The leftover of `kind` in a JSON report.
fn leftover<'a>(r: &'a Value, kind: &str) -> &'a Value {
    r["leftovers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {r}"))
}

/// A permit id as Redisson stores it: 16 raw bytes.
fn id(n: u8) -> Vec<u8> {
    vec![n; 16]
}

/// Leftovers of each kind, and beside them what must stay.
fn seed(c: &mut redis::Connection) {
    let now = now_ms();
    // A fair lock with two waiters gone 10 and 9 minutes ago, one queued without a deadline,
    // and one live waiter behind them.
    let _: () = redis::pipe()
        .rpush("redisson_lock_queue:{orders}", &["c:gone1", "c:gone2", "c:orphan", "c:live"])
        .zadd("redisson_lock_timeout:{orders}", "c:gone1", now - 600_000)
        .zadd("redisson_lock_timeout:{orders}", "c:gone2", now - 540_000)
        .zadd("redisson_lock_timeout:{orders}", "c:live", now + 300_000)
        // A permit-expirable semaphore: two permits 10 minutes past their lease, one live,
        // one without a lease.
        .set("{gpu}", 1)
        .zadd("{gpu}:timeout", id(1), now - 600_000)
        .zadd("{gpu}:timeout", id(2), now - 600_000)
        .zadd("{gpu}:timeout", id(3), now + 600_000)
        .zadd("{gpu}:timeout", id(4), NO_LEASE)
        // A request latch without an expiry, and one with its TTL.
        .set("redisson_unlock_latch:{orders}:00aa", 0)
        .cmd("SET")
        .arg("redisson_unlock_latch:{orders}:00bb")
        .arg(0)
        .arg("PX")
        .arg(600_000)
        // A fenced lock's token counter (never expires, never swept).
        .set("redisson_lock_token:{orders}", 42)
        // A user's keys that look alike: a ZSET named like a permit set with other members,
        // and one named `x:timeout` without a hash tag.
        .zadd("{sessions}:timeout", "user-7", now - 600_000)
        .zadd("sessions:timeout", "user-8", now - 600_000)
        .query(c)
        .unwrap();
}

#[test]
fn leftovers_are_reported_changing_nothing_then_removed_leaving_the_rest() {
    let server = Server::start().unwrap();
    let mut c = conn(&server);
    seed(&mut c);
    let before = snapshot(&mut c);

    // Reported, nothing changed, exit 1.
    let o = sweep(&server.url(), &["--json"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let r = json(&o);
    assert_eq!(r["leftovers"].as_array().unwrap().len(), 3, "{r}");
    let waiters = leftover(&r, "gone_waiters");
    assert_eq!(
        (waiters["key"].as_str(), waiters["name"].as_str()),
        (Some("redisson_lock_timeout:{orders}"), Some("orders"))
    );
    assert_eq!((waiters["stale"].as_u64(), waiters["removed"].as_u64()), (Some(3), Some(0)));
    let permits = leftover(&r, "expired_permits");
    assert_eq!((permits["key"].as_str(), permits["name"].as_str()), (Some("{gpu}:timeout"), Some("{gpu}")));
    assert_eq!(permits["stale"], 2);
    let latch = leftover(&r, "latch_without_expiry");
    assert_eq!(latch["key"], "redisson_unlock_latch:{orders}:00aa");
    assert_eq!((r["left"].as_u64(), r["delete"].as_bool()), (Some(6), Some(false)));
    assert_eq!(snapshot(&mut c), before, "a sweep without --delete changed Redis");

    // Removed with --delete; the live waiter, now first in line, is woken on its own channel.
    let mut waiter = redis::Client::open(server.url()).unwrap().get_connection().unwrap();
    let mut pubsub = waiter.as_pubsub();
    pubsub.subscribe("redisson_lock__channel:{orders}:c:live").unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let o = sweep(&server.url(), &["--delete", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let r = json(&o);
    assert_eq!(leftover(&r, "gone_waiters")["removed"], 3);
    assert_eq!(leftover(&r, "expired_permits")["removed"], 2);
    assert_eq!(leftover(&r, "latch_without_expiry")["removed"], 1);
    assert_eq!(r["left"], 0);
    let woken = pubsub.get_message().unwrap();
    assert_eq!(woken.get_payload::<String>().unwrap(), "0");
    drop(pubsub);

    let queue: Vec<String> = c.lrange("redisson_lock_queue:{orders}", 0, -1).unwrap();
    assert_eq!(queue, ["c:live"]);
    let deadlines: Vec<String> = c.zrange("redisson_lock_timeout:{orders}", 0, -1).unwrap();
    assert_eq!(deadlines, ["c:live"]);
    // The expired permits went back to the count; the live one and the one without a lease stay.
    let count: i64 = c.get("{gpu}").unwrap();
    assert_eq!(count, 3);
    let held: Vec<Vec<u8>> = c.zrange("{gpu}:timeout", 0, -1).unwrap();
    assert_eq!(held, [id(3), id(4)]);
    assert!(!c.exists::<_, bool>("redisson_unlock_latch:{orders}:00aa").unwrap());
    assert!(c.pttl::<_, i64>("redisson_unlock_latch:{orders}:00bb").unwrap() > 0);
    let token: i64 = c.get("redisson_lock_token:{orders}").unwrap();
    assert_eq!(token, 42);
    for k in ["{sessions}:timeout", "sessions:timeout"] {
        assert_eq!(c.zcard::<_, i64>(k).unwrap(), 1, "{k} was touched");
    }

    // Nothing is left: exit 0, and the text says so.
    let o = sweep(&server.url(), &[]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("0 with leftovers"), "{text}");
    assert!(text.contains("token counters are never touched"), "{text}");
}

#[test]
fn a_deadline_within_the_grace_is_kept_and_the_pattern_narrows_the_scan() {
    let server = Server::start().unwrap();
    let mut c = conn(&server);
    let now = now_ms();
    let _: () = redis::pipe()
        .rpush("redisson_lock_queue:{recent}", "c:late")
        .zadd("redisson_lock_timeout:{recent}", "c:late", now - 10_000)
        .set("redisson_unlock_latch:{elsewhere}:00cc", 0)
        .query(&mut c)
        .unwrap();
    // 10 s late is within the default 60 s grace (a skewed clock, not a crash).
    let o = sweep(&server.url(), &["*recent*", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(json(&o)["leftovers"].as_array().unwrap().len(), 0);
    // Past a 1 s grace it counts; the latch lies outside the pattern.
    let o = sweep(&server.url(), &["*recent*", "--grace", "1s", "--json"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let r = json(&o);
    assert_eq!(r["leftovers"].as_array().unwrap().len(), 1, "{r}");
    assert_eq!(leftover(&r, "gone_waiters")["stale"], 1);
    assert_eq!(r["grace_ms"], 1000);
}

#[test]
fn an_endpoint_without_scan_fails_with_the_unavailable_code() {
    let proxy = standin::Twemproxy::start().unwrap();
    let o = sweep(&proxy.url(), &[]);
    assert_eq!(o.status.code(), Some(69), "{o:?}");
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("sweep failed"), "{err}");
}

#[test]
fn a_bad_grace_is_a_usage_error_before_anything_is_sent() {
    let o = sweep("redis://127.0.0.1:1/", &["--grace", "soon"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}
