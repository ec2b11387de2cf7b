//! A holder process killed with SIGKILL: its lock is free within the watchdog timeout (plus a
//! margin) and a waiter gets it. The test binary runs itself as the holder child.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rlock::{Client, ClientOptions};

const WATCHDOG: Duration = Duration::from_millis(1000);

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    if let Ok(url) = std::env::var("RLOCK_TEST_HOLDER_URL") {
        rt.block_on(async {
            let c = Client::connect(&url, ClientOptions::default().with_watchdog_timeout(WATCHDOG))
                .await
                .unwrap();
            let owner = c.new_owner();
            c.lock("killed").unwrap().acquire(&owner).await.unwrap();
            println!("held");
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
    assert_eq!(line.trim(), "held");

    rt.block_on(async {
        let c = Client::connect(&server.url(), ClientOptions::default()).await.unwrap();
        let owner = c.new_owner();
        let lock = c.lock("killed").unwrap();
        // The child's watchdog keeps it held across several leases.
        assert!(!lock.try_acquire(&owner, Duration::from_millis(2500), None).await.unwrap());
        child.kill().unwrap(); // SIGKILL
        let killed = Instant::now();
        child.wait().unwrap();
        assert!(lock.try_acquire(&owner, WATCHDOG + Duration::from_secs(1), None).await.unwrap());
        let took = killed.elapsed();
        assert!(took <= WATCHDOG + Duration::from_secs(1), "freed after {took:?}");
        lock.release(&owner).await.unwrap();
        println!("sigkill: lock freed {took:?} after the holder was killed");
    });
    println!("1 passed, 0 failed");
}
