//! What every native handle shares: argument parsing in seconds, the owner of a call, running a
//! core call with the GIL released or as an asyncio awaitable, and what an acquire took on its way
//! to Python (claimed once, given back when nobody claims it). The primitives and the client build
//! on it; it imports none of them.

use std::future::Future;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::{IntoPyObject, IntoPyObjectExt};

use crate::errors::map_err;
use crate::runtime::Rt;
use crate::{aio, wait};

/// This surface, as core spells for it.
pub(crate) const PYTHON: rlock::surface::Surface = rlock::surface::Surface::Python;

/// Seconds given by Python as a `Duration`, checked by core (every surface agrees).
pub(crate) fn seconds(what: &str, s: f64) -> PyResult<Duration> {
    rlock::surface::duration_arg(PYTHON, what, s).map_err(map_err)
}

/// [`seconds`] for optional arguments, where None keeps its own meaning (no limit, watchdog).
pub(crate) fn opt_seconds(what: &str, s: Option<f64>) -> PyResult<Option<Duration>> {
    s.map(|s| seconds(what, s)).transpose()
}

/// The owner for `id`, or the calling OS thread's owner.
pub(crate) fn owner_of(client: &rlock::Client, id: Option<u64>) -> rlock::Owner {
    client.owner(id.unwrap_or_else(rlock::surface::thread_owner_id))
}

/// What an acquire took, on its way to Python: a lock hold or semaphore permits. The core guard
/// inside gives it back when nobody claims it (the waiting call was interrupted just as the
/// acquire succeeded), so an interrupted acquire never leaves anything behind.
pub(crate) enum Taken {
    Hold(rlock::Guard),
    Permits(rlock::Permits),
    Permit(rlock::Permit),
    Multi(rlock::MultiGuard),
    Red(rlock::RedGuard),
}

/// The outcome of a blocking acquire: what it took, or `None` when the wait ran out.
pub(crate) struct Acquired(Option<Taken>);

impl Acquired {
    pub(crate) fn claim(self) -> bool {
        self.claim_id().is_some()
    }

    /// Takes a lock's hold: `Some` with its fencing token (from the acquire's own reply; 0 for
    /// a lock that is not fenced) when it was acquired.
    pub(crate) fn claim_token(self) -> Option<u64> {
        match self.0 {
            Some(Taken::Hold(g)) => {
                let token = g.token().unwrap_or(0);
                g.keep();
                Some(token)
            }
            Some(Taken::Red(g)) => Some(g.keep().unwrap_or(0)),
            other => Acquired(other).claim().then_some(0),
        }
    }

    /// Takes what was acquired; `Some` (with the permit id, for a permit) when something was.
    pub(crate) fn claim_id(self) -> Option<String> {
        match self.0 {
            Some(Taken::Hold(g)) => g.keep(),
            Some(Taken::Permits(p)) => p.keep(),
            Some(Taken::Permit(p)) => return Some(p.keep()),
            Some(Taken::Multi(m)) => m.keep(),
            Some(Taken::Red(g)) => drop(g.keep()),
            None => return None,
        }
        Some(String::new())
    }
}

/// The outcome of an `acquire_async` on its way to its asyncio task. The hold is handed over only
/// when the Python layer calls `claim()`, right after its `await` returned. Until then this object
/// owns it: when the awaitable is cancelled after the acquire succeeded (its result was already
/// queued on the event loop, or the task was cancelled before it resumed), the object is dropped
/// unclaimed and the core guard in it releases the hold.
#[pyclass(frozen, module = "rlock._native")]
pub(crate) struct PendingAcquire(std::sync::Mutex<Option<Taken>>);

impl PendingAcquire {
    pub(crate) fn new(taken: Option<Taken>) -> Self {
        PendingAcquire(std::sync::Mutex::new(taken))
    }
}

#[pymethods]
impl PendingAcquire {
    /// Takes the hold for the awaiting task; returns whether the lock was acquired (False when
    /// the wait ran out, or when it was claimed already).
    fn claim(&self) -> bool {
        Acquired(self.0.lock().unwrap_or_else(|p| p.into_inner()).take()).claim()
    }

    /// Takes the lock's hold for the awaiting task: its fencing token (0 for a lock that is not
    /// fenced), or None when the wait ran out (or it was claimed already).
    fn claim_token(&self) -> Option<u64> {
        Acquired(self.0.lock().unwrap_or_else(|p| p.into_inner()).take()).claim_token()
    }

    /// Takes the permit for the awaiting task: its id, or None when the wait ran out (or it
    /// was claimed already).
    fn claim_permit(&self) -> Option<String> {
        Acquired(self.0.lock().unwrap_or_else(|p| p.into_inner()).take()).claim_id()
    }
}

/// A core result on its way to asyncio. Errors become exceptions during the conversion, which
/// runs on the event loop's thread with the GIL held (`aio`), so tokio workers never wait for
/// the GIL.
pub(crate) struct Outcome<T>(rlock::Result<T>);

