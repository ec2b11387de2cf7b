//! The client: connections, the watchdog task, the pub/sub registry, and owners.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::connection::{self, Commands, PushHandler, Topology};
use crate::error::{Error, ErrorKind, Result};
use crate::keys::MAX_NAME_LEN;
use crate::latches::Latches;
use crate::lock::Lock;
use crate::options::ClientOptions;
use crate::owner::Owner;
use crate::pubsub;
use crate::replicas::Replicas;
use crate::watchdog::{self, LostEvent, Watchdog};

/// First id handed out by [`Client::new_owner`]; explicit ids below it never collide with it.
const AUTO_OWNER_BASE: u64 = 1 << 62;

/// A connection to Redis that makes locks. Cheap to clone (clones share everything); the last
/// clone dropped, or [`Client::close`], stops the watchdog and the pub/sub task.
///
/// Core creates no runtime: [`Client::connect`] must run inside a tokio runtime, and the
/// client's background tasks run on that runtime.
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<ClientInner>,
}

pub(crate) struct ClientInner {
    pub(crate) id: Uuid,
    pub(crate) options: ClientOptions,
    pub(crate) commands: Commands,
    pub(crate) pubsub: Arc<pubsub::Registry>,
    pub(crate) watchdog: Arc<Watchdog>,
    pub(crate) handle: Handle,
    pub(crate) closed: CancellationToken,
    pub(crate) latch_ttl_ms: u64,
    pub(crate) latches: Latches,
    /// Replica sync, when on.
    pub(crate) replicas: Option<Arc<Replicas>>,
    pub(crate) topology: Topology,
    sharded: bool,
    next_owner: AtomicU64,
}

impl Drop for ClientInner {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// Identifies a listener added with [`Client::on_lost`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListenerId(u64);

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("id", &self.inner.id).finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to Redis at `url` and starts the client's watchdog and pub/sub tasks on the
    /// current tokio runtime. URLs:
    ///
    /// - `redis://[user:pass@]host:port/db`, `rediss://...` (TLS), `redis+unix:///path`
    /// - `redis+cluster://[user:pass@]host1:port1,host2:port2/` (`rediss+cluster://`): a Redis
    ///   Cluster, reached through any of its nodes
    /// - `redis+sentinel://[user:pass@]host1:port1,host2:port2/service_name[/db]`
    ///   (`rediss+sentinel://`): the master the sentinels name, followed across failovers
    ///
    /// Fails with `InvalidArgument` for a bad URL or option or outside a tokio runtime, and
    /// with `Connection`/`Timeout`/`Redis` when Redis cannot be reached or refuses the login.
    pub async fn connect(url: &str, options: ClientOptions) -> Result<Client> {
        options.validate()?;
        let handle = Handle::try_current()
            .map_err(|_| Error::invalid("Client::connect must run inside a tokio runtime"))?;
        let target = crate::url::parse(url, &options)?;
        let (registry, queue) = pubsub::Registry::new();
        let weak = Arc::downgrade(&registry);
        let on_push: PushHandler = Arc::new(move |push| {
            if let Some(r) = weak.upgrade() {
                r.on_push(push);
            }
        });
        let conns = connection::connect(target, &options, on_push).await?;
        let commands = conns.commands;
        let wd = Watchdog::new(options.watchdog_timeout, options.max_hold);
        let closed = CancellationToken::new();

        let stop = closed.clone();
        let reg = Arc::downgrade(&registry);
        let subscriber = conns.subscriber;
        handle.spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = pubsub::run(queue, subscriber, reg) => {}
            }
        });
        if let Some(monitor) = conns.monitor {
            handle.spawn(monitor.run(closed.clone()));
        }
        handle.spawn(watchdog::run(
            wd.clone(),
            commands.clone(),
            options.renewal_batch_size,
            options.retry_delay,
            closed.clone(),
        ));
        let replicas = match conns.sync {
            Some(sync) => Some(
                Replicas::start(
                    &handle,
                    commands.clone(),
                    sync,
                    options.replica_sync_timeout,
                    conns.master_changes,
                    closed.clone(),
                )
                .await,
            ),
            None => None,
        };

        let latches = Latches::start(&handle, commands.clone(), closed.clone());
        let per_try = options.command_timeout.unwrap_or(Duration::from_secs(10)) + options.retry_delay;
        let latch_ttl = per_try.saturating_mul(options.retry_attempts + 1).max(Duration::from_secs(1));
        let inner = ClientInner {
            id: Uuid::new_v4(),
            options,
            commands,
            pubsub: registry,
            watchdog: wd,
            handle,
            closed,
            latch_ttl_ms: u64::try_from(latch_ttl.as_millis()).unwrap_or(u64::MAX),
            latches,
            replicas,
            topology: conns.topology,
            sharded: conns.sharded,
            next_owner: AtomicU64::new(AUTO_OWNER_BASE),
        };
        Ok(Client { inner: Arc::new(inner) })
    }

    /// What the URL named: one server, a cluster or a Sentinel-managed master.
    pub fn topology(&self) -> Topology {
        self.inner.topology
    }

    /// Whether waiters use sharded pub/sub (SSUBSCRIBE / SPUBLISH): only on a Redis Cluster,
    /// decided at connect (see [`ClientOptions::sharded_pubsub`]).
    pub fn sharded_pubsub(&self) -> bool {
        self.inner.sharded
    }

    /// Whether acquires wait for a replica (see [`ClientOptions::replica_sync`]).
    pub fn replica_sync(&self) -> bool {
        self.inner.replicas.is_some()
    }

    /// This client's random UUID (v4), the first part of every owner it makes.
    pub fn id(&self) -> Uuid {
        self.inner.id
    }

    /// The options this client runs with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// The owner with integer part `id`. The caller keeps ids of distinct live owners distinct;
    /// ids from 2^61 up are reserved ([`thread_owner_id`](crate::thread_owner_id) hands out
    /// 2^61.., [`Client::new_owner`] 2^62..).
    pub fn owner(&self, id: u64) -> Owner {
        Owner::new(self.inner.id, id)
    }

    /// A fresh owner no other call of this client has returned.
    pub fn new_owner(&self) -> Owner {
        self.owner(self.inner.next_owner.fetch_add(1, Ordering::Relaxed))
    }

    /// A handle on the reentrant lock `name` (used byte for byte as the Redis key, Redisson's
    /// layout). Cheap to keep: keys and channel are built once here.
    ///
    /// Fails with `InvalidArgument` for an empty name or one over 64 KiB, and on a cluster for
    /// a name whose auxiliary keys would hash to another slot (an empty `{}` or unclosed `{`).
    pub fn lock(&self, name: &str) -> Result<Lock> {
        if name.is_empty() {
            return Err(Error::invalid("lock name must not be empty"));
        }
        if name.len() > MAX_NAME_LEN {
            return Err(Error::invalid(format!(
                "lock name is {} bytes; the limit is {MAX_NAME_LEN}",
                name.len()
            )));
        }
        if self.inner.topology == Topology::Cluster && !crate::keys::shares_one_slot(name) {
            return Err(Error::invalid(
                "on a Redis Cluster a lock name must not contain an empty '{}' or an unclosed '{': \
                 its channel and latch keys would hash to another slot",
            ));
        }
        Ok(Lock::new(self.inner.clone(), name))
    }

    /// Calls `f` (on a library task) whenever the watchdog loses a hold of this client. A
    /// panicking listener is caught and logged. Returns an id for [`Client::remove_lost_listener`].
    pub fn on_lost(&self, f: impl Fn(&LostEvent) + Send + Sync + 'static) -> ListenerId {
        ListenerId(self.inner.watchdog.add_listener(Arc::new(f)))
    }

    /// Removes a listener; false when it was already removed.
    pub fn remove_lost_listener(&self, id: ListenerId) -> bool {
        self.inner.watchdog.remove_listener(id.0)
    }

    /// Number of holds the client tracks (held, or lost and not yet released).
    pub fn tracked_holds(&self) -> usize {
        self.inner.watchdog.hold_count()
    }

    /// Number of lock channels with local waiters (each one subscription).
    pub fn waited_channels(&self) -> usize {
        self.inner.pubsub.channel_count()
    }

    /// Stops renewals and pub/sub and fails every pending and later call with `Closed`. Holds
    /// are not released: their leases run out (at most one watchdog timeout later).
    pub fn close(&self) {
        self.inner.closed.cancel();
        self.inner.watchdog.clear();
        self.inner.pubsub.wake_all(false);
    }

    /// Whether [`Client::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.closed.is_cancelled()
    }
}

