//! `rlock._native`: the Python extension module of rlock.
//!
//! Thin by design: every function parses its arguments, calls the core crate and maps the result.
//! Owners are plain integers chosen by the Python layer (`None` = the calling OS thread); the
//! binding keeps no lock state of its own.

mod errors;
mod runtime;
mod wait;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::{IntoPyObject, IntoPyObjectExt};

use errors::{invalid, map_err};
use runtime::Rt;

/// Converts seconds given by Python into a `Duration`; NaN, infinite and negative values are
/// rejected here because `Duration` cannot carry them (core checks the range of the rest).
fn seconds(what: &str, s: f64) -> PyResult<Duration> {
    if !s.is_finite() || s < 0.0 {
        return Err(invalid(format!("{what} must be a finite number of seconds >= 0 (got {s})")));
    }
    Duration::try_from_secs_f64(s).map_err(|_| invalid(format!("{what} is too large ({s} s)")))
}

/// [`seconds`] for optional arguments, where None keeps its own meaning (no limit, watchdog).
fn opt_seconds(what: &str, s: Option<f64>) -> PyResult<Option<Duration>> {
    s.map(|s| seconds(what, s)).transpose()
}

/// A connection to Redis that makes locks (core `rlock::Client`).
#[pyclass(frozen, module = "rlock._native")]
struct Client {
    inner: rlock::Client,
    rt: Rt,
}

impl Client {
    /// Fails in a forked child: the runtime's threads and the sockets belong to the parent.
    fn check(&self) -> PyResult<&rlock::Client> {
        self.rt.check_pid()?;
        Ok(&self.inner)
    }
}

#[pymethods]
impl Client {
    /// Connects to Redis; see `rlock.Client` for the meaning of the options.
    #[new]
    #[pyo3(text_signature = "(url, *, watchdog_timeout=30.0, command_timeout=3.0, connect_timeout=10.0, \
        retry_attempts=3, retry_delay=1.5, subscription_timeout=7.5, poll_interval=0.1, max_hold=None, \
        renewal_batch_size=100, tls_ca_file=None, sharded_pubsub=None, replica_sync=None, \
        replica_sync_timeout=1.0, command_connections=1, on_lost=None)")]
    #[pyo3(signature = (
        url,
        *,
        watchdog_timeout = 30.0,
        command_timeout = Some(3.0),
        connect_timeout = 10.0,
        retry_attempts = 3,
        retry_delay = 1.5,
        subscription_timeout = 7.5,
        poll_interval = 0.1,
        max_hold = None,
        renewal_batch_size = 100,
        tls_ca_file = None,
        sharded_pubsub = None,
        replica_sync = None,
        replica_sync_timeout = 1.0,
        command_connections = 1,
        on_lost = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        url: &str,
        watchdog_timeout: f64,
        command_timeout: Option<f64>,
        connect_timeout: f64,
        retry_attempts: u32,
        retry_delay: f64,
        subscription_timeout: f64,
        poll_interval: f64,
        max_hold: Option<f64>,
        renewal_batch_size: usize,
        tls_ca_file: Option<std::path::PathBuf>,
        sharded_pubsub: Option<bool>,
        replica_sync: Option<bool>,
        replica_sync_timeout: f64,
        command_connections: usize,
        on_lost: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let options = rlock::ClientOptions::default()
            .with_watchdog_timeout(seconds("watchdog_timeout", watchdog_timeout)?)
            .with_command_timeout(opt_seconds("command_timeout", command_timeout)?)
            .with_connect_timeout(seconds("connect_timeout", connect_timeout)?)
            .with_retry_attempts(retry_attempts)
            .with_retry_delay(seconds("retry_delay", retry_delay)?)
            .with_subscription_timeout(seconds("subscription_timeout", subscription_timeout)?)
            .with_poll_interval(seconds("poll_interval", poll_interval)?)
            .with_max_hold(opt_seconds("max_hold", max_hold)?)
            .with_renewal_batch_size(renewal_batch_size)
            .with_tls_ca_file(tls_ca_file)
            .with_sharded_pubsub(sharded_pubsub)
            .with_replica_sync(replica_sync)
            .with_replica_sync_timeout(seconds("replica_sync_timeout", replica_sync_timeout)?)
            .with_command_connections(command_connections);
        let rt = runtime::current()?;
        let url = url.to_owned();
        let inner = wait::block_on(py, &rt, async move { rlock::Client::connect(&url, options).await })?
            .map_err(map_err)?;
        if let Some(cb) = on_lost {
            let cb = Arc::new(cb);
            let handle = rt.handle().clone();
            inner.on_lost(move |ev: &rlock::LostEvent| {
                let cb = cb.clone();
                let name = ev.name.to_string();
                let owner = ev.owner.id();
                let reason = match ev.reason {
                    rlock::LostReason::Gone => "gone",
                    rlock::LostReason::RenewalFailed => "renewal_failed",
                    _ => "unknown",
                };
                // Python code runs on the blocking pool so a slow callback never stalls the
                // watchdog; an exception in it is reported, never propagated into Rust.
                handle.spawn_blocking(move || {
                    Python::try_attach(|py| {
                        if let Err(e) = cb.call1(py, (name, owner, reason)) {
                            e.write_unraisable(py, Some(cb.bind(py)));
                        }
                    });
                });
            });
        }
        Ok(Client { inner, rt })
    }

    /// A handle on the lock `name`.
    fn lock(&self, name: &str) -> PyResult<Lock> {
        let lock = self.check()?.lock(name).map_err(map_err)?;
        Ok(Lock { inner: lock, client: self.inner.clone(), rt: self.rt.clone() })
    }

    /// A fresh owner id, distinct from every thread id and from earlier calls (asyncio tasks).
    fn new_owner_id(&self) -> PyResult<u64> {
        Ok(self.check()?.new_owner().id())
    }

    /// The owner string stored in Redis for `owner` (None = the calling thread).
    #[pyo3(signature = (owner = None))]
    fn owner_name(&self, owner: Option<u64>) -> PyResult<String> {
        Ok(owner_of(self.check()?, owner).as_str().to_owned())
    }

    /// Stops renewals and pub/sub; later calls fail with `ClosedError`.
    fn close(&self) {
        self.inner.close();
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// Holds the client tracks (held, or lost and not yet released).
    fn tracked_holds(&self) -> PyResult<usize> {
        Ok(self.check()?.tracked_holds())
    }

    /// Lock channels this client is subscribed to for waiters.
    fn waited_channels(&self) -> PyResult<usize> {
        Ok(self.check()?.waited_channels())
    }

    /// What the URL named: "single", "cluster" or "sentinel".
    #[getter]
    fn topology(&self) -> &'static str {
        self.inner.topology().as_str()
    }

    /// Whether waiters use sharded pub/sub (decided at connect).
    #[getter]
    fn sharded_pubsub(&self) -> bool {
        self.inner.sharded_pubsub()
    }

    /// Whether acquires wait for a replica (decided at connect).
    #[getter]
    fn replica_sync(&self) -> bool {
        self.inner.replica_sync()
    }
}

