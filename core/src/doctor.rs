//! What an endpoint does that matters for lock safety (`rlock doctor`, [`Client::doctor`]):
//! asked of it through the client's own connections with commands that change nothing, each
//! finding with what rlock does about it and what to change.
//!
//! Every check is a probe: a refused command means "not available" (or "not known" when what was
//! refused is only how the check looks), never a failed doctor. No check reads a product name or
//! version for meaning; the server's name is reported for the reader only.
//!
//! [`Client::doctor`]: crate::client::Client::doctor

use std::time::{Duration, Instant};

use redis::Value;
use serde::Serialize;
use serde_json::{json, Map, Value as Json};

use crate::conn::{self, master_of_slot, Commands, Topology};
use crate::shared::Shared;

/// How [`Client::doctor`](crate::client::Client::doctor) runs its timed checks.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// Round trips timed for the latency percentiles (`PING`s, one at a time). Default 50; at
    /// least 1.
    pub pings: usize,
    /// How long the server's clock is watched against the client's. Default 3 s; the longer,
    /// the finer the rate it can tell.
    pub clock_window: Duration,
}

impl Default for DoctorOptions {
    fn default() -> Self {
        DoctorOptions { pings: 50, clock_window: Duration::from_secs(3) }
    }
}

/// How a finding bears on lock safety, from harmless to harmful (ordered so).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Severity {
    /// Nothing to do.
    Ok,
    /// Worth knowing: a limit rlock works within, or a choice the operator made knowingly.
    Note,
    /// The endpoint refused or did not answer what the check asks: not known.
    Unknown,
    /// Holds can be lost here (another owner takes the lock) unless something changes.
    Warn,
}

impl Severity {
    /// `"ok"`, `"note"`, `"unknown"` or `"warn"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Note => "note",
            Severity::Unknown => "unknown",
            Severity::Warn => "warn",
        }
    }
}

/// One thing the doctor looked at.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Which check: `topology`, `eviction`, `persistence`, `replicas`, `pubsub`, `scripts`,
    /// `latency` or `clock`.
    pub check: &'static str,
    /// How it bears on lock safety.
    pub status: Severity,
    /// What the endpoint showed, in words.
    pub observed: String,
    /// What rlock does about it.
    pub effect: String,
    /// What to change, when something should.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
    /// The figures behind it, by name (milliseconds as `_ms`, rates as `_ppm`).
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub facts: Map<String, Json>,
}

/// What [`Client::doctor`](crate::client::Client::doctor) found. Names no URL (it may carry
/// a password).
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    /// The server's name and version as `INFO server` gives them (`Redis 7.2.6`); on a cluster,
    /// slot 0's master's. `None` when `INFO` was refused.
    pub server: Option<String>,
    /// `single`, `cluster` or `sentinel`, as the URL named it.
    pub topology: &'static str,
    /// One per check, in a fixed order.
    pub findings: Vec<Finding>,
}

impl DoctorReport {
    /// The most harmful status among the findings (`Ok` when there are none).
    pub fn worst(&self) -> Severity {
        self.findings.iter().map(|f| f.status).max().unwrap_or(Severity::Ok)
    }

    /// The report as one JSON object: `server`, `topology`, `findings` (each `check`, `status`,
    /// `observed`, `effect`, `advice` when there is one, `facts` when there are any), `worst`.
    pub fn to_json(&self) -> String {
        let mut v = serde_json::to_value(self).unwrap_or(Json::Null);
        if let Json::Object(m) = &mut v {
            m.insert("worst".into(), Json::from(self.worst().as_str()));
        }
        v.to_string()
    }

    /// The report for a person: a heading, then each finding as `[status] check: observed`
    /// with what rlock does and what to change on the lines under it, then a count by status.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "{} ({})\n",
            self.server.as_deref().unwrap_or("server name not known (INFO refused)"),
            self.topology
        );
        for f in &self.findings {
            out.push_str(&format!("[{}] {}: {}\n", f.status.as_str(), f.check, f.observed));
            out.push_str(&format!("    rlock: {}\n", f.effect));
            if let Some(a) = &f.advice {
                out.push_str(&format!("    change: {a}\n"));
            }
        }
        let count = |s: Severity| self.findings.iter().filter(|f| f.status == s).count();
        out.push_str(&format!(
            "{} ok, {} note, {} unknown, {} warn\n",
            count(Severity::Ok),
            count(Severity::Note),
            count(Severity::Unknown),
            count(Severity::Warn)
        ));
        out
    }
}

