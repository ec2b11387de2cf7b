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
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::ptr;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Wake, Waker};

use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::{sys, Env, Status};

/// Makes a call's JS value on the JS thread.
type Settle = Box<dyn FnOnce(sys::napi_env) -> napi::Result<sys::napi_value>>;

/// A pending core call, typed away.
type Call = Pin<Box<dyn Future<Output = napi::Result<Settle>>>>;

/// What wakers on any thread share with their JS thread.
struct Shared {
    ready: Mutex<Ready>,
}

/// The calls to poll, and the threadsafe function that gets the JS thread to poll them.
struct Ready {
    /// Slot and generation of each woken call (a slot is reused once its call ends).
    woken: Vec<(usize, u64)>,
    /// Set when the environment goes away: the threadsafe function must not be called again.
    closed: bool,
    tsfn: sys::napi_threadsafe_function,
}

// SAFETY: a threadsafe function may be called from any thread (that is its purpose); `closed`
// (under the same mutex) keeps calls from coming after the environment freed it.
unsafe impl Send for Ready {}

/// Wakes one call: queues it and, when the list was empty, asks the JS thread to poll.
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
        let mut ready = self.shared.ready.lock().unwrap_or_else(|p| p.into_inner());
        if ready.closed {
            return;
        }
        let first = ready.woken.is_empty();
        ready.woken.push((self.slot, self.generation));
        if first {
            // SAFETY: not closed, so the environment has not freed it. Non-blocking on an
            // unbounded queue: it cannot block, and fails only while closing.
            unsafe {
                sys::napi_call_threadsafe_function(
                    ready.tsfn,
                    ptr::null_mut(),
                    sys::ThreadsafeFunctionCallMode::nonblocking,
                )
            };
        }
    }
}

/// One pending call: its future (out of the slot while it is being polled), its waker and the
/// promise to settle.
struct Slot {
    call: Option<Call>,
    waker: Waker,
    deferred: sys::napi_deferred,
    generation: u64,
}

/// The calls of one JS thread's environment.
struct Executor {
    env: sys::napi_env,
    shared: Arc<Shared>,
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    generation: u64,
    /// Pending calls; the threadsafe function is referenced while there are any.
    pending: usize,
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
    T: ToNapiValue + 'static,
    F: Future<Output = napi::Result<T>> + 'static,
{
    let raw = env.raw();
    let (mut deferred, mut promise) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: called on the JS thread with its env (napi methods run there).
    check(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) }, "napi_create_promise")?;
    let call: Call = Box::pin(async move {
        let value = fut.await?;
        // SAFETY: settles run on the JS thread with its env.
        Ok(Box::new(move |env| unsafe { T::to_napi_value(env, value) }) as Settle)
    });
    let added = EXECUTOR.with(|cell| -> napi::Result<(usize, u64)> {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|e| e.env != raw) {
            *cell = Some(Executor::new(raw)?);
        }
        let Some(ex) = cell.as_mut() else { unreachable!("made above") };
        Ok(ex.add(call, deferred))
    });
    let (slot, generation) = match added {
        Ok(at) => at,
        Err(e) => {
            reject(raw, deferred, e);
            return Ok(PromiseRaw::new(raw, promise));
        }
    };
    poll(raw, slot, generation);
    Ok(PromiseRaw::new(raw, promise))
}

impl Executor {
    /// The executor of `env`: its threadsafe function (unreferenced while nothing is pending)
    /// and the clean-up hook that closes it with the environment.
    fn new(env: sys::napi_env) -> napi::Result<Executor> {
        let shared = Arc::new(Shared {
            ready: Mutex::new(Ready { woken: Vec::new(), closed: false, tsfn: ptr::null_mut() }),
        });
        let mut name = ptr::null_mut();
        // SAFETY: on the JS thread with its env; the string is static.
        check(
            unsafe { sys::napi_create_string_utf8(env, c"rlock".as_ptr(), 5, &mut name) },
            "napi_create_string_utf8",
        )?;
        // The threadsafe function's context: one count of `shared`, given back by `finalized`.
        let context = Arc::into_raw(shared.clone()) as *mut c_void;
        let mut tsfn = ptr::null_mut();
        // SAFETY: as above; `drain` and `finalized` match napi's callback types.
        let made = check(
            unsafe {
                sys::napi_create_threadsafe_function(
                    env,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    name,
                    0,
                    1,
                    context,
                    Some(finalized),
                    context,
                    Some(drain),
                    &mut tsfn,
                )
            },
            "napi_create_threadsafe_function",
        );
        if let Err(e) = made {
            // SAFETY: from Arc::into_raw above, never handed to napi.
            drop(unsafe { Arc::from_raw(context as *const Shared) });
            return Err(e);
        }
        // SAFETY: a live threadsafe function of this env; unreferenced, it keeps no process
        // alive until a call is pending. The clean-up hook's argument is only compared.
        unsafe {
            sys::napi_unref_threadsafe_function(env, tsfn);
            sys::napi_add_env_cleanup_hook(env, Some(torn_down), env as *mut c_void);
        }
        shared.ready.lock().unwrap_or_else(|p| p.into_inner()).tsfn = tsfn;
        Ok(Executor { env, shared, slots: Vec::new(), free: Vec::new(), generation: 0, pending: 0 })
    }

