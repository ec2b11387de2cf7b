//! Core's log records into Python's `logging`: logger `rlock` (a record of core module
//! `rlock::conn::resp2` goes to `rlock.conn.resp2`, a child of it), at `WARNING` for warnings,
//! `ERROR` and `INFO` likewise. Configure them as any logger (`logging.getLogger("rlock")`).
//!
//! Records come on rlock's own threads, which may hold core's locks while they log: they only
//! queue the record, and one thread of this module's takes the GIL and hands each to `logging`,
//! so no rlock thread ever waits for the GIL. The queue is found without a lock, and a forked
//! child makes its own (queue and thread) without touching its parent's: a lock or channel
//! another thread held at `fork()` would stay held in the child for good.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;

use pyo3::prelude::*;
use rlock::LogLevel;

type Record = (LogLevel, String, String);

/// One process's queue to its forwarding thread.
struct Queue {
    pid: u32,
    tx: Sender<Record>,
}

/// The current process's queue: NULL or a leaked `Box<Queue>`, never freed (a child must not
/// drop its parent's channel).
static QUEUE: AtomicPtr<Queue> = AtomicPtr::new(ptr::null_mut());

/// Installs the forwarding (at import). Another `log` logger of this process (none is expected
/// in an extension module) would keep the records: nothing fails then.
pub(crate) fn install() {
    rlock::set_log_sink(Some(Arc::new(|level, target: &str, message: &str| {
        if let Some(queue) = queue() {
            let _ = queue.tx.send((level, target.replace("::", "."), message.to_owned()));
        }
    })));
}

/// This process's queue, made (with its thread) on first use in each process; `None` when no
/// thread could be made (the record is dropped).
fn queue() -> Option<&'static Queue> {
    let pid = std::process::id();
    loop {
        let current = QUEUE.load(Ordering::Acquire);
        // SAFETY: QUEUE is NULL or a leaked Box that is never freed.
        if let Some(q) = unsafe { current.as_ref() } {
            if q.pid == pid {
                return Some(q);
            }
        }
        let fresh = Box::into_raw(Box::new(Queue { pid, tx: start()? }));
        match QUEUE.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: just leaked above, never freed from now on.
            Ok(_) => return unsafe { fresh.as_ref() },
            // Another thread installed one first: ours goes (its thread ends with the channel).
            // SAFETY: made by Box::into_raw above and never shared.
            Err(_) => drop(unsafe { Box::from_raw(fresh) }),
        }
    }
}

/// The forwarding thread; `None` when no thread could be made.
fn start() -> Option<Sender<Record>> {
    let (tx, rx) = channel::<Record>();
    std::thread::Builder::new()
        .name("rlock-logging".into())
        .spawn(move || {
            while let Ok((level, target, message)) = rx.recv() {
                // None once the interpreter is shutting down (or gone): nothing to log to.
                let attached = Python::try_attach(|py| {
                    let level = match level {
                        LogLevel::Error => 40,
                        LogLevel::Warn => 30,
                        LogLevel::Info => 20,
                    };
                    let logged = py
                        .import("logging")
                        .and_then(|logging| logging.call_method1("getLogger", (target,)))
                        .and_then(|logger| logger.call_method1("log", (level, message)));
                    if let Err(e) = logged {
                        e.write_unraisable(py, None);
                    }
                });
                if attached.is_none() {
                    return;
                }
            }
        })
        .ok()
        .map(|_| tx)
}