fn finding(check: &'static str, status: Severity, observed: String, effect: &str) -> Finding {
    Finding { check, status, observed, effect: effect.to_owned(), advice: None, facts: Map::new() }
}

impl Finding {
    fn advice(mut self, a: &str) -> Self {
        self.advice = Some(a.to_owned());
        self
    }

    fn fact(mut self, name: &str, value: impl Into<Json>) -> Self {
        self.facts.insert(name.to_owned(), value.into());
        self
    }

    /// [`Finding::fact`] when there is a value; none otherwise.
    fn fact_if(self, name: &str, value: Option<impl Into<Json>>) -> Self {
        match value {
            Some(v) => self.fact(name, v),
            None => self,
        }
    }
}

/// Runs every check on `shared`'s connections (see the module).
pub(crate) async fn examine(shared: &Shared, options: &DoctorOptions) -> DoctorReport {
    let mut conn = shared.conn();
    let server = conn::routed_info(&mut conn, "server").await.as_deref().and_then(conn::server_version);
    let findings = vec![
        topology(shared, &conn).await,
        eviction(&mut conn).await,
        persistence(&mut conn).await,
        replicas(shared, &mut conn).await,
        pubsub(shared),
        scripts(&mut conn).await,
        latency(shared, &mut conn, options.pings.max(1)).await,
        clock(shared, &mut conn, options.clock_window).await,
    ];
    DoctorReport { server, topology: shared.topology().as_str(), findings }
}

async fn topology(shared: &Shared, conn: &Commands) -> Finding {
    let spans = shared.topology() == Topology::Single && conn.spans_tags().await;
    match shared.topology() {
        Topology::Cluster => finding(
            "topology",
            Severity::Ok,
            "a Redis Cluster".into(),
            "routes each command by its key's slot; every script touches the keys of one hash tag",
        ),
        Topology::Sentinel => finding(
            "topology",
            Severity::Ok,
            "a master found through Sentinels".into(),
            "follows the master across failovers (a hold taken just before one may be lost: see replicas)",
        ),
        _ if !spans => finding(
            "topology",
            Severity::Note,
            "one endpoint that refuses a command naming keys of two hash slots (a proxy in front of \
             a sharded cluster, or a sharding proxy)"
                .into(),
            "sends each command and script with the keys of one hash tag, and batches as pipelines of \
             such scripts, so nothing it sends is refused for spanning slots",
        )
        .fact("spans_slots", false),
        _ => finding("topology", Severity::Ok, "one server".into(), "sends everything to it")
            .fact("spans_slots", true),
    }
}

async fn eviction(conn: &mut Commands) -> Finding {
    let Some(policy) = conn::routed_config(conn, "maxmemory-policy").await else {
        return finding(
            "eviction",
            Severity::Unknown,
            "CONFIG GET maxmemory-policy was refused".into(),
            "cannot tell whether the server may evict a held lock's key, so it cannot warn",
        )
        .advice("ask the provider: the locks' server needs maxmemory-policy noeviction");
    };
    let limit = conn::routed_config(conn, "maxmemory").await.and_then(|m| m.parse::<u64>().ok());
    let f = if policy == "noeviction" {
        finding(
            "eviction",
            Severity::Ok,
            "maxmemory-policy noeviction".into(),
            "nothing evicts a held lock's key; at the memory limit writes fail, and acquires with them",
        )
    } else if limit == Some(0) {
        finding(
            "eviction",
            Severity::Note,
            format!("maxmemory-policy {policy}, but no memory limit (maxmemory 0)"),
            "nothing is evicted while there is no limit; with one set, a held lock's key could be \
             evicted like any other and another owner take the lock",
        )
        .advice("set maxmemory-policy noeviction before setting a memory limit")
    } else {
        finding(
            "eviction",
            Severity::Warn,
            format!(
                "maxmemory-policy {policy}{}",
                limit.map(|l| format!(" with maxmemory {l} bytes")).unwrap_or_default()
            ),
            "warns at connect: under memory pressure a held lock's key is evicted like any other, \
             and another owner then takes the lock",
        )
        .advice("maxmemory-policy noeviction on the locks' server (or a server of their own)")
    };
    f.fact("maxmemory_policy", policy).fact_if("maxmemory", limit)
}

