//! `rlock_client`: creation, info, the lost-lock callback, free. A client handle is an `Arc`
//! behind a raw pointer (as in rustls-ffi): every call holds a reference for its duration, so a
//! free racing calls in progress closes the client and the last call to return frees it.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};

use tokio::runtime::Handle;

use super::handle::{self, take};
use super::lost::{listener, rlock_lost_callback};
use super::options_object::rlock_options;
use super::{block_on, check_out, guard, rlock_result, runtime, str_arg, Failure};
use crate::client::Client;
use crate::conn::Topology;
use crate::options::ClientOptions;
use crate::watchdog::ListenerId;
use crate::watchdog::LostFilter;

/// An opaque client: connections to Redis and a watchdog that renews its holds. Create with
/// `rlock_client_new`, free with `rlock_client_free`. Thread-safe: one client may be used by
/// any number of threads at once. Usable only in the process that created it: after `fork()`
/// the child creates its own clients.
pub struct rlock_client {
    client: Client,
    /// The process that made the client, and its runtime there.
    pid: u32,
    rt: Handle,
    listener: Mutex<Option<ListenerId>>,
}

impl rlock_client {
    /// The core client.
    pub(crate) fn core(&self) -> &Client {
        &self.client
    }

    /// Fails with `RLOCK_FORKED` in a process other than the one that made the client.
    pub(crate) fn check_process(&self) -> Result<(), Failure> {
        Ok(crate::runtime::check_process(self.pid, "rlock client")?)
    }

    /// Blocks the calling thread on `fut` under the client's runtime.
    pub(crate) fn block_on<F: std::future::Future>(&self, fut: F) -> Result<F::Output, Failure> {
        block_on(&self.rt, fut)
    }
}

/// Takes a reference to the client behind a C pointer for the duration of a call (or, kept,
/// for the life of a handle made on it), as [`take`] does for any handle: fails with
/// `RLOCK_INVALID_ARGUMENT` for NULL and `RLOCK_FORKED` in a process other than the client's.
pub(crate) fn client_ref(client: *const rlock_client) -> Result<Arc<rlock_client>, Failure> {
    // SAFETY: NULL or a pointer from Arc::into_raw in rlock_client_new whose handle reference is
    // still alive: no call starts after rlock_client_free returned (the header's contract).
    unsafe { take(client) }
}

/// A client is the handle of its own calls.
impl handle::Handle for rlock_client {
    const WHAT: &'static str = "client";
    fn client(&self) -> &rlock_client {
        self
    }
}

/// What `rlock_client_new` connected to, and what it decided there.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct rlock_connection_info {
    /// `RLOCK_TOPOLOGY_SINGLE`, `RLOCK_TOPOLOGY_CLUSTER` or `RLOCK_TOPOLOGY_SENTINEL`.
    pub topology: rlock_topology,
    /// Whether waiters use sharded pub/sub (SSUBSCRIBE / SPUBLISH).
    pub sharded_pubsub: bool,
    /// Whether acquires wait for a replica.
    pub replica_sync: bool,
}

/// The kind of deployment a URL named.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum rlock_topology {
    /// One server: `redis://`, `rediss://`, `redis+unix://`.
    RLOCK_TOPOLOGY_SINGLE = 0,
    /// A Redis Cluster: `redis+cluster://`.
    RLOCK_TOPOLOGY_CLUSTER = 1,
    /// A master found through Sentinels: `redis+sentinel://`.
    RLOCK_TOPOLOGY_SENTINEL = 2,
}

/// Connects to Redis and writes a new client to `*out`. Blocks until connected (or failed).
///
/// `url`: `redis://[user:pass@]host:port/db`, `rediss://` (TLS), `redis+unix:///path`,
/// `redis+cluster://host1:port1,host2:port2/`, `redis+sentinel://host1:port1,.../service`;
/// NULL means the environment variable `REDIS_URL`, else `redis://127.0.0.1:6379`. The string
/// is only read during the call.
///
/// `options`: NULL for the defaults, else an options object (`rlock_options_new`) whose
/// settings are copied: it may be changed or freed right after this returns.
///
/// Free the client with `rlock_client_free`. Errors: `RLOCK_INVALID_ARGUMENT` (NULL out, a bad
/// URL or option, invalid UTF-8), `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`, `RLOCK_REDIS` (e.g. a
/// wrong password). Thread-safe; may be called in a child after `fork()`.
#[no_mangle]
pub unsafe extern "C" fn rlock_client_new(
    url: *const c_char,
    options: *const rlock_options,
    out: *mut *mut rlock_client,
) -> rlock_result {
    guard(|| {
        check_out(out)?;
        let url = if url.is_null() {
            crate::url::default_url()
        } else {
            // SAFETY: non-NULL, NUL-terminated per the header.
            unsafe { str_arg(url, "url") }?.to_owned()
        };
        let options = if options.is_null() {
            ClientOptions::default()
        } else {
            // SAFETY: non-NULL and a live options object per the header.
            unsafe { &*options }.snapshot()
        };
        let rt = runtime()?;
        let client = block_on(&rt, Client::connect(&url, options))??;
        let c = Arc::new(rlock_client { client, pid: std::process::id(), rt, listener: Mutex::new(None) });
        // SAFETY: `out` is non-NULL and writable per the header.
        unsafe { *out = Arc::into_raw(c).cast_mut() };
        Ok(())
    })
}

