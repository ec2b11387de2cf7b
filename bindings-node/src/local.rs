//! Core calls run on the JS thread, each settling its promise there directly.
//!
//! napi-rs's bridge (`async fn`, `Env::spawn_future`) spawns every call as a task on a tokio
//! worker and settles its promise through a threadsafe function made for that one call: a hop
//! to a worker and back, and a threadsafe function (a libuv handle, a cleanup hook) created and
//! torn down per call. Here the JS thread polls the core future itself, right in the call (which
//! sends the request at once) and again whenever it is woken; the tokio workers only run the
//! connections and timers. Wake-ups from any thread land in one ready list per JS thread, and
//! ONE threadsafe function (made once) tells the JS thread to poll everything in it: a burst of
//! replies costs one turn of the event loop, not one per call.
//!
//! The threadsafe function keeps the event loop alive only while calls are pending (it is
//! referenced from the first pending call to the last), as each call's own function did. When
//! the environment is torn down (the process exits, a worker thread ends), the ready list is
//! closed first, so no waker touches the threadsafe function after Node frees it, and the
//! pending calls are dropped (core calls are cancel-safe).

use std::cell::RefCell;
use std::ffi::c_void;
use std::future::Future;
use std::panic::catch_unwind;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::{sys, Env, Status};
use rlock::surface::{CallKey, Closer, LocalCall, LocalCalls};

use crate::error::{from_napi, internal, Code, JsResult};

/// Makes a call's JS value on the JS thread.
type Settle = Box<dyn FnOnce(sys::napi_env) -> napi::Result<sys::napi_value> + Send>;

/// The threadsafe function, rung from any thread by core's wakers.
struct Tsfn(sys::napi_threadsafe_function);

// SAFETY: a threadsafe function may be called from any thread (that is its purpose); core rings
// the bell under its ready list's lock and never after the list is closed, which `torn_down`
// and `finalized` do before Node frees the function.
unsafe impl Send for Tsfn {}
unsafe impl Sync for Tsfn {}

impl Tsfn {
    /// Asks the JS thread to poll its woken calls.
    fn ring(&self) {
        // SAFETY: see the type. Non-blocking on an unbounded queue: it cannot block, and fails
        // only while closing.
        unsafe {
            sys::napi_call_threadsafe_function(
                self.0,
                ptr::null_mut(),
                sys::ThreadsafeFunctionCallMode::nonblocking,
            )
        };
    }
}

/// The calls of one JS thread's environment, each with the promise to settle.
struct Executor {
    env: sys::napi_env,
    tsfn: sys::napi_threadsafe_function,
    /// Calls with their promise; a null deferred marks a background call (a local link, of a
    /// client linked on this thread), which keeps no event loop alive and settles nothing.
    calls: LocalCalls<JsResult<Settle>, sys::napi_deferred>,
    /// napi's tokio runtime while this environment lives (see [`current_runtime`]).
    runtime: tokio::runtime::Handle,
    /// The async context the local links' poll callbacks run JS in (made with the first link).
    scope: Option<(sys::napi_ref, sys::napi_async_context)>,
}

thread_local! {
    /// This JS thread's executor (made on its first call).
    static EXECUTOR: RefCell<Option<Executor>> = const { RefCell::new(None) };
}

/// napi's tokio runtime as it is now, which the core futures need as their context (timers,
/// spawned clean-ups) even when polled on the JS thread. Not cached for the process: napi shuts
/// its runtime down when the last environment that loaded the addon ends and makes a new one
/// for the next (Deno runs each test file in a worker of its own), and a future polled in the
/// old one's context panicked at its first timer. An executor keeps the handle of its
/// environment's lifetime, during which the runtime stays.
fn current_runtime() -> tokio::runtime::Handle {
    napi::bindgen_prelude::within_runtime_if_available(tokio::runtime::Handle::current)
}

fn check(status: sys::napi_status, what: &str) -> napi::Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::new(Status::from(status), format!("rlock: {what} failed")))
    }
}

