//! `rlock_client`: creation, options, the lost-lock callback, free.

use std::ffi::{c_char, c_void, CString};
use std::sync::Mutex;
use std::time::Duration;

use super::{block_on, guard, rlock_result, str_arg, Failure};
use crate::client::{Client, ListenerId};
use crate::connection::Topology;
use crate::options::ClientOptions;

/// An opaque client: one connection for commands, one for pub/sub, and a watchdog. Create with
/// `rlock_client_new`, free with `rlock_client_free`. Thread-safe: one client may be used by
/// any number of threads at once.
pub struct rlock_client {
    pub(crate) client: Client,
    listener: Mutex<Option<ListenerId>>,
}

/// Client settings; start from `rlock_options_default()` and change fields. Durations in
/// milliseconds.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct rlock_options {
    /// Lease of watchdog-renewed holds (renewed every third of it). Default 30000.
    pub watchdog_timeout_ms: i64,
    /// Most locks renewed by one script call. Default 100.
    pub renewal_batch_size: u32,
    /// Per-command timeout; 0 or less waits forever. Default 3000.
    pub command_timeout_ms: i64,
    /// Connect timeout. Default 10000.
    pub connect_timeout_ms: i64,
    /// Retries after a connection error or timeout. Default 3.
    pub retry_attempts: u32,
    /// Pause between retries. Default 1500.
    pub retry_delay_ms: i64,
    /// How long a waiter waits for its subscription before polling instead. Default 7500.
    pub subscription_timeout_ms: i64,
    /// Stop renewing a hold this long after it was acquired; 0 or less never stops. Default 0.
    pub max_hold_ms: i64,
    /// PEM file of the CA that signed the servers' certificates, for `rediss://` URLs (and
    /// `rediss+cluster://`, `rediss+sentinel://`); NULL trusts the system's roots. Read while
    /// `rlock_client_new_with_options` runs; the caller keeps ownership. Default NULL.
    pub tls_ca_file: *const c_char,
    /// Sharded pub/sub on a Redis Cluster: -1 decides as Redisson does (on when the cluster
    /// answers `PUBSUB SHARDNUMSUB`, Redis 7+), 0 off, 1 on. Ignored off a cluster. Default -1.
    pub sharded_pubsub: i32,
    /// Wait after each acquire until a replica has the lock (undoing and retrying it when none
    /// acknowledged): -1 decides as Redisson does (on for Cluster and Sentinel URLs, off for a
    /// single server), 0 off, 1 on. Default -1.
    pub replica_sync: i32,
    /// How long one acquire waits for a replica's acknowledgement. Default 1000.
    pub replica_sync_timeout_ms: i64,
    /// Connections for lock commands to a single server, used in turn (1 to 8). 2 raises
    /// throughput with tens of concurrent owners. Ignored for Cluster and Sentinel. Default 1.
    pub command_connections: u32,
}

/// What `rlock_client_new` connected to, and what it decided there.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct rlock_client_info {
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

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn duration(what: &str, v: i64) -> Result<Duration, Failure> {
    u64::try_from(v)
        .map(Duration::from_millis)
        .map_err(|_| Failure::invalid(format!("{what} must not be negative (got {v})")))
}

/// The default settings.
#[no_mangle]
pub extern "C" fn rlock_options_default() -> rlock_options {
    let d = ClientOptions::default();
    rlock_options {
        watchdog_timeout_ms: ms(d.watchdog_timeout),
        renewal_batch_size: u32::try_from(d.renewal_batch_size).unwrap_or(u32::MAX),
        command_timeout_ms: d.command_timeout.map_or(0, ms),
        connect_timeout_ms: ms(d.connect_timeout),
        retry_attempts: d.retry_attempts,
        retry_delay_ms: ms(d.retry_delay),
        subscription_timeout_ms: ms(d.subscription_timeout),
        max_hold_ms: d.max_hold.map_or(0, ms),
        tls_ca_file: std::ptr::null(),
        sharded_pubsub: -1,
        replica_sync: -1,
        replica_sync_timeout_ms: ms(d.replica_sync_timeout),
        command_connections: u32::try_from(d.command_connections).unwrap_or(1),
    }
}

