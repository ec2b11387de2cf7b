//! `Lock`: one lock of the family (reentrant, fenced, fair, read or write); holds belong to
//! owners, not handles.

use pyo3::prelude::*;

use crate::handle::{handles, lost_caller, AcquireArgs, Handle, Taken};
use crate::runtime::Rt;

/// A handle on one reentrant lock (core `rlock::Lock`). Holds belong to owners, not handles.
#[pyclass(frozen, module = "rlock._native")]
pub(crate) struct Lock {
    pub(crate) inner: rlock::Lock,
    pub(crate) client: rlock::Client,
    pub(crate) rt: Rt,
}

handles!(Lock);

/// The acquire of the sync and async entry points.
async fn acquiring(lock: rlock::Lock, (owner, timeout, lease): AcquireArgs) -> rlock::Result<Option<Taken>> {
    Ok(lock.acquire_guard(&owner, timeout, lease).await?.map(Taken::Hold))
}

#[pymethods]
impl Lock {
    /// The lock name (also its Redis key).
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// Which lock of the family: "lock", "fenced", "read", "write", "fair", "spin",
    /// "non_reentrant" or "non_reentrant_fair".
    #[getter]
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }

    /// Blocks until `owner` holds the lock or `timeout` seconds passed (None: no limit, 0: try
    /// once). `lease` None uses the watchdog. Returns None when the wait ran out, else the
    /// fencing token the acquire's own reply carried (0 for a lock that is not fenced).
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

    /// Like `acquire`, as an awaitable of a `PendingAcquire` whose `claim()` takes the hold.
    /// Cancelling it leaves no hold, renewal or subscription.
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

    /// Releases one hold level of `owner`; True when the lock became free, False when `owner`
    /// still holds it (re-entered).
    #[pyo3(signature = (owner = None))]
    fn release(&self, py: Python<'_>, owner: Option<u64>) -> PyResult<bool> {
        let owner = self.owner(owner)?;
        let lock = self.inner.clone();
        let r = self.run(py, async move { lock.release(&owner).await })?;
        Ok(r.is_unlocked())
    }

    /// Like `release`, as an awaitable (the release runs to the end even when cancelled).
    fn release_async<'py>(&self, py: Python<'py>, owner: u64) -> PyResult<Bound<'py, PyAny>> {
        let (lock, owner) = (self.inner.clone(), self.owner(Some(owner))?);
        self.run_async(py, async move { lock.release(&owner).await.map(rlock::Released::is_unlocked) })
    }

    /// Deletes the lock whoever holds it; True when it was locked.
    fn force_unlock(&self, py: Python<'_>) -> PyResult<bool> {
        let lock = self.inner.clone();
        self.run(py, async move { lock.force_unlock().await })
    }

    /// Whether anyone holds the lock.
    fn locked(&self, py: Python<'_>) -> PyResult<bool> {
        let lock = self.inner.clone();
        self.run(py, async move { lock.is_locked().await })
    }

    /// Whether `owner` holds the lock.
    #[pyo3(signature = (owner = None))]
    fn is_held(&self, py: Python<'_>, owner: Option<u64>) -> PyResult<bool> {
        let owner = self.owner(owner)?;
        let lock = self.inner.clone();
        self.run(py, async move { lock.is_held(&owner).await })
    }

    /// How many times `owner` holds the lock (0 when it does not).
    #[pyo3(signature = (owner = None))]
    fn hold_count(&self, py: Python<'_>, owner: Option<u64>) -> PyResult<u32> {
        let owner = self.owner(owner)?;
        let lock = self.inner.clone();
        self.run(py, async move { lock.hold_count(&owner).await })
    }

    /// Seconds left on the lease; None when unlocked, `inf` for a key without expiry.
    fn remaining_ttl(&self, py: Python<'_>) -> PyResult<Option<f64>> {
        let lock = self.inner.clone();
        Ok(match self.run(py, async move { lock.remaining_ttl().await })? {
            rlock::Ttl::Absent => None,
            rlock::Ttl::NoExpiry => Some(f64::INFINITY),
            rlock::Ttl::Remaining(d) => Some(d.as_secs_f64()),
        })
    }

    /// Whether the watchdog lost `owner`'s hold (until its release is called).
    #[pyo3(signature = (owner = None))]
    fn is_lost(&self, owner: Option<u64>) -> PyResult<bool> {
        let owner = self.owner(owner)?;
        Ok(self.inner.is_lost(&owner))
    }

    /// How long local time still proves `owner`'s hold, in seconds (0.0: not held, lost or in
    /// doubt).
    #[pyo3(signature = (owner = None))]
    fn valid_for(&self, owner: Option<u64>) -> PyResult<f64> {
        let owner = self.owner(owner)?;
        Ok(self.inner.valid_for(&owner).as_secs_f64())
    }

    /// For a fenced lock: `owner`'s latest fencing token while it holds the lock; None when it
    /// holds none (or the lock is not fenced).
    #[pyo3(signature = (owner = None))]
    fn token(&self, owner: Option<u64>) -> PyResult<Option<u64>> {
        let owner = self.owner(owner)?;
        Ok(self.inner.token_of(&owner))
    }

    /// Calls `callback(name, owner, reason)` (on a library thread) when the watchdog loses a
    /// hold of this lock by any owner of this client; core routes the event. Returns the
    /// listener id for `remove_lost_listener`. An exception in the callback is reported
    /// as unraisable, never propagated.
    fn on_lost(&self, callback: Py<PyAny>) -> PyResult<u64> {
        self.rt.check_pid()?;
        Ok(self.inner.on_lost(None, lost_caller(&self.rt, callback)).into_raw())
    }

    /// Removes a listener added with `on_lost`; False when it was already removed.
    fn remove_lost_listener(&self, id: u64) -> bool {
        self.inner.remove_lost_listener(rlock::ListenerId::from_raw(id))
    }
}
