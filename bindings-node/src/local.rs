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
use std::sync::OnceLock;

use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::{sys, Env, Status};
use rlock::{CallKey, Closer, LocalCalls, Polled, PANIC_MESSAGE};

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
    calls: LocalCalls<napi::Result<Settle>, sys::napi_deferred>,
}

thread_local! {
    /// This JS thread's executor (made on its first call).
    static EXECUTOR: RefCell<Option<Executor>> = const { RefCell::new(None) };
}

/// napi's tokio runtime, which the core futures need as their context (timers, spawned
/// clean-ups) even when polled on the JS thread.
fn runtime() -> &'static tokio::runtime::Handle {
    static HANDLE: OnceLock<tokio::runtime::Handle> = OnceLock::new();
    HANDLE.get_or_init(|| napi::bindgen_prelude::within_runtime_if_available(tokio::runtime::Handle::current))
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
pub(crate) fn spawn<'env, T, F>(env: &'env Env, fut: F) -> napi::Result<PromiseRaw<'env, T>>
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = napi::Result<T>> + Send + 'static,
{
    let raw = env.raw();
    let (mut deferred, mut promise) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: called on the JS thread with its env (napi methods run there).
    check(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) }, "napi_create_promise")?;
    let call = Box::pin(async move {
        let value = fut.await?;
        // SAFETY: settles run on the JS thread with its env.
        Ok(Box::new(move |env| unsafe { T::to_napi_value(env, value) }) as Settle)
    });
    let added = EXECUTOR.with(|cell| -> napi::Result<CallKey> {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|e| e.env != raw) {
            *cell = Some(Executor::new(raw)?);
        }
        let Some(ex) = cell.as_mut() else { unreachable!("made above") };
        if ex.calls.pending() == 0 {
            // SAFETY: on the JS thread; the threadsafe function lives as long as the env.
            unsafe { sys::napi_ref_threadsafe_function(raw, ex.tsfn) };
        }
        Ok(ex.calls.add(call, deferred))
    });
    match added {
        Ok(key) => poll(raw, key),
        Err(e) => reject(raw, deferred, e),
    }
    Ok(PromiseRaw::new(raw, promise))
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
        Ok(Executor { env, tsfn, calls })
    }
}

/// Polls call `key` (if it is still pending) and settles its promise when it ended.
fn poll(env: sys::napi_env, key: CallKey) {
    let ended = EXECUTOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        let ex = cell.as_mut().filter(|e| e.env == env)?;
        let ended = match ex.calls.poll(key, runtime())? {
            Polled::Pending => return None,
            Polled::Ready(result, deferred) => (deferred, result),
            Polled::Panicked(deferred) => (
                deferred,
                Err(napi::Error::new(Status::GenericFailure, format!("[RLOCK_INTERNAL] {PANIC_MESSAGE}"))),
            ),
        };
        if ex.calls.pending() == 0 {
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
fn settle(env: sys::napi_env, deferred: sys::napi_deferred, result: napi::Result<Settle>) {
    match result.and_then(|make| make(env)) {
        // SAFETY: on the JS thread; each deferred is settled exactly once (its slot is gone).
        Ok(value) => unsafe {
            sys::napi_resolve_deferred(env, deferred, value);
        },
        Err(e) => reject(env, deferred, e),
    }
}

/// Rejects `deferred` with `error` as a JS Error (the same object napi-rs's bridge makes).
fn reject(env: sys::napi_env, deferred: sys::napi_deferred, error: napi::Error) {
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
    let woken =
        EXECUTOR.with(|cell| cell.borrow().as_ref().filter(|e| e.env == env).map(|e| e.calls.woken()));
    for key in woken.into_iter().flatten() {
        poll(env, key);
    }
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
            let _context = runtime().enter();
            drop(ex);
        }
    });
}
