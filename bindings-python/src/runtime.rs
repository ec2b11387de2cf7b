//! The binding's tokio runtime (one per process) and its bridge to asyncio.
//!
//! The runtime is made per process id: after `os.fork()` the child has none of the parent's
//! runtime threads, so a client made in the child gets a fresh runtime, and a client carried
//! over from the parent refuses to run instead of hanging.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::Poll;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyList;
use pyo3::{intern, IntoPyObjectExt};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// A runtime handle tagged with the process that made it.
#[derive(Clone)]
pub(crate) struct Rt {
    pid: u32,
    handle: Handle,
}

impl Rt {
    /// The tokio handle.
    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// Fails with `ForkedError` in a process other than the one that made this runtime.
    pub(crate) fn check_pid(&self) -> PyResult<()> {
        rlock::runtime::check_process(self.pid, "rlock client").map_err(crate::errors::map_err)
    }
}

/// The runtime of this process (core's per-process runtime, made anew in a forked child). Two
/// workers: the watchdog and pub/sub tasks keep running while one worker is busy.
pub(crate) fn current() -> PyResult<Rt> {
    let (pid, handle) = rlock::runtime::process_runtime(2).map_err(crate::errors::map_err)?;
    Ok(Rt { pid, handle })
}

/// A finished asyncio call on its way to its future: the event loop it belongs to, the future,
/// and its result (converted under the GIL on the completion thread, so tokio workers never wait
/// for the GIL).
struct Done {
    event_loop: Py<PyAny>,
    future: Py<PyAny>,
    value: Convert,
}

/// Makes a call's Python result (under the GIL).
type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// What stops one completion thread. Each thread has its own: a forked child must not inherit
/// a lock its parent's thread held (it usually does: the thread holds `running` while it waits
/// for the GIL, and the forking thread holds the GIL), or its asyncio calls and its exit hang.
struct Control {
    /// Set at interpreter exit: completions are dropped from then on, never run.
    stopped: AtomicBool,
    /// Held by the completion thread while it runs completions (and so may touch Python).
    running: Mutex<()>,
}

/// The completion thread of one process: the pid that made it, its queue, its control.
struct Completions {
    pid: u32,
    queue: mpsc::Sender<Done>,
    control: Arc<Control>,
}

/// The completion thread of this process (made on first use, and again in a forked child).
/// Swapped with a compare-and-swap, never behind a lock: a tokio worker of the parent may be
/// queueing a completion at the moment of a fork, and a lock it held would stay held in the
/// child forever (its first asyncio call would hang). Old entries are leaked, as a forked
/// child must not drop its parent's.
static COMPLETIONS: AtomicPtr<Completions> = AtomicPtr::new(std::ptr::null_mut());

/// This process's entry of [`COMPLETIONS`], if it made one.
fn this_process() -> Option<&'static Completions> {
    // SAFETY: COMPLETIONS is NULL or a leaked Box that is never freed.
    unsafe { COMPLETIONS.load(Ordering::Acquire).as_ref() }.filter(|c| c.pid == std::process::id())
}

/// The queue of this process's completion thread; None when no thread could be started
/// (the caller then falls back to tokio's blocking pool).
fn completions() -> Option<mpsc::Sender<Done>> {
    let pid = std::process::id();
    loop {
        let current = COMPLETIONS.load(Ordering::Acquire);
        // SAFETY: as in `this_process`.
        if let Some(c) = unsafe { current.as_ref() }.filter(|c| c.pid == pid) {
            return Some(c.queue.clone());
        }
        let (queue, rx) = mpsc::channel::<Done>();
        let control = Arc::new(Control { stopped: AtomicBool::new(false), running: Mutex::new(()) });
        let theirs = control.clone();
        std::thread::Builder::new().name("rlock-asyncio".into()).spawn(move || complete(rx, &theirs)).ok()?;
        let fresh = Box::into_raw(Box::new(Completions { pid, queue: queue.clone(), control }));
        match COMPLETIONS.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Some(queue),
            // Another thread of this process made one first: use it. Dropping ours closes its
            // queue, so its thread ends.
            // SAFETY: `fresh` came from Box::into_raw above and was never published.
            Err(_) => drop(unsafe { Box::from_raw(fresh) }),
        }
    }
}

/// Delivers finished calls in order. Everything that queued up while the thread waited for the
/// GIL is delivered under one attach, and with one `call_soon_threadsafe` per event loop: a
/// burst of N results costs one GIL hand-over and one wake-up of the loop instead of N of each.
fn complete(rx: mpsc::Receiver<Done>, control: &Control) {
    while let Ok(first) = rx.recv() {
        let _running = control.running.lock().unwrap_or_else(|p| p.into_inner());
        if control.stopped.load(Ordering::SeqCst) {
            continue;
        }
        let mut batch = vec![first];
        let _ = Python::try_attach(|py| {
            batch.extend(rx.try_iter());
            if !control.stopped.load(Ordering::SeqCst) {
                deliver(py, std::mem::take(&mut batch));
            }
        });
        // Python could not be attached to (it is finalizing): the batch is dropped, never run.
    }
}

