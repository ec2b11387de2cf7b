//! `CountDownLatch`: Redisson's count-down latch (core `rlock::CountDownLatch`).

use pyo3::prelude::*;

use crate::errors::map_err;
use crate::handle::{handles, opt_seconds, Handle};
use crate::runtime::Rt;

/// Redisson's count-down latch (`RCountDownLatch`): a count in the key `name`, open at 0 (also
/// while the key is missing). Any thread or task may count down; every waiter, Java's
/// included, wakes when the count reaches 0. Made by `Client.count_down_latch(name)`.
#[pyclass(frozen, module = "rlock._native")]
pub(crate) struct CountDownLatch {
    pub(crate) inner: rlock::CountDownLatch,
    pub(crate) client: rlock::Client,
    pub(crate) rt: Rt,
}

handles!(CountDownLatch);

#[pymethods]
impl CountDownLatch {
    /// The latch name (also its Redis key).
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// Sets the count (0 or more) when the latch does not exist (is open); True when set,
    /// False when it existed (nothing changed).
    fn try_set_count(&self, py: Python<'_>, count: i64) -> PyResult<bool> {
        let n = rlock::surface::count_arg("count", count, 0).map_err(map_err)?;
        let latch = self.inner.clone();
        self.run(py, async move { latch.try_set_count(n).await })
    }

    /// Counts down by one; at 0 the latch opens and every waiter wakes. Counting down an open
    /// latch changes nothing; a retry never counts twice.
    fn count_down(&self, py: Python<'_>) -> PyResult<()> {
        let latch = self.inner.clone();
        self.run(py, async move { latch.count_down().await })
    }

    /// Like `count_down`, as an awaitable (runs to the end even when cancelled).
    fn count_down_async<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let latch = self.inner.clone();
        self.run_async(py, async move { latch.count_down().await })
    }

    /// The current count (0 when the latch is open).
    fn count(&self, py: Python<'_>) -> PyResult<u64> {
        let latch = self.inner.clone();
        self.run(py, async move { latch.count().await })
    }

    /// Blocks until the latch is open or `timeout` seconds passed (None: no limit, 0: look
    /// once); True when open, False when the wait ran out. Ctrl-C interrupts it.
    #[pyo3(signature = (timeout = None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = opt_seconds("timeout", timeout)?;
        let latch = self.inner.clone();
        self.run(py, async move { latch.wait(timeout).await })
    }

    /// Like `wait`, as an awaitable; cancelling it leaves no subscription behind.
    #[pyo3(signature = (timeout = None))]
    fn wait_async<'py>(&self, py: Python<'py>, timeout: Option<f64>) -> PyResult<Bound<'py, PyAny>> {
        let timeout = opt_seconds("timeout", timeout)?;
        let latch = self.inner.clone();
        self.run_async(py, async move { latch.wait(timeout).await })
    }

    /// Deletes the latch whatever its count; True when it existed. rlock waiters wake and find
    /// it open; Redisson's keep waiting (Redisson wakes them only on a count-down to 0).
    fn delete(&self, py: Python<'_>) -> PyResult<bool> {
        let latch = self.inner.clone();
        self.run(py, async move { latch.delete().await })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let name = pyo3::types::PyString::new(py, self.inner.name()).repr()?;
        Ok(format!("<rlock.CountDownLatch {name}>"))
    }
}