/// The owner for `id`, or the calling OS thread's owner.
fn owner_of(client: &rlock::Client, id: Option<u64>) -> rlock::Owner {
    client.owner(id.unwrap_or_else(rlock::thread_owner_id))
}

/// The outcome of a blocking acquire on its way to Python. The core guard inside releases a hold
/// that nobody claims (the waiting call was interrupted just as the acquire succeeded), so an
/// interrupted acquire never leaves a hold behind.
struct Acquired(Option<rlock::Guard>);

impl Acquired {
    fn claim(self) -> bool {
        self.0.map(rlock::Guard::keep).is_some()
    }
}

/// The outcome of an `acquire_async` on its way to its asyncio task. The hold is handed over only
/// when the Python layer calls `claim()`, right after its `await` returned. Until then this object
/// owns it: when the awaitable is cancelled after the acquire succeeded (its result was already
/// queued on the event loop, or the task was cancelled before it resumed), the object is dropped
/// unclaimed and the core guard in it releases the hold.
#[pyclass(frozen, module = "rlock._native")]
struct PendingAcquire(std::sync::Mutex<Option<rlock::Guard>>);

#[pymethods]
impl PendingAcquire {
    /// Takes the hold for the awaiting task; returns whether the lock was acquired (False when
    /// the wait ran out, or when it was claimed already).
    fn claim(&self) -> bool {
        Acquired(self.0.lock().unwrap_or_else(|p| p.into_inner()).take()).claim()
    }
}

/// A core result on its way to asyncio. Errors become exceptions during the conversion, which
/// pyo3-async-runtimes runs with the GIL held, so tokio workers never wait for the GIL.
struct Outcome<T>(rlock::Result<T>);

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

