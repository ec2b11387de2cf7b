//! The one launcher of private Redis servers for every rlock test suite: a single server, a Redis
//! Cluster (with replicas), a Sentinel set, a TLS server and a TLS cluster, each node a
//! `redis-server` process on 127.0.0.1 in its own temporary directory (or the server binary
//! `RLOCK_SERVER` names: [`program`]).
//!
//! The rules it keeps, whoever calls it (the Rust tests through this library, every other suite
//! through the `rlock-testbed` binary):
//! - ports are chosen outside the kernel's ephemeral range (see [`ports`]), checked free by
//!   binding them, never 6379; a cluster node's bus port is its port + 10000 (Redis 6.2 knows no
//!   `--cluster-port`), checked free the same way;
//! - a server counts as started once it answers PING (any reply, NOAUTH too); one that exits or
//!   stays silent for 10 s is killed and tried again on other ports;
//! - when it gives up it prints the server's log (`--logfile` in its directory) and its command
//!   line to stderr and returns an [`Error`] that says so;
//! - everything it started stops (processes killed, directories removed) when the handle is
//!   dropped, also when a test panics.

use std::fmt;

pub mod cluster;
pub mod describe;
pub mod ports;
pub mod program;
pub mod proxy;
pub mod resp;
pub mod sentinel;
pub mod server;
pub mod standin;
pub mod tls;

pub use cluster::{Cluster, ClusterBuilder, Shard};
pub use proxy::Proxy;
pub use sentinel::{SentinelBuilder, SentinelSet};
pub use server::{Server, ServerBuilder};
pub use tls::{Certs, TlsFiles};

/// The only address anything listens on or connects to.
pub const HOST: &str = "127.0.0.1";

/// Why the launcher could not do what was asked. `Debug` shows the message as is, so a test's
/// `unwrap()` prints it readably.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Error {
        Error { message: message.into() }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::new(e.to_string())
    }
}

/// The launcher's result type.
pub type Result<T> = std::result::Result<T, Error>;

/// Polls `cond` every `step` until it holds or `limit` passes; returns whether it held. For
/// states that have no event to wait on (a server's cluster state, a sentinel's view).
pub fn poll_until(
    limit: std::time::Duration,
    step: std::time::Duration,
    mut cond: impl FnMut() -> bool,
) -> bool {
    let start = std::time::Instant::now();
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(step);
    }
}
