//! `Semaphore`: core `rlock::Semaphore` (permits are not owned).

use pyo3::prelude::*;

use crate::errors::map_err;
use crate::runtime::Rt;
use crate::{aio, opt_seconds, Acquired, Handle, Outcome, PendingAcquire, Taken};

/// A handle on one semaphore (core `rlock::Semaphore`).
#[pyclass(frozen, module = "rlock._native")]
pub(crate) struct Semaphore {
    pub(crate) inner: rlock::Semaphore,
    pub(crate) client: rlock::Client,
    pub(crate) rt: Rt,
}

/// Permits as a core `u64` (a negative count is a bad argument).
fn permits(n: i64) -> PyResult<u64> {
    u64::try_from(n).map_err(|_| {
        map_err(rlock::Error::new(
            rlock::ErrorKind::InvalidArgument,
            format!("permits must be at least 1 (got {n})"),
        ))
    })
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
        let n = u64::try_from(permits).map_err(|_| {
            map_err(rlock::Error::new(
                rlock::ErrorKind::InvalidArgument,
                format!("permits must not be negative (got {permits})"),
            ))
        })?;
        let sem = self.inner.clone();
        self.run(py, async move { sem.try_set_permits(n, ttl).await })
    }

    /// Blocks until `permits` are taken or `timeout` seconds passed (None: no limit, 0: try
    /// once); whether they were taken.
    #[pyo3(signature = (permits = 1, timeout = None))]
    fn acquire(&self, py: Python<'_>, permits: i64, timeout: Option<f64>) -> PyResult<bool> {
        let n = self::permits(permits)?;
        let timeout = opt_seconds("timeout", timeout)?;
        let sem = self.inner.clone();
        let got = self
            .run(py, async move { Ok(Acquired(sem.acquire_guard(n, timeout).await?.map(Taken::Permits))) })?;
        Ok(got.claim())
    }

    /// Like `acquire`, as an awaitable of a `PendingAcquire` whose `claim()` takes the permits.
    #[pyo3(signature = (permits = 1, timeout = None))]
    fn acquire_async<'py>(
        &self,
        py: Python<'py>,
        permits: i64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let n = self::permits(permits)?;
        let timeout = opt_seconds("timeout", timeout)?;
        self.rt.check_pid()?;
        let sem = self.inner.clone();
        aio::future_into_py(py, &self.rt, &self.client, async move {
            let got = sem.acquire_guard(n, timeout).await.map(|p| PendingAcquire::new(p.map(Taken::Permits)));
            Ok(Outcome(got))
        })
    }

    /// Gives back `permits`; the new count.
    #[pyo3(signature = (permits = 1))]
    fn release(&self, py: Python<'_>, permits: i64) -> PyResult<i64> {
        let n = self::permits(permits)?;
        let sem = self.inner.clone();
        self.run(py, async move { sem.release(n).await })
    }

    /// Like `release`, as an awaitable (runs to the end even when cancelled).
    #[pyo3(signature = (permits = 1))]
    fn release_async<'py>(&self, py: Python<'py>, permits: i64) -> PyResult<Bound<'py, PyAny>> {
        let n = self::permits(permits)?;
        self.rt.check_pid()?;
        let sem = self.inner.clone();
        aio::future_into_py(py, &self.rt, &self.client, async move { Ok(Outcome(sem.release(n).await)) })
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
