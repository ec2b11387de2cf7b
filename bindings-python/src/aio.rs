//! asyncio calls: core futures polled on the event loop's own thread.
//!
//! Each call makes an asyncio future and polls the core future right away (the request goes
//! out in the call). Wakers, on any thread and without the GIL, add the call to the thread's
//! ready list and, when the list was empty, write one byte to a socket pair whose other end the
//! event loop watches (`loop.add_reader`); the loop then polls every ready call and completes
//! the finished ones' futures itself. A burst of replies costs one wake-up of the loop, no
//! thread ever waits for the GIL on the loop's behalf, and no task is spawned per call.
//!
//! Cancelling the asyncio future drops the core future (core calls are cancel-safe, and every
//! call was polled once already, so a cancelled release still runs to its end in the
//! background).

use std::cell::RefCell;
use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyWeakrefMethods, PyWeakrefReference};
use pyo3::{intern, IntoPyObjectExt};

use crate::runtime::Rt;

/// Makes a call's Python result (on the loop's thread, under the GIL).
type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// A pending core call, typed away.
type Call = Pin<Box<dyn Future<Output = PyResult<Convert>> + Send>>;

/// What wakers on any thread share with the loop's thread.
struct Shared {
    /// Slot and generation of each woken call (a slot is reused once its call ends).
    woken: Mutex<Vec<(usize, u64)>>,
    /// Written (one byte) when `woken` gets its first entry; the loop reads the other end.
    bell: UnixStream,
}

/// Wakes one call.
struct CallWaker {
    shared: Arc<Shared>,
    slot: usize,
    generation: u64,
}

impl Wake for CallWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut woken = self.shared.woken.lock().unwrap_or_else(|p| p.into_inner());
        let first = woken.is_empty();
        woken.push((self.slot, self.generation));
        if first {
            // Non-blocking: a full buffer means the loop has a byte to read already.
            let _ = (&self.shared.bell).write(&[1]);
        }
    }
}

/// One pending call.
struct Slot {
    /// Out of the slot while it is being polled.
    call: Option<Call>,
    waker: Waker,
    future: Py<PyAny>,
    generation: u64,
}

/// The calls of one thread's event loops.
struct Executor {
    pid: u32,
    rt: Rt,
    shared: Arc<Shared>,
    /// The loop's end of the socket pair.
    listen: UnixStream,
    /// The loop that watches `listen` (a thread runs one loop at a time; `asyncio.run` makes
    /// a new one each time), weakly: a finished loop is not kept alive.
    watched_by: Option<Py<PyWeakrefReference>>,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    generation: u64,
}

thread_local! {
    /// This thread's executor, made on its first asyncio call (again in a forked child),
    /// dropped when the thread ends (its socket pair closed; Python references it still holds
    /// are released by pyo3 the next time any thread holds the GIL).
    static EXECUTOR: RefCell<Option<Executor>> = const { RefCell::new(None) };
}

impl Drop for Executor {
    /// Calls still pending when their thread ends are dropped by a task on the runtime (a call
    /// dropped unfinished hands its clean-up to a task, which needs the runtime's context, and
    /// a thread-local destructor cannot enter it). In a forked child the parent's calls (and
    /// runtime) are not ours to touch: leaked.
    fn drop(&mut self) {
        let slots = std::mem::take(&mut self.slots);
        if self.pid != std::process::id() {
            std::mem::forget(slots);
        } else if slots.iter().any(Option::is_some) {
            self.rt.handle().spawn(async move { drop(slots) });
        }
    }
}

