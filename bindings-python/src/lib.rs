//! `rlock._native`: the Python extension module of rlock.
//!
//! Thin by design: every function parses its arguments, calls the core crate and maps the result.
//! Owners are plain integers chosen by the Python layer (`None` = the calling OS thread); the
//! binding keeps no lock state of its own.

mod aio;
mod count_down_latch;
mod errors;
mod lock;
mod logging;
mod multi_lock;
mod permit_expirable_semaphore;
mod red_lock;
mod runtime;
mod semaphore;
mod wait;

use std::future::Future;
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt};
use pyo3::{IntoPyObject, IntoPyObjectExt};

use count_down_latch::CountDownLatch;
use errors::map_err;
use lock::Lock;
use multi_lock::MultiLock;
use permit_expirable_semaphore::PermitExpirableSemaphore;
use runtime::Rt;
use semaphore::Semaphore;

/// This surface, as core spells for it.
const PYTHON: rlock::surface::Surface = rlock::surface::Surface::Python;

/// Seconds given by Python as a `Duration`, checked by core (every surface agrees).
fn seconds(what: &str, s: f64) -> PyResult<Duration> {
    rlock::surface::duration_arg(PYTHON, what, s).map_err(map_err)
}

/// [`seconds`] for optional arguments, where None keeps its own meaning (no limit, watchdog).
fn opt_seconds(what: &str, s: Option<f64>) -> PyResult<Option<Duration>> {
    s.map(|s| seconds(what, s)).transpose()
}

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

/// The owner for `id`, or the calling OS thread's owner.
fn owner_of(client: &rlock::Client, id: Option<u64>) -> rlock::Owner {
    client.owner(id.unwrap_or_else(rlock::surface::thread_owner_id))
}

/// What an acquire took, on its way to Python: a lock hold or semaphore permits. The core guard
/// inside gives it back when nobody claims it (the waiting call was interrupted just as the
/// acquire succeeded), so an interrupted acquire never leaves anything behind.
enum Taken {
    Hold(rlock::Guard),
    Permits(rlock::Permits),
    Permit(rlock::Permit),
    Multi(rlock::MultiGuard),
    Red(rlock::RedGuard),
}

/// The outcome of a blocking acquire: what it took, or `None` when the wait ran out.
struct Acquired(Option<Taken>);

impl Acquired {
    fn claim(self) -> bool {
        self.claim_id().is_some()
    }

    /// Takes a lock's hold: `Some` with its fencing token (from the acquire's own reply; 0 for
    /// a lock that is not fenced) when it was acquired.
    fn claim_token(self) -> Option<u64> {
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
    fn claim_id(self) -> Option<String> {
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
struct PendingAcquire(std::sync::Mutex<Option<Taken>>);

impl PendingAcquire {
    fn new(taken: Option<Taken>) -> Self {
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

/// The arguments of a lock's acquire (lock, multi-lock, RedLock): the owner, the longest wait
/// (None: no limit) and the lease (None: the watchdog renews).
type AcquireArgs = (rlock::Owner, Option<Duration>, Option<Duration>);

/// What every native handle holds to run core calls: its client and the runtime.
trait Handle {
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

macro_rules! handles {
    ($($t:ty),*) => {
        $(impl Handle for $t {
            fn client(&self) -> &rlock::Client {
                &self.client
            }
            fn rt(&self) -> &Rt {
                &self.rt
            }
        })*
    };
}

handles!(Lock, Semaphore, PermitExpirableSemaphore, MultiLock, CountDownLatch, red_lock::RedLock);

/// Longest an interrupted call waits for its clean-up before raising.
const SETTLE_LIMIT: Duration = Duration::from_secs(5);

/// Runs a core call on `rt`, waiting with the GIL released.
fn run_blocking<T, F>(py: Python<'_>, rt: &Rt, client: &rlock::Client, fut: F) -> PyResult<T>
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
fn lost_caller(rt: &Rt, callback: Py<PyAny>) -> impl Fn(&rlock::LostEvent) + Send + Sync + 'static {
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

/// The owner id of the calling OS thread (unique in the process, never reused).
#[pyfunction]
fn thread_owner_id() -> u64 {
    rlock::surface::thread_owner_id()
}

/// Every core error kind (`"not_held"`, ...) with the name of its exception class in
/// `rlock._errors` and its code (`"RLOCK_NOT_HELD"`), so a test can check the lists match.
#[pyfunction]
fn error_classes() -> Vec<(&'static str, &'static str, String)> {
    rlock::ErrorKind::ALL.iter().map(|k| (k.as_str(), errors::class_of(*k), k.code_name())).collect()
}

/// The option names core knows, in Python spelling (checked against `rlock.ClientOptions`).
#[pyfunction]
fn option_names() -> Vec<String> {
    rlock::surface::option_names(PYTHON)
}

/// The native module; the `rlock` package wraps it.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The workspace version (Cargo.toml), as `rlock.__version__`.
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    logging::install();
    m.add_class::<Client>()?;
    m.add_class::<Semaphore>()?;
    m.add_class::<PermitExpirableSemaphore>()?;
    m.add_class::<MultiLock>()?;
    m.add_class::<red_lock::RedLock>()?;
    m.add_class::<Lock>()?;
    m.add_class::<PendingAcquire>()?;
    m.add_class::<CountDownLatch>()?;
    m.add_function(wrap_pyfunction!(thread_owner_id, m)?)?;
    m.add_function(wrap_pyfunction!(logging::log_fd, m)?)?;
    m.add_function(wrap_pyfunction!(logging::drain_logs, m)?)?;
    m.add_function(wrap_pyfunction!(error_classes, m)?)?;
    m.add_function(wrap_pyfunction!(option_names, m)?)?;
    // Every once-made value now, while importing (fork() waits for the import lock): made on
    // first use, a fork in another thread's making left the child waiting for good.
    rlock::surface::make_once_values();
    aio::init(m.py())?;
    Ok(())
}
