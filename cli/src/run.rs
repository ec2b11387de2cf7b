//! `rlock run`: holds a lock (or a permit) while a command runs.

use std::process::ExitStatus;
use std::time::Duration;

use clap::Args;
use tokio::process::Command;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::{connect, duration, exit, failure};

/// Arguments of `rlock run`.
#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// The lock name (its Redis key; Redisson's layout).
    name: String,
    /// Give up after waiting this long for the lock (exit 75); default: wait as long as it takes.
    #[arg(long, value_parser = duration)]
    wait: Option<Duration>,
    /// A fixed lease: the hold ends by itself after this long, even while CMD runs (then rlock
    /// exits 76). Default: the watchdog renews the hold until CMD ends.
    #[arg(long, value_parser = duration)]
    lease: Option<Duration>,
    /// Take a fair lock (Redisson RFairLock): granted in arrival order.
    #[arg(long, conflicts_with = "semaphore")]
    fair: bool,
    /// Take a spin lock (Redisson RSpinLock): the lock of NAME, but waiting runs poll with
    /// back-off instead of subscribing, and the release publishes nothing.
    #[arg(long, conflicts_with_all = ["semaphore", "fair"])]
    spin: bool,
    /// Let at most N runs share NAME: each takes a permit of the permit-expirable semaphore
    /// NAME (set to N permits when it does not exist yet), which comes back by itself if rlock
    /// dies.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    semaphore: Option<u64>,
    /// After a lost hold, how long CMD has between SIGTERM and SIGKILL.
    #[arg(long, value_parser = duration, default_value = "10s")]
    lost_grace: Duration,
    /// The watchdog lease (renewed every third of it while CMD runs).
    #[arg(long, value_parser = duration)]
    watchdog_timeout: Option<Duration>,
    /// The name `rlock status` shows for this holder ("held by NAME on HOST, pid PID");
    /// default: "rlock run CMD" (CMD's file name).
    #[arg(long, value_name = "NAME")]
    app_name: Option<String>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

/// What `rlock run` holds.
enum Held {
    Lock(rlock::Lock, rlock::Owner),
    Permit(rlock::PermitExpirableSemaphore, String),
}

impl Held {
    /// Releases; `Err(code)` with the exit code when that failed.
    async fn release(self) -> Result<(), u8> {
        let result = match &self {
            Held::Lock(lock, owner) => lock.release(owner).await.map(drop),
            Held::Permit(sem, id) => sem.release(id).await,
        };
        match result {
            Ok(()) => Ok(()),
            Err(e) if matches!(e.kind(), rlock::ErrorKind::Lost | rlock::ErrorKind::NotHeld) => {
                eprintln!("rlock: the hold was lost before the release: {e}");
                Err(exit::LOST)
            }
            Err(e) => Err(failure("release failed (the lease will run out by itself)", &e)),
        }
    }
}

/// Signals rlock forwards to the command.
const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

pub(crate) async fn run(url: Option<&str>, args: RunArgs) -> u8 {
    let mut options = rlock::ClientOptions::default();
    if let Some(w) = args.watchdog_timeout {
        options = options.with_watchdog_timeout(w);
    }
    options = options.with_app_name(Some(app_name(&args)));
    // Signals are caught from the start: one that comes while we wait ends the wait.
    let (sig_tx, mut sig_rx) = mpsc::unbounded_channel();
    for s in FORWARDED {
        match signal(SignalKind::from_raw(s)) {
            Ok(mut stream) => {
                let tx = sig_tx.clone();
                tokio::spawn(async move {
                    while stream.recv().await.is_some() {
                        if tx.send(s).is_err() {
                            break;
                        }
                    }
                });
            }
            Err(e) => eprintln!("rlock: cannot catch signal {s}: {e}"),
        }
    }
    let client = match connect(url, options).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let (lost_tx, mut lost_rx) = mpsc::unbounded_channel::<String>();
    let acquired = tokio::select! {
        held = acquire(&client, &args, lost_tx) => held,
        Some(s) = sig_rx.recv() => {
            // The acquire is cancel-safe: dropping it leaves nothing held.
            eprintln!("rlock: signal {s} while waiting for '{}'", args.name);
            client.close();
            return 128 + s as u8;
        }
    };
    let held = match acquired {
        Ok(Some(held)) => held,
        Ok(None) => {
            eprintln!(
                "rlock: '{}' was not acquired within {}",
                args.name,
                humantime::format_duration(args.wait.unwrap_or_default())
            );
            client.close();
            return exit::NOT_ACQUIRED;
        }
        Err(code) => {
            client.close();
            return code;
        }
    };

    let mut lost = false;
    let code = match Command::new(&args.command[0]).args(&args.command[1..]).spawn() {
        Err(e) => {
            eprintln!("rlock: cannot run {:?}: {e}", args.command[0]);
            if e.kind() == std::io::ErrorKind::NotFound {
                exit::NOT_FOUND
            } else {
                exit::CANNOT_EXECUTE
            }
        }
        Ok(mut child) => {
            let pid = child.id().and_then(|p| libc::pid_t::try_from(p).ok());
            let kill = |s: libc::c_int| {
                if let Some(pid) = pid {
                    // SAFETY: kill(2) with our own child's pid (not reaped before the wait
                    // below returns) and a valid signal number.
                    unsafe { libc::kill(pid, s) };
                }
            };
            let status: std::io::Result<ExitStatus> = loop {
                tokio::select! {
                    status = child.wait() => break status,
                    Some(s) = sig_rx.recv() => kill(s),
                    Some(why) = lost_rx.recv(), if !lost => {
                        lost = true;
                        eprintln!(
                            "rlock: lost the hold of '{}' ({why}): stopping the command (SIGTERM, SIGKILL after {})",
                            args.name,
                            humantime::format_duration(args.lost_grace)
                        );
                        kill(libc::SIGTERM);
                        let grace = tokio::time::sleep(args.lost_grace);
                        tokio::pin!(grace);
                        let ended = loop {
                            tokio::select! {
                                status = child.wait() => break Some(status),
                                Some(s) = sig_rx.recv() => kill(s),
                                () = &mut grace => break None,
                            }
                        };
                        match ended {
                            Some(status) => break status,
                            None => {
                                kill(libc::SIGKILL);
                                break child.wait().await;
                            }
                        }
                    }
                }
            };
            match status {
                Ok(status) => status_code(status),
                Err(e) => {
                    eprintln!("rlock: waiting for the command failed: {e}");
                    exit::UNAVAILABLE
                }
            }
        }
    };
    let released = held.release().await;
    client.close();
    match released {
        _ if lost => exit::LOST,
        Err(code) => code,
        Ok(()) => code,
    }
}