/// Writes what `client` connected to, and what it decided there, to `*out`. Does not block.
/// Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL client or out), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_client_info(
    client: *const rlock_client,
    out: *mut rlock_connection_info,
) -> rlock_result {
    guard(|| {
        let c = client_ref(client)?;
        check_out(out)?;
        let topology = match c.client.topology() {
            Topology::Cluster => rlock_topology::RLOCK_TOPOLOGY_CLUSTER,
            Topology::Sentinel => rlock_topology::RLOCK_TOPOLOGY_SENTINEL,
            _ => rlock_topology::RLOCK_TOPOLOGY_SINGLE,
        };
        let info = rlock_connection_info {
            topology,
            sharded_pubsub: c.client.sharded_pubsub(),
            replica_sync: c.client.replica_sync(),
        };
        // SAFETY: non-NULL and writable per the header.
        unsafe { *out = info };
        Ok(())
    })
}

/// Closes a client and gives up the caller's reference to it. Renewals stop (held locks expire
/// within one watchdog timeout); calls in progress on other threads (e.g. waiting in
/// `rlock_lock_acquire`) return `RLOCK_CLOSED`, as do later calls on handles made on it (free
/// them too), and the memory is freed when the last of those calls and handles is gone. Does not wait for them, but waits (at most 5 s) for the clean-up steps of calls
/// already cut off, so a program may exit right after: a fair-lock waiter leaving its queue, a
/// release finishing. NULL is a no-op.
///
/// Thread-safety: free may race calls already in progress on other threads; no call on
/// `client` may START after free returned (that is a use-after-free, as with any free), and a
/// client is freed once.
///
/// In a child after `fork()`, freeing a client inherited from the parent does nothing to the
/// parent's connections or threads (its memory is left to the process' exit).
#[no_mangle]
pub unsafe extern "C" fn rlock_client_free(client: *mut rlock_client) {
    let _ = guard(|| {
        if client.is_null() {
            return Ok(());
        }
        // SAFETY: made by Arc::into_raw in rlock_client_new; this is the handle's reference,
        // given up once (the header's contract).
        let c = unsafe { Arc::from_raw(client.cast_const()) };
        if c.pid != std::process::id() {
            // Inherited over fork(): the parent's threads do not exist here; touch nothing.
            std::mem::forget(c);
            return Ok(());
        }
        c.client.close();
        // The clean-up of calls the close cut off (a fair-lock waiter leaving its queue) runs
        // in the background; the program may exit right after this returns. (Refused, and
        // skipped, on a librlock callback thread.)
        let _ = c.block_on(c.client.settle(std::time::Duration::from_secs(5)));
        Ok(())
    });
}

/// Sets the function called when the watchdog loses a hold of this client (see
/// `rlock_lost_callback`), with `userdata` as its first argument. It runs on a librlock thread,
/// so it and `userdata` must be thread-safe; it must return quickly, and blocking librlock
/// calls from it are refused with `RLOCK_INVALID_ARGUMENT`. Replaces any earlier callback;
/// NULL `callback` removes it. `userdata` must stay valid until the callback is replaced or
/// removed, or the client is freed. Thread-safe. Errors: `RLOCK_INVALID_ARGUMENT` (NULL
/// client), `RLOCK_FORKED`.
#[no_mangle]
pub unsafe extern "C" fn rlock_client_on_lost(
    client: *const rlock_client,
    callback: rlock_lost_callback,
    userdata: *mut c_void,
) -> rlock_result {
    guard(|| {
        let c = client_ref(client)?;
        let mut slot = c.listener.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = slot.take() {
            c.client.remove_lost_listener(old);
        }
        if let Some(f) = callback {
            *slot = Some(c.client.on_lost(LostFilter::all(), listener(f, userdata)));
        }
        Ok(())
    })
}
