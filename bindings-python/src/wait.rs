//! Blocking waits for Python's synchronous API: the GIL is released while waiting, and signals
//! are checked every [`SLICE`] so Ctrl-C interrupts a blocked `acquire()` promptly.

use std::future::Future;
use std::sync::mpsc;
use std::time::Duration;

use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::runtime::Rt;

/// How long one wait lasts before signals are checked again (Ctrl-C within about this long).
const SLICE: Duration = Duration::from_millis(50);

/// Runs `fut` to its end on the calling thread with the GIL released, and returns its output.
/// The calling thread polls the future itself (tokio's `Handle::block_on`: inside `rt`'s
/// context, whose worker runs the connection and the timers, parked between polls): a call
/// costs one wake-up of the caller, not a task spawned on a worker plus a channel back; as a
/// blocking call (`rlock::blocking`), its commands may even go out and come back on the
/// thread's own connection (`thread_connections`), with no hop at all. When a signal handler
/// raises (KeyboardInterrupt), the future is dropped (core futures are
/// cancel-safe: an unclaimed hold is released) and the exception is returned.
///
/// From a thread that is already inside a tokio runtime (a Python callback run by a runtime
/// thread), where polling in place is not allowed, the call runs as a task instead.
pub(crate) fn block_on<T, F>(py: Python<'_>, rt: &Rt, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    if Handle::try_current().is_ok() {
        return block_on_task(py, rt, fut);
    }
    let handle = rt.handle();
    // Boxed so that an interrupt can drop it inside the runtime's context.
    let mut fut = Box::pin(fut);
    // One blocking call, however many slices it waits: a thread gets its own connection from
    // its second call on, not from a first call's second slice.
    rlock::blocking(|| loop {
        let polled =
            py.detach(|| handle.block_on(async { tokio::time::timeout(SLICE, fut.as_mut()).await.ok() }));
        if let Some(v) = polled {
            return Ok(v);
        }
        if let Err(interrupt) = py.check_signals() {
            let _context = handle.enter();
            drop(fut);
            return Err(interrupt);
        }
    })
}

/// [`block_on`] for a thread inside a tokio runtime: `fut` runs as a task on `rt`, and this
/// thread waits for its output on a channel. When a signal handler raises, the task is aborted
/// and its end awaited, so that an output produced in the meantime is dropped.
fn block_on_task<T, F>(py: Python<'_>, rt: &Rt, fut: F) -> PyResult<T>
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
