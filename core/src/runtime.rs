//! One tokio runtime per process, for the surfaces that own theirs (the C ABI and Python; Node
//! gives napi one made by [`build_runtime`], Rust users bring their own). Feature
//! `process-runtime`.
//!
//! After `fork()` the child has none of the parent's runtime threads, so a runtime is kept
//! with the pid that made it: a child that asks for one gets a fresh runtime, and a client made
//! in another process fails with [`ErrorKind::Forked`] instead of
//! hanging ([`check_process`]). Runtimes are never dropped (a child must not join or touch
//! threads it does not have), and they are swapped without a lock that a child could inherit
//! held.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use tokio::runtime::{Handle, Runtime};

use crate::error::{Error, ErrorKind, Result};

struct ProcessRuntime {
    pid: u32,
    runtime: Runtime,
    /// The runtime a child inherited, kept reachable for leak checkers.
    #[allow(dead_code)]
    previous: *mut ProcessRuntime,
}

static CURRENT: AtomicPtr<ProcessRuntime> = AtomicPtr::new(ptr::null_mut());

/// How many workers the runtime of a surface has (C, Python, Node): one. The surfaces poll
/// their calls on the callers' own threads, so the workers only run the connections, timers,
/// watchdog and pub/sub, and on a machine with few cores a second worker mostly adds wake-ups
/// between threads. In A/B runs on two cores, one worker against two: Python asyncio with 256
/// tasks 44.6-47.0k pairs/s against 36.9-40.9k; Node with 64 handles 56-58k against 45-47k;
/// C with 64 threads 52.7-54.7k against 49.6-51.3k.
pub const SURFACE_WORKERS: usize = 1;

/// A multi-thread runtime with `worker_threads` workers (at least one) named `rlock`, I/O and
/// timers enabled: what [`process_runtime`] makes, for a surface that must own its runtime
/// (Node hands it to napi). Fails only when the runtime cannot be started.
pub fn build_runtime(worker_threads: usize) -> Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(worker_threads.max(1))
        .thread_name("rlock")
        .enable_all()
        .build()
        .map_err(|e| Error::new(ErrorKind::Connection, format!("could not start the rlock runtime: {e}")))
}

/// The runtime of the calling process and its pid, made on first use (and again in a forked
/// child) by [`build_runtime`] (the first caller in a process decides the count). Fails only
/// when the runtime cannot be started.
pub fn process_runtime(worker_threads: usize) -> Result<(u32, Handle)> {
    let pid = std::process::id();
    loop {
        let current = CURRENT.load(Ordering::Acquire);
        // SAFETY: CURRENT is NULL or a leaked Box that is never freed.
        if let Some(r) = unsafe { current.as_ref() } {
            if r.pid == pid {
                return Ok((pid, r.runtime.handle().clone()));
            }
        }
        let runtime = build_runtime(worker_threads)?;
        let handle = runtime.handle().clone();
        let fresh = Box::into_raw(Box::new(ProcessRuntime { pid, runtime, previous: current }));
        match CURRENT.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Ok((pid, handle)),
            Err(_) => {
                // Another thread of this process made one first: use it, stop ours.
                // SAFETY: `fresh` came from Box::into_raw above and was never published.
                let ours = unsafe { Box::from_raw(fresh) };
                ours.runtime.shutdown_background();
            }
        }
    }
}

/// `Forked` when the calling process is not `pid`, the process that made a client: the client
/// was inherited over `fork()`, and `what` says what to make anew in the child.
pub fn check_process(pid: u32, what: &str) -> Result<()> {
    if std::process::id() == pid {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::Forked,
        format!(
            "this {what} was created in process {pid} and cannot be used after fork(); create a new \
             one in the child process"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_runtime_per_process_and_inherited_clients_are_refused() {
        let (pid, a) = process_runtime(1).unwrap_or_else(|e| unreachable!("{e}"));
        let (_, b) = process_runtime(2).unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(pid, std::process::id());
        assert_eq!(a.id(), b.id(), "the same runtime for the same process");
        assert!(check_process(pid, "client").is_ok());
        let e = check_process(pid.wrapping_add(1), "rlock client")
            .err()
            .map(|e| (e.kind(), e.message().contains("fork")));
        assert_eq!(e, Some((ErrorKind::Forked, true)));
    }
}