/// Runs `fut` as a call of the JS thread and returns its promise, settled with the future's
/// value or error. The future is polled once right away.
pub(crate) fn spawn<'env, T, F>(env: &'env Env, fut: F) -> JsResult<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = JsResult<T>> + Send + 'static,
{
    // On the heap first: a core call's future is kilobytes, and every move of it is a copy.
    let fut = Box::pin(fut);
    let raw = env.raw();
    let (mut deferred, mut promise) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: called on the JS thread with its env (napi methods run there).
    check(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) }, "napi_create_promise")
        .map_err(from_napi)?;
    let call = Box::pin(async move {
        let value = fut.await?;
        // SAFETY: settles run on the JS thread with its env.
        Ok(Box::new(move |env| unsafe { T::to_napi_value(env, value) }) as Settle)
    });
    let added = with_executor(raw, |ex| -> napi::Result<(CallKey, bool)> {
        // Few calls pending: each request goes out at once, so Redis works on it while this
        // thread makes the next (as ioredis writes each command). Many: every 8th call sends
        // what is queued. Wake-ups while this call is made are drained below, without a bell.
        let flush = ex.calls.flush_for_call(FLUSH_EVERY);
        if ex.calls.foreground() == 0 {
            // SAFETY: on the JS thread; the threadsafe function lives as long as the env.
            unsafe { sys::napi_ref_threadsafe_function(raw, ex.tsfn) };
        }
        Ok((ex.calls.add(call, deferred), flush))
    });
    match added.and_then(|a| a).map_err(from_napi) {
        Ok((key, flush)) => {
            poll(raw, key);
            if flush {
                drain_all(raw);
            }
        }
        Err(e) => reject(raw, deferred, e),
    }
    Ok(PromiseRaw::new(raw, promise))
}

/// Runs `f` on this JS thread's executor for `env`, made first if needed.
fn with_executor<R>(env: sys::napi_env, f: impl FnOnce(&mut Executor) -> R) -> napi::Result<R> {
    EXECUTOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|e| e.env != env) {
            *cell = Some(Executor::new(env)?);
        }
        let Some(ex) = cell.as_mut() else { unreachable!("made above") };
        Ok(f(ex))
    })
}

/// Runs `f` on this JS thread's executor if it is `env`'s (unlike [`with_executor`], makes
/// none): what `f` gives, None without one.
fn of_env<R>(env: sys::napi_env, f: impl FnOnce(&mut Executor) -> Option<R>) -> Option<R> {
    EXECUTOR.with(|cell| cell.borrow_mut().as_mut().filter(|e| e.env == env).and_then(f))
}

/// Whether local links may be made: only under Node, whose libuv watches their sockets (see
/// [`set_runtime`]).
static LINKS: AtomicBool = AtomicBool::new(true);

/// Records which JS runtime loaded the addon (`rlock.js` tells it at load, from
/// `process.versions`). Local links need a real libuv poll handle, which only Node has: Bun
/// aborts the process at `uv_poll_init` (oven-sh/bun#18546), and Deno's handle never reports
/// readiness, so a waiter's wake-up sat unread until a timeout. Elsewhere every call uses the
/// client's shared connection (napi's threadsafe functions work on all three).
pub(crate) fn set_runtime(name: &str) {
    LINKS.store(name == "node", Ordering::Relaxed);
}

/// Starts `client`'s local link on this JS thread, once per client (see
/// `rlock::Client::local_link`): its commands then go out and come back on this thread's event
/// loop. Nothing happens for a client that cannot have one, off Unix, or off Node.
pub(crate) fn link(env: &Env, client: &rlock::Client) -> JsResult<()> {
    if !LINKS.load(Ordering::Relaxed) {
        return Ok(());
    }
    let raw = env.raw();
    let id = client.id().as_u128();
    if with_executor(raw, |ex| ex.calls.is_linked(id)).map_err(from_napi)? {
        return Ok(());
    }
    let Some(run) = uv::watch(raw).and_then(|watch| client.local_link(watch)) else {
        return Ok(());
    };
    let driver: LocalCall<_> = Box::pin(async move {
        run.await;
        Ok(Box::new(|_| Ok(ptr::null_mut())) as Settle)
    });
    let key =
        with_executor(raw, |ex| ex.calls.link(id, Some((driver, ptr::null_mut())))).map_err(from_napi)?;
    if let Some(key) = key {
        poll(raw, key);
    }
    Ok(())
}