impl<'py, T: IntoPyObject<'py>> IntoPyObject<'py> for Outcome<T> {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.0 {
            Ok(v) => v.into_bound_py_any(py),
            Err(e) => Err(map_err(e)),
        }
    }
}

/// The arguments of a lock's acquire (lock, multi-lock, RedLock): the owner, the longest wait
/// (None: no limit) and the lease (None: the watchdog renews).
pub(crate) type AcquireArgs = (rlock::Owner, Option<Duration>, Option<Duration>);

/// What every native handle holds to run core calls: its client and the runtime.
pub(crate) trait Handle {
    fn client(&self) -> &rlock::Client;
    fn rt(&self) -> &Rt;

    /// The owner for `id`, or the calling thread's (refused in a forked child).
    fn owner(&self, id: Option<u64>) -> PyResult<rlock::Owner> {
        self.rt().check_pid()?;
        Ok(owner_of(self.client(), id))
    }

    /// A lock's acquire arguments, as its sync and async entry points both read them: `timeout`
    /// and `lease` in seconds, then the owner for `id` ([`Self::owner`]).
    fn acquire_args(
        &self,
        id: Option<u64>,
        timeout: Option<f64>,
        lease: Option<f64>,
    ) -> PyResult<AcquireArgs> {
        let (timeout, lease) = (opt_seconds("timeout", timeout)?, opt_seconds("lease", lease)?);
        Ok((self.owner(id)?, timeout, lease))
    }

    /// Runs a core call on the runtime, waiting with the GIL released.
    fn run<T, F>(&self, py: Python<'_>, fut: F) -> PyResult<T>
    where
        T: Send + 'static,
        F: Future<Output = rlock::Result<T>> + Send + 'static,
    {
        run_blocking(py, self.rt(), self.client(), fut)
    }

    /// Runs an acquire ([`Self::run`]): what it took, or nothing when the wait ran out.
    fn acquired<F>(&self, py: Python<'_>, fut: F) -> PyResult<Acquired>
    where
        F: Future<Output = rlock::Result<Option<Taken>>> + Send + 'static,
    {
        self.run(py, async move { fut.await.map(Acquired) })
    }

    /// Runs a core call as an asyncio call of the running loop ([`aio::future_into_py`];
    /// refused in a forked child): an awaitable of its value, or raising its error.
    fn run_async<'py, T, F>(&self, py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
    where
        T: for<'a> IntoPyObject<'a> + Send + 'static,
        F: Future<Output = rlock::Result<T>> + Send + 'static,
    {
        self.rt().check_pid()?;
        aio::future_into_py(py, self.rt(), self.client(), async move { Ok(Outcome(fut.await)) })
    }

    /// Runs an acquire as an asyncio call ([`Self::run_async`]): an awaitable of a
    /// `PendingAcquire` holding what it took.
    fn pending<'py, F>(&self, py: Python<'py>, fut: F) -> PyResult<Bound<'py, PyAny>>
    where
        F: Future<Output = rlock::Result<Option<Taken>>> + Send + 'static,
    {
        self.run_async(py, async move { fut.await.map(PendingAcquire::new) })
    }
}

/// `impl Handle` for native handles whose fields `client` and `rt` hold the client and runtime.
macro_rules! handles {
    ($($t:ty),*) => {
        $(impl $crate::handle::Handle for $t {
            fn client(&self) -> &rlock::Client {
                &self.client
            }
            fn rt(&self) -> &$crate::runtime::Rt {
                &self.rt
            }
        })*
    };
}
pub(crate) use handles;

/// Longest an interrupted call waits for its clean-up before raising.
const SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// Runs a core call on `rt`, waiting with the GIL released.
pub(crate) fn run_blocking<T, F>(py: Python<'_>, rt: &Rt, client: &rlock::Client, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = rlock::Result<T>> + Send + 'static,
{
    rt.check_pid()?;
    match wait::block_on(py, rt, fut) {
        Ok(out) => out.map_err(map_err),
        Err(interrupt) => {
            // Ctrl-C usually ends the process next: let the clean-up of the cut-off call (a
            // release, permits given back, a fair waiter leaving its queue) finish first.
            let (client, handle) = (client.clone(), rt.handle().clone());
            py.detach(move || handle.block_on(client.settle(SETTLE_LIMIT)));
            Err(interrupt)
        }
    }
}

/// A lost-hold listener that calls `callback(name, kind, owner, reason, permit_id)` (the
/// event's fields; `permit_id` None except for a permit) on the blocking pool, so a slow
/// callback never stalls the watchdog.
pub(crate) fn lost_caller(
    rt: &Rt,
    callback: Py<PyAny>,
) -> impl Fn(&rlock::LostEvent) + Send + Sync + 'static {
    let handle = rt.handle().clone();
    let callback = std::sync::Arc::new(callback);
    move |ev: &rlock::LostEvent| {
        let (cb, args) = (callback.clone(), rlock::surface::lost_args(ev));
        handle.spawn_blocking(move || {
            Python::try_attach(|py| {
                if let Err(e) = cb.call1(py, args) {
                    e.write_unraisable(py, Some(cb.bind(py)));
                }
            });
        });
    }
}