async fn persistence(conn: &mut Commands) -> Finding {
    let Some(text) = conn::routed_info(conn, "persistence").await else {
        return finding(
            "persistence",
            Severity::Unknown,
            "INFO persistence was refused".into(),
            "cannot tell what a restart of the server keeps",
        );
    };
    let aof = conn::info_field(&text, "aof_enabled") == Some("1");
    if aof {
        let fsync = conn::routed_config(conn, "appendfsync").await;
        let always = fsync.as_deref() == Some("always");
        finding(
            "persistence",
            if always { Severity::Ok } else { Severity::Note },
            format!("append-only file on (appendfsync {})", fsync.as_deref().unwrap_or("not known")),
            if always {
                "a restart keeps every acquire the server answered"
            } else {
                "a restart may lose the acquires of the last moment before it (about a second with \
                 everysec): a lock taken then is free after the restart"
            },
        )
        .fact("aof", true)
        .fact_if("appendfsync", fsync)
    } else {
        // `save ""` is no snapshots; refused, not known.
        let snapshots = match conn::routed_config(conn, "save").await.as_deref() {
            Some("") => " and no snapshots".to_owned(),
            Some(rules) => format!(", snapshots (save {rules})"),
            None => String::new(),
        };
        finding(
            "persistence",
            Severity::Note,
            format!("append-only file off{snapshots}"),
            "a restart loses the holds not in a snapshot (every one without snapshots): their locks \
             are free after it while their holders still run (they find the hold lost at the next \
             renewal)",
        )
        .advice("appendonly yes (appendfsync always for no loss) where a restart must not free a held lock")
        .fact("aof", false)
    }
}

async fn replicas(shared: &Shared, conn: &mut Commands) -> Finding {
    let replicas = conn::routed_info(conn, "replication")
        .await
        .and_then(|t| conn::info_field(&t, "connected_slaves").and_then(|n| n.parse::<u64>().ok()));
    let wait = ran(conn.route(redis::cmd("WAIT").arg(0).arg(0).clone(), master_of_slot(0)).await);
    let waitaof =
        ran(conn.route(redis::cmd("WAITAOF").arg(0).arg(0).arg(0).clone(), master_of_slot(0)).await);
    let sync = shared.replica_sync();
    let f = match (replicas, wait) {
        (None, _) => finding(
            "replicas",
            Severity::Unknown,
            "INFO replication was refused".into(),
            "cannot tell whether a failover could promote a replica that missed a hold",
        ),
        (Some(0), _) => finding(
            "replicas",
            Severity::Note,
            "no replica connected".into(),
            "nothing to wait for: a hold lives and dies with this server (see persistence)",
        ),
        (Some(n), Some(true)) if sync => finding(
            "replicas",
            Severity::Ok,
            format!("{n} replica(s), WAIT answered"),
            "each acquire waits for a replica to have it (replica sync), so a failover keeps it",
        ),
        (Some(n), Some(true)) => finding(
            "replicas",
            Severity::Note,
            format!("{n} replica(s), WAIT answered"),
            "replica sync is off: a failover right after an acquire may promote a replica without \
             it, and a second owner then takes the lock",
        )
        .advice("replica_sync on (the default on a cluster and with Sentinel)"),
        (Some(n), _) => finding(
            "replicas",
            Severity::Warn,
            format!("{n} replica(s), but WAIT refused or not answered"),
            "cannot wait for a replica: a failover right after an acquire may promote one without \
             it, and a second owner then takes the lock (replica sync fails at connect here)",
        )
        .advice("an endpoint with WAIT, or fencing tokens (the fenced lock) where a failover must not let two owners act"),
    };
    f.fact("replica_sync", sync)
        .fact_if("replicas", replicas)
        .fact_if("wait", wait)
        .fact_if("waitaof", waitaof)
}

