//! asyncio calls: core futures polled on the event loop's own thread.
//!
//! Each call makes an asyncio future and polls the core future right away (the request goes
//! out in the call). The calls of a thread are kept in core's [`rlock::LocalCalls`], whose
//! wakers (on any thread, without the GIL) ring a bell when a call is woken: one byte written to
//! a socket pair whose other end the event loop watches (`loop.add_reader`); the loop then polls
//! every woken call and completes the finished ones' futures itself. A burst of replies costs one wake-up of the loop, no
//! thread ever waits for the GIL on the loop's behalf, and no task is spawned per call.
//!
//! Cancelling the asyncio future drops the core future (core calls are cancel-safe, and every
//! call was polled once already, so a cancelled release still runs to its end in the
//! background).

use std::cell::RefCell;
use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyWeakrefMethods, PyWeakrefReference};
use pyo3::{intern, IntoPyObjectExt};
use rlock::{CallKey, LocalCalls, Polled};

use crate::runtime::Rt;

/// Makes a call's Python result (on the loop's thread, under the GIL).
type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// The asyncio calls of one thread's event loops, each with its asyncio future.
struct Executor {
    pid: u32,
    rt: Rt,
    calls: LocalCalls<PyResult<Convert>, Py<PyAny>>,
    /// The loop's end of the socket pair (the calls' bell writes to the other end).
    listen: UnixStream,
    /// The loop that watches `listen` (a thread runs one loop at a time; `asyncio.run` makes
    /// a new one each time), weakly: a finished loop is not kept alive.
    watched_by: Option<Py<PyWeakrefReference>>,
}

thread_local! {
    /// This thread's executor, made on its first asyncio call (again in a forked child),
    /// dropped when the thread ends (its socket pair closed; Python references it still holds
    /// are released by pyo3 the next time any thread holds the GIL).
    static EXECUTOR: RefCell<Option<Executor>> = const { RefCell::new(None) };
}

impl Drop for Executor {
    /// Calls still pending when their thread ends are dropped by a task on the runtime (a
    /// thread-local destructor cannot enter its context). In a forked child the parent's calls
    /// (and runtime) are not ours to touch: leaked.
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            std::mem::forget(std::mem::replace(&mut self.calls, LocalCalls::new(|| {})));
        } else {
            self.calls.drop_pending_on(self.rt.handle());
        }
    }
}

/// `asyncio.get_running_loop`, looked up once.
static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// [`drain`] as a Python callable, made once.
static DRAIN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Runs `fut` on `rt` as an asyncio call of the running event loop (a RuntimeError outside
/// one) and returns its asyncio future, completed with the future's value or exception.
pub(crate) fn future_into_py<'py, F, T>(py: Python<'py>, rt: &Rt, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let event_loop = GET_RUNNING_LOOP.import(py, "asyncio", "get_running_loop")?.call0()?;
    let future = event_loop.call_method0(intern!(py, "create_future"))?;
    let call = Box::pin(async move {
        let value = fut.await?;
        Ok(Box::new(move |py: Python<'_>| value.into_py_any(py)) as Convert)
    });
    let key = EXECUTOR.with(|cell| -> PyResult<CallKey> {
        let mut cell = cell.borrow_mut();
        let pid = std::process::id();
        if cell.as_ref().is_none_or(|e| e.pid != pid) {
            // A forked child leaks its parent's executor (see its Drop).
            drop(cell.take());
            *cell = Some(Executor::new(pid, rt.clone())?);
        }
        let Some(ex) = cell.as_mut() else { unreachable!("made above") };
        ex.watch(&event_loop)?;
        Ok(ex.calls.add(call, future.clone().unbind()))
    })?;
    future.call_method1(intern!(py, "add_done_callback"), (CancelOnDone(key),))?;
    poll(py, key);
    Ok(future)
}

impl Executor {
    fn new(pid: u32, rt: Rt) -> PyResult<Executor> {
        let pair = UnixStream::pair().and_then(|(a, b)| {
            a.set_nonblocking(true)?;
            b.set_nonblocking(true)?;
            Ok((a, b))
        });
        let (bell, listen) =
            pair.map_err(|e| crate::errors::rlock_error(format!("could not make a socket pair: {e}")))?;
        // Non-blocking: a full buffer means the loop has a byte to read already.
        let calls = LocalCalls::new(move || {
            let _ = (&bell).write(&[1]);
        });
        Ok(Executor { pid, rt, calls, listen, watched_by: None })
    }

    /// Makes `event_loop` watch the socket pair, unless it does already.
    fn watch(&mut self, event_loop: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = event_loop.py();
        if self.watched_by.as_ref().and_then(|w| w.bind(py).upgrade()).is_some_and(|l| l.is(event_loop)) {
            return Ok(());
        }
        let drain =
            DRAIN.get_or_try_init(py, || wrap_pyfunction!(drain, py).map(|f| f.into_any().unbind()))?;
        event_loop.call_method1(intern!(py, "add_reader"), (self.listen.as_raw_fd(), drain))?;
        self.watched_by = Some(PyWeakrefReference::new(event_loop)?.unbind());
        Ok(())
    }
}

/// This thread's executor, if it has one of this process.
fn with_executor<R>(f: impl FnOnce(&mut Executor) -> Option<R>) -> Option<R> {
    EXECUTOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        cell.as_mut().filter(|e| e.pid == std::process::id()).and_then(f)
    })
}

/// Polls call `key` once (if it is still pending); when it ended, completes its future
/// (unless that was cancelled). A panic in core becomes the exception.
fn poll(py: Python<'_>, key: CallKey) {
    let ended = with_executor(|ex| match ex.calls.poll(key, ex.rt.handle())? {
        Polled::Pending => None,
        Polled::Ready(result, future) => Some((future, result)),
        Polled::Panicked(future) => {
            Some((future, Err(crate::errors::rlock_error(rlock::PANIC_MESSAGE.to_owned()))))
        }
    });
    let Some((future, result)) = ended else { return };
    let future = future.bind(py);
    let outcome = (|| -> PyResult<()> {
        if future.call_method0(intern!(py, "done"))?.is_truthy()? {
            return Ok(()); // cancelled meanwhile; the value is dropped (an acquire's is released)
        }
        match result.and_then(|make| make(py)) {
            Ok(v) => future.call_method1(intern!(py, "set_result"), (v,)).map(drop),
            Err(e) => future.call_method1(intern!(py, "set_exception"), (e.into_value(py),)).map(drop),
        }
    })();
    if let Err(e) = outcome {
        e.write_unraisable(py, None);
    }
}

/// Called by the event loop when the socket pair has a byte: polls every woken call.
#[pyfunction]
fn drain(py: Python<'_>) {
    let woken = with_executor(|ex| {
        let mut sink = [0u8; 64];
        while matches!((&ex.listen).read(&mut sink), Ok(n) if n > 0) {}
        Some(ex.calls.woken())
    });
    for key in woken.into_iter().flatten() {
        poll(py, key);
    }
}

/// A done callback: when the asyncio future was cancelled, drops its core call (cancel-safe).
#[pyclass(frozen)]
struct CancelOnDone(CallKey);

#[pymethods]
impl CancelOnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0(intern!(future.py(), "cancelled"))?.is_truthy()? {
            // The asyncio future given back is dropped here, with the GIL.
            drop(with_executor(|ex| ex.calls.cancel(self.0, ex.rt.handle())));
        }
        Ok(())
    }
}
