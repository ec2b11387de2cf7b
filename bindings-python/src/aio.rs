//! asyncio calls: core futures polled on the event loop's own thread.
//!
//! Each call makes an asyncio future and polls the core future right away (the request goes
//! out in the call). The calls of a thread are kept in core's [`rlock::surface::LocalCalls`], whose
//! wakers (on any thread, without the GIL) ring a bell when a call is woken: one byte written to
//! a socket pair whose other end the event loop watches (`loop.add_reader`); the loop then polls
//! every woken call and completes the finished ones' futures itself. A burst of replies costs one wake-up of the loop, no
//! thread ever waits for the GIL on the loop's behalf, and no task is spawned per call.
//!
//! Each client also gets a *local link* on the loop (core's `conn::local`): a command connection
//! whose socket the loop itself watches (`add_reader`, `add_writer` while a write would block).
//! The calls polled here write their requests on it and their replies are read here, so a round
//! trip wakes the loop once and no other thread at all; without it every request went to the
//! runtime's worker and every reply came back through the bell. The link is the loop's: when a
//! thread's calls move to another loop (each `asyncio.run` makes one), the old loop's links are
//! closed and the clients link again on their next call. Until a link is up, and for clients
//! that cannot have one (TLS, Cluster, Sentinel, pooled), calls use the shared connection.
//!
//! Cancelling the asyncio future drops the core future (core calls are cancel-safe, and every
//! call was polled once already, so a cancelled release still runs to its end in the
//! background).

use std::cell::RefCell;
use std::future::Future;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::thread::ThreadId;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;
use pyo3::types::{PyWeakrefMethods, PyWeakrefReference};
use pyo3::IntoPyObjectExt;
use rlock::surface::{CallKey, LocalCalls, LocalIo, RawSocket, Watcher};

use crate::runtime::Rt;

/// Makes a call's Python result (on the loop's thread, under the GIL).
type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// The asyncio calls of one thread's event loops, each with its asyncio future.
struct Executor {
    pid: u32,
    rt: Rt,
    /// Each call with its asyncio future; `None` marks a local link (completes nothing). Its
    /// links are those of the watching loop.
    calls: LocalCalls<PyResult<Convert>, Option<Awaited>>,
    /// The loop's end of the socket pair (the calls' bell writes to the other end).
    listen: UnixStream,
    /// The loop that watches `listen` (a thread runs one loop at a time; `asyncio.run` makes
    /// a new one each time), weakly: a finished loop is not kept alive.
    watched_by: Option<Py<PyWeakrefReference>>,
    /// The watching loop's calls so far (up to [`LINK_FROM_CALL`]): clients link from its
    /// `LINK_FROM_CALL`th call on, so a short `asyncio.run` opens no connection.
    loop_calls: usize,
}

thread_local! {
    /// This thread's executor, made on its first asyncio call (again in a forked child),
    /// dropped when the thread ends (its socket pair closed; Python references it still holds
    /// are released by pyo3 the next time any thread holds the GIL).
    static EXECUTOR: RefCell<Option<Executor>> = const { RefCell::new(None) };
}

impl Drop for Executor {
    /// Calls still pending when their thread ends are dropped by a task on the runtime (a
    /// thread-local destructor cannot enter its context). In a forked child the parent's calls
    /// (and runtime) are not ours to touch: leaked.
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            std::mem::forget(std::mem::replace(&mut self.calls, LocalCalls::new(|| {})));
        } else {
            self.calls.drop_pending_on(self.rt.handle());
        }
    }
}

/// A call's asyncio future and the done callback that cancels the call when the future is
/// cancelled (taken off before the call completes the future, which saves the loop scheduling
/// and running it for every call).
struct Awaited {
    future: Py<PyAny>,
    on_done: Py<CancelOnDone>,
}

/// What the asyncio calls look up or make once: `asyncio.get_running_loop`, [`drain`] as a
/// Python callable, and the names of the loop's and futures' methods they call.
struct Made {
    get_running_loop: Py<PyAny>,
    drain: Py<PyAny>,
    create_future: Py<PyString>,
    add_done_callback: Py<PyString>,
    add_reader: Py<PyString>,
    add_writer: Py<PyString>,
    remove_writer: Py<PyString>,
    remove_reader: Py<PyString>,
    done: Py<PyString>,
    remove_done_callback: Py<PyString>,
    set_result: Py<PyString>,
    set_exception: Py<PyString>,
    cancelled: Py<PyString>,
}