fn pubsub(shared: &Shared) -> Finding {
    if !shared.pubsub().available() {
        return finding(
            "pubsub",
            Severity::Note,
            "no pub/sub (SUBSCRIBE refused)".into(),
            "waiters poll with back-off (every poll_interval at most) instead of waking on a \
             release message: a hand-off takes up to that long",
        )
        .advice("an endpoint with SUBSCRIBE, or a shorter poll_interval where hand-offs must be quick")
        .fact("available", false);
    }
    let sharded = shared.sharded();
    finding(
        "pubsub",
        Severity::Ok,
        if sharded { "sharded pub/sub (SSUBSCRIBE)" } else { "pub/sub (SUBSCRIBE)" }.into(),
        "waiters sleep until a release message, with a timed look as a fallback",
    )
    .fact("available", true)
    .fact("sharded", sharded)
}

/// The probes' keys: one hash tag, never written.
const PROBE_KEY: &str = "rlock:doctor:{probe}";
const PROBE_OTHER: &str = "rlock:doctor:{probe}:other";

async fn scripts(conn: &mut Commands) -> Finding {
    let run = |script: &str, args: &[&str]| {
        let mut cmd = redis::cmd("EVAL");
        cmd.arg(script).arg(1).arg(PROBE_KEY);
        for a in args {
            cmd.arg(*a);
        }
        cmd
    };
    let literal = ran(conn.query::<Value>(&run("return redis.call('EXISTS', KEYS[1])", &[])).await);
    let dynamic = ran(conn.query::<Value>(&run("return redis.call(ARGV[1], KEYS[1])", &["EXISTS"])).await);
    let undeclared =
        ran(conn.query::<Value>(&run("return redis.call('EXISTS', ARGV[1])", &[PROBE_OTHER])).await);
    let said = |r: Option<bool>| match r {
        Some(true) => "ran",
        Some(false) => "refused",
        None => "not answered",
    };
    let observed = format!(
        "literal command names {}; a name from ARGV {}; a key not in KEYS {}",
        said(literal),
        said(dynamic),
        said(undeclared)
    );
    let f = match literal {
        Some(true) => finding(
            "scripts",
            Severity::Ok,
            observed,
            "its scripts name their commands literally and pass every key in KEYS, so they run \
             where either of the others is refused",
        ),
        Some(false) => finding(
            "scripts",
            Severity::Warn,
            observed,
            "every lock operation is a script: none can run here",
        )
        .advice("an endpoint that runs Lua scripts (EVAL / EVALSHA)"),
        None => {
            finding("scripts", Severity::Unknown, observed, "could not tell whether its scripts run here")
        }
    };
    let as_json = |r: Option<bool>| r.map_or(Json::Null, Json::from);
    f.fact("literal", as_json(literal))
        .fact("dynamic_name", as_json(dynamic))
        .fact("undeclared_key", as_json(undeclared))
}

/// Whether a command ran (an answer), was refused (an error answer, `CROSSSLOT` among them),
/// or got no answer (`None`).
fn ran<T>(reply: redis::RedisResult<T>) -> Option<bool> {
    match reply {
        Ok(_) => Some(true),
        Err(e) if conn::answered_nothing(&e) => None,
        Err(_) => Some(false),
    }
}

