//! Core's log records into Python's `logging`: logger `rlock` (a record of core module
//! `rlock::conn::resp2` goes to `rlock.conn.resp2`, a child of it), at `WARNING` for warnings,
//! `ERROR` and `INFO` likewise. Configure them as any logger (`logging.getLogger("rlock")`).
//!
//! Records come on rlock's own threads, which may hold core's locks while they log: they only
//! queue the record, and one thread of this module's (made again in a forked child) takes the
//! GIL and hands each to `logging`, so no rlock thread ever waits for the GIL.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use rlock::LogLevel;

type Record = (LogLevel, String, String);

/// The queue to the forwarding thread, with the pid of the process that made it.
static QUEUE: Mutex<Option<(u32, Sender<Record>)>> = Mutex::new(None);

/// Installs the forwarding (at import). Another `log` logger of this process (none is expected
/// in an extension module) would keep the records: nothing fails then.
pub(crate) fn install() {
    rlock::set_log_sink(Some(Arc::new(|level, target: &str, message: &str| {
        let record = (level, target.replace("::", "."), message.to_owned());
        let mut queue = QUEUE.lock().unwrap_or_else(|p| p.into_inner());
        let pid = std::process::id();
        if queue.as_ref().is_none_or(|(p, _)| *p != pid) {
            *queue = start().map(|tx| (pid, tx));
        }
        if let Some((_, tx)) = queue.as_ref() {
            let _ = tx.send(record);
        }
    })));
}

/// The forwarding thread; `None` when no thread could be made (the record is dropped).
fn start() -> Option<Sender<Record>> {
    let (tx, rx) = channel::<Record>();
    std::thread::Builder::new()
        .name("rlock-logging".into())
        .spawn(move || {
            while let Ok((level, target, message)) = rx.recv() {
                // SAFETY: a plain query of the interpreter's state, valid from any thread.
                if unsafe { pyo3::ffi::Py_IsInitialized() } == 0 {
                    return;
                }
                Python::attach(|py| {
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
            }
        })
        .ok()
        .map(|_| tx)
}
