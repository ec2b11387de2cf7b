//! Core's log records into Python's `logging`: logger `rlock` (a record of core module
//! `rlock::conn::resp2` goes to `rlock.conn.resp2`, a child of it), at `WARNING` for warnings,
//! `ERROR` and `INFO` likewise. Configure them as any logger (`logging.getLogger("rlock")`).
//!
//! Records come on rlock's own threads, which may hold core's locks while they log: they only
//! queue the record (bounded, never waiting) and write a byte to a socket pair. A daemon Python
//! thread (`rlock/_logging.py`) waits in `os.read` on the other end and hands what it drains
//! (`_drain_logs`) to `logging`. So no rlock thread waits for the GIL, and the one thread that
//! takes it waits with only CPython's frames on its stack: before 3.14 CPython ends a thread that
//! wants the GIL during finalization with `pthread_exit`, which aborts the process when it
//! unwinds Rust frames.
//!
//! The queue is found without a lock, and a forked child makes its own (queue and socket pair)
//! without touching its parent's: a lock or channel another thread held at `fork()` would stay
//! held in the child for good.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use rlock::LogLevel;

/// Records waiting for the Python thread; more are dropped (a stalled `logging` must not grow
/// memory without bound).
const CAPACITY: usize = 1024;

type Record = (LogLevel, String, String);

/// One process's queue to its Python forwarding thread.
struct Queue {
    pid: u32,
    tx: SyncSender<Record>,
    /// Taken only by `_drain_logs`, on a Python thread.
    rx: Mutex<Receiver<Record>>,
    /// Written (one byte, non-blocking) after each record: wakes the thread.
    bell: UnixStream,
    /// The end the thread reads.
    ear: UnixStream,
}

/// The current process's queue: NULL or a leaked `Box<Queue>`, never freed (a child must not
/// drop its parent's channel).
static QUEUE: AtomicPtr<Queue> = AtomicPtr::new(ptr::null_mut());

/// Installs the forwarding (at import). Another `log` logger of this process (none is expected
/// in an extension module) would keep the records: nothing fails then.
pub(crate) fn install() {
    rlock::set_log_sink(Some(Arc::new(|level, target: &str, message: &str| {
        if let Some(queue) = queue() {
            if queue.tx.try_send((level, target.replace("::", "."), message.to_owned())).is_ok() {
                // Full (WouldBlock) means the thread has many bytes to wake it already.
                let _ = (&queue.bell).write(&[1]);
            }
        }
    })));
}

/// This process's queue, made on first use in each process; `None` when no socket pair could be
/// made (the record is dropped).
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
        let (bell, ear) = UnixStream::pair().ok()?;
        bell.set_nonblocking(true).ok()?;
        let (tx, rx) = sync_channel(CAPACITY);
        let fresh = Box::into_raw(Box::new(Queue { pid, tx, rx: Mutex::new(rx), bell, ear }));
        match QUEUE.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: just leaked above, never freed from now on.
            Ok(_) => return unsafe { fresh.as_ref() },
            // Another thread installed one first: ours goes.
            // SAFETY: made by Box::into_raw above and never shared.
            Err(_) => drop(unsafe { Box::from_raw(fresh) }),
        }
    }
}

/// The file descriptor this process's forwarding thread reads (blocking): a byte per record
/// queued. Made on first use in each process; owned by the module (never close it).
///
/// Raises `OSError` when no socket pair could be made.
#[pyfunction]
#[pyo3(name = "_log_fd")]
pub(crate) fn log_fd() -> PyResult<i32> {
    queue()
        .map(|q| q.ear.as_raw_fd())
        .ok_or_else(|| PyOSError::new_err("rlock: no socket pair for log records"))
}

/// The records queued in this process since the last call, oldest first, as
/// `(level, logger name, message)` with `logging`'s level numbers.
#[pyfunction]
#[pyo3(name = "_drain_logs")]
pub(crate) fn drain_logs() -> Vec<(i32, String, String)> {
    let Some(queue) = queue() else { return Vec::new() };
    // A poisoned lock only means a panic in an earlier drain; the channel is intact.
    let rx = queue.rx.lock().unwrap_or_else(|e| e.into_inner());
    rx.try_iter()
        .map(|(level, target, message)| {
            let level = match level {
                LogLevel::Error => 40,
                LogLevel::Warn => 30,
                LogLevel::Info => 20,
            };
            (level, target, message)
        })
        .collect()
}
