//! `MultiLock`: core `rlock::MultiLock`, all or nothing over locks of any clients.

use pyo3::prelude::*;

use crate::errors::map_err;
use crate::handle::{handles, AcquireArgs, Handle, Taken};
use crate::lock::Lock;
use crate::runtime::Rt;

/// Several locks taken all-or-nothing (core `rlock::MultiLock`); members may come from several
/// clients. Holds belong to owners: the calling thread, or an explicit id.
#[pyclass(frozen, module = "rlock._native")]
pub(crate) struct MultiLock {
    pub(crate) inner: rlock::MultiLock,
    pub(crate) client: rlock::Client,
    pub(crate) rt: Rt,
}

handles!(MultiLock);

/// The acquire of the sync and async entry points.
async fn acquiring(
    multi: rlock::MultiLock,
    (owner, timeout, lease): AcquireArgs,
) -> rlock::Result<Option<Taken>> {
    Ok(multi.acquire_guard(&owner, timeout, lease).await?.map(Taken::Multi))
}

#[pymethods]
impl MultiLock {
    /// A multi-lock over `locks` (at least one), taken in this order.
    #[new]
    fn new(locks: Vec<PyRef<'_, Lock>>) -> PyResult<Self> {
        let inner =
            rlock::MultiLock::new(locks.iter().map(|l| l.inner.clone()).collect()).map_err(map_err)?;
        // Not empty: core refused that.
        let first = &locks[0];
        Ok(MultiLock { inner, client: first.client.clone(), rt: first.rt.clone() })
    }

    /// Blocks until `owner` (None: this thread) holds every member or `timeout` seconds passed
    /// (None: no limit, 0: one round); whether it does.
    #[pyo3(signature = (owner = None, timeout = None, lease = None))]
    fn acquire(
        &self,
        py: Python<'_>,
        owner: Option<u64>,
        timeout: Option<f64>,
        lease: Option<f64>,
    ) -> PyResult<bool> {
        let args = self.acquire_args(owner, timeout, lease)?;
        Ok(self.acquired(py, acquiring(self.inner.clone(), args))?.claim())
    }

    /// Like `acquire` for `owner`, as an awaitable of a `PendingAcquire`.
    #[pyo3(signature = (owner, timeout = None, lease = None))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        owner: u64,
        timeout: Option<f64>,
        lease: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let args = self.acquire_args(Some(owner), timeout, lease)?;
        self.pending(py, acquiring(self.inner.clone(), args))
    }

    /// Releases every member held by `owner` (None: this thread); the error names every
    /// member that failed.
    #[pyo3(signature = (owner = None))]
    fn release(&self, py: Python<'_>, owner: Option<u64>) -> PyResult<()> {
        let (multi, owner) = (self.inner.clone(), self.owner(owner)?);
        self.run(py, async move { multi.release(&owner).await })
    }

    /// Like `release` for `owner`, as an awaitable (runs to the end even when cancelled).
    fn release_async<'py>(&self, py: Python<'py>, owner: u64) -> PyResult<Bound<'py, PyAny>> {
        let (multi, owner) = (self.inner.clone(), self.owner(Some(owner))?);
        self.run_async(py, async move { multi.release(&owner).await })
    }

    /// Whether `owner` (None: this thread) holds every member.
    #[pyo3(signature = (owner = None))]
    fn is_held(&self, py: Python<'_>, owner: Option<u64>) -> PyResult<bool> {
        let (multi, owner) = (self.inner.clone(), self.owner(owner)?);
        self.run(py, async move { multi.is_held(&owner).await })
    }
}
