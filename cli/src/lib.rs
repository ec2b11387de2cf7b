//! `rlock`: run a command under a distributed lock (like `flock(1)` across machines), show
//! what lives under names and list them, force-unlock locks, examine an endpoint and sweep leftovers, on the locks of the rlock core (Redisson's layout, so Java services on
//! Redisson and rlock users in any language share them).
//!
//! The command is a thin layer: it parses arguments, calls core, and maps outcomes to exit
//! codes (see [`exit`]). The crate is a library with the binary as one line over [`main`], so
//! the argument parsing can be fuzzed ([`fuzz`]); the library is not an API of its own.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

mod doctor;
#[doc(hidden)]
pub mod fuzz;
mod refusal;
mod run;
mod status;
mod sweep;

/// Exit codes of `rlock` (besides the command's own status, passed through by `rlock run`).
pub mod exit {
    /// Bad usage (clap's own code for argument errors).
    pub const USAGE: u8 = 2;
    /// Redis could not be reached or refused a command (connection, timeout, a Redis error).
    pub const UNAVAILABLE: u8 = 69;
    /// `rlock run`: the lock (or permit) was not acquired within `--wait`.
    pub const NOT_ACQUIRED: u8 = 75;
    /// `rlock run`: the hold was lost while the command ran (or found lost at the final
    /// release); the command was signalled if it was still running.
    pub const LOST: u8 = 76;
    /// `rlock force-unlock`: declined at the prompt.
    pub const DECLINED: u8 = 1;
    /// `rlock status`: nothing under a NAME (no key, no waiter); `rlock list`: no name found.
    /// Like grep's "no match": the output is still complete.
    pub const NOTHING: u8 = 1;
    /// `rlock doctor`: a finding warns (holds can be lost on that endpoint unless something
    /// changes); the report is still complete.
    pub const WARNED: u8 = 1;
    /// `rlock sweep`: leftovers were found and left (without `--delete`, or a key that could
    /// not be looked at); the report is still complete.
    pub const LEFT: u8 = 1;
    /// `rlock run`: the command could not be executed (found, but not runnable).
    pub const CANNOT_EXECUTE: u8 = 126;
    /// `rlock run`: the command was not found.
    pub const NOT_FOUND: u8 = 127;
}

const AFTER_HELP: &str = "\
Exit codes:
  0      success (rlock status: something under every NAME; rlock list: names found)
  0-255  rlock run: the command's own status (128+N when a signal N ended it)
  1      rlock force-unlock: declined at the prompt; rlock status: nothing (no key, no
         waiter) under one of the NAMEs; rlock list: no name found; rlock doctor: a
         finding warns; rlock sweep: leftovers found and left
  2      bad usage (also a bad NAME, e.g. an empty one)
  69     Redis could not be reached, or refused a command
  75     rlock run: not acquired within --wait
  76     rlock run: the hold was lost while the command ran, or found lost at the final release
  126    rlock run: the command could not be executed
  127    rlock run: the command was not found

Durations are written the human way: 500ms, 30s, 5m, 1h 30m.";

/// Distributed locks on Redis, shared with Redisson (Java) and the rlock libraries.
#[derive(Parser, Debug)]
#[command(name = "rlock", version, about, after_help = AFTER_HELP)]
struct Cli {
    /// Redis URL: redis://, rediss://, redis+cluster://h1:p1,h2:p2/, redis+sentinel://h1:p1/service.
    #[arg(long, env = "REDIS_URL", global = true, hide_env_values = true)]
    url: Option<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs CMD while holding the lock NAME: like flock(1), across machines.
    ///
    /// Without --lease the watchdog keeps the hold alive for as long as CMD runs, and no longer:
    /// if rlock dies, the lock frees itself within the watchdog timeout (30 s). SIGINT, SIGTERM
    /// and SIGHUP sent to rlock are forwarded to CMD. If the hold is lost while CMD runs, CMD gets
    /// SIGTERM, then SIGKILL after --lost-grace, and rlock exits with 76.
    #[command(after_help = AFTER_HELP)]
    Run(run::RunArgs),
    /// Shows what lives under each NAME, changing nothing: the kind (lock, fenced_lock,
    /// fair_lock, read_write_lock, semaphore, permit_expirable_semaphore, count_down_latch;
    /// semaphore_or_latch when nobody waits to tell them apart; other; none), the holders with
    /// their hold counts and who they are ("held by billing on worker-3, pid 4121, for 12 s",
    /// from rlock clients' holder records), the TTL, the waiters (subscribers of its channels),
    /// a fair lock's queue with deadlines, a fenced lock's token, a semaphore's permits.
    #[command(after_help = AFTER_HELP)]
    Status(status::StatusArgs),
    /// Lists the names of locks and synchronizers in Redis, found with SCAN (on every master
    /// of a cluster; never KEYS), with their kinds. Helper keys (token counters, queues,
    /// permit sets, latches, holder records) are not listed themselves: they name their
    /// primitive. Any integer string counts as a semaphore_or_latch.
    #[command(after_help = AFTER_HELP)]
    List(status::ListArgs),
    /// Deletes the lock NAME whoever holds it (its holders find it lost), after asking.
    #[command(after_help = AFTER_HELP)]
    ForceUnlock(ForceUnlockArgs),
    /// Examines an endpoint for lock safety, changing nothing: topology (one server, Cluster,
    /// Sentinel, a proxy that refuses commands spanning slots), eviction policy and memory
    /// limit, persistence, replicas and whether WAIT/WAITAOF run, pub/sub, which scripts run,
    /// round-trip latency percentiles, and the server's clock rate against this machine's.
    /// Each finding says what rlock does about it and what to change.
    #[command(after_help = AFTER_HELP)]
    Doctor(doctor::DoctorArgs),
    /// Finds keys holding what nothing can use any more: a fair lock's waiters past their
    /// deadline (crashed without giving up), a permit-expirable semaphore's permits past their
    /// lease, request latches without an expiry. Reports them; removes them only with --delete,
    /// each key checked again by the script that removes (expired permits go back to the
    /// count, announced to waiters). Never touches a fenced lock's token counter: deleted, it
    /// would restart at 1 and a store that keeps the highest token would refuse every write.
    #[command(after_help = AFTER_HELP)]
    Sweep(sweep::SweepArgs),
}

