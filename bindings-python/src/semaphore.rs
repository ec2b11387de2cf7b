//! `Semaphore`: core `rlock::Semaphore` (permits are not owned).

use pyo3::prelude::*;

use crate::errors::map_err;
use crate::handle::{handles, opt_seconds, Handle, Taken};
use crate::runtime::Rt;

/// A handle on one semaphore (core `rlock::Semaphore`).
#[pyclass(frozen, module = "rlock._native")]
pub(crate) struct Semaphore {
    pub(crate) inner: rlock::Semaphore,
    pub(crate) client: rlock::Client,
    pub(crate) rt: Rt,
}

handles!(Semaphore);

/// Permits as a core `u64`: a negative count is a bad argument, whose message says the permits
/// `must` be so (0 passes, for core to refuse where it must be at least 1).
fn permits(n: i64, must: &str) -> PyResult<u64> {
    let invalid =
        || rlock::Error::new(rlock::ErrorKind::InvalidArgument, format!("permits must {must} (got {n})"));
    u64::try_from(n).map_err(|_| map_err(invalid()))
}

#[pymethods]
impl Semaphore {
    /// The semaphore name (also its Redis key).
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// Sets the permits when the semaphore does not exist (with a TTL in seconds when given);
    /// True when set.
    #[pyo3(signature = (permits, ttl = None))]
    fn try_set_permits(&self, py: Python<'_>, permits: i64, ttl: Option<f64>) -> PyResult<bool> {
        let ttl = opt_seconds("ttl", ttl)?;
        let n = self::permits(permits, "not be negative")?;
        let sem = self.inner.clone();
        self.run(py, async move { sem.try_set_permits(n, ttl).await })
    }

    /// Blocks until `permits` are taken or `timeout` seconds passed (None: no limit, 0: try
    /// once); whether they were taken.
    #[pyo3(signature = (permits = 1, timeout = None))]
    fn acquire(&self, py: Python<'_>, permits: i64, timeout: Option<f64>) -> PyResult<bool> {
        let n = self::permits(permits, "be at least 1")?;
        let timeout = opt_seconds("timeout", timeout)?;
        let sem = self.inner.clone();
        Ok(self
            .acquired(py, async move { Ok(sem.acquire_guard(n, timeout).await?.map(Taken::Permits)) })?
            .claim())
    }

    /// Like `acquire`, as an awaitable of a `PendingAcquire` whose `claim()` takes the permits.
    #[pyo3(signature = (permits = 1, timeout = None))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        permits: i64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = self::permits(permits, "be at least 1")?;
        let timeout = opt_seconds("timeout", timeout)?;
        let sem = self.inner.clone();
        self.pending(py, async move { Ok(sem.acquire_guard(n, timeout).await?.map(Taken::Permits)) })
    }

    /// Gives back `permits`; the new count.
    #[pyo3(signature = (permits = 1))]
    fn release(&self, py: Python<'_>, permits: i64) -> PyResult<i64> {
        let n = self::permits(permits, "be at least 1")?;
        let sem = self.inner.clone();
        self.run(py, async move { sem.release(n).await })
    }

    /// Like `release`, as an awaitable (runs to the end even when cancelled).
    #[pyo3(signature = (permits = 1))]
    fn release_async<'py>(&self, py: Python<'py>, permits: i64) -> PyResult<Bound<'py, PyAny>> {
        let n = self::permits(permits, "be at least 1")?;
        let sem = self.inner.clone();
        self.run_async(py, async move { sem.release(n).await })
    }

    /// The available permits (0 when the semaphore does not exist).
    fn available_permits(&self, py: Python<'_>) -> PyResult<i64> {
        let sem = self.inner.clone();
        self.run(py, async move { sem.available_permits().await })
    }

    /// Adds `n` permits (negative removes); the new count.
    fn add_permits(&self, py: Python<'_>, n: i64) -> PyResult<i64> {
        let sem = self.inner.clone();
        self.run(py, async move { sem.add_permits(n).await })
    }

    /// Takes every available permit; how many there were.
    fn drain_permits(&self, py: Python<'_>) -> PyResult<i64> {
        let sem = self.inner.clone();
        self.run(py, async move { sem.drain_permits().await })
    }
}