/// [`Made`], filled by [`init`] when the module is imported. Filled on first use instead (as
/// `intern!` and a `PyOnceLock` per value do), a `fork()` by one thread while another was
/// filling one left the child waiting for good on a value no thread of it would finish: pyo3
/// lets other threads run while a once-cell is being filled. Caught with gdb on hung children of
/// `test_fork_while_asyncio_completions_run`: parked in `GET_RUNNING_LOOP`'s initialisation, then
/// (with that one made at import) in `made(py)?.add_reader.bind(py)`. An import cannot meet a fork:
/// CPython's `fork()` waits for the import lock.
static MADE: PyOnceLock<Made> = PyOnceLock::new();

/// Fills [`MADE`]; called by the module's initialisation.
pub(crate) fn init(py: Python<'_>) -> PyResult<()> {
    MADE.get_or_try_init(py, || -> PyResult<Made> {
        Ok(Made {
            get_running_loop: py.import("asyncio")?.getattr("get_running_loop")?.unbind(),
            drain: wrap_pyfunction!(drain, py)?.into_any().unbind(),
            create_future: PyString::intern(py, "create_future").unbind(),
            add_done_callback: PyString::intern(py, "add_done_callback").unbind(),
            add_reader: PyString::intern(py, "add_reader").unbind(),
            add_writer: PyString::intern(py, "add_writer").unbind(),
            remove_writer: PyString::intern(py, "remove_writer").unbind(),
            remove_reader: PyString::intern(py, "remove_reader").unbind(),
            done: PyString::intern(py, "done").unbind(),
            remove_done_callback: PyString::intern(py, "remove_done_callback").unbind(),
            set_result: PyString::intern(py, "set_result").unbind(),
            set_exception: PyString::intern(py, "set_exception").unbind(),
            cancelled: PyString::intern(py, "cancelled").unbind(),
        })
    })?;
    Ok(())
}

/// [`MADE`], made at import (an error only if the module's initialisation was bypassed).
fn made(py: Python<'_>) -> PyResult<&'static Made> {
    MADE.get(py).ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("rlock._native was not initialised"))
}