impl Executor {
    /// The executor of `env`: its threadsafe function (unreferenced while nothing is pending)
    /// and the clean-up hook that closes it with the environment.
    fn new(env: sys::napi_env) -> napi::Result<Executor> {
        let mut name = ptr::null_mut();
        // SAFETY: on the JS thread with its env; the string is static.
        check(
            unsafe { sys::napi_create_string_utf8(env, c"rlock".as_ptr(), 5, &mut name) },
            "napi_create_string_utf8",
        )?;
        let mut tsfn = ptr::null_mut();
        // SAFETY: as above; `drain` and `finalized` match napi's callback types. The finalize
        // data is set below, once the calls exist (napi reads it only when finalizing).
        let closer_slot: *mut Option<Closer> = Box::into_raw(Box::new(None));
        let made = check(
            unsafe {
                sys::napi_create_threadsafe_function(
                    env,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    name,
                    0,
                    1,
                    closer_slot.cast(),
                    Some(finalized),
                    ptr::null_mut(),
                    Some(drain),
                    &mut tsfn,
                )
            },
            "napi_create_threadsafe_function",
        );
        if let Err(e) = made {
            // SAFETY: from Box::into_raw above, never handed to napi.
            drop(unsafe { Box::from_raw(closer_slot) });
            return Err(e);
        }
        let bell = Tsfn(tsfn);
        let calls = LocalCalls::new(move || bell.ring());
        // SAFETY: napi owns the box until `finalized`, which runs on this thread later.
        unsafe { *closer_slot = Some(calls.closer()) };
        // SAFETY: a live threadsafe function of this env; unreferenced, it keeps no process
        // alive until a call is pending. The clean-up hook's argument is only compared.
        unsafe {
            sys::napi_unref_threadsafe_function(env, tsfn);
            sys::napi_add_env_cleanup_hook(env, Some(torn_down), env as *mut c_void);
        }
        Ok(Executor { env, tsfn, calls, runtime: current_runtime(), scope: None })
    }
}

/// Polls call `key` (if it is still pending) and settles its promise when it ended.
fn poll(env: sys::napi_env, key: CallKey) {
    let ended = of_env(env, |ex| {
        let ended = ex.calls.poll_ended(key, &ex.runtime, |message| Err(internal(message)))?;
        if ended.0.is_null() {
            // A local link ended (its client closed): nothing to settle.
            return None;
        }
        if ex.calls.foreground() == 0 {
            // SAFETY: as in `spawn`.
            unsafe { sys::napi_unref_threadsafe_function(env, ex.tsfn) };
        }
        Some(ended)
    });
    if let Some((deferred, result)) = ended {
        settle(env, deferred, result);
    }
}

/// Resolves or rejects `deferred` with `result`.
fn settle(env: sys::napi_env, deferred: sys::napi_deferred, result: JsResult<Settle>) {
    match result.and_then(|make| make(env).map_err(from_napi)) {
        // SAFETY: on the JS thread; each deferred is settled exactly once (its slot is gone).
        Ok(value) => unsafe {
            sys::napi_resolve_deferred(env, deferred, value);
        },
        Err(e) => reject(env, deferred, e),
    }
}

/// Rejects `deferred` with `error` as a JS Error whose `code` is the error's code.
fn reject(env: sys::napi_env, deferred: sys::napi_deferred, error: napi::Error<Code>) {
    // SAFETY: on the JS thread with its env.
    unsafe {
        if let Ok(value) = ToNapiValue::to_napi_value(env, error) {
            sys::napi_reject_deferred(env, deferred, value);
        }
    }
}

