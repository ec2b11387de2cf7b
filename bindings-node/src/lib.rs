//! The native part of the Node package `rlock`: a thin napi-rs layer over the core crate.
//!
//! Every function here parses its arguments, calls core and maps the result; lock logic lives in
//! core only. The hand-written `rlock.js` wraps these classes into the public API (option
//! objects, `AbortSignal`, `lostSignal`, `withLock`). Errors cross the boundary as JS errors
//! with a `code` (see `error`). Every call that answers later runs on this thread's local
//! executor (`local::spawn`), never on napi's async bridge, which carries only napi's own
//! status codes.

pub mod client;
pub mod count_down_latch;
mod error;
mod local;
pub mod lock;
pub mod multi_lock;
pub mod permit_expirable_semaphore;
pub mod red_lock;
pub mod semaphore;

use std::time::Duration;

use napi::bindgen_prelude::{FnArgs, Function, PromiseRaw, ToNapiValue};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use napi_derive::napi;
use tokio_util::sync::CancellationToken;

use crate::error::{aborted, from_napi, invalid, js_error, Code, JsResult};

/// This surface, as core spells for it.
const NODE: rlock::surface::Surface = rlock::surface::Surface::Node;

/// Milliseconds given by JS as a `Duration`, checked by core (every surface agrees).
fn millis(what: &str, ms: f64) -> napi::Result<Duration, Code> {
    rlock::surface::duration_arg(NODE, what, ms).map_err(js_error)
}

fn opt_millis(what: &str, ms: Option<f64>) -> napi::Result<Option<Duration>, Code> {
    ms.map(|m| millis(what, m)).transpose()
}

/// The rlock version, "MAJOR.MINOR.PATCH" (the workspace version, Cargo.toml).
#[napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// Every error code (`RLOCK_NOT_HELD`, ...), from core's one list of error kinds.
#[napi]
pub fn error_codes() -> Vec<String> {
    rlock::ErrorKind::ALL.iter().map(|k| k.code_name()).collect()
}

/// Tells the addon which JS runtime loaded it: `'node'`, `'bun'`, `'deno'` or another name
/// (`rlock.js` calls it once at load). Off Node, calls skip the event-loop-polled local link,
/// which needs Node's libuv, and use the client's shared connection.
#[napi]
pub fn set_runtime(name: String) {
    local::set_runtime(&name);
}

/// The arguments of the log callback: level (`'error'`, `'warn'` or `'info'`), the core module
/// that logged (`rlock::...`) and the message.
type LogArgs = FnArgs<(String, String, String)>;

/// Sends core's log records to `callback(level, target, message)` on this JS thread, for the
/// whole process (`rlock.js` sets one at load that calls `process.emitWarning`). Weak: it never
/// keeps the process alive. Replaces any earlier callback.
// napi-rs writes the alias's name, which index.d.ts does not declare, as the parameter type.
#[napi(ts_args_type = "callback: (level: string, target: string, message: string) => void")]
pub fn set_log_callback(callback: Function<'_, LogArgs, ()>) -> napi::Result<(), Code> {
    let tsfn: ThreadsafeFunction<LogArgs, (), LogArgs, Status, false, true> = callback
        .build_threadsafe_function()
        .callee_handled::<false>()
        .weak::<true>()
        .build()
        .map_err(from_napi)?;
    rlock::set_log_sink(Some(std::sync::Arc::new(move |level, target: &str, message: &str| {
        let level = match level {
            rlock::LogLevel::Error => "error",
            rlock::LogLevel::Warn => "warn",
            rlock::LogLevel::Info => "info",
        };
        let args = (level.to_owned(), target.to_owned(), message.to_owned());
        tsfn.call(FnArgs::from(args), ThreadsafeFunctionCallMode::NonBlocking);
    })));
    Ok(())
}

/// The option names core knows, in Node spelling (checked against the `.d.ts` by the tests).
#[napi]
pub fn option_names() -> Vec<String> {
    rlock::surface::option_names(NODE)
}

