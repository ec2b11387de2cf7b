//! RedLock on the Python surface (core `rlock::RedLock` / `rlock::FencedRedLock`): one native
//! class for both; `rlock.RedLock` and `rlock.FencedRedLock` wrap it.

use pyo3::prelude::*;

use crate::client::Client;
use crate::errors::map_err;
use crate::handle::{handles, lost_caller, AcquireArgs, Handle, Taken};
use crate::runtime::Rt;

/// One lock name held by a majority of N independent servers (one client each). Holds belong
/// to owners: the calling thread, or an explicit id (unique across the process's clients).
#[pyclass(frozen, module = "rlock._native")]
pub(crate) struct RedLock {
    inner: rlock::RedLock,
    pub(crate) client: rlock::Client,
    pub(crate) rt: Rt,
}

handles!(RedLock);

/// The acquire of the sync and async entry points.
async fn acquiring(
    red: rlock::RedLock,
    (owner, timeout, lease): AcquireArgs,
) -> rlock::Result<Option<Taken>> {
    Ok(red.acquire_guard(&owner, timeout, lease).await?.map(Taken::Red))
}

#[pymethods]
impl RedLock {
    /// A RedLock on `name` over `clients` (an odd number, at least 3); `fenced` hands out
    /// fencing tokens.
    #[new]
    #[pyo3(signature = (name, clients, fenced = false))]
    fn new(name: &str, clients: Vec<PyRef<'_, Client>>, fenced: bool) -> PyResult<Self> {
        let natives: Vec<rlock::Client> = clients.iter().map(|c| c.inner.clone()).collect();
        let inner = rlock::surface::red_lock(name, &natives, fenced).map_err(map_err)?;
        let first = &clients[0];
        Ok(RedLock { inner, client: first.inner.clone(), rt: first.rt.clone() })
    }

    /// The lock name.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// How many servers make a majority.
    #[getter]
    fn quorum(&self) -> usize {
        self.inner.quorum()
    }

    /// Blocks until `owner` (None: this thread) holds a majority, or `timeout` seconds passed
    /// (None: no limit; 0: one round). The token (0 when not fenced), or None when the wait
    /// ran out.
    #[pyo3(signature = (owner = None, timeout = None, lease = None))]
    fn acquire(
        &self,
        py: Python<'_>,
        owner: Option<u64>,
        timeout: Option<f64>,
        lease: Option<f64>,
    ) -> PyResult<Option<u64>> {
        let args = self.acquire_args(owner, timeout, lease)?;
        Ok(self.acquired(py, acquiring(self.inner.clone(), args))?.claim_token())
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

    /// Releases `owner`'s holds (None: this thread) on every server; True when the lock became
    /// free (False: it had re-entered).
    #[pyo3(signature = (owner = None))]
    fn release(&self, py: Python<'_>, owner: Option<u64>) -> PyResult<bool> {
        let (red, owner) = (self.inner.clone(), self.owner(owner)?);
        self.run(py, async move { Ok(red.release(&owner).await?.is_unlocked()) })
    }

    /// Like `release` for `owner`, as an awaitable (runs to the end even when cancelled).
    fn release_async<'py>(&self, py: Python<'py>, owner: u64) -> PyResult<Bound<'py, PyAny>> {
        let (red, owner) = (self.inner.clone(), self.owner(Some(owner))?);
        self.run_async(py, async move { red.release(&owner).await.map(|r| r.is_unlocked()) })
    }

    /// Whether `owner` (None: this thread) holds it on a majority of the servers.
    #[pyo3(signature = (owner = None))]
    fn is_held(&self, py: Python<'_>, owner: Option<u64>) -> PyResult<bool> {
        let (red, owner) = (self.inner.clone(), self.owner(owner)?);
        self.run(py, async move { red.is_held(&owner).await })
    }

    /// Whether `owner`'s RedLock was lost (fewer than a majority of its holds left).
    #[pyo3(signature = (owner = None))]
    fn is_lost(&self, owner: Option<u64>) -> PyResult<bool> {
        Ok(self.inner.is_lost(&self.owner(owner)?))
    }

    /// How long local time still proves a majority of `owner`'s holds, in seconds.
    #[pyo3(signature = (owner = None))]
    fn valid_for(&self, owner: Option<u64>) -> PyResult<f64> {
        Ok(self.inner.valid_for(&self.owner(owner)?).as_secs_f64())
    }

    /// The token of `owner`'s latest acquire while it holds it (fenced); None otherwise.
    #[pyo3(signature = (owner = None))]
    fn token(&self, owner: Option<u64>) -> PyResult<Option<u64>> {
        Ok(self.inner.token_of(&self.owner(owner)?))
    }

    /// Calls `callback(name, kind, owner, reason, permit_id)` (kind "red_lock") when a hold of
    /// this RedLock is lost; returns the listener id.
    fn on_lost(&self, callback: Py<PyAny>) -> PyResult<u64> {
        self.rt.check_pid()?;
        Ok(self.inner.on_lost(None, lost_caller(&self.rt, callback)).into_raw())
    }

    /// Removes a listener added with `on_lost`; False when it was already removed.
    fn remove_lost_listener(&self, id: u64) -> bool {
        self.inner.remove_lost_listener(rlock::ListenerId::from_raw(id))
    }
}