/// -1 / 0 / 1 as `None` / `Some(false)` / `Some(true)`.
fn tristate(what: &str, v: i32) -> Result<Option<bool>, Failure> {
    match v {
        -1 => Ok(None),
        0 => Ok(Some(false)),
        1 => Ok(Some(true)),
        _ => Err(Failure::invalid(format!("{what} must be -1 (auto), 0 (off) or 1 (on), got {v}"))),
    }
}

impl rlock_options {
    /// # Safety
    /// `tls_ca_file` is NULL or a NUL-terminated string (the header's contract).
    unsafe fn to_core(self) -> Result<ClientOptions, Failure> {
        let ca = if self.tls_ca_file.is_null() {
            None
        } else {
            // SAFETY: non-NULL and NUL-terminated per the header.
            Some(std::path::PathBuf::from(unsafe { str_arg(self.tls_ca_file, "tls_ca_file") }?))
        };
        let o = ClientOptions::default()
            .with_tls_ca_file(ca)
            .with_sharded_pubsub(tristate("sharded_pubsub", self.sharded_pubsub)?)
            .with_replica_sync(tristate("replica_sync", self.replica_sync)?)
            .with_replica_sync_timeout(duration("replica_sync_timeout_ms", self.replica_sync_timeout_ms)?)
            .with_command_connections(self.command_connections as usize)
            .with_watchdog_timeout(duration("watchdog_timeout_ms", self.watchdog_timeout_ms)?)
            .with_renewal_batch_size(self.renewal_batch_size as usize)
            .with_command_timeout(if self.command_timeout_ms > 0 {
                Some(duration("command_timeout_ms", self.command_timeout_ms)?)
            } else {
                None
            })
            .with_connect_timeout(duration("connect_timeout_ms", self.connect_timeout_ms)?)
            .with_retry_attempts(self.retry_attempts)
            .with_retry_delay(duration("retry_delay_ms", self.retry_delay_ms)?)
            .with_subscription_timeout(duration("subscription_timeout_ms", self.subscription_timeout_ms)?)
            .with_max_hold(if self.max_hold_ms > 0 {
                Some(duration("max_hold_ms", self.max_hold_ms)?)
            } else {
                None
            });
        o.validate()?;
        Ok(o)
    }
}

/// Connects to Redis and writes a new client to `*out`. `url` NULL means the environment
/// variable `REDIS_URL`, else `redis://127.0.0.1:6379`. Blocks until connected (or failed).
/// Errors: `RLOCK_INVALID_ARGUMENT` (NULL out, bad URL), `RLOCK_CONNECTION`, `RLOCK_TIMEOUT`,
/// `RLOCK_REDIS` (e.g. a wrong password). Free the client with `rlock_client_free`.
#[no_mangle]
pub unsafe extern "C" fn rlock_client_new(url: *const c_char, out: *mut *mut rlock_client) -> rlock_result {
    // SAFETY: forwarded contract.
    unsafe { rlock_client_new_with_options(url, std::ptr::null(), out) }
}

/// Like `rlock_client_new` with settings; `options` NULL means the defaults.
#[no_mangle]
pub unsafe extern "C" fn rlock_client_new_with_options(
    url: *const c_char,
    options: *const rlock_options,
    out: *mut *mut rlock_client,
) -> rlock_result {
    guard(|| {
        if out.is_null() {
            return Err(Failure::invalid("out is NULL"));
        }
        let url = if url.is_null() {
            std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
        } else {
            // SAFETY: non-NULL, NUL-terminated per the header.
            unsafe { str_arg(url, "url") }?.to_owned()
        };
        let options = if options.is_null() {
            ClientOptions::default()
        } else {
            // SAFETY: non-NULL and pointing to an rlock_options (with a NULL or NUL-terminated
            // tls_ca_file) per the header.
            unsafe { (*options).to_core() }?
        };
        let client = block_on(Client::connect(&url, options))??;
        let boxed = Box::new(rlock_client { client, listener: Mutex::new(None) });
        // SAFETY: `out` is non-NULL and writable per the header.
        unsafe { *out = Box::into_raw(boxed) };
        Ok(())
    })
}

