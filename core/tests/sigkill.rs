//! A holder process killed with SIGKILL: its lock is free within the watchdog timeout (plus a
//! margin) and a waiter gets it; its holder record (who it was) is gone as soon. The test
//! binary runs itself as the holder child.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Inspect as _;
use rlock::{Client, ClientOptions};

const WATCHDOG: Duration = Duration::from_millis(1000);

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    if let Ok(url) = std::env::var("RLOCK_TEST_HOLDER_URL") {
        rt.block_on(async {
            let options = ClientOptions::default()
                .with_watchdog_timeout(WATCHDOG)
                .with_app_name(Some("sigkill-holder".into()));
            let c = Client::connect(&url, options).await.unwrap();
            let owner = c.new_owner();
            c.lock("killed").unwrap().acquire(&owner).await.unwrap();
            println!("held {}", owner.as_str());
            std::future::pending::<()>().await;
        });
        return;
    }

    let server = common::Server::start().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env("RLOCK_TEST_HOLDER_URL", server.url())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let held_by =
        line.trim().strip_prefix("held ").unwrap_or_else(|| panic!("child said {line:?}")).to_owned();
    let client_id = held_by.rsplit_once(':').unwrap().0.to_owned();
    let record_key = rlock::surface::record_key(&client_id);
    let mut conn = server.conn();
    let mut record = || -> Option<rlock::HolderRecord> {
        let json: Option<String> = redis::cmd("GET").arg(&record_key).query(&mut conn).unwrap();
        json.map(|j| serde_json::from_str(&j).unwrap())
    };

    rt.block_on(async {
        let c = Client::connect(&server.url(), ClientOptions::default()).await.unwrap();
        let owner = c.new_owner();
        let lock = c.lock("killed").unwrap();
        // The child's watchdog keeps it held across several leases.
        assert!(!lock.try_acquire(&owner, Duration::from_millis(2500), None).await.unwrap());
        // Its record says who holds it (written within a second of the acquire, so present now).
        let r = record().expect("the holder's record");
        assert_eq!(
            (r.client.as_str(), r.pid, r.app.as_deref()),
            (client_id.as_str(), child.id(), Some("sigkill-holder"))
        );
        assert_eq!(r.host, gethostname::gethostname().into_string().unwrap());
        assert!(
            r.holds.iter().any(|h| h.name == "killed" && h.owner == held_by && h.kind == "lock"),
            "{r:?}"
        );
        child.kill().unwrap(); // SIGKILL
        let killed = Instant::now();
        child.wait().unwrap();
        assert!(lock.try_acquire(&owner, WATCHDOG + Duration::from_secs(1), None).await.unwrap());
        let took = killed.elapsed();
        assert!(took <= WATCHDOG + Duration::from_secs(1), "freed after {took:?}");
        lock.release(&owner).await.unwrap();
        println!("sigkill: lock freed {took:?} after the holder was killed");
        assert!(common::eventually(WATCHDOG + Duration::from_secs(1), || record().is_none()).await);
        let gone = killed.elapsed();
        println!("sigkill: holder record gone {gone:?} after the holder was killed");
    });
    println!("1 passed, 0 failed");
}
