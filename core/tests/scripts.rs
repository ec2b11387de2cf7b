//! The Lua steps run directly, for behaviours a client cannot provoke on demand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::Inspect as _;
use redis::{Commands, Script};

const ACQUIRE: &str = include_str!("../src/scripts/lua/acquire.lua");
const RELEASE: &str =
    concat!(include_str!("../src/scripts/lua/publish.lua"), include_str!("../src/scripts/lua/release.lua"));
const RENEW: &str = include_str!("../src/scripts/lua/renew.lua");

/// Runs the release script on lock `L` for `owner` with latch `latch`.
fn release(c: &mut redis::Connection, owner: &str, latch: &str) -> redis::RedisResult<Option<i64>> {
    Script::new(RELEASE)
        .key("L")
        .key("redisson_lock__channel:{L}")
        .key(latch)
        .arg("0")
        .arg(30_000)
        .arg(owner)
        .arg("PUBLISH")
        .arg(10_000)
        .invoke(c)
}

#[test]
fn a_retried_release_reads_back_the_first_outcome() {
    let server = common::Server::start().unwrap();
    let mut c = server.conn();
    let acquire = Script::new(ACQUIRE);
    let owner = "11111111-1111-4111-8111-111111111111:1";
    let r: Option<i64> = acquire.key("L").arg(30_000).arg(owner).invoke(&mut c).unwrap();
    assert_eq!(r, None);
    let r: Option<i64> = acquire.key("L").arg(30_000).arg(owner).invoke(&mut c).unwrap();
    assert_eq!(r, None);
    let run = |c: &mut redis::Connection, latch: &str| release(c, owner, latch).unwrap();
    let latch1 = "redisson_unlock_latch:{L}:aaaa";
    assert_eq!(run(&mut c, latch1), Some(0));
    // The retry of the same call (same latch) does not release a second level.
    assert_eq!(run(&mut c, latch1), Some(0));
    assert_eq!(c.hget::<_, _, i64>("L", owner).unwrap(), 1);
    let latch2 = "redisson_unlock_latch:{L}:bbbb";
    assert_eq!(run(&mut c, latch2), Some(1));
    assert_eq!(run(&mut c, latch2), Some(1));
    assert!(!c.exists::<_, bool>("L").unwrap());
    let ttl: i64 = c.pttl(latch2).unwrap();
    assert!(ttl > 0 && ttl <= 10_000);
    // A fresh release of a lock not held says nil.
    assert_eq!(run(&mut c, "redisson_unlock_latch:{L}:cccc"), None);
}

#[test]
fn renew_reports_each_hold_and_survives_a_wrong_type_key() {
    let server = common::Server::start().unwrap();
    let mut c = server.conn();
    let acquire = Script::new(ACQUIRE);
    let renew = Script::new(RENEW);
    let (o1, o2) = ("u:1", "u:2");
    let _: Option<i64> = acquire.key("A").arg(1000).arg(o1).invoke(&mut c).unwrap();
    let _: Option<i64> = acquire.key("B").arg(1000).arg(o1).invoke(&mut c).unwrap();
    let _: () = c.set("S", "not a lock").unwrap();
    let flags: Vec<i64> = renew
        .key("A")
        .key("B")
        .key("S")
        .key("missing")
        .arg(60_000)
        .arg(o1)
        .arg(o2)
        .arg(o1)
        .arg(o1)
        .invoke(&mut c)
        .unwrap();
    assert_eq!(flags, vec![1, 0, 0, 0]);
    assert!(c.pttl::<_, i64>("A").unwrap() > 50_000);
    assert!(c.pttl::<_, i64>("B").unwrap() <= 1000);
    assert_eq!(c.ttl::<_, i64>("S").unwrap(), -1);
}

#[test]
fn release_of_an_odd_count_does_what_redissons_hincrby_does() {
    let server = common::Server::start().unwrap();
    let mut c = server.conn();
    let owner = "11111111-1111-4111-8111-111111111111:1";
    let run = |c: &mut redis::Connection, latch: &str| release(c, owner, latch);
    // Not an integer, even one Lua reads as 1: HINCRBY's error, and nothing written.
    for odd in ["x", "1.0", " 1", "0x1"] {
        let _: () = c.hset("L", owner, odd).unwrap();
        assert!(run(&mut c, "redisson_unlock_latch:{L}:01").is_err(), "{odd:?}");
        assert_eq!(c.hget::<_, _, String>("L", owner).unwrap(), odd);
        assert!(!c.exists::<_, bool>("redisson_unlock_latch:{L}:01").unwrap());
    }
    // Three holds: one level released, still held.
    let _: () = c.hset("L", owner, 3).unwrap();
    assert_eq!(run(&mut c, "redisson_unlock_latch:{L}:02").unwrap(), Some(0));
    assert_eq!(c.hget::<_, _, i64>("L", owner).unwrap(), 2);
    // A count of 0 (no client writes one): released, as HINCRBY to -1 would.
    let _: () = c.hset("L", owner, 0).unwrap();
    assert_eq!(run(&mut c, "redisson_unlock_latch:{L}:03").unwrap(), Some(1));
    assert!(!c.exists::<_, bool>("L").unwrap());
}