/// Arguments of `rlock force-unlock`.
#[derive(Args, Debug)]
struct ForceUnlockArgs {
    /// The lock name (its Redis key).
    name: String,
    /// Which lock the name is.
    #[arg(long, value_enum, default_value_t = LockKind::Lock)]
    kind: LockKind,
    /// Do not ask.
    #[arg(long, short = 'y')]
    yes: bool,
}

/// The locks `force-unlock` knows.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum LockKind {
    /// A reentrant or fenced lock (Redisson RLock, RFencedLock).
    Lock,
    /// A fair lock (Redisson RFairLock): its waiting queue is kept.
    Fair,
    /// A read-write lock (Redisson RReadWriteLock): readers and writer.
    ReadWrite,
}

/// Parses a human duration (`500ms`, `30s`, `5m`).
pub(crate) fn duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{e} (write durations like 500ms, 30s, 5m)"))
}

/// The exit code of a core error that ends a command.
pub(crate) fn failure(what: &str, e: &rlock::Error) -> u8 {
    eprintln!("rlock: {what}: {e}");
    match e.kind() {
        rlock::ErrorKind::InvalidArgument => exit::USAGE,
        _ => exit::UNAVAILABLE,
    }
}

/// Connects to `url` (else `REDIS_URL`'s default through core).
pub(crate) async fn connect(url: Option<&str>, options: rlock::ClientOptions) -> Result<rlock::Client, u8> {
    let url = url.map_or_else(rlock::default_url, str::to_owned);
    rlock::Client::connect(&url, options).await.map_err(|e| failure("cannot connect", &e))
}

async fn force_unlock(url: Option<&str>, args: ForceUnlockArgs) -> u8 {
    if !args.yes && !confirm(&format!("Delete lock '{}' whoever holds it? [y/N] ", args.name)) {
        eprintln!("rlock: not unlocked");
        return exit::DECLINED;
    }
    let client = match connect(url, rlock::ClientOptions::default()).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let lock = match args.kind {
        LockKind::Lock => client.lock(&args.name),
        LockKind::Fair => client.fair_lock(&args.name),
        LockKind::ReadWrite => client.read_write_lock(&args.name).map(|rw| rw.write_lock()),
    };
    let result = match lock {
        Ok(lock) => lock.force_unlock().await,
        Err(e) => Err(e),
    };
    client.close();
    match result {
        Ok(true) => {
            eprintln!("rlock: '{}' unlocked", args.name);
            0
        }
        Ok(false) => {
            eprintln!("rlock: '{}' was not locked", args.name);
            0
        }
        Err(e) => failure("force-unlock failed", &e),
    }
}

/// Asks on stderr and reads a yes from stdin.
fn confirm(question: &str) -> bool {
    use std::io::Write;
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer).is_ok() && matches!(answer.trim(), "y" | "Y" | "yes" | "YES")
}

/// The `rlock` command: parses the process's arguments (a refusal is printed as clap renders
/// it, passwords masked, with [`exit::USAGE`]), runs the subcommand, and gives its exit code.
pub fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(e) => return refusal::exit(&e, &argv),
    };
    // Core's warnings (an evicting server, a give-back that failed) on stderr, each line
    // marked with its level; stdout stays the command's output.
    rlock::set_log_sink(Some(std::sync::Arc::new(|level, _target: &str, message: &str| {
        use std::io::Write;
        let level = match level {
            rlock::LogLevel::Error => "error",
            rlock::LogLevel::Warn => "warning",
            rlock::LogLevel::Info => return,
        };
        // Not eprintln!: it panics when stderr is a closed pipe.
        let _ = writeln!(
            std::io::stderr(),
            "rlock: {level}: {}",
            message.strip_prefix("rlock: ").unwrap_or(message)
        );
    })));
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rlock: cannot start: {e}");
            return ExitCode::from(exit::UNAVAILABLE);
        }
    };
    let url = cli.url.as_deref();
    let code = rt.block_on(async {
        match cli.command {
            Command::Run(args) => run::run(url, args).await,
            Command::Status(args) => status::status(url, args).await,
            Command::List(args) => status::list(url, args).await,
            Command::ForceUnlock(args) => force_unlock(url, args).await,
            Command::Doctor(args) => doctor::doctor(url, args).await,
            Command::Sweep(args) => sweep::sweep(url, args).await,
        }
    });
    ExitCode::from(code)
}
