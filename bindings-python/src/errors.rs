//! The one place where core errors become Python exceptions.
//!
//! The exception classes live in `rlock/_errors.py` because several of them subclass two
//! builtins (e.g. `TimeoutError(RLockError, builtins.TimeoutError)`), which a class made in Rust
//! cannot express.

use pyo3::prelude::*;
use pyo3::types::PyType;

/// Builds an instance of `rlock._errors.<class>` with `message`. Takes the GIL (cheap when the
/// caller already holds it).
fn raise(class: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let made = py
            .import("rlock._errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| Ok(c.cast_into::<PyType>()?))
            .map(|ty| PyErr::from_type(ty, (message.clone(),)));
        // Only reachable when the pure-Python half of the package is missing or broken.
        made.unwrap_or_else(|e| e)
    })
}

/// Maps a core error to its Python exception.
pub(crate) fn map_err(e: rlock::Error) -> PyErr {
    // The class core names for the kind (`rlock/_errors.py` is generated from those names).
    raise(e.kind().class_name(), e.message().to_owned())
}

/// A plain `RLockError` (misuse the core cannot see, such as crossing a fork).
pub(crate) fn rlock_error(message: String) -> PyErr {
    raise("RLockError", message)
}
