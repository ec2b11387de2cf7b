//! The read-write lock (Redisson `RReadWriteLock`): many readers, or one writer. Both sides are
//! [`Lock`]s with the full lock API, on one hash `name` whose field `mode` is `read` or `write`.
//!
//! - Readers are fields `<owner>` with their counts; each read hold n also has a lease key
//!   `{name}:<owner>:rwlock_timeout:<n>`. Readers enter whenever the mode is `read` (no writer
//!   preference, as in Redisson).
//! - The writer is field `<owner>:write`. It may also take read holds (a downgrade): releasing
//!   the write hold then leaves the lock in `read` mode.
//! - A reader asking for the write lock gets `WouldDeadlock` and nothing changes (Redisson's
//!   waits forever).
//! - Both sides wait on `redisson_rwlock:{name}`: a read unlock wakes one waiter, a write unlock
//!   every waiter.
//! - The watchdog renews write holds like the reentrant lock's, and read holds with the read
//!   renewal: the lock and only this client's owners' read-hold keys.

use std::sync::Arc;

use crate::keys;
use crate::lock::{Flavor, Lock};
use crate::shared::Shared;

/// A handle on one read-write lock. Cheap to clone.
#[derive(Clone)]
pub struct ReadWriteLock {
    read: Lock,
    write: Lock,
}

impl std::fmt::Debug for ReadWriteLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadWriteLock").field("name", &self.read.name()).finish()
    }
}

impl ReadWriteLock {
    pub(crate) fn new(shared: Arc<Shared>, name: &str) -> ReadWriteLock {
        ReadWriteLock {
            read: Lock::with_flavor(
                shared.clone(),
                name,
                Flavor::Read { key_prefix: keys::key_prefix(name) },
            ),
            write: Lock::with_flavor(shared, name, Flavor::Write),
        }
    }

    /// The lock name (also its Redis key).
    pub fn name(&self) -> &str {
        self.read.name()
    }

    /// The read side: shared with other readers, excluded by a writer of another owner.
    ///
    /// ```no_run
    /// # async fn demo() -> rlock::Result<()> {
    /// # let client = rlock::Client::connect_default(Default::default()).await?;
    /// let rw = client.read_write_lock("catalog")?;
    /// let (reader, writer) = (client.new_owner(), client.new_owner());
    /// rw.read_lock().acquire(&reader).await?; // readers share the lock
    /// rw.read_lock().release(&reader).await?;
    /// rw.write_lock().acquire(&writer).await?; // a writer holds it alone
    /// rw.write_lock().release(&writer).await?;
    /// # Ok(()) }
    /// ```
    pub fn read_lock(&self) -> Lock {
        self.read.clone()
    }

    /// The write side: excludes every other owner's reads and writes.
    pub fn write_lock(&self) -> Lock {
        self.write.clone()
    }
}
