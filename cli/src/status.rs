//! `rlock status` and `rlock list`: what lives under names, read without changing anything
//! (core's `Client::describe` and `Client::list`), as a table or as core's JSON.

use std::fmt::Write as _;
use std::time::Duration;

use clap::Args;
use rlock::{ClientRecord, Description, Kind, Listed};

use crate::{connect, exit, failure};

/// Arguments of `rlock status`.
#[derive(Args, Debug)]
pub(crate) struct StatusArgs {
    /// The names to describe (their Redis keys).
    #[arg(required = true, value_name = "NAME")]
    names: Vec<String>,
    /// Print a JSON array with one description per NAME (the shape of core's `Description`;
    /// snake_case keys, times in Unix ms, durations in ms) instead of the table.
    #[arg(long)]
    json: bool,
    /// Read each NAME as this kind where the keys cannot tell: a semaphore from a count-down
    /// latch, a fair lock nobody waits for from a lock. A kind as printed (lock, fenced_lock,
    /// fair_lock, read_write_lock, semaphore, permit_expirable_semaphore, count_down_latch; `-`
    /// may stand for `_`), or fair, fenced, rw, pes, latch.
    #[arg(long, value_name = "KIND", value_parser = kind_arg)]
    kind: Option<Kind>,
}

/// Arguments of `rlock list`.
#[derive(Args, Debug)]
pub(crate) struct ListArgs {
    /// A Redis glob matched against key names (SCAN MATCH); a primitive is found when its key
    /// or one of its helper keys matches. Default: every key.
    #[arg(value_name = "PATTERN")]
    pattern: Option<String>,
    /// Print a JSON array of {"name", "kind"} objects instead of the table.
    #[arg(long)]
    json: bool,
    /// Stop after this many names.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    limit: Option<u64>,
}

fn kind_arg(s: &str) -> Result<Kind, String> {
    Kind::parse(s).map_err(|e| e.message().to_owned())
}

/// A duration in ms the way people read it: `850 ms`, `4.2 s`, `12 s`, `3 min 20 s`, `2 h 5 min`.
pub(crate) fn human(d: Duration) -> String {
    let ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let s = ms / 1000;
    match ms {
        0..=999 => format!("{ms} ms"),
        1000..=9_999 => format!("{:.1} s", ms as f64 / 1000.0),
        10_000..=119_999 => format!("{s} s"),
        120_000..=7_199_999 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, s / 60 % 60),
    }
}

/// "billing on worker-3, pid 4121": who a client is.
fn who(r: &ClientRecord) -> String {
    let app = r.app.as_deref().unwrap_or("an rlock client");
    format!("{app} on {}, pid {}", r.host, r.pid)
}

/// The table of one description.
fn table(d: &Description) -> String {
    let mut out = String::new();
    let kind = match d.kind {
        Kind::Other => format!("other (a Redis {}, not a primitive)", d.redis_type),
        Kind::None => "none (nothing under this name)".to_owned(),
        k => k.as_str().to_owned(),
    };
    let _ = writeln!(out, "{}\n  kind      {kind}", d.name);
    if d.redis_type != "none" {
        let ttl = d.ttl.map_or_else(|| "none (no expiry)".to_owned(), human);
        let _ = writeln!(out, "  ttl       {ttl}");
    }
    for h in &d.holders {
        let mode = h.mode.as_deref().map(|m| format!("{m}, ")).unwrap_or_default();
        let holds = if h.count == 1 { "1 hold".to_owned() } else { format!("{} holds", h.count) };
        let by = match &h.record {
            Some(r) => {
                let since = h.held_for.map(|t| format!(", for {}", human(t))).unwrap_or_default();
                format!("held by {}{since}", who(r))
            }
            None => "no holder record (not an rlock client, e.g. Redisson, or records are off)".to_owned(),
        };
        let _ = writeln!(out, "  holder    {} ({mode}{holds}): {by}", h.owner);
    }
    if let Some(t) = d.token {
        let _ = writeln!(out, "  token     {t} (the last one given out)");
    }
    if let Some(n) = d.available_permits {
        let held = d.permits_held.map(|h| format!(", {h} held")).unwrap_or_default();
        let _ = writeln!(out, "  permits   {n} free{held}");
    }
    for p in &d.permits {
        let expires = match (p.expires, p.expires_in) {
            (Some(_), Some(left)) if !left.is_zero() => format!("expires in {}", human(left)),
            (Some(at), _) => format!("expired {} ago", human(d.now.duration_since(at).unwrap_or_default())),
            (None, _) => "no lease".to_owned(),
        };
        let by = match &p.record {
            Some(r) => {
                let since = p.held_for.map(|t| format!(", for {}", human(t))).unwrap_or_default();
                format!("held by {}{since}", who(r))
            }
            None => "no holder record".to_owned(),
        };
        let _ = writeln!(out, "  permit    {}: {expires}, {by}", p.id);
    }
    if let Some(c) = d.count {
        let _ = writeln!(out, "  count     {c}{}", if c <= 0 { " (open)" } else { "" });
    }
    let subscribed: Vec<String> = d
        .channels
        .iter()
        .filter(|c| c.subscribers > 0)
        .map(|c| format!("{} on {}", c.subscribers, c.channel))
        .collect();
    let _ = writeln!(
        out,
        "  waiters   {}{}",
        d.waiters,
        if subscribed.is_empty() { String::new() } else { format!(" ({})", subscribed.join(", ")) }
    );
    for (i, q) in d.queue.iter().enumerate() {
        let deadline = match (q.deadline, q.deadline_in) {
            (Some(_), Some(left)) if !left.is_zero() => format!("deadline in {}", human(left)),
            (Some(at), _) => {
                format!("deadline passed {} ago", human(d.now.duration_since(at).unwrap_or_default()))
            }
            (None, _) => "no deadline".to_owned(),
        };
        let by = q.record.as_ref().map(|r| format!(", {}", who(r))).unwrap_or_default();
        let _ = writeln!(out, "  queue {:<3} {}: {deadline}{by}", i + 1, q.owner);
    }
    if let Some(n) = d.queue_length.filter(|n| *n > d.queue.len() as u64) {
        let _ = writeln!(out, "  queue     {n} waiting in all");
    }
    for n in &d.notes {
        let _ = writeln!(out, "  note      {n}");
    }
    out
}