async fn latency(shared: &Shared, conn: &mut Commands, pings: usize) -> Finding {
    let mut took = Vec::with_capacity(pings);
    for _ in 0..pings {
        let sent = Instant::now();
        if conn.query::<Value>(&redis::cmd("PING")).await.is_err() {
            return finding(
                "latency",
                Severity::Unknown,
                "PING was refused or not answered".into(),
                "cannot time a round trip, so cannot compare it with the lease doubt margin",
            );
        }
        took.push(sent.elapsed());
    }
    took.sort();
    let at = |q: f64| took[((took.len() as f64 * q).ceil() as usize).clamp(1, took.len()) - 1];
    let ms = |d: Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
    let (p50, p90, p99, max) = (at(0.5), at(0.9), at(0.99), took[took.len() - 1]);
    let margin = shared.options().lease_doubt_margin;
    let observed = format!(
        "{pings} round trips: p50 {} ms, p90 {} ms, p99 {} ms, max {} ms",
        ms(p50),
        ms(p90),
        ms(p99),
        ms(max)
    );
    let f = if max < margin {
        finding(
            "latency",
            Severity::Ok,
            observed,
            "renewals come back well within the lease doubt margin, so holders are not told their \
             lease is in doubt for a slow reply",
        )
    } else {
        finding(
            "latency",
            Severity::Note,
            observed,
            "a round trip as slow as the lease doubt margin makes holders give a hold up as lost \
             while its lease may still run (safe, but holds end early)",
        )
        .advice("a closer endpoint, or a longer lease_doubt_margin and watchdog_timeout")
    };
    f.fact("pings", pings)
        .fact("p50_ms", ms(p50))
        .fact("p90_ms", ms(p90))
        .fact("p99_ms", ms(p99))
        .fact("max_ms", ms(max))
        .fact("lease_doubt_margin_ms", ms(margin))
}

/// The server's `TIME` as microseconds, with the local instant halfway through its round trip
/// and the round trip's length; `None` when refused.
async fn server_time(conn: &mut Commands) -> Option<(i128, Instant, Duration)> {
    let sent = Instant::now();
    let (secs, micros): (i64, i64) = conn.query(&redis::cmd("TIME")).await.ok()?;
    let rtt = sent.elapsed();
    Some((i128::from(secs) * 1_000_000 + i128::from(micros), sent + rtt / 2, rtt))
}

async fn clock(shared: &Shared, conn: &mut Commands, window: Duration) -> Finding {
    let refused = || {
        finding(
            "clock",
            Severity::Unknown,
            "TIME was refused or not answered".into(),
            "cannot compare the server's clock rate with this machine's",
        )
    };
    let Some((s0, l0, r0)) = server_time(conn).await else { return refused() };
    tokio::time::sleep(window).await;
    let Some((s1, l1, r1)) = server_time(conn).await else { return refused() };
    let local = l1.duration_since(l0).as_micros() as f64;
    if local <= 0.0 {
        return refused();
    }
    let server = (s1 - s0) as f64;
    // Where in each round trip the server read its clock is not known: half of each.
    let uncertainty = (r0 + r1).as_micros() as f64 / 2.0 + 2.0;
    let ppm = (server - local) / local * 1e6;
    let give = uncertainty / local * 1e6;
    let options = shared.options();
    // A server clock faster by r ends a lease r x lease early on the server; the holder is
    // told `lease_doubt_margin` before its local end, so a rate within margin / lease is safe.
    let tolerated = options.lease_doubt_margin.as_secs_f64() / options.watchdog_timeout.as_secs_f64() * 1e6;
    let round = |x: f64| x.round();
    let observed = format!(
        "over {:.1} s the server's clock ran {} ppm {} than this machine's (within {} ppm)",
        local / 1e6,
        round(ppm.abs()),
        if ppm >= 0.0 { "faster" } else { "slower" },
        round(give)
    );
    let f = if ppm - give > tolerated {
        finding(
            "clock",
            Severity::Warn,
            observed,
            "leases end on the server's clock: one that runs this much faster ends a lease before \
             the holder's own clock says it is in doubt, and another owner may take the lock first",
        )
        .advice("fix the server's (or this machine's) clock, or a longer lease_doubt_margin")
    } else {
        finding(
            "clock",
            Severity::Ok,
            observed,
            "leases end on the server's clock, holders judge them on their own: at this rate the \
             lease doubt margin covers the difference",
        )
    };
    f.fact("rate_ppm", round(ppm))
        .fact("uncertainty_ppm", round(give))
        .fact("tolerated_ppm", round(tolerated))
        .fact("window_ms", json!((local / 1e3).round()))
}