/// Hands `batch` to the event loops: per loop, one `call_soon_threadsafe` of [`set_results`]
/// with the loop's futures and results. A loop that is closed refuses; its results are dropped
/// (an acquire's dropped result releases its hold).
fn deliver(py: Python<'_>, batch: Vec<Done>) {
    let mut loops: Vec<(Py<PyAny>, Bound<'_, PyList>)> = Vec::new();
    for done in batch {
        let (ok, value) = match (done.value)(py) {
            Ok(v) => (true, v),
            Err(e) => (false, e.into_value(py).into_any()),
        };
        let item = (done.future, ok, value);
        let at = loops.iter().position(|(l, _)| l.is(&done.event_loop));
        let list = match at {
            Some(i) => &loops[i].1,
            None => {
                loops.push((done.event_loop, PyList::empty(py)));
                &loops[loops.len() - 1].1
            }
        };
        if let Err(e) = list.append(item) {
            e.write_unraisable(py, None);
        }
    }
    for (event_loop, list) in loops {
        let call = SET_RESULTS
            .get_or_try_init(py, || wrap_pyfunction!(set_results, py).map(|f| f.into_any().unbind()))
            .and_then(|f| event_loop.call_method1(py, intern!(py, "call_soon_threadsafe"), (f, list)));
        if let Err(e) = call {
            // RuntimeError("Event loop is closed"): nobody can await these any more.
            if !e.is_instance_of::<PyRuntimeError>(py) {
                e.write_unraisable(py, None);
            }
        }
    }
}

/// [`set_results`] as a Python callable, made once.
static SET_RESULTS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Runs on the event loop: completes each future of `batch` (`(future, ok, value)` items) with
/// its result or exception, unless it was cancelled meanwhile.
#[pyfunction]
fn set_results(batch: &Bound<'_, PyList>) {
    let py = batch.py();
    for item in batch.iter() {
        let outcome =
            item.extract::<(Bound<'_, PyAny>, bool, Bound<'_, PyAny>)>().and_then(|(fut, ok, value)| {
                if fut.call_method0(intern!(py, "done"))?.is_truthy()? {
                    return Ok(());
                }
                let method = if ok { intern!(py, "set_result") } else { intern!(py, "set_exception") };
                fut.call_method1(method, (value,)).map(drop)
            });
        if let Err(e) = outcome {
            e.write_unraisable(py, None);
        }
    }
}

/// Registered with `atexit`: stops this process's completion thread from touching Python
/// before the interpreter finalizes, and waits for the completions it is running. A
/// completion that took the GIL while the interpreter was finalizing crashed the process at
/// exit (a fatal PyGILState_Release error or a segfault, 2 of 30 runs of a short asyncio
/// script, also with tokio's blocking pool running them before). A forked child that made no
/// thread of its own has nothing to stop.
pub(crate) fn stop_completions(py: Python<'_>) {
    let control = this_process().map(|c| c.control.clone());
    if let Some(control) = control {
        control.stopped.store(true, Ordering::SeqCst);
        py.detach(|| drop(control.running.lock().unwrap_or_else(|p| p.into_inner())));
    }
}

/// Tells the call's task that its asyncio future was cancelled (a done callback).
#[pyclass(frozen)]
struct CancelOnDone(Mutex<Option<oneshot::Sender<()>>>);

#[pymethods]
impl CancelOnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0(intern!(future.py(), "cancelled"))?.is_truthy()? {
            if let Some(tx) = self.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
                let _ = tx.send(());
            }
        }
        Ok(())
    }
}

/// Runs `fut` until it ends or `cancel` fires, whichever comes first; None when cancelled.
/// `fut` is always polled first, so a call that was cancelled before its task ever ran has
/// still started: a release then runs to its end in the background (core hands a call dropped
/// unfinished to a task), where dropping it unpolled would leave the hold behind. Core futures
/// are cancel-safe, so an acquire dropped this way leaves no hold, renewal or subscription.
async fn until_cancelled<F: Future>(fut: F, mut cancel: oneshot::Receiver<()>) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut watching = true;
    std::future::poll_fn(move |cx| {
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        if watching {
            match Pin::new(&mut cancel).poll(cx) {
                Poll::Ready(Ok(())) => return Poll::Ready(None),
                // The callback ran without a cancel (or was dropped): nothing more to watch.
                Poll::Ready(Err(_)) => watching = false,
                Poll::Pending => {}
            }
        }
        Poll::Pending
    })
    .await
}

/// `asyncio.get_running_loop`, looked up once.
static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Turns a Rust future into an asyncio future of the running event loop (a RuntimeError
/// outside one), run on `rt`; cancelling the awaitable drops the Rust future.
///
/// Written here instead of taken from pyo3-async-runtimes, whose bridge costs two task spawns,
/// a `contextvars.copy_context()` and one `call_soon_threadsafe` (a write to the loop's
/// self-pipe, and a wake-up of the loop) for every call; results come back in batches here
/// (see [`complete`]).
pub(crate) fn future_into_py<'py, F, T>(py: Python<'py>, rt: &Rt, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let get_loop = GET_RUNNING_LOOP.import(py, "asyncio", "get_running_loop")?;
    let event_loop = get_loop.call0()?;
    let future = event_loop.call_method0(intern!(py, "create_future"))?;
    let (loop_ref, future_ref) = (event_loop.unbind(), future.clone().unbind());
    let (cancel_tx, cancel_rx) = oneshot::channel();
    // Added before the task starts, so that the callback is there for any cancel.
    future.call_method1(intern!(py, "add_done_callback"), (CancelOnDone(Mutex::new(Some(cancel_tx))),))?;
    rt.handle().spawn(async move {
        let Some(out) = until_cancelled(fut, cancel_rx).await else {
            return;
        };
        let done = Done {
            event_loop: loop_ref,
            future: future_ref,
            value: Box::new(move |py| out.and_then(|v| v.into_py_any(py))),
        };
        queue(done);
    });
    Ok(future)
}

/// Queues `done` for the completion thread, or, when there is none, delivers it from tokio's
/// blocking pool.
fn queue(done: Done) {
    let done = match completions() {
        Some(q) => match q.send(done) {
            Ok(()) => return,
            Err(mpsc::SendError(done)) => done,
        },
        None => done,
    };
    if let Ok(handle) = Handle::try_current() {
        handle.spawn_blocking(move || Python::try_attach(|py| deliver(py, vec![done])));
    }
}