/// `rlock status NAME...`.
pub(crate) async fn status(url: Option<&str>, args: StatusArgs) -> u8 {
    let client = match connect(url, rlock::ClientOptions::default()).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut found = Vec::with_capacity(args.names.len());
    for name in &args.names {
        let d = match args.kind {
            Some(k) => client.describe_as(name, k).await,
            None => client.describe(name).await,
        };
        match d {
            Ok(d) => found.push(d),
            Err(e) => {
                client.close();
                return failure(&format!("cannot describe '{name}'"), &e);
            }
        }
    }
    client.close();
    if args.json {
        match serde_json::to_string_pretty(&found) {
            Ok(json) => print(&json),
            Err(e) => {
                eprintln!("rlock: cannot encode JSON: {e}");
                return exit::UNAVAILABLE;
            }
        }
    } else {
        print(&found.iter().map(table).collect::<Vec<_>>().join("\n"));
    }
    if found.iter().any(|d| d.kind == Kind::None && d.waiters == 0) {
        exit::NOTHING
    } else {
        0
    }
}

/// `rlock list [PATTERN]`.
pub(crate) async fn list(url: Option<&str>, args: ListArgs) -> u8 {
    let client = match connect(url, rlock::ClientOptions::default()).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let limit = args.limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let listed: Vec<Listed> = match client.list(args.pattern.as_deref(), limit).await {
        Ok(l) => l,
        Err(e) => {
            client.close();
            return failure("cannot list", &e);
        }
    };
    client.close();
    if args.json {
        match serde_json::to_string_pretty(&listed) {
            Ok(json) => print(&json),
            Err(e) => {
                eprintln!("rlock: cannot encode JSON: {e}");
                return exit::UNAVAILABLE;
            }
        }
    } else {
        let width = listed.iter().map(|l| l.kind.as_str().len()).max().unwrap_or(0);
        let lines: Vec<String> =
            listed.iter().map(|l| format!("{:<width$}  {}", l.kind.as_str(), l.name)).collect();
        if !lines.is_empty() {
            print(&lines.join("\n"));
        }
    }
    if listed.is_empty() {
        exit::NOTHING
    } else {
        0
    }
}

/// Writes `text` and a newline to stdout (a closed pipe, as `| head` makes, is not an error).
pub(crate) fn print(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", text.trim_end_matches('\n'));
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_people_write_them() {
        let ms = Duration::from_millis;
        assert_eq!(human(ms(850)), "850 ms");
        assert_eq!(human(ms(4_200)), "4.2 s");
        assert_eq!(human(ms(12_000)), "12 s");
        assert_eq!(human(ms(200_000)), "3 min 20 s");
        assert_eq!(human(ms(7_500_000)), "2 h 5 min");
    }
}
