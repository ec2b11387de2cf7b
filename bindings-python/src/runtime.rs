//! The binding's tokio runtime (one per process) and its adapter for pyo3-async-runtimes.
//!
//! The runtime is made per process id: after `os.fork()` the child has none of the parent's
//! runtime threads, so a client made in the child gets a fresh runtime, and a client carried
//! over from the parent refuses to run instead of hanging.

use std::cell::OnceCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll};

use pyo3::prelude::*;
use pyo3_async_runtimes::generic::{self, ContextExt};
use pyo3_async_runtimes::TaskLocals;
use tokio::runtime::Handle;

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

/// The handle pyo3-async-runtimes spawns on: the runtime of the calling task, else this
/// process's runtime (always made already: awaitables are only created by live clients).
fn spawn_handle() -> Option<Handle> {
    Handle::try_current().ok().or_else(|| current().ok().map(|rt| rt.handle))
}

type Completion = Box<dyn FnOnce() + Send>;

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
    queue: mpsc::Sender<Completion>,
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
fn completions() -> Option<mpsc::Sender<Completion>> {
    let pid = std::process::id();
    loop {
        let current = COMPLETIONS.load(Ordering::Acquire);
        // SAFETY: as in `this_process`.
        if let Some(c) = unsafe { current.as_ref() }.filter(|c| c.pid == pid) {
            return Some(c.queue.clone());
        }
        let (queue, rx) = mpsc::channel::<Completion>();
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

/// Runs completions in order. Each takes the GIL itself; completions that queued up meanwhile
/// run under one attach, so a burst costs one GIL hand-over instead of one per awaitable.
fn complete(rx: mpsc::Receiver<Completion>, control: &Control) {
    while let Ok(first) = rx.recv() {
        let _running = control.running.lock().unwrap_or_else(|p| p.into_inner());
        if control.stopped.load(Ordering::SeqCst) {
            continue;
        }
        let mut first = Some(first);
        let batched = Python::try_attach(|_py| {
            if let Some(f) = first.take() {
                f();
            }
            while !control.stopped.load(Ordering::SeqCst) {
                match rx.try_recv() {
                    Ok(f) => f(),
                    Err(_) => break,
                }
            }
        });
        if batched.is_none() {
            // Python cannot be attached to (it is finalizing): drop, never run.
            drop(first);
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

/// The pyo3-async-runtimes runtime backed by [`current`].
struct BindingRuntime;

tokio::task_local! {
    static TASK_LOCALS: OnceCell<TaskLocals>;
}

/// A spawned task, or nothing: a completion queued for the completion thread (nobody awaits
/// those), or no runtime (unreachable: see [`spawn_handle`]).
pub(crate) struct Joined(Option<tokio::task::JoinHandle<()>>);

/// Why a spawned task ended without finishing.
pub(crate) struct JoinFailure(Option<tokio::task::JoinError>);

impl generic::JoinError for JoinFailure {
    fn is_panic(&self) -> bool {
        self.0.as_ref().is_some_and(|e| e.is_panic())
    }
    fn into_panic(self) -> Box<dyn std::any::Any + Send + 'static> {
        match self.0 {
            Some(e) if e.is_panic() => e.into_panic(),
            _ => Box::new("task was cancelled"),
        }
    }
}

impl Future for Joined {
    type Output = Result<(), JoinFailure>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.0.as_mut() {
            Some(h) => Pin::new(h).poll(cx).map(|r| r.map_err(|e| JoinFailure(Some(e)))),
            None => Poll::Ready(Err(JoinFailure(None))),
        }
    }
}

impl generic::Runtime for BindingRuntime {
    type JoinError = JoinFailure;
    type JoinHandle = Joined;

    fn spawn<F>(fut: F) -> Joined
    where
        F: Future<Output = ()> + Send + 'static,
    {
        Joined(spawn_handle().map(|h| h.spawn(fut)))
    }

    /// pyo3-async-runtimes calls this once per finished awaitable, to take the GIL and hand
    /// the result to the event loop. tokio's blocking pool ran each on a pool thread of its
    /// own, so many threads queued for the GIL at once (and were started and stopped): most of
    /// the CPU an asyncio lock call cost. They run on one completion thread instead.
    fn spawn_blocking<F>(f: F) -> Joined
    where
        F: FnOnce() + Send + 'static,
    {
        match completions() {
            Some(queue) => match queue.send(Box::new(f)) {
                Ok(()) => Joined(None),
                Err(std::sync::mpsc::SendError(f)) => Joined(spawn_handle().map(|h| h.spawn_blocking(f))),
            },
            None => Joined(spawn_handle().map(|h| h.spawn_blocking(f))),
        }
    }
}

impl ContextExt for BindingRuntime {
    fn scope<F, R>(locals: TaskLocals, fut: F) -> Pin<Box<dyn Future<Output = R> + Send>>
    where
        F: Future<Output = R> + Send + 'static,
    {
        let cell = OnceCell::new();
        let _ = cell.set(locals);
        Box::pin(TASK_LOCALS.scope(cell, fut))
    }

    fn get_task_locals() -> Option<TaskLocals> {
        TASK_LOCALS.try_with(|c| c.get().cloned()).unwrap_or_default()
    }
}

/// Turns a Rust future into an asyncio awaitable; cancelling the awaitable drops the future.
pub(crate) fn future_into_py<'py, F, T>(py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    generic::future_into_py::<BindingRuntime, F, T>(py, fut)
}
