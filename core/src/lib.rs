//! rlock: Redisson-compatible distributed locks on Redis (reentrant, fenced, read-write and fair)
//! and synchronizers (semaphore, permit-expirable semaphore, count-down latch, multi-lock).
//!
//! Locks live in Redis exactly as Redisson (the Java client) stores them, so Java services and
//! rlock users in Rust, C, Python and Node share locks. Holds belong to [`Owner`]s; a watchdog
//! keeps leases alive while held, and waiters sleep on pub/sub until an unlock message.
//!
//! ```no_run
//! use rlock::{Client, ClientOptions};
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> rlock::Result<()> {
//!     let client = Client::connect("redis://127.0.0.1:6379", ClientOptions::default()).await?;
//!     let owner = client.new_owner(); // holds belong to owners, not to handles
//!     let lock = client.lock("orders")?; // the Redis key "orders", as Redisson stores it
//!     lock.acquire(&owner).await?; // waits; the watchdog keeps the lease alive
//!     // ... one holder at a time, across processes and machines ...
//!     assert!(lock.release(&owner).await?.is_unlocked());
//!     Ok(())
//! }
//! ```
//!
//! A [`Client`] connects (one server, a Redis Cluster or a Sentinel-managed master, with TLS or
//! not) and makes the handles, each on a name that is its Redis key:
//!
//! | handle | Redisson | made by |
//! |---|---|---|
//! | [`Lock`] (reentrant) | `RLock` | [`Client::lock`] |
//! | [`FencedLock`] | `RFencedLock` | [`Client::fenced_lock`] |
//! | [`ReadWriteLock`] | `RReadWriteLock` | [`Client::read_write_lock`] |
//! | [`Lock`] (fair) | `RFairLock` | [`Client::fair_lock`] |
//! | [`Semaphore`] | `RSemaphore` | [`Client::semaphore`] |
//! | [`PermitExpirableSemaphore`] | `RPermitExpirableSemaphore` | [`Client::permit_expirable_semaphore`] |
//! | [`CountDownLatch`] | `RCountDownLatch` | [`Client::count_down_latch`] |
//! | [`MultiLock`] | `RedissonMultiLock` | [`MultiLock::new`] |
//! | [`RedLock`], [`FencedRedLock`] | `RedissonRedLock` | [`RedLock::new`] over several clients |
//!
//! Core creates no runtime: [`Client::connect`] runs inside the caller's tokio runtime.
//!
//! # Feature flags
//!
//! - `process-runtime`: one tokio runtime per process, made anew in a forked child
//!   (`runtime`), for the surfaces that own their runtime (the C ABI and Python).
//! - `capi`: the C ABI (`ffi`, implies `process-runtime`), from which `librlock` and `rlock.h`
//!   are built.

mod bindings;
mod client;
mod conn;
mod count_down_latch;
mod describe;
mod doctor;
mod error;
mod fenced_lock;
mod finish;
mod keys;
mod latches;
mod local_calls;
mod lock;
mod log_sink;
mod metrics;
mod millis;
mod multi_lock;
mod options;
mod owner;
mod permit_semaphore;
mod pubsub;
mod read_write_lock;
mod records;
mod red_lock;
mod replicas;
mod scripts;
mod semaphore;
mod shared;
mod spelling;
mod url;
mod watchdog;

pub use client::Client;
pub use conn::thread::blocking;
pub use conn::Topology;
pub use count_down_latch::CountDownLatch;
pub use describe::{
    Channel, ClientRecord, Description, HeldPermit, Holder, Kind, Leftover, LeftoverKind, Listed,
    QueuedWaiter, SweepError, SweepOptions, SweepReport,
};
pub use doctor::{DoctorOptions, DoctorReport, Finding, Severity};
pub use error::{Error, ErrorKind, Result};
pub use fenced_lock::FencedLock;
pub use keys::MAX_NAME_LEN;
pub use lock::{Guard, Lock, Released, Ttl};
pub use log_sink::{set_log_sink, LogLevel, LogSink};
pub use metrics::{Stats, Summary};
pub use multi_lock::{MultiGuard, MultiLock};
pub use options::ClientOptions;
pub use owner::Owner;
pub use permit_semaphore::{Permit, PermitExpirableSemaphore};
pub use read_write_lock::ReadWriteLock;
pub use records::{HolderRecord, RecordedHold};
pub use red_lock::{FencedRedLock, RedGuard, RedLock, RED_LOCK_KIND};
pub use semaphore::{Permits, Semaphore};
pub use url::{default_url, default_url_from, DEFAULT_URL};
pub use watchdog::{ListenerId, LostEvent, LostFilter, LostReason};

/// What the surfaces are built from beside the user API above: the event-loop links and their
/// executors (Node, Python asyncio), option and argument parsing in each surface's units, the
/// thread owners of blocking surfaces, and the names the suites inspect. For the bindings in
/// this repository, the CLI and the tools; not part of the Rust user API, and not covered by
/// semver.
#[doc(hidden)]
pub mod surface {
    pub use crate::bindings::{
        acquire_permit, describe_json, list_json, lock_held, lost_args, make_once_values, multi_lock_held,
        option_names, permit_held, permits_held, red_lock_held, LostArgs,
    };
    pub use crate::conn::local::{LocalIo, RawSocket, Watch, Watcher};
    pub use crate::conn::thread::THREAD_LINK_NAME;
    pub use crate::describe::to_json;
    pub use crate::local_calls::{
        drain_woken, CallKey, Closer, LocalCall, LocalCalls, Polled, FLUSH_ALONE_BELOW, PANIC_MESSAGE,
    };
    pub use crate::options::{
        duration_arg, OptionKind, OptionSpec, OptionValue, OwnedValue, Surface, OPTIONS,
    };
    pub use crate::owner::{thread_owner_id, THREAD_OWNER_BASE};
    pub use crate::records::{record_key, RECORD_PREFIX};
    pub use crate::red_lock::{quorum_of, red_lock};
    pub use crate::semaphore::count_arg;
    pub use crate::spelling::{key_for, to_json_for};
}

#[doc(hidden)]
pub mod fuzz;

#[cfg(feature = "capi")]
pub mod ffi;
#[cfg(feature = "process-runtime")]
pub mod runtime;