/// Cancels one pending acquire: the wrapper calls `cancel()` when the caller's `AbortSignal`
/// fires, which drops the core acquire future (core's acquire is cancel-safe).
#[napi]
pub struct CancelToken {
    token: CancellationToken,
}

#[napi]
impl CancelToken {
    /// A token not yet cancelled.
    #[napi(constructor)]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        CancelToken { token: CancellationToken::new() }
    }

    /// Cancels the acquire this token was passed to (no-op when it already finished).
    #[napi]
    pub fn cancel(&self) {
        self.token.cancel();
    }
}

/// Runs an acquire (or another wait) as a call of the JS thread ([`local::spawn`]) that `cancel`
/// cancels: `work` makes the core call from the arguments `parsed`, whose error rejects the call
/// instead. Once `cancel` fired the core future is dropped (core calls are cancel-safe) and the
/// call rejects `RLOCK_ABORTED`, which the wrapper turns into the signal's `AbortError`.
fn acquiring<'env, A, T, W>(
    env: &'env Env,
    parsed: JsResult<A>,
    cancel: &CancelToken,
    work: impl FnOnce(A) -> W + Send + 'static,
) -> JsResult<PromiseRaw<'env, T>>
where
    A: Send + 'static,
    T: ToNapiValue + Send + 'static,
    W: std::future::Future<Output = rlock::Result<T>> + Send,
{
    let token = cancel.token.clone();
    local::spawn(env, async move {
        let call = work(parsed?);
        tokio::select! {
            r = call => r.map_err(js_error),
            _ = token.cancelled() => Err(aborted()),
        }
    })
}

/// The fields of a lost-hold event, in order ([`rlock::surface::LostArgs`]). FnArgs spreads the
/// tuple into JS arguments (a bare tuple arrives as one array).
type LostArgs = FnArgs<rlock::surface::LostArgs>;

/// A JS lost-hold callback taking [`LostArgs`].
type LostCallback<'a> = Function<'a, LostArgs, ()>;

/// A core lost-hold listener that calls `callback` on the JS thread. The threadsafe function
/// is weak, so it never keeps the process alive by itself.
fn lost_listener(
    callback: LostCallback<'_>,
) -> napi::Result<impl Fn(&rlock::LostEvent) + Send + Sync + 'static, Code> {
    let tsfn: ThreadsafeFunction<LostArgs, (), LostArgs, Status, false, true> = callback
        .build_threadsafe_function()
        .callee_handled::<false>()
        .weak::<true>()
        .build()
        .map_err(from_napi)?;
    Ok(move |ev: &rlock::LostEvent| {
        tsfn.call(FnArgs::from(rlock::surface::lost_args(ev)), ThreadsafeFunctionCallMode::NonBlocking);
    })
}

/// A whole number given by JS (exact up to 2^53).
fn whole(what: &str, n: f64) -> napi::Result<i64, Code> {
    if n.is_finite() && n.fract() == 0.0 && n.abs() <= 9.007_199_254_740_991e15 {
        Ok(n as i64)
    } else {
        Err(invalid(&format!("{what} must be a whole number (got {n})")))
    }
}

/// A count of permits given by JS, at least `min` (core checks the range).
fn permits_arg(what: &str, n: f64, min: u64) -> napi::Result<u64, Code> {
    rlock::surface::count_arg(what, whole(what, n)?, min).map_err(js_error)
}

/// napi's tokio runtime, made by core with [`rlock::runtime::SURFACE_WORKERS`] instead of
/// napi's default of one worker per core (the calls themselves are polled on the JS thread, see
/// `local`). If the runtime cannot be built here, napi builds its default one.
#[napi_derive::module_init]
fn init_runtime() {
    if let Ok(rt) = rlock::runtime::build_runtime(rlock::runtime::SURFACE_WORKERS) {
        napi::bindgen_prelude::create_custom_tokio_runtime(rt);
    }
}
