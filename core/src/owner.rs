//! Owners: who holds a lock. On the wire an owner is `"<client uuid>:<integer>"`.

use std::fmt;
use std::sync::Arc;

use uuid::Uuid;

/// One owner of holds, made by [`Client::owner`](crate::Client::owner) or
/// [`Client::new_owner`](crate::Client::new_owner). The same owner re-enters a lock it holds;
/// different owners contend. Cloning is cheap.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Owner {
    client: Uuid,
    id: u64,
    wire: Arc<str>,
}

impl Owner {
    pub(crate) fn new(client: Uuid, id: u64) -> Self {
        Owner { client, id, wire: format!("{}:{id}", client.hyphenated()).into() }
    }

    /// The integer part (a thread, task or handle number chosen by the surface).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The UUID of the client this owner belongs to.
    pub fn client_id(&self) -> Uuid {
        self.client
    }

    /// The owner as stored in Redis: `"<client uuid>:<id>"`.
    pub fn as_str(&self) -> &str {
        &self.wire
    }
}

impl fmt::Debug for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Owner({})", self.wire)
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.wire)
    }
}

/// First id [`thread_owner_id`] hands out (2^61). Ids from here up are reserved for threads.
pub const THREAD_OWNER_BASE: u64 = 1 << 61;

/// A number for the calling OS thread, unique in this process and never reused (threads that
/// exit do not give theirs back). Surfaces whose holds belong to threads (C, Python sync) use it
/// as the owner id: `client.owner(rlock::surface::thread_owner_id())`.
pub fn thread_owner_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    // A range of its own, so thread owners never collide with small explicit ids.
    static NEXT: AtomicU64 = AtomicU64::new(THREAD_OWNER_BASE);
    thread_local! {
        static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    ID.with(|id| *id)
}

/// First id handed out by [`Client::new_owner`](crate::Client::new_owner); explicit ids below
/// it never collide with it.
const AUTO_OWNER_BASE: u64 = 1 << 62;

/// The next id `Client::new_owner` hands out: one sequence for every client of the process, so
/// an id is an owner of its own on every client (a multi-lock's members may live on several).
pub(crate) fn next_auto_owner_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(AUTO_OWNER_BASE);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
