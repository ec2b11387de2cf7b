//! `Client`: core `rlock::Client`, and the handles it makes.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt};

use crate::count_down_latch::CountDownLatch;
use crate::errors::map_err;
use crate::handle::{lost_caller, owner_of, run_blocking, PYTHON};
use crate::lock::Lock;
use crate::permit_expirable_semaphore::PermitExpirableSemaphore;
use crate::runtime::{self, Rt};
use crate::semaphore::Semaphore;
use crate::wait;

/// Client options from Python keyword arguments, set by name through core (which knows every
/// option, its type and its range). As for any Python call, an unknown keyword or a value of
/// the wrong type is a `TypeError`; core's range checks raise `InvalidArgumentError`.
fn client_options(options: Option<&Bound<'_, PyDict>>) -> PyResult<rlock::ClientOptions> {
    use rlock::surface::{OptionKind as K, OptionValue as V};
    let mut o = rlock::ClientOptions::default();
    for (key, value) in options.into_iter().flat_map(|d| d.iter()) {
        let key: String = key.extract()?;
        let Some(spec) = rlock::surface::OPTIONS.iter().find(|s| s.spelling(PYTHON) == key) else {
            return Err(PyTypeError::new_err(format!("Client() got an unexpected keyword argument '{key}'")));
        };
        let number = !value.is_instance_of::<PyBool>()
            && (value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>());
        let text;
        let v = match spec.kind {
            _ if value.is_none() => V::Unset,
            K::Duration | K::OptionalDuration | K::Count if number => match value.extract::<i64>() {
                Ok(i) if value.is_instance_of::<PyInt>() => V::Int(i),
                _ => V::Float(value.extract()?),
            },
            K::Switch | K::Flag if value.is_instance_of::<PyBool>() => V::Bool(value.is_truthy()?),
            K::Text if value.is_instance_of::<pyo3::types::PyString>() => {
                text = value.extract::<String>()?;
                V::Str(&text)
            }
            K::Path if value.extract::<std::path::PathBuf>().is_ok() => {
                text = value.extract::<std::path::PathBuf>()?.to_string_lossy().into_owned();
                V::Str(&text)
            }
            _ => return Err(PyTypeError::new_err(format!("{key} cannot be {}", value.get_type().name()?))),
        };
        o.set(PYTHON, &key, v).map_err(map_err)?;
    }
    Ok(o)
}

/// A connection to Redis that makes locks (core `rlock::Client`).
#[pyclass(frozen, module = "rlock._native")]
pub(crate) struct Client {
    pub(crate) inner: rlock::Client,
    pub(crate) rt: Rt,
}

impl Client {
    /// Fails in a forked child: the runtime's threads and the sockets belong to the parent.
    fn check(&self) -> PyResult<&rlock::Client> {
        self.rt.check_pid()?;
        Ok(&self.inner)
    }

    fn wrap(&self, lock: rlock::Lock) -> Lock {
        Lock { inner: lock, client: self.inner.clone(), rt: self.rt.clone() }
    }
}

#[pymethods]
impl Client {
    /// Connects to Redis (`url` None: `REDIS_URL`, else `redis://127.0.0.1:6379`), with the
    /// options of `rlock.ClientOptions` as keyword arguments.
    #[new]
    #[pyo3(signature = (url = None, **options))]
    fn new(py: Python<'_>, url: Option<String>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let options = client_options(options)?;
        let rt = runtime::current()?;
        let url = url.unwrap_or_else(rlock::default_url);
        let inner = wait::block_on(py, &rt, async move { rlock::Client::connect(&url, options).await })?
            .map_err(map_err)?;
        Ok(Client { inner, rt })
    }

    /// A handle on the lock `name`.
    fn lock(&self, name: &str) -> PyResult<Lock> {
        let lock = self.check()?.lock(name).map_err(map_err)?;
        Ok(self.wrap(lock))
    }

    /// A handle on the fenced lock `name`: a `Lock` whose acquires take fencing tokens
    /// (`Lock.token`).
    fn fenced_lock(&self, name: &str) -> PyResult<Lock> {
        let lock = self.check()?.fenced_lock(name).map_err(map_err)?.lock().clone();
        Ok(self.wrap(lock))
    }