/// The acquire future shared by the sync and async entry points.
async fn acquire_future(
    lock: rlock::Lock,
    owner: rlock::Owner,
    timeout: Option<Duration>,
    lease: Option<Duration>,
) -> rlock::Result<Acquired> {
    Ok(Acquired(lock.acquire_guard(&owner, timeout, lease).await?))
}

/// A handle on one reentrant lock (core `rlock::Lock`). Holds belong to owners, not handles.
#[pyclass(frozen, module = "rlock._native")]
struct Lock {
    inner: rlock::Lock,
    client: rlock::Client,
    rt: Rt,
}

impl Lock {
    fn owner(&self, id: Option<u64>) -> PyResult<rlock::Owner> {
        self.rt.check_pid()?;
        Ok(owner_of(&self.client, id))
    }

    /// Runs a core call on the runtime, waiting with the GIL released.
    fn run<T, F>(&self, py: Python<'_>, fut: F) -> PyResult<T>
    where
        T: Send + 'static,
        F: Future<Output = rlock::Result<T>> + Send + 'static,
    {
        self.rt.check_pid()?;
        wait::block_on(py, &self.rt, fut)?.map_err(map_err)
    }
}

#[pymethods]
impl Lock {
    /// The lock name (also its Redis key).
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// Blocks until `owner` holds the lock or `timeout` seconds passed (None: no limit, 0: try
    /// once). `lease` None uses the watchdog. Returns whether the lock was acquired.
    #[pyo3(signature = (owner = None, timeout = None, lease = None))]
    fn acquire(
        &self,
        py: Python<'_>,
        owner: Option<u64>,
        timeout: Option<f64>,
        lease: Option<f64>,
    ) -> PyResult<bool> {
        let timeout = opt_seconds("timeout", timeout)?;
        let lease = opt_seconds("lease", lease)?;
        let owner = self.owner(owner)?;
        let fut = acquire_future(self.inner.clone(), owner, timeout, lease);
        Ok(self.run(py, fut)?.claim())
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
        let timeout = opt_seconds("timeout", timeout)?;
        let lease = opt_seconds("lease", lease)?;
        let owner = self.owner(Some(owner))?;
        let fut = acquire_future(self.inner.clone(), owner, timeout, lease);
        runtime::future_into_py(py, async move {
            Ok(Outcome(fut.await.map(|a| PendingAcquire(std::sync::Mutex::new(a.0)))))
        })
    }

    /// Releases one hold level of `owner`; True when the lock became free, False when `owner`
    /// still holds it (re-entered).
    #[pyo3(signature = (owner = None))]
    fn release(&self, py: Python<'_>, owner: Option<u64>) -> PyResult<bool> {
        let owner = self.owner(owner)?;
        let lock = self.inner.clone();
        let r = self.run(py, async move { lock.release(&owner).await })?;
        Ok(r == rlock::Released::Unlocked)
    }

    /// Like `release`, as an awaitable (the release runs to the end even when cancelled).
    fn release_async<'py>(&self, py: Python<'py>, owner: u64) -> PyResult<Bound<'py, PyAny>> {
        let owner = self.owner(Some(owner))?;
        let lock = self.inner.clone();
        runtime::future_into_py(py, async move {
            Ok(Outcome(lock.release(&owner).await.map(|r| r == rlock::Released::Unlocked)))
        })
    }

    /// Deletes the lock whoever holds it; True when it was locked.
    fn force_unlock(&self, py: Python<'_>) -> PyResult<bool> {
        let lock = self.inner.clone();
        self.run(py, async move { lock.force_release().await })
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
        self.run(py, async move { lock.is_held_by(&owner).await })
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
}

/// The owner id of the calling OS thread (unique in the process, never reused).
#[pyfunction]
fn thread_owner_id() -> u64 {
    rlock::thread_owner_id()
}

/// Stops asyncio completions before the interpreter finalizes (registered with `atexit`).
#[pyfunction]
fn _stop_completions(py: Python<'_>) {
    runtime::stop_completions(py);
}

/// The native module; the `rlock` package wraps it.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Client>()?;
    m.add_class::<Lock>()?;
    m.add_class::<PendingAcquire>()?;
    m.add_function(wrap_pyfunction!(thread_owner_id, m)?)?;
    let stop = wrap_pyfunction!(_stop_completions, m)?;
    m.py().import("atexit")?.call_method1("register", (stop,))?;
    Ok(())
}