impl ClientInner {
    /// `PUBLISH`, or `SPUBLISH` where waiters use sharded pub/sub.
    pub(crate) fn publish_command(&self) -> &'static str {
        if self.sharded {
            "SPUBLISH"
        } else {
            "PUBLISH"
        }
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.closed.is_cancelled() {
            Err(Error::closed())
        } else {
            Ok(())
        }
    }

    /// Checks that `owner` was made by this client.
    pub(crate) fn check_owner(&self, owner: &Owner) -> Result<()> {
        if owner.client_id() != self.id {
            return Err(Error::invalid("this owner belongs to another client"));
        }
        Ok(())
    }

    /// Runs `op` again after connection errors and timeouts, up to `retry_attempts` times.
    pub(crate) async fn retrying<T, F, Fut>(&self, mut op: F) -> Result<T>
    where
        F: FnMut(Commands) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let o = &self.options;
        retry_transient(o.retry_attempts, o.retry_delay, Some(&self.closed), || op(self.commands.clone()))
            .await
    }
}

/// Runs `op` again after transient errors ([`is_transient`]), at most `attempts` more times,
/// `delay` apart. With `closed`, fails with `Closed` as soon as it is cancelled.
pub(crate) async fn retry_transient<T, Fut>(
    attempts: u32,
    delay: Duration,
    closed: Option<&CancellationToken>,
    mut op: impl FnMut() -> Fut,
) -> Result<T>
where
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut attempt = 0;
    loop {
        if closed.is_some_and(CancellationToken::is_cancelled) {
            return Err(Error::closed());
        }
        match op().await {
            Err(e) if is_transient(&e) && attempt < attempts => {
                attempt += 1;
                match closed {
                    Some(c) => tokio::select! {
                        _ = c.cancelled() => return Err(Error::closed()),
                        _ = tokio::time::sleep(delay) => {}
                    },
                    None => tokio::time::sleep(delay).await,
                }
            }
            other => return other,
        }
    }
}

/// Whether an error may go away by trying again (the connection came back, Redis woke up).
pub(crate) fn is_transient(e: &Error) -> bool {
    matches!(e.kind(), ErrorKind::Connection | ErrorKind::Timeout)
}
