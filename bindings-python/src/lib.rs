//! `rlock._native`: the Python extension module of rlock.
//!
//! Thin by design: every function parses its arguments, calls the core crate and maps the result.
//! Owners are plain integers chosen by the Python layer (`None` = the calling OS thread); the
//! binding keeps no lock state of its own.

mod aio;
mod client;
mod count_down_latch;
mod errors;
mod handle;
mod lock;
mod logging;
mod multi_lock;
mod permit_expirable_semaphore;
mod red_lock;
mod runtime;
mod semaphore;
mod wait;

use pyo3::prelude::*;

use client::Client;
use count_down_latch::CountDownLatch;
use handle::{PendingAcquire, PYTHON};
use lock::Lock;
use multi_lock::MultiLock;
use permit_expirable_semaphore::PermitExpirableSemaphore;
use semaphore::Semaphore;

/// The owner id of the calling OS thread (unique in the process, never reused).
#[pyfunction]
fn thread_owner_id() -> u64 {
    rlock::surface::thread_owner_id()
}

/// Every core error kind (`"not_held"`, ...) with the name of its exception class in
/// `rlock._errors` and its code (`"RLOCK_NOT_HELD"`), so a test can check the lists match.
#[pyfunction]
fn error_classes() -> Vec<(&'static str, &'static str, String)> {
    rlock::ErrorKind::ALL.iter().map(|k| (k.as_str(), k.class_name(), k.code_name())).collect()
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
