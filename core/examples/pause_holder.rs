//! The Rust holder of the pause test (tests/pause/run.py, `make pause`): holds a lock with a
//! 1.5 s watchdog lease, and once armed looks at `is_lost` in a busy loop. The parent SIGSTOPs
//! it past its lease while another owner takes the lock, then SIGCONTs it; the first look after
//! the pause is reported with what followed (the lost callback, `valid_for`, the release).
//! Usage: pause_holder URL NAME. Protocol: see tests/pause/run.py.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rlock::{Client, ClientOptions, ErrorKind};

/// A gap between two looks this long can only be the parent's pause.
const GAP: Duration = Duration::from_millis(1000);

fn main() {
    let mut args = std::env::args().skip(1);
    let (url, name) = (args.next().expect("URL"), args.next().expect("NAME"));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let options = ClientOptions::default().with_watchdog_timeout(Duration::from_millis(1500));
    let client = rt.block_on(Client::connect(&url, options)).unwrap();
    let owner = client.new_owner();
    let lock = client.lock(&name).unwrap();
    rt.block_on(lock.acquire(&owner)).unwrap();
    let (told, heard) = mpsc::channel();
    lock.on_lost(Some(&owner), move |_| {
        let _ = told.send(Instant::now());
    });
    let mut out = std::io::stdout();
    writeln!(out, "held").unwrap();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
    // Before "armed": the parent may stop this process as soon as it reads it.
    let mut prev = Instant::now();
    writeln!(out, "armed").unwrap();
    out.flush().unwrap();

    let mut after_pause = false;
    let (first, looked) = loop {
        let a = Instant::now();
        let lost = lock.is_lost(&owner);
        let b = Instant::now();
        if after_pause || a - prev > GAP {
            break (lost, a);
        }
        // Paused inside the look: it may have answered before the pause; the next one is first.
        after_pause = b - a > GAP;
        prev = b;
    };
    let valid_for = lock.valid_for(&owner);
    let callback_ms = heard
        .recv_timeout(Duration::from_secs(5))
        .map_or(-1, |at| at.saturating_duration_since(looked).as_millis() as i64);
    let release = match rt.block_on(lock.release(&owner)) {
        Ok(_) => "released".to_owned(),
        Err(e) if e.kind() == ErrorKind::Lost => "lost".to_owned(),
        Err(e) => format!("error: {e}"),
    };
    let report = serde_json::json!({
        "first": first,
        "valid_for_ms": valid_for.as_millis() as u64,
        "callback_ms": callback_ms,
        "release": release,
    });
    writeln!(out, "{report}").unwrap();
}
