//! Blocking waits for Python's synchronous API: the GIL is released while waiting, and signals
//! are checked every [`SLICE`] so Ctrl-C interrupts a blocked `acquire()` promptly.

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use pyo3::prelude::*;

use crate::runtime::Rt;

/// How long one wait lasts before signals are checked again (Ctrl-C within about this long).
const SLICE: Duration = Duration::from_millis(50);

/// Runs `fut` as a task on `rt` and waits for its output with the GIL released. When a signal
/// handler raises (KeyboardInterrupt), the task is aborted (core futures are cancel-safe), its
/// end is awaited so that an output produced in the meantime is dropped (an unclaimed hold is
/// released by its drop), and the exception is returned.
pub(crate) fn block_on<T, F>(py: Python<'_>, rt: &Rt, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel::<T>(1);
    let task = rt.handle().spawn(async move {
        let _ = tx.send(fut.await);
    });
    let mut rx = rx;
    loop {
        let (got, back) = py.detach(move || (rx.recv_timeout(SLICE), rx));
        rx = back;
        match got {
            Ok(v) => return Ok(v),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    task.abort();
                    drop(py.detach(move || rx.recv()));
                    return Err(interrupt);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(crate::errors::rlock_error(
                    "the rlock runtime stopped the call before it finished".to_owned(),
                ));
            }
        }
    }
}