/// The threadsafe function's callback, on the JS thread: polls every woken call.
unsafe extern "C" fn drain(
    env: sys::napi_env,
    _js: sys::napi_value,
    _context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() {
        return; // the environment is being torn down
    }
    drain_all(env);
}

/// With [`rlock::surface::FLUSH_ALONE_BELOW`] or more pending, a call sends the queued requests
/// every this many calls ([`LocalCalls::flush_for_call`]; best with 64 owners).
const FLUSH_EVERY: usize = 8;

/// Polls woken calls until none is left ([`rlock::surface::drain_woken`]).
fn drain_all(env: sys::napi_env) {
    let started = of_env(env, |ex| {
        ex.calls.begin_drain();
        Some(())
    });
    if started.is_none() {
        return;
    }
    rlock::surface::drain_woken(|| of_env(env, |ex| Some(ex.calls.woken())), |key| poll(env, key));
}

/// The threadsafe function was freed: its bell must never ring again.
unsafe extern "C" fn finalized(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the box handed over in `Executor::new`, given back once.
    if let Some(closer) = *unsafe { Box::from_raw(data as *mut Option<Closer>) } {
        closer.close();
    }
}

/// The environment is going away: no waker may call the threadsafe function from now on, and
/// the pending calls are dropped (their promises can no longer be settled).
unsafe extern "C" fn torn_down(env: *mut c_void) {
    let _ = catch_unwind(|| {
        let ex = EXECUTOR.with(|cell| {
            let mut cell = cell.borrow_mut();
            if cell.as_ref().is_some_and(|e| e.env as *mut c_void == env) {
                cell.take()
            } else {
                None
            }
        });
        if let Some(ex) = ex {
            ex.calls.closer().close();
            let runtime = ex.runtime.clone();
            let _context = runtime.enter();
            drop(ex);
        }
    });
}

/// The local links' sockets, watched by libuv poll handles on the JS thread's loop.
#[cfg(unix)]
mod uv {
    use std::alloc::{alloc, dealloc, Layout};
    use std::cell::Cell;
    use std::ffi::{c_int, c_void};
    use std::panic::catch_unwind;
    use std::ptr;
    use std::sync::Arc;

    use napi::sys;
    use rlock::surface::{LocalIo, RawSocket, Watcher};

    use super::{check, drain_all, of_env};

    // libuv, as the Node binary exports it (uv.h: `uv_handle_type` UV_POLL, `uv_poll_event`).
    const UV_POLL: c_int = 8;
    const UV_READABLE: c_int = 1;
    const UV_WRITABLE: c_int = 2;
    type PollCb = unsafe extern "C" fn(handle: *mut c_void, status: c_int, events: c_int);
    type CloseCb = unsafe extern "C" fn(handle: *mut c_void);
    unsafe extern "C" {
        fn uv_handle_size(kind: c_int) -> usize;
        fn uv_poll_init(event_loop: *mut c_void, handle: *mut c_void, fd: c_int) -> c_int;
        fn uv_poll_start(handle: *mut c_void, events: c_int, cb: PollCb) -> c_int;
        fn uv_close(handle: *mut c_void, cb: CloseCb);
        fn uv_unref(handle: *mut c_void);
    }

    /// One watched socket: the poll handle and who still needs this state. Lives on the JS
    /// thread; freed by the last of the watcher's drop and the handle's close callback.
    struct Poll {
        env: sys::napi_env,
        handle: *mut c_void,
        io: Arc<LocalIo>,
        /// The environment's async clean-up hook, which closes the handle if the environment
        /// goes first (a worker thread ending); removed once the handle is closed.
        hook: Cell<sys::napi_async_cleanup_hook_handle>,
        closing: Cell<bool>,
        closed: Cell<bool>,
        watched: Cell<bool>,
    }