    /// Stores a call; its slot and generation.
    fn add(&mut self, call: Call, deferred: sys::napi_deferred) -> (usize, u64) {
        self.generation += 1;
        let generation = self.generation;
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        let waker = Waker::from(Arc::new(CallWaker { shared: self.shared.clone(), slot, generation }));
        self.slots[slot] = Some(Slot { call: Some(call), waker, deferred, generation });
        if self.pending == 0 {
            // SAFETY: on the JS thread; the threadsafe function lives as long as the env.
            unsafe { sys::napi_ref_threadsafe_function(self.env, self.tsfn()) };
        }
        self.pending += 1;
        (slot, generation)
    }

    fn tsfn(&self) -> sys::napi_threadsafe_function {
        self.shared.ready.lock().unwrap_or_else(|p| p.into_inner()).tsfn
    }

    /// Frees the slot of a call that ended.
    fn remove(&mut self, slot: usize) {
        self.slots[slot] = None;
        self.free.push(slot);
        self.pending -= 1;
        if self.pending == 0 {
            // SAFETY: as in `add`.
            unsafe { sys::napi_unref_threadsafe_function(self.env, self.tsfn()) };
        }
    }
}

/// Polls the call in `slot` (if it is still that call) and settles its promise when it ended.
/// A panic in core is caught here (it must not unwind into Node) and rejects the promise.
fn poll(env: sys::napi_env, slot: usize, generation: u64) {
    // Polled and dropped with the runtime entered: core futures use its timers, and a call
    // dropped unfinished hands its clean-up to a task.
    let _context = runtime().enter();
    let taken = EXECUTOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        let s = cell.as_mut().filter(|e| e.env == env)?.slots.get_mut(slot)?.as_mut()?;
        if s.generation != generation {
            return None;
        }
        Some((s.call.take()?, s.waker.clone()))
    });
    let Some((mut call, waker)) = taken else { return };
    let polled = catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(&mut Context::from_waker(&waker))));
    let outcome = match polled {
        Ok(Poll::Pending) => None,
        Ok(Poll::Ready(r)) => Some(r),
        Err(_) => Some(Err(napi::Error::new(
            Status::GenericFailure,
            "[RLOCK_INTERNAL] internal error in rlock (a bug: please report it)",
        ))),
    };
    let deferred = EXECUTOR.with(|cell| {
        let mut cell = cell.borrow_mut();
        let ex = cell.as_mut().filter(|e| e.env == env)?;
        let s = ex.slots.get_mut(slot)?.as_mut()?;
        if outcome.is_none() {
            s.call = Some(call);
            return None;
        }
        let deferred = s.deferred;
        ex.remove(slot);
        Some(deferred)
    });
    if let (Some(deferred), Some(result)) = (deferred, outcome) {
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
    context: *mut c_void,
    _data: *mut c_void,
) {
    if env.is_null() || context.is_null() {
        return; // the environment is being torn down
    }
    // SAFETY: the context is the count of `Shared` this threadsafe function owns.
    let shared = unsafe { &*(context as *const Shared) };
    let woken = std::mem::take(&mut shared.ready.lock().unwrap_or_else(|p| p.into_inner()).woken);
    for (slot, generation) in woken {
        poll(env, slot, generation);
    }
}

/// The threadsafe function was freed: gives back its count of `Shared`.
unsafe extern "C" fn finalized(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the count handed over in `Executor::new`, given back once.
    let shared = unsafe { Arc::from_raw(data as *const Shared) };
    shared.ready.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
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
            ex.shared.ready.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
            let _context = runtime().enter();
            drop(ex);
        }
    });
}
