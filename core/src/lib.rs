//! rlock: Redisson-compatible distributed locks on Redis (reentrant, fenced, read-write and fair)
//! and synchronizers (semaphore, permit-expirable semaphore, count-down latch, multi-lock).
//!
//! Locks live in Redis exactly as Redisson (the Java client) stores them, so Java services and
//! rlock users in Rust, C, Python and Node share locks. Holds belong to [`Owner`]s; a watchdog
//! keeps leases alive while held, and waiters sleep on pub/sub until an unlock message.
//!
//! ```no_run
//! # async fn demo() -> rlock::Result<()> {
//! let client = rlock::Client::connect("redis://127.0.0.1:6379", Default::default()).await?;
//! let owner = client.new_owner();
//! let lock = client.lock("orders")?;
//! lock.acquire(&owner).await?;
//! // ... critical section ...
//! lock.release(&owner).await?;
//! # Ok(()) }
//! ```

mod client;
mod conn;
mod count_down_latch;
mod describe;
mod error;
mod fenced_lock;
mod finish;
mod keys;
mod latches;
mod lock;
mod metrics;
mod multi_lock;
mod options;
mod owner;
mod permit_semaphore;
mod pubsub;
mod read_write_lock;
mod records;
mod replicas;
mod scripts;
mod semaphore;
mod shared;
mod url;
mod watchdog;

pub use client::Client;
pub use conn::Topology;
pub use count_down_latch::CountDownLatch;
pub use describe::{
    to_json, Channel, ClientRecord, Description, HeldPermit, Holder, Kind, Listed, QueuedWaiter,
};
pub use error::{Error, ErrorKind, Result};
pub use fenced_lock::FencedLock;
pub use keys::MAX_NAME_LEN;
pub use lock::{Guard, Lock, Released, Ttl};
pub use metrics::{Stats, Summary};
pub use multi_lock::{MultiGuard, MultiLock};
pub use options::{
    duration_arg, ClientOptions, OptionKind, OptionSpec, OptionValue, OwnedValue, Surface, OPTIONS,
};
pub use owner::{thread_owner_id, Owner, THREAD_OWNER_BASE};
pub use permit_semaphore::{Permit, PermitExpirableSemaphore};
pub use read_write_lock::ReadWriteLock;
pub use records::{record_key, HolderRecord, RecordedHold, RECORD_PREFIX};
pub use semaphore::{count_arg, Permits, Semaphore};
pub use url::{default_url, DEFAULT_URL};
pub use watchdog::{ListenerId, LostEvent, LostFilter, LostReason};

#[cfg(feature = "capi")]
pub mod ffi;
#[cfg(feature = "process-runtime")]
pub mod runtime;