    fn layout() -> Option<Layout> {
        // SAFETY: a libuv query without side effects.
        Layout::from_size_align(unsafe { uv_handle_size(UV_POLL) }, 16).ok()
    }

    /// Begins closing the handle (once); `closed` runs when libuv is done with it.
    fn close(p: &Poll) {
        if !p.closing.replace(true) {
            // SAFETY: an initialized handle of this thread's loop, closed once.
            unsafe { uv_close(p.handle, closed) };
        }
    }

    unsafe extern "C" fn closed(handle: *mut c_void) {
        // SAFETY: the handle's data is its `Poll` (set in `watch`), alive until freed below.
        let p = unsafe { *(handle as *mut *mut Poll) };
        let p_ref = unsafe { &*p };
        p_ref.closed.set(true);
        // SAFETY: the hook was registered in `watch` and is removed once.
        unsafe { sys::napi_remove_async_cleanup_hook(p_ref.hook.replace(ptr::null_mut())) };
        if let Some(layout) = layout() {
            // SAFETY: allocated in `watch` with this layout; libuv is done with it.
            unsafe { dealloc(handle.cast(), layout) };
        }
        if !p_ref.watched.get() {
            // SAFETY: from Box::into_raw in `watch`; nobody else holds it.
            drop(unsafe { Box::from_raw(p) });
        }
    }

    unsafe extern "C" fn hook(_handle: sys::napi_async_cleanup_hook_handle, arg: *mut c_void) {
        // SAFETY: `arg` is the `Poll`, alive until its handle is closed.
        close(unsafe { &*(arg as *const Poll) });
    }

    /// Readiness from libuv: wake the link's driver and poll what it wakes, all in one drain,
    /// inside a callback scope so the promises settled here run their reactions.
    unsafe extern "C" fn ready(handle: *mut c_void, status: c_int, events: c_int) {
        let _ = catch_unwind(|| {
            // SAFETY: the handle's data is its `Poll`; no callback comes after `uv_close`.
            let p = unsafe { &**(handle as *mut *mut Poll) };
            let env = p.env;
            let scope = of_env(env, |ex| {
                ex.calls.begin_drain();
                ex.scope
            });
            // An error (the socket broke) wakes both sides: the driver then sees it.
            let (readable, writable) = if status < 0 {
                (true, true)
            } else {
                (events & UV_READABLE != 0, events & UV_WRITABLE != 0)
            };
            p.io.ready(readable, writable);
            let Some((resource, context)) = scope else { return };
            // SAFETY: on the JS thread, from libuv: open a handle scope and a callback scope
            // (what napi's own callbacks run in), drain, close both.
            unsafe {
                let mut handles = ptr::null_mut();
                if sys::napi_open_handle_scope(env, &mut handles) != sys::Status::napi_ok {
                    return;
                }
                let mut object = ptr::null_mut();
                let mut callback = ptr::null_mut();
                if sys::napi_get_reference_value(env, resource, &mut object) == sys::Status::napi_ok
                    && sys::napi_open_callback_scope(env, object, context, &mut callback)
                        == sys::Status::napi_ok
                {
                    drain_all(env);
                    sys::napi_close_callback_scope(env, callback);
                }
                sys::napi_close_handle_scope(env, handles);
            }
        });
    }

    struct UvWatcher(*mut Poll);

    // SAFETY: made, used and dropped on the JS thread only: the link future that owns it is
    // polled and dropped by that thread's executor.
    unsafe impl Send for UvWatcher {}

    impl Watcher for UvWatcher {
        fn write_interest(&mut self, on: bool) {
            // SAFETY: the `Poll` lives while its watcher does.
            let p = unsafe { &*self.0 };
            if !p.closing.get() {
                let events = if on { UV_READABLE | UV_WRITABLE } else { UV_READABLE };
                // SAFETY: an initialized, open handle of this thread's loop.
                unsafe { uv_poll_start(p.handle, events, ready) };
            }
        }
    }

