//! `PermitExpirableSemaphore`: core `rlock::PermitExpirableSemaphore` (permits with ids).

use std::time::Duration;

use pyo3::prelude::*;

use crate::errors::map_err;
use crate::handle::{handles, lost_caller, opt_seconds, Handle, Taken};
use crate::runtime::Rt;

/// A handle on one permit-expirable semaphore (core `rlock::PermitExpirableSemaphore`).
#[pyclass(frozen, module = "rlock._native")]
pub(crate) struct PermitExpirableSemaphore {
    pub(crate) inner: rlock::PermitExpirableSemaphore,
    pub(crate) client: rlock::Client,
    pub(crate) rt: Rt,
}

handles!(PermitExpirableSemaphore);

/// A permit acquire ([`rlock::surface::permit_held`]): `wait` `None` waits for good; a wait
/// that runs out is core's `NotAcquired` error, in core's words (`NotAcquiredError` here).
async fn permit_future(
    sem: rlock::PermitExpirableSemaphore,
    wait: Option<Duration>,
    lease: Option<Duration>,
) -> rlock::Result<Option<Taken>> {
    Ok(Some(Taken::Permit(rlock::surface::permit_held(&sem, wait, lease).await?)))
}

#[pymethods]
impl PermitExpirableSemaphore {
    /// The semaphore name (also the Redis key of its count).
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// Sets the permits when the semaphore does not exist (with a TTL in seconds when given);
    /// True when set.
    #[pyo3(signature = (permits, ttl = None))]
    fn try_set_permits(&self, py: Python<'_>, permits: i64, ttl: Option<f64>) -> PyResult<bool> {
        let ttl = opt_seconds("ttl", ttl)?;
        let n = rlock::surface::count_arg("permits", permits, 0).map_err(map_err)?;
        let sem = self.inner.clone();
        self.run(py, async move { sem.try_set_permits(n, ttl).await })
    }

    /// Blocks until a permit is taken (its id) or `timeout` seconds passed (None: no limit, 0:
    /// try once; then NotAcquiredError, core's). `lease` None: the watchdog renews the permit.
    #[pyo3(signature = (timeout = None, lease = None))]
    fn acquire(&self, py: Python<'_>, timeout: Option<f64>, lease: Option<f64>) -> PyResult<Option<String>> {
        let (timeout, lease) = (opt_seconds("timeout", timeout)?, opt_seconds("lease", lease)?);
        Ok(self.acquired(py, permit_future(self.inner.clone(), timeout, lease))?.claim_id())
    }

    /// Like `acquire`, as an awaitable of a `PendingAcquire` whose `claim_permit()` takes it
    /// (NotAcquiredError when the wait ran out).
    #[pyo3(signature = (timeout = None, lease = None))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
        lease: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (timeout, lease) = (opt_seconds("timeout", timeout)?, opt_seconds("lease", lease)?);
        self.pending(py, permit_future(self.inner.clone(), timeout, lease))
    }

    /// Releases permit `id` (NotHeldError when it is not held, LockLostError when the watchdog
    /// lost it).
    fn release(&self, py: Python<'_>, id: String) -> PyResult<()> {
        let sem = self.inner.clone();
        self.run(py, async move { sem.release(&id).await })
    }

    /// Like `release`, as an awaitable (runs to the end even when cancelled).
    fn release_async<'py>(&self, py: Python<'py>, id: String) -> PyResult<Bound<'py, PyAny>> {
        let sem = self.inner.clone();
        self.run_async(py, async move { sem.release(&id).await })
    }

    /// Sets the lease of permit `id` to `lease` seconds from now (None: the watchdog renews it).
    #[pyo3(signature = (id, lease))]
    fn update_lease(&self, py: Python<'_>, id: String, lease: Option<f64>) -> PyResult<()> {
        let lease = opt_seconds("lease", lease)?;
        let sem = self.inner.clone();
        self.run(py, async move { sem.update_lease(&id, lease).await })
    }

    /// The free permits, after expired ones came back (0 when the semaphore does not exist).
    fn available_permits(&self, py: Python<'_>) -> PyResult<i64> {
        let sem = self.inner.clone();
        self.run(py, async move { sem.available_permits().await })
    }

    /// The held permits (not released, not expired).
    fn acquired_permits(&self, py: Python<'_>) -> PyResult<i64> {
        let sem = self.inner.clone();
        self.run(py, async move { sem.acquired_permits().await })
    }

    /// Adds `n` permits (negative removes); the new count.
    fn add_permits(&self, py: Python<'_>, n: i64) -> PyResult<i64> {
        let sem = self.inner.clone();
        self.run(py, async move { sem.add_permits(n).await })
    }

    /// Whether this client's watchdog lost permit `id`.
    fn is_lost(&self, id: &str) -> bool {
        self.inner.is_lost(id)
    }

    /// How long local time still proves permit `id`, in seconds.
    fn valid_for(&self, id: &str) -> f64 {
        self.inner.valid_for(id).as_secs_f64()
    }

    /// Calls `callback(name, permit_id, reason)` when this client's watchdog loses a permit of
    /// this semaphore; returns the listener id.
    fn on_lost(&self, callback: Py<PyAny>) -> PyResult<u64> {
        self.rt.check_pid()?;
        Ok(self.inner.on_lost(lost_caller(&self.rt, callback)).into_raw())
    }

    /// Removes a listener added with `on_lost`; False when it was already removed.
    fn remove_lost_listener(&self, id: u64) -> bool {
        self.inner.remove_lost_listener(rlock::ListenerId::from_raw(id))
    }
}
