//! The binding's tokio runtime (one per process).
//!
//! The runtime is made per process id: after `os.fork()` the child has none of the parent's
//! runtime threads, so a client made in the child gets a fresh runtime, and a client carried
//! over from the parent refuses to run instead of hanging.

use pyo3::prelude::*;
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

/// The runtime of this process (core's per-process runtime, made anew in a forked child, with
/// core's [`rlock::runtime::SURFACE_WORKERS`]). Its worker never runs a Python call: sync calls
/// are polled on the calling thread, asyncio calls on the loop's thread, lost-hold callbacks on
/// the blocking pool.
pub(crate) fn current() -> PyResult<Rt> {
    let (pid, handle) =
        rlock::runtime::process_runtime(rlock::runtime::SURFACE_WORKERS).map_err(crate::errors::map_err)?;
    Ok(Rt { pid, handle })
}