/// Runs `fut` on `rt` as an asyncio call of the running event loop (a RuntimeError outside
/// one) and returns its asyncio future, completed with the future's value or exception. The
/// call's request goes out before this returns: on `client`'s local link of this loop once it
/// is up (started here at the loop's [`LINK_FROM_CALL`]th call), else on the shared
/// connection.
pub(crate) fn future_into_py<'py, F, T>(
    py: Python<'py>,
    rt: &Rt,
    client: &rlock::Client,
    fut: F,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = PyResult<T>> + Send + 'static,
    T: for<'a> IntoPyObject<'a> + Send + 'static,
{
    // On the heap first: a core call's future is kilobytes, and every move of it is a copy.
    let fut = Box::pin(fut);
    let made = made(py)?;
    let event_loop = made.get_running_loop.bind(py).call0()?;
    let future = event_loop.call_method0(made.create_future.bind(py))?;
    let on_done = Py::new(py, CancelOnDone(std::sync::OnceLock::new()))?;
    let call = Box::pin(NotInline {
        call: Box::pin(async move {
            let value = fut.await?;
            Ok(Box::new(move |py: Python<'_>| value.into_py_any(py)) as Convert)
        }),
        early: None,
        polled: false,
    });
    let (key, unlinked, flush) = EXECUTOR.with(|cell| -> PyResult<(CallKey, Unlinked, bool)> {
        let mut cell = cell.try_borrow_mut().map_err(|_| reentered())?;
        let pid = std::process::id();
        if cell.as_ref().is_none_or(|e| e.pid != pid) {
            // A forked child leaks its parent's executor (see its Drop).
            drop(cell.take());
            *cell = Some(Executor::new(pid, rt.clone())?);
        }
        let Some(ex) = cell.as_mut() else { unreachable!("made above") };
        let unlinked = ex.watch(&event_loop)?;
        ex.loop_calls = (ex.loop_calls + 1).min(LINK_FROM_CALL);
        if ex.loop_calls == LINK_FROM_CALL {
            ex.link(&event_loop, client);
        }
        // Few calls pending: the request goes out at once (the links' drivers are polled below,
        // without a bell for them). Many: every `FLUSH_EVERY`th call writes what is queued.
        let flush = ex.calls.flush_for_call(FLUSH_EVERY);
        let awaited = Awaited { future: future.clone().unbind(), on_done: on_done.clone_ref(py) };
        Ok((ex.calls.add(call, Some(awaited)), unlinked, flush))
    })?;
    // The old loop's links end here, outside the executor.
    drop(unlinked);
    let _ = on_done.get().0.set(key);
    let added = future.call_method1(made.add_done_callback.bind(py), (on_done,));
    if added.is_ok() {
        poll(py, key);
    } else {
        // Nothing could ever cancel it: dropped before its request goes out.
        drop(with_executor(|ex| ex.calls.cancel(key, ex.rt.handle())));
    }
    if flush {
        flush_links(py);
    }
    added?;
    Ok(future)
}

/// Polls the links' drivers that were woken (requests queued on them), which writes those
/// requests, and ends the drain the caller began. Replies and other wake-ups are left to the
/// bell: with [`NotInline`], a call never completes inside the call that made it, so its task
/// always awaits it (and can be cancelled there).
fn flush_links(py: Python<'_>) {
    let links = with_executor(|ex| Some(ex.calls.woken_of(&ex.calls.links().collect::<Vec<_>>())));
    for key in links.into_iter().flatten() {
        poll(py, key);
    }
    on_executor(|ex| ex.calls.end_drain());
}

/// The call of a loop from which on its clients link: the calls before use the shared
/// connection, so a loop that makes only a few (an `asyncio.run` of one `async with lock:`)
/// opens no connection for them.
const LINK_FROM_CALL: usize = 8;

/// With [`rlock::surface::FLUSH_ALONE_BELOW`] or more pending, a call writes the queued requests
/// every this many calls ([`LocalCalls::flush_for_call`]), so Redis works on them while the loop
/// makes the next ones (measured best of 16, 32, 64 and only the bell's drain with 64 and 256
/// tasks).
const FLUSH_EVERY: usize = 32;

/// A call that ends no earlier than its second poll: one that finished in its first (its reply
/// came back while the thread was off the CPU) is woken and ends in the loop's next drain, so
/// an asyncio call never completes inside the call that made it and its task always awaits it
/// (where a cancel can reach it).
struct NotInline {
    call: rlock::surface::LocalCall<PyResult<Convert>>,
    early: Option<PyResult<Convert>>,
    polled: bool,
}

impl Future for NotInline {
    type Output = PyResult<Convert>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(output) = this.early.take() {
            return std::task::Poll::Ready(output);
        }
        let first = !std::mem::replace(&mut this.polled, true);
        match this.call.as_mut().poll(cx) {
            std::task::Poll::Ready(output) if first => {
                this.early = Some(output);
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
            polled => polled,
        }
    }
}

/// Links taken out of the executor, dropped (inside the runtime's context) once it is free
/// again: their watchers call the loop, which might run code that makes asyncio calls.
struct Unlinked {
    calls: Vec<rlock::surface::LocalCall<PyResult<Convert>>>,
    rt: Rt,
}

impl Drop for Unlinked {
    fn drop(&mut self) {
        if !self.calls.is_empty() {
            let _context = self.rt.handle().enter();
            self.calls.clear();
        }
    }
}

/// The error of an asyncio call made while this thread's calls are being polled (from a
/// finalizer that ran in the middle of it): refused instead of corrupting the executor.
fn reentered() -> PyErr {
    crate::errors::rlock_error(
        "an rlock asyncio call was made while rlock was polling this thread's calls (from a finalizer?)"
            .to_owned(),
    )
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
        // Non-blocking: a full buffer means the loop has a byte to read already.
        let calls = LocalCalls::new(move || {
            let _ = (&bell).write(&[1]);
        });
        Ok(Executor { pid, rt, calls, listen, watched_by: None, loop_calls: 0 })
    }

    /// Makes `event_loop` watch the socket pair, unless it does already. When it replaces
    /// another loop, that loop's links are taken out (given back, to be dropped by the caller).
    fn watch(&mut self, event_loop: &Bound<'_, PyAny>) -> PyResult<Unlinked> {
        let py = event_loop.py();
        let mut unlinked = Unlinked { calls: Vec::new(), rt: self.rt.clone() };
        if self.watched_by.as_ref().and_then(|w| w.bind(py).upgrade()).is_some_and(|l| l.is(event_loop)) {
            return Ok(unlinked);
        }
        let made = made(py)?;
        event_loop.call_method1(made.add_reader.bind(py), (self.listen.as_raw_fd(), made.drain.bind(py)))?;
        self.watched_by = Some(PyWeakrefReference::new(event_loop)?.unbind());
        self.loop_calls = 0;
        unlinked.calls = self.calls.unlink_all().into_iter().map(|(call, _)| call).collect();
        Ok(unlinked)
    }

    /// Starts `client`'s local link on `event_loop` (the watching loop), once per client: its
    /// driver is a call of this executor, polled with the others.
    fn link(&mut self, event_loop: &Bound<'_, PyAny>, client: &rlock::Client) {
        let id = client.id().as_u128();
        if self.calls.is_linked(id) {
            return;
        }
        let driver = client.local_link(watch(event_loop.clone().unbind())).map(|run| {
            let call: rlock::surface::LocalCall<_> = Box::pin(async move {
                run.await;
                Ok(Box::new(|py: Python<'_>| Ok(py.None())) as Convert)
            });
            (call, None)
        });
        if let Some(key) = self.calls.link(id, driver) {
            // Woken at once: the drain that follows polls it (and it connects).
            let _ = self.calls.poll(key, self.rt.handle());
        }
    }
}

/// What a local link needs from the loop: for each connection, its socket watched by
/// `event_loop` (readable from the start to the watcher's drop, writable while asked).
fn watch(event_loop: Py<PyAny>) -> rlock::surface::Watch {
    let thread = std::thread::current().id();
    Box::new(move |socket: RawSocket, io: Arc<LocalIo>| -> rlock::Result<Box<dyn Watcher>> {
        let refused = |e: String| {
            rlock::Error::new(
                rlock::ErrorKind::Connection,
                format!("the event loop refused to watch the socket: {e}"),
            )
        };
        let watcher = Python::try_attach(|py| -> PyResult<LoopWatcher> {
            let reader = Py::new(py, LinkReady { io: io.clone(), writable: false })?;
            let writer = Py::new(py, LinkReady { io, writable: true })?.into_any();
            event_loop.bind(py).call_method1(made(py)?.add_reader.bind(py), (socket, reader))?;
            Ok(LoopWatcher { event_loop: event_loop.clone_ref(py), socket, writer, writing: false, thread })
        })
        .ok_or_else(|| refused("Python is finalizing".to_owned()))?
        .map_err(|e| refused(e.to_string()))?;
        Ok(Box::new(watcher))
    })
}

/// One link connection's socket as its loop watches it.
struct LoopWatcher {
    event_loop: Py<PyAny>,
    socket: RawSocket,
    /// The callback `add_writer` is given (made once per connection).
    writer: Py<PyAny>,
    writing: bool,
    /// The loop's thread: the only one that may call the loop.
    thread: ThreadId,
}

impl Watcher for LoopWatcher {
    fn write_interest(&mut self, on: bool) {
        let (lp, socket, writer) = (&self.event_loop, self.socket, &self.writer);
        let done = Python::try_attach(|py| {
            let lp = lp.bind(py);
            let r = if on {
                made(py).and_then(|m| lp.call_method1(m.add_writer.bind(py), (socket, writer)).map(drop))
            } else {
                made(py).and_then(|m| lp.call_method1(m.remove_writer.bind(py), (socket,)).map(drop))
            };
            r.map_err(|e| e.write_unraisable(py, None)).is_ok()
        });
        self.writing = on && done == Some(true);
    }
}

impl Drop for LoopWatcher {
    /// Stops watching before the socket closes (a closed loop's remove is a no-op). Dropped on
    /// another thread (the runtime's, when the loop's thread ended) the loop is not touched.
    fn drop(&mut self) {
        if std::thread::current().id() != self.thread {
            return;
        }
        let (lp, socket, writing) = (&self.event_loop, self.socket, self.writing);
        Python::try_attach(|py| {
            let lp = lp.bind(py);
            let mut r = made(py).and_then(|m| lp.call_method1(m.remove_reader.bind(py), (socket,)).map(drop));
            if writing {
                r = r.and(
                    made(py).and_then(|m| lp.call_method1(m.remove_writer.bind(py), (socket,)).map(drop)),
                );
            }
            if let Err(e) = r {
                e.write_unraisable(py, None);
            }
        });
    }
}

/// The loop's callback for a link socket: reports readiness to the link, then polls what it
/// woke (replies read here complete their futures in the same callback).
#[pyclass(frozen)]
struct LinkReady {
    io: Arc<LocalIo>,
    writable: bool,
}

#[pymethods]
impl LinkReady {
    fn __call__(&self, py: Python<'_>) {
        if !on_executor(|ex| ex.calls.begin_drain()) {
            return;
        }
        self.io.ready(!self.writable, self.writable);
        drain_all(py);
    }
}

/// This thread's executor, if it has one of this process.
fn with_executor<R>(f: impl FnOnce(&mut Executor) -> Option<R>) -> Option<R> {
    EXECUTOR.with(|cell| {
        // Busy: a finalizer ran in the middle of a poll; its wake-up stays in the list.
        let mut cell = cell.try_borrow_mut().ok()?;
        cell.as_mut().filter(|e| e.pid == std::process::id()).and_then(f)
    })
}

/// [`with_executor`] for a step that gives nothing back: whether it ran.
fn on_executor(f: impl FnOnce(&mut Executor)) -> bool {
    with_executor(|ex| {
        f(ex);
        Some(())
    })
    .is_some()
}

/// Polls call `key` once (if it is still pending); when it ended, completes its future
/// (unless that was cancelled). A panic in core becomes the exception.
fn poll(py: Python<'_>, key: CallKey) {
    let panicked = |message: &str| Err(crate::errors::rlock_error(message.to_owned()));
    let ended = with_executor(|ex| ex.calls.poll_ended(key, ex.rt.handle(), panicked));
    let Some((awaited, result)) = ended else { return };
    let Some(Awaited { future, on_done }) = awaited else {
        // A local link ended (its client closed): its client may link again.
        on_executor(|ex| ex.calls.unlink(key));
        return;
    };
    let future = future.bind(py);
    let outcome = (|| -> PyResult<()> {
        if future.call_method0(made(py)?.done.bind(py))?.is_truthy()? {
            return Ok(()); // cancelled meanwhile; the value is dropped (an acquire's is released)
        }
        // Completed here, so it can no longer be cancelled: its cancel callback goes.
        future.call_method1(made(py)?.remove_done_callback.bind(py), (on_done,))?;
        match result.and_then(|make| make(py)) {
            Ok(v) => future.call_method1(made(py)?.set_result.bind(py), (v,)).map(drop),
            Err(e) => future.call_method1(made(py)?.set_exception.bind(py), (e.into_value(py),)).map(drop),
        }
    })();
    if let Err(e) = outcome {
        e.write_unraisable(py, None);
    }
}

/// Called by the event loop when the socket pair has a byte: polls every woken call.
#[pyfunction]
fn drain(py: Python<'_>) {
    let started = on_executor(|ex| {
        let mut sink = [0u8; 64];
        while matches!((&ex.listen).read(&mut sink), Ok(n) if n > 0) {}
        ex.calls.begin_drain();
    });
    if started {
        drain_all(py);
    }
}

/// Polls woken calls until none is left ([`rlock::surface::drain_woken`]; the drain begun by the
/// caller). Only called outside any borrow of the executor (loop callbacks), so the take
/// always finds it and the drain always ends.
fn drain_all(py: Python<'_>) {
    rlock::surface::drain_woken(
        || {
            let woken = with_executor(|ex| Some(ex.calls.woken()));
            debug_assert!(woken.is_some(), "a drain must reach the executor to end");
            woken
        },
        |key| poll(py, key),
    );
}

/// A done callback: when the asyncio future was cancelled, drops its core call (cancel-safe).
/// The key is set once, right after the call is added.
#[pyclass(frozen)]
struct CancelOnDone(std::sync::OnceLock<CallKey>);

#[pymethods]
impl CancelOnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        let Some(&key) = self.0.get() else { return Ok(()) };
        if future.call_method0(made(future.py())?.cancelled.bind(future.py()))?.is_truthy()? {
            // The asyncio future given back is dropped here, with the GIL.
            drop(with_executor(|ex| ex.calls.cancel(key, ex.rt.handle())));
        }
        Ok(())
    }
}
