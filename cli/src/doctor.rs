//! `rlock doctor`: what an endpoint does that matters for lock safety (core's
//! `Client::doctor`), as text or core's JSON.

use std::time::Duration;

use clap::Args;
use rlock::{DoctorOptions, Severity};

use crate::{connect, exit};

/// Arguments of `rlock doctor`.
#[derive(Args, Debug)]
pub(crate) struct DoctorArgs {
    /// The endpoint to examine (else --url, else REDIS_URL); any URL rlock takes.
    #[arg(value_name = "URL")]
    url: Option<String>,
    /// Print the report as one JSON object (server, topology, findings with check, status,
    /// observed, effect, advice and facts, worst) instead of the text.
    #[arg(long)]
    json: bool,
    /// Round trips timed for the latency percentiles.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..))]
    pings: u16,
    /// How long the server's clock is watched against this machine's.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = crate::duration)]
    clock_window: Duration,
}

/// Runs `rlock doctor`: 0 when no finding warns, 1 when one does (holds can be lost there
/// unless something changes), 69 when the endpoint cannot be reached.
pub(crate) async fn doctor(url: Option<&str>, args: DoctorArgs) -> u8 {
    // Nothing to record: the doctor holds nothing.
    let options = rlock::ClientOptions::default().with_holder_record(false);
    let client = match connect(args.url.as_deref().or(url), options).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let report = client
        .doctor(&DoctorOptions { pings: usize::from(args.pings), clock_window: args.clock_window })
        .await;
    client.close();
    crate::status::print(&if args.json { report.to_json() } else { report.to_text() });
    if report.worst() == Severity::Warn {
        exit::WARNED
    } else {
        0
    }
}