/// The app name of the holder record: `--app-name`, else `rlock run <CMD's file name>` (at most
/// 128 characters, control characters replaced).
fn app_name(args: &RunArgs) -> String {
    let name = args.app_name.clone().unwrap_or_else(|| {
        let cmd = args.command.first().map(String::as_str).unwrap_or_default();
        format!("rlock run {}", cmd.rsplit('/').next().unwrap_or(cmd))
    });
    name.chars().map(|c| if c.is_control() { '?' } else { c }).take(128).collect()
}

/// Takes the lock or permit; `Ok(None)` when `--wait` ran out. Lost-hold reports go to `lost`.
async fn acquire(
    client: &rlock::Client,
    args: &RunArgs,
    lost: mpsc::UnboundedSender<String>,
) -> Result<Option<Held>, u8> {
    let name = &args.name;
    if let Some(n) = args.semaphore {
        let sem = client.permit_expirable_semaphore(name).map_err(|e| failure("bad name", &e))?;
        sem.try_set_permits(n, None).await.map_err(|e| failure("cannot set the permits", &e))?;
        let permit = match args.wait {
            Some(w) => sem.try_acquire(w, args.lease).await,
            None => sem.acquire(args.lease).await.map(Some),
        }
        .map_err(|e| failure("acquire failed", &e))?;
        let Some(permit) = permit else { return Ok(None) };
        let id = permit.keep();
        let mine = id.clone();
        let tell = lost.clone();
        sem.on_lost(move |e| {
            if e.permit_id.as_deref() == Some(mine.as_str()) {
                let _ = tell.send(e.reason.as_str().to_owned());
            }
        });
        // Lost before the listener was there: reported all the same.
        if sem.is_lost(&id) {
            let _ = lost.send("gone".to_owned());
        }
        return Ok(Some(Held::Permit(sem, id)));
    }
    let lock = if args.fair {
        client.fair_lock(name)
    } else if args.spin {
        client.spin_lock(name)
    } else {
        client.lock(name)
    }
    .map_err(|e| failure("bad name", &e))?;
    let owner = client.new_owner();
    let got = match args.wait {
        Some(w) => lock.try_acquire(&owner, w, args.lease).await,
        None => match args.lease {
            Some(l) => lock.acquire_with_lease(&owner, l).await.map(|()| true),
            None => lock.acquire(&owner).await.map(|()| true),
        },
    }
    .map_err(|e| failure("acquire failed", &e))?;
    if !got {
        return Ok(None);
    }
    let tell = lost.clone();
    lock.on_lost(Some(&owner), move |e| {
        let _ = tell.send(e.reason.as_str().to_owned());
    });
    // Lost before the listener was there: reported all the same.
    if lock.is_lost(&owner) {
        let _ = lost.send("gone".to_owned());
    }
    Ok(Some(Held::Lock(lock, owner)))
}

/// A shell's view of how a process ended: its exit code, or 128 + the signal that killed it.
fn status_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(s)) => 128u8.wrapping_add(s as u8),
        (None, None) => exit::UNAVAILABLE,
    }
}