/// Writes what `client` connected to, and what it decided there, to `*out`.
/// Errors: `RLOCK_INVALID_ARGUMENT` (NULL client or out).
#[no_mangle]
pub unsafe extern "C" fn rlock_client_get_info(
    client: *const rlock_client,
    out: *mut rlock_client_info,
) -> rlock_result {
    guard(|| {
        let c = client_ref(client)?;
        if out.is_null() {
            return Err(Failure::invalid("out is NULL"));
        }
        let topology = match c.client.topology() {
            Topology::Cluster => rlock_topology::RLOCK_TOPOLOGY_CLUSTER,
            Topology::Sentinel => rlock_topology::RLOCK_TOPOLOGY_SENTINEL,
            _ => rlock_topology::RLOCK_TOPOLOGY_SINGLE,
        };
        let info = rlock_client_info {
            topology,
            sharded_pubsub: c.client.sharded_pubsub(),
            replica_sync: c.client.replica_sync(),
        };
        // SAFETY: non-NULL and writable per the header.
        unsafe { *out = info };
        Ok(())
    })
}

/// Closes and frees a client: renewals stop (held locks expire within one watchdog timeout),
/// waiters in other threads fail with `RLOCK_CLOSED`. NULL is a no-op. No other call may use
/// `client` once this returns.
#[no_mangle]
pub unsafe extern "C" fn rlock_client_free(client: *mut rlock_client) {
    let _ = guard(|| {
        if !client.is_null() {
            // SAFETY: made by Box::into_raw in rlock_client_new and not freed before.
            let c = unsafe { Box::from_raw(client) };
            c.client.close();
        }
        Ok(())
    });
}

/// Callback for lost holds: `name` is the lock name, valid only during the call.
pub type rlock_lost_callback = Option<unsafe extern "C" fn(userdata: *mut c_void, name: *const c_char)>;

struct Callback {
    f: unsafe extern "C" fn(*mut c_void, *const c_char),
    userdata: *mut c_void,
}
// SAFETY: the header requires the callback and its userdata to be usable from any thread.
unsafe impl Send for Callback {}
// SAFETY: as above.
unsafe impl Sync for Callback {}

/// Sets the function called when the watchdog loses a hold of this client (the lock was found
/// gone, or could not be renewed for longer than the lease). It runs on a librlock thread, so
/// it and `userdata` must be thread-safe; it must return quickly and must not call blocking
/// librlock functions (they fail with `RLOCK_INVALID_ARGUMENT` there). Replaces any earlier
/// callback; NULL `callback` removes it.
#[no_mangle]
pub unsafe extern "C" fn rlock_client_on_lost(
    client: *const rlock_client,
    callback: rlock_lost_callback,
    userdata: *mut c_void,
) -> rlock_result {
    guard(|| {
        // SAFETY: NULL or a live client per the header.
        let c = unsafe { client.as_ref() }.ok_or_else(|| Failure::invalid("client is NULL"))?;
        let mut slot = c.listener.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = slot.take() {
            c.client.remove_lost_listener(old);
        }
        if let Some(f) = callback {
            let cb = Callback { f, userdata };
            *slot = Some(c.client.on_lost(move |event| {
                let cb = &cb;
                if let Ok(name) = CString::new(event.name.as_bytes()) {
                    // SAFETY: the callback contract is the caller's (see above).
                    unsafe { (cb.f)(cb.userdata, name.as_ptr()) };
                }
            }));
        }
        Ok(())
    })
}

/// Borrows the client behind a C pointer.
pub(crate) fn client_ref<'a>(client: *const rlock_client) -> Result<&'a rlock_client, Failure> {
    // SAFETY: NULL or a live client per every function's contract in the header.
    unsafe { client.as_ref() }.ok_or_else(|| Failure::invalid("client is NULL"))
}
