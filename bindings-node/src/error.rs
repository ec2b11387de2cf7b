//! Errors as JS receives them: an `Error` whose `code` is core's code name for the error kind
//! (`RLOCK_NOT_HELD`, ...) and whose message is core's message, made by napi-rs from
//! `napi::Error<Code>` (it passes the status as the JS error's `code`). `rlock.js` turns a
//! coded error into an `RLockError` by its `code` alone; nothing is read from the message.

/// The `code` of an error this addon throws or rejects with.
#[derive(Debug, Clone)]
pub struct Code(String);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// What every native function returns: its value, or an error with its code.
pub type JsResult<T> = napi::Result<T, Code>;

/// The one mapping of core errors for Node: the kind's code name (`RLOCK_NOT_HELD`, ...), so
/// a new core kind gets a code without a change here.
pub(crate) fn js_error(e: rlock::Error) -> napi::Error<Code> {
    napi::Error::new(Code(e.kind().code_name()), e.message())
}

/// `RLOCK_INVALID_ARGUMENT` with `message`.
pub(crate) fn invalid(message: &str) -> napi::Error<Code> {
    js_error(rlock::Error::new(rlock::ErrorKind::InvalidArgument, message))
}

/// An acquire cancelled by its `AbortSignal`: `RLOCK_ABORTED`, which `rlock.js` replaces by
/// the signal's reason (a Node-only code, not a core kind).
pub(crate) fn aborted() -> napi::Error<Code> {
    napi::Error::new(Code("RLOCK_ABORTED".to_owned()), "the acquire was aborted")
}

/// A panic caught in a call: `RLOCK_INTERNAL` (a bug in rlock; nothing else reaches JS).
pub(crate) fn internal(message: &str) -> napi::Error<Code> {
    napi::Error::new(Code("RLOCK_INTERNAL".to_owned()), message)
}

/// A failure of napi itself, with napi's status as its code, as napi-rs would throw it.
pub(crate) fn from_napi(e: napi::Error) -> napi::Error<Code> {
    napi::Error::new(Code(e.status.as_ref().to_owned()), e.reason.clone())
}