    impl Drop for UvWatcher {
        fn drop(&mut self) {
            // SAFETY: the `Poll` lives while its watcher does.
            let p = unsafe { &*self.0 };
            p.watched.set(false);
            if p.closed.get() {
                // SAFETY: the handle is closed and the watcher was the last holder.
                drop(unsafe { Box::from_raw(self.0) });
            } else {
                close(p);
            }
        }
    }

    /// The async context the poll callbacks run in, made once per executor.
    fn scope(env: sys::napi_env) -> napi::Result<()> {
        if of_env(env, |ex| ex.scope).is_some() {
            return Ok(());
        }
        let (mut object, mut name, mut reference, mut context) =
            (ptr::null_mut(), ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        // SAFETY: on the JS thread with its env; the string is static.
        unsafe {
            check(sys::napi_create_object(env, &mut object), "napi_create_object")?;
            check(
                sys::napi_create_string_utf8(env, c"rlock".as_ptr(), 5, &mut name),
                "napi_create_string_utf8",
            )?;
            check(sys::napi_create_reference(env, object, 1, &mut reference), "napi_create_reference")?;
            check(sys::napi_async_init(env, object, name, &mut context), "napi_async_init")?;
        }
        of_env(env, |ex| ex.scope.replace((reference, context)));
        Ok(())
    }

    /// What a local link needs from the surface: for each connection, a poll handle on this
    /// JS thread's loop watching its socket. `None` when the loop cannot be had.
    pub(super) fn watch(env: sys::napi_env) -> Option<rlock::surface::Watch> {
        let mut event_loop = ptr::null_mut();
        // SAFETY: on the JS thread with its env.
        if unsafe { sys::napi_get_uv_event_loop(env, &mut event_loop) } != sys::Status::napi_ok {
            return None;
        }
        scope(env).ok()?;
        // Addresses only: the closure runs on this JS thread (the link is polled here).
        let (event_loop, env) = (event_loop as usize, env as usize);
        Some(Box::new(move |socket: RawSocket, io: Arc<LocalIo>| -> rlock::Result<Box<dyn Watcher>> {
            let refused =
                |what: &str| rlock::Error::new(rlock::ErrorKind::Connection, format!("libuv refused {what}"));
            let layout = layout().ok_or_else(|| refused("a poll handle"))?;
            // SAFETY: a fresh block of libuv's size for a poll handle, initialized below.
            let handle = unsafe { alloc(layout) }.cast::<c_void>();
            if handle.is_null() {
                return Err(refused("a poll handle"));
            }
            // SAFETY: this thread's loop and a fresh handle; the socket stays open until the
            // watcher (which closes the handle first) is dropped.
            if unsafe { uv_poll_init(event_loop as *mut c_void, handle, socket) } != 0 {
                // SAFETY: never initialized: libuv holds nothing of it.
                unsafe { dealloc(handle.cast(), layout) };
                return Err(refused("to watch the socket"));
            }
            let env = env as sys::napi_env;
            let p = Box::into_raw(Box::new(Poll {
                env,
                handle,
                io,
                hook: Cell::new(ptr::null_mut()),
                closing: Cell::new(false),
                closed: Cell::new(false),
                watched: Cell::new(true),
            }));
            // SAFETY: `data` is a handle's first field (uv.h, UV_HANDLE_FIELDS); `p` outlives the
            // handle (freed after its close callback); the hook's handle is kept to remove it.
            unsafe {
                *(handle as *mut *mut Poll) = p;
                uv_unref(handle);
                let mut hook_handle = ptr::null_mut();
                sys::napi_add_async_cleanup_hook(env, Some(hook), p.cast(), &mut hook_handle);
                (*p).hook.set(hook_handle);
                uv_poll_start(handle, UV_READABLE, ready);
            }
            Ok(Box::new(UvWatcher(p)))
        }))
    }
}

#[cfg(not(unix))]
mod uv {
    /// No local links off Unix: calls use the client's shared connection.
    pub(super) fn watch(_env: napi::sys::napi_env) -> Option<rlock::surface::Watch> {
        None
    }
}
