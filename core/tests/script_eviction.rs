//! Redis 8 evicts the scripts `EVAL` cached (least recently used first) once more than 500 are,
//! so NOSCRIPT is a normal answer there, not only after a restart or a failover. Here 600 other
//! scripts are loaded by `EVAL` before every step of every primitive, the watchdog's renewals
//! and a pub/sub wake-up included, and every call must succeed. Where the server evicts (this
//! test sees it: the first script of a flood is gone after it), rlock's own scripts were
//! evicted before the steps, so NOSCRIPT was answered and the resend is what ran; where the
//! server keeps every script (Redis 7, Valkey), the same calls run on a full script cache and
//! meet no NOSCRIPT. `make compat` runs this file on every server of the matrix, Redis 8 among
//! them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

mod common;

use common::{client_with, family, short_watchdog, Server};

/// More scripts than Redis 8 keeps from `EVAL` before it evicts the least recently used (500).
const FLOOD: usize = 600;

/// Loads scripts nobody else runs and watches what the server did with them.
struct Flooder {
    conn: redis::Connection,
    round: usize,
    /// Whether a flood evicted its own first script: the server evicts `EVAL` scripts.
    evicts: bool,
}

impl Flooder {
    /// Loads [`FLOOD`] new scripts by `EVAL`, so each is cached as Redis 8 caches an `EVAL`:
    /// evictable.
    fn flood(&mut self) {
        self.round += 1;
        // One pipeline: the flood takes one round trip, not one per script.
        let mut pipe = redis::pipe();
        for i in 0..FLOOD {
            pipe.cmd("EVAL").arg(format!("return 'flood {} {i}'", self.round)).arg(0).ignore();
        }
        let _: () = pipe.query(&mut self.conn).unwrap();
        let first = redis::Script::new(&format!("return 'flood {} 0'", self.round)).get_hash().to_owned();
        let exists: Vec<bool> = redis::cmd("SCRIPT").arg("EXISTS").arg(first).query(&mut self.conn).unwrap();
        self.evicts |= !exists[0];
    }

    /// NOSCRIPT answers the server counted (`INFO errorstats`, Redis 6.2 and later).
    fn noscripts(&mut self) -> u64 {
        let info: String = redis::cmd("INFO").arg("errorstats").query(&mut self.conn).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("errorstat_NOSCRIPT:count="))
            .map_or(0, |n| n.trim().parse().unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_primitive_works_while_other_scripts_evict_its_own() {
    let server = Server::start().unwrap();
    let mut f = Flooder { conn: common::conn_to(server.port()), round: 0, evicts: false };
    let c = client_with(&server, short_watchdog()).await;
    // Once without floods: every script rlock runs is cached after it, so from here on each
    // NOSCRIPT is one an eviction caused.
    family::every_step(&c, "warm:", || {}).await;
    let before = f.noscripts();
    family::every_step(&c, "ev:", || f.flood()).await;
    let noscripts = f.noscripts() - before;
    println!("the server evicts EVAL scripts: {}; NOSCRIPT answered {noscripts} times since", f.evicts);
    assert_eq!(
        noscripts > 0,
        f.evicts,
        "NOSCRIPT answers ({noscripts}) and evictions ({}) disagree",
        f.evicts
    );
}