/// `asyncio.get_running_loop`, looked up once.
static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// [`drain`] as a Python callable, made once.
static DRAIN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Runs `fut` on `rt` as an asyncio call of the running event loop (a RuntimeError outside
/// one) and returns its asyncio future, completed with the future's value or exception.
pub(crate) fn future_into_py<'py, F, T>(py: Python<'py>, rt: &Rt, fut: F) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    let event_loop = GET_RUNNING_LOOP.import(py, "asyncio", "get_running_loop")?.call0()?;
    let future = event_loop.call_method0(intern!(py, "create_future"))?;
    let call: Call = Box::pin(async move {
        let value = fut.await?;
        Ok(Box::new(move |py: Python<'_>| value.into_py_any(py)) as Convert)
    });
    let (slot, generation) = EXECUTOR.with(|cell| -> PyResult<(usize, u64)> {
        let mut cell = cell.borrow_mut();
        let pid = std::process::id();
        if cell.as_ref().is_none_or(|e| e.pid != pid) {
            // A forked child leaks its parent's executor: its futures belong to the parent.
            std::mem::forget(cell.take());
            *cell = Some(Executor::new(pid, rt.clone())?);
        }
        let Some(ex) = cell.as_mut() else { unreachable!("made above") };
        ex.watch(&event_loop)?;
        Ok(ex.add(call, future.clone().unbind()))
    })?;
    future.call_method1(intern!(py, "add_done_callback"), (CancelOnDone { slot, generation },))?;
    poll(py, slot, generation);
    Ok(future)
}

impl Executor {
    fn new(pid: u32, rt: Rt) -> PyResult<Executor> {
        let pair = UnixStream::pair().and_then(|(a, b)| {
            a.set_nonblocking(true)?;
            b.set_nonblocking(true)?;
            Ok((a, b))
        });
        let (bell, listen) =
            pair.map_err(|e| crate::errors::rlock_error(format!("could not make a socket pair: {e}")))?;
        Ok(Executor {
            pid,
            rt,
            shared: Arc::new(Shared { woken: Mutex::new(Vec::new()), bell }),
            listen,
            watched_by: None,
            slots: Vec::new(),
            free: Vec::new(),
            generation: 0,
        })
    }

    /// Makes `event_loop` watch the socket pair, unless it does already.
    fn watch(&mut self, event_loop: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = event_loop.py();
        if self.watched_by.as_ref().and_then(|w| w.bind(py).upgrade()).is_some_and(|l| l.is(event_loop)) {
            return Ok(());
        }
        let drain =
            DRAIN.get_or_try_init(py, || wrap_pyfunction!(drain, py).map(|f| f.into_any().unbind()))?;
        event_loop.call_method1(intern!(py, "add_reader"), (self.listen.as_raw_fd(), drain))?;
        self.watched_by = Some(PyWeakrefReference::new(event_loop)?.unbind());
        Ok(())
    }

    /// Stores a call; its slot and generation.
    fn add(&mut self, call: Call, future: Py<PyAny>) -> (usize, u64) {
        self.generation += 1;
        let generation = self.generation;
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        let waker = Waker::from(Arc::new(CallWaker { shared: self.shared.clone(), slot, generation }));
        self.slots[slot] = Some(Slot { call: Some(call), waker, future, generation });
        (slot, generation)
    }

    /// Takes the call in `slot` out to poll it, if it is still that call.
    fn take(&mut self, slot: usize, generation: u64) -> Option<(Call, Waker, Rt)> {
        let s = self.slots.get_mut(slot)?.as_mut().filter(|s| s.generation == generation)?;
        Some((s.call.take()?, s.waker.clone(), self.rt.clone()))
    }

    /// Frees `slot` if it still holds call `generation`; its asyncio future.
    fn remove(&mut self, slot: usize, generation: u64) -> Option<Slot> {
        self.slots.get(slot)?.as_ref().filter(|s| s.generation == generation)?;
        self.free.push(slot);
        self.slots[slot].take()
    }
}

/// This thread's executor, if it has one of this process.
fn with_executor<R>(f: impl FnOnce(&mut Executor) -> Option<R>) -> Option<R> {
    EXECUTOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        cell.as_mut().filter(|e| e.pid == std::process::id()).and_then(f)
    })
}

/// Polls call `slot` once (if it is still that call); when it ended, completes its future
/// (unless that was cancelled). A panic in core is caught here and becomes the exception.
fn poll(py: Python<'_>, slot: usize, generation: u64) {
    let Some((mut call, waker, rt)) = with_executor(|ex| ex.take(slot, generation)) else { return };
    let _context = rt.handle().enter();
    let polled = catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(&mut Context::from_waker(&waker))));
    let result = match polled {
        Ok(Poll::Pending) => {
            // Back into its slot (a cancel in the meantime freed it: then it is dropped here).
            let _ = with_executor(|ex| {
                let s = ex.slots.get_mut(slot)?.as_mut().filter(|s| s.generation == generation)?;
                s.call = Some(call);
                Some(())
            });
            return;
        }
        Ok(Poll::Ready(r)) => r,
        Err(_) => {
            Err(crate::errors::rlock_error("internal error in rlock (a bug: please report it)".to_owned()))
        }
    };
    drop(call);
    let Some(done) = with_executor(|ex| ex.remove(slot, generation)) else { return };
    let future = done.future.bind(py);
    let outcome = (|| -> PyResult<()> {
        if future.call_method0(intern!(py, "done"))?.is_truthy()? {
            return Ok(()); // cancelled meanwhile; the value is dropped (an acquire's is released)
        }
        match result.and_then(|make| make(py)) {
            Ok(v) => future.call_method1(intern!(py, "set_result"), (v,)).map(drop),
            Err(e) => future.call_method1(intern!(py, "set_exception"), (e.into_value(py),)).map(drop),
        }
    })();
    if let Err(e) = outcome {
        e.write_unraisable(py, None);
    }
}

/// Called by the event loop when the socket pair has a byte: polls every woken call.
#[pyfunction]
fn drain(py: Python<'_>) {
    let woken = with_executor(|ex| {
        let mut sink = [0u8; 64];
        while matches!((&ex.listen).read(&mut sink), Ok(n) if n > 0) {}
        Some(std::mem::take(&mut *ex.shared.woken.lock().unwrap_or_else(|p| p.into_inner())))
    });
    for (slot, generation) in woken.into_iter().flatten() {
        poll(py, slot, generation);
    }
}

/// A done callback: when the asyncio future was cancelled, drops its core call (cancel-safe).
#[pyclass(frozen)]
struct CancelOnDone {
    slot: usize,
    generation: u64,
}

#[pymethods]
impl CancelOnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if !future.call_method0(intern!(future.py(), "cancelled"))?.is_truthy()? {
            return Ok(());
        }
        let freed = with_executor(|ex| ex.remove(self.slot, self.generation).map(|s| (s, ex.rt.clone())));
        if let Some((slot, rt)) = freed {
            let _context = rt.handle().enter();
            drop(slot);
        }
        Ok(())
    }
}
