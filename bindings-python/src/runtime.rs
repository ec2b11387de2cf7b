//! The binding's tokio runtime (one per process) and its adapter for pyo3-async-runtimes.
//!
//! The runtime is made per process id: after `os.fork()` the child has none of the parent's
//! runtime threads, so a client made in the child gets a fresh runtime, and a client carried
//! over from the parent refuses to run instead of hanging.

use std::cell::OnceCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use pyo3::prelude::*;
use pyo3_async_runtimes::generic::{self, ContextExt};
use pyo3_async_runtimes::TaskLocals;
use tokio::runtime::Handle;

use crate::errors::rlock_error;

/// The runtime of the current process: its pid and a handle (the runtime itself is leaked so
/// that a forked child never tries to join threads it does not have).
static CURRENT: Mutex<Option<(u32, Handle)>> = Mutex::new(None);

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

    /// Fails in a process other than the one that made this runtime (a forked child).
    pub(crate) fn check_pid(&self) -> PyResult<()> {
        if std::process::id() == self.pid {
            Ok(())
        } else {
            Err(rlock_error(format!(
                "this rlock client was created in process {} and cannot be used after os.fork(); \
                 create a new rlock.Client in the child process",
                self.pid
            )))
        }
    }
}

/// The runtime of this process, made on first use (and again in a forked child).
pub(crate) fn current() -> PyResult<Rt> {
    let pid = std::process::id();
    let mut slot = CURRENT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((p, h)) = slot.as_ref() {
        if *p == pid {
            return Ok(Rt { pid, handle: h.clone() });
        }
    }
    // Two workers: the watchdog and pub/sub tasks keep running while one worker is busy.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("rlock")
        .enable_all()
        .build()
        .map_err(|e| rlock_error(format!("could not start the rlock runtime: {e}")))?;
    let handle = rt.handle().clone();
    std::mem::forget(rt);
    *slot = Some((pid, handle.clone()));
    Ok(Rt { pid, handle })
}

/// The handle pyo3-async-runtimes spawns on: the runtime of the calling task, else this
/// process's runtime (always made already: awaitables are only created by live clients).
fn spawn_handle() -> Option<Handle> {
    Handle::try_current()
        .ok()
        .or_else(|| CURRENT.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|(_, h)| h.clone()))
}

/// The pyo3-async-runtimes runtime backed by [`current`].
struct BindingRuntime;

tokio::task_local! {
    static TASK_LOCALS: OnceCell<TaskLocals>;
}

/// A spawned task, or nothing when no runtime exists (unreachable: see [`spawn_handle`]).
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

    fn spawn_blocking<F>(f: F) -> Joined
    where
        F: FnOnce() + Send + 'static,
    {
        Joined(spawn_handle().map(|h| h.spawn_blocking(f)))
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
