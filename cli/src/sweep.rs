//! `rlock sweep`: keys holding what nothing can use any more (core's `Client::sweep`),
//! reported, and removed with `--delete`.

use std::time::Duration;

use clap::Args;
use rlock::SweepOptions;

use crate::{connect, exit, failure};

/// Arguments of `rlock sweep`.
#[derive(Args, Debug)]
pub(crate) struct SweepArgs {
    /// SCAN's MATCH pattern over key names (default: every key); `*orders*` also finds
    /// `redisson_lock_timeout:{orders}`.
    #[arg(value_name = "PATTERN")]
    pattern: Option<String>,
    /// Remove what is found: each key is checked again by the script that removes.
    #[arg(long)]
    delete: bool,
    /// How long past its deadline or lease an entry must be to count: covers the skew between
    /// the clients' clocks, the server's and this machine's.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::duration)]
    grace: Duration,
    /// Print the report as one JSON object (keys_scanned, delete, grace_ms, leftovers with kind,
    /// key, name, stale and removed, errors, left) instead of the text.
    #[arg(long)]
    json: bool,
}

/// Runs `rlock sweep`: 0 when nothing is left (nothing found, or all of it removed), 1 when
/// leftovers are found and left, 69 when Redis cannot be reached or refuses SCAN.
pub(crate) async fn sweep(url: Option<&str>, args: SweepArgs) -> u8 {
    // Nothing to record: the sweep holds nothing.
    let options = rlock::ClientOptions::default().with_holder_record(false);
    let client = match connect(url, options).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut options = SweepOptions::default().with_delete(args.delete).with_grace(args.grace);
    if let Some(p) = args.pattern {
        options = options.with_pattern(p);
    }
    let report = client.sweep(&options).await;
    client.close();
    let report = match report {
        Ok(r) => r,
        Err(e) => return failure("sweep failed", &e),
    };
    crate::status::print(&if args.json { report.to_json() } else { report.to_text() });
    if report.left() > 0 || !report.errors.is_empty() {
        exit::LEFT
    } else {
        0
    }
}