    /// The read and write sides of the read-write lock `name`.
    fn read_write_lock(&self, name: &str) -> PyResult<(Lock, Lock)> {
        let rw = self.check()?.read_write_lock(name).map_err(map_err)?;
        Ok((self.wrap(rw.read_lock()), self.wrap(rw.write_lock())))
    }

    /// A handle on the fair lock `name`.
    fn fair_lock(&self, name: &str) -> PyResult<Lock> {
        let lock = self.check()?.fair_lock(name).map_err(map_err)?;
        Ok(self.wrap(lock))
    }

    /// A handle on the spin lock `name`.
    fn spin_lock(&self, name: &str) -> PyResult<Lock> {
        let lock = self.check()?.spin_lock(name).map_err(map_err)?;
        Ok(self.wrap(lock))
    }

    /// A handle on the non-reentrant lock `name`.
    fn non_reentrant_lock(&self, name: &str) -> PyResult<Lock> {
        let lock = self.check()?.non_reentrant_lock(name).map_err(map_err)?;
        Ok(self.wrap(lock))
    }

    /// A handle on the non-reentrant fair lock `name`.
    fn non_reentrant_fair_lock(&self, name: &str) -> PyResult<Lock> {
        let lock = self.check()?.non_reentrant_fair_lock(name).map_err(map_err)?;
        Ok(self.wrap(lock))
    }

    /// A handle on the permit-expirable semaphore `name`.
    fn permit_expirable_semaphore(&self, name: &str) -> PyResult<PermitExpirableSemaphore> {
        let sem = self.check()?.permit_expirable_semaphore(name).map_err(map_err)?;
        Ok(PermitExpirableSemaphore { inner: sem, client: self.inner.clone(), rt: self.rt.clone() })
    }

    /// A handle on the semaphore `name`.
    fn semaphore(&self, name: &str) -> PyResult<Semaphore> {
        let sem = self.check()?.semaphore(name).map_err(map_err)?;
        Ok(Semaphore { inner: sem, client: self.inner.clone(), rt: self.rt.clone() })
    }

    /// A handle on the count-down latch `name`.
    fn count_down_latch(&self, name: &str) -> PyResult<CountDownLatch> {
        let latch = self.check()?.count_down_latch(name).map_err(map_err)?;
        Ok(CountDownLatch { inner: latch, client: self.inner.clone(), rt: self.rt.clone() })
    }

    /// What lives under `name` (core `Client::describe`), as core's JSON text.
    fn describe(&self, py: Python<'_>, name: String) -> PyResult<String> {
        let c = self.check()?.clone();
        run_blocking(py, &self.rt, &self.inner, async move {
            rlock::surface::describe_json(&c, PYTHON, &name).await
        })
    }

    /// Names of primitives matching `pattern` (core `Client::list`), as core's JSON text.
    #[pyo3(signature = (pattern = None, limit = None))]
    fn list(&self, py: Python<'_>, pattern: Option<String>, limit: Option<i64>) -> PyResult<String> {
        let limit = limit.map(|n| rlock::surface::count_arg("limit", n, 1)).transpose().map_err(map_err)?;
        let limit = limit.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let c = self.check()?.clone();
        run_blocking(py, &self.rt, &self.inner, async move {
            rlock::surface::list_json(&c, PYTHON, pattern.as_deref(), limit).await
        })
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

    /// Calls `callback(name, kind, owner, reason, permit_id)` (on a library thread) whenever
    /// this client's watchdog loses any of its holds; returns the listener's id.
    fn on_lost(&self, callback: Py<PyAny>) -> PyResult<u64> {
        self.rt.check_pid()?;
        Ok(self.inner.on_lost(rlock::LostFilter::all(), lost_caller(&self.rt, callback)).into_raw())
    }

    /// Removes a listener added with `on_lost`; False when it was already removed.
    fn remove_lost_listener(&self, id: u64) -> bool {
        self.inner.remove_lost_listener(rlock::ListenerId::from_raw(id))
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// The client's figures as JSON (core's `Stats`); `rlock.Client.stats` makes it a dict.
    fn stats_json(&self) -> PyResult<String> {
        Ok(rlock::surface::to_json_for(PYTHON, &self.check()?.stats()))
    }

    /// The client's figures in the Prometheus text exposition format.
    fn prometheus_text(&self) -> PyResult<String> {
        Ok(self.check()?.prometheus_text())
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
