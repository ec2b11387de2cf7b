//! The client: connects, makes owners and primitives, and reports lost holds. Its state lives
//! in [`Shared`], which the primitives use.

use std::sync::Arc;

use uuid::Uuid;

use crate::conn::Topology;
use crate::count_down_latch::CountDownLatch;
use crate::describe::{self, Description, Kind, Listed, SweepOptions, SweepReport};
use crate::doctor::{self, DoctorOptions, DoctorReport};
use crate::error::{Error, Result};
use crate::fenced_lock::FencedLock;
use crate::keys;
use crate::keys::MAX_NAME_LEN;
use crate::lock::{Flavor, Lock};
use crate::metrics::Stats;
use crate::options::ClientOptions;
use crate::owner::Owner;
use crate::permit_semaphore::PermitExpirableSemaphore;
use crate::read_write_lock::ReadWriteLock;
use crate::semaphore::Semaphore;
use crate::shared::Shared;
use crate::watchdog::{ListenerId, LostEvent, LostFilter};

/// A connection to Redis that makes locks. Cheap to clone (clones share everything); the last
/// clone and lock handle dropped, or [`Client::close`], stops the watchdog and the pub/sub task.
///
/// Core creates no runtime: [`Client::connect`] must run inside a tokio runtime, and the
/// client's background tasks run on that runtime.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("id", &self.shared.id()).finish_non_exhaustive()
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
    ///
    /// ```no_run
    /// use rlock::{Client, ClientOptions};
    /// use std::time::Duration;
    /// # async fn demo() -> rlock::Result<()> {
    /// let client = Client::connect("redis://127.0.0.1:6379", ClientOptions::default()).await?;
    /// let cluster = Client::connect(
    ///     "redis+cluster://10.0.0.1:7000,10.0.0.2:7000/",
    ///     ClientOptions::default().with_watchdog_timeout(Duration::from_secs(10)),
    /// )
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str, options: ClientOptions) -> Result<Client> {
        let shared = Shared::connect(url, options).await?;
        Ok(Client { shared })
    }

    /// Connects to [`default_url`](crate::default_url) (`REDIS_URL`, else
    /// `redis://127.0.0.1:6379`), as every surface does when given no URL.
    pub async fn connect_default(options: ClientOptions) -> Result<Client> {
        Self::connect(&crate::url::default_url(), options).await
    }

    /// A command connection of this client for the thread that polls the returned future, with
    /// its socket I/O on that thread: the future connects, serves the commands of calls polled
    /// on that same thread while it is up, connects again after a loss, and ends when the
    /// client closes. For a surface whose calls are polled on an event loop ([`LocalCalls`]):
    /// its requests and replies then skip the hop to and from the tokio worker. `watch` makes,
    /// for each connection, the [`Watcher`] through which the event loop reports the socket's
    /// readiness ([`LocalIo::ready`]).
    ///
    /// Only calls polled through that thread's [`LocalCalls`] send on the link: a call the
    /// thread blocks on (a sync call made on an event loop's thread) keeps the shared
    /// connection, whose replies do not need the event loop it blocks.
    ///
    /// `None` when the client cannot have one: TLS, a cluster, Sentinel, or more than one
    /// command connection. While the link is down (connecting, lost) calls use the shared
    /// connection; calls made on other threads and the client's background tasks always do.
    ///
    /// [`LocalCalls`]: crate::local_calls::LocalCalls
    /// [`Watcher`]: crate::conn::local::Watcher
    /// [`LocalIo::ready`]: crate::conn::local::LocalIo::ready
    pub fn local_link(
        &self,
        watch: crate::conn::local::Watch,
    ) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        self.shared.local_link(watch)
    }

    /// What the URL named: one server, a cluster or a Sentinel-managed master.
    pub fn topology(&self) -> Topology {
        self.shared.topology()
    }

    /// Whether waiters use sharded pub/sub (SSUBSCRIBE / SPUBLISH): only on a Redis Cluster,
    /// decided at connect (see [`ClientOptions::sharded_pubsub`]).
    pub fn sharded_pubsub(&self) -> bool {
        self.shared.sharded()
    }

    /// Whether acquires wait for a replica (see [`ClientOptions::replica_sync`]).
    pub fn replica_sync(&self) -> bool {
        self.shared.replica_sync()
    }

    /// This client's random UUID (v4), the first part of every owner it makes.
    pub fn id(&self) -> Uuid {
        self.shared.id()
    }

    /// The options this client runs with.
    pub fn options(&self) -> &ClientOptions {
        self.shared.options()
    }

    /// The owner with integer part `id`. The caller keeps ids of distinct live owners distinct;
    /// ids from 2^61 up are reserved ([`thread_owner_id`](crate::owner::thread_owner_id) hands out
    /// 2^61.., [`Client::new_owner`] 2^62..).
    pub fn owner(&self, id: u64) -> Owner {
        Owner::new(self.shared.id(), id)
    }

    /// A fresh owner no other call of any client of this process has returned.
    pub fn new_owner(&self) -> Owner {
        self.owner(crate::owner::next_auto_owner_id())
    }

    /// A handle on the reentrant lock `name` (used byte for byte as the Redis key, Redisson's
    /// layout). Cheap to keep: keys and channel are built once here.
    ///
    /// Fails with `InvalidArgument` for an empty name or one over 64 KiB, and on a cluster for
    /// a name whose auxiliary keys would have another hash tag (an empty `{}`, an unclosed
    /// `{`, a `}` before the first `{`).
    ///
    /// ```no_run
    /// # async fn demo() -> rlock::Result<()> {
    /// # let client = rlock::Client::connect_default(Default::default()).await?;
    /// let lock = client.lock("orders")?; // the Redis key "orders"
    /// let (alice, bob) = (client.new_owner(), client.new_owner());
    /// lock.acquire(&alice).await?;
    /// assert!(lock.is_held(&alice).await?);
    /// assert!(!lock.is_held(&bob).await?); // bob would wait for it
    /// lock.release(&alice).await?;
    /// # Ok(()) }
    /// ```
    pub fn lock(&self, name: &str) -> Result<Lock> {
        self.check_name(name)?;
        Ok(Lock::new(self.shared.clone(), name))
    }

    /// A handle on the read-write lock `name` (Redisson `RReadWriteLock`): its
    /// [`read_lock`](ReadWriteLock::read_lock) and [`write_lock`](ReadWriteLock::write_lock).
    /// Fails as [`Client::lock`] does.
    pub fn read_write_lock(&self, name: &str) -> Result<ReadWriteLock> {
        self.check_name(name)?;
        Ok(ReadWriteLock::new(self.shared.clone(), name))
    }

    /// A handle on the count-down latch `name` (Redisson `RCountDownLatch`): a count in the
    /// STRING `name`, open (0) while it does not exist; waiters sleep on
    /// `redisson_countdownlatch__channel__{name}`. Fails as [`Client::lock`] does, and on a
    /// cluster also for a name with `{` or `}`: Redisson's channel for it hashes to another slot
    /// than the key, so neither Redisson's latch scripts nor ours could run there.
    pub fn count_down_latch(&self, name: &str) -> Result<CountDownLatch> {
        self.check_name(name)?;
        if self.shared.topology() == Topology::Cluster && !keys::latch_shares_one_tag(name) {
            return Err(Error::invalid(
                "on a Redis Cluster a count-down latch name must not contain '{' or '}': its channel \
                 redisson_countdownlatch__channel__{name} would hash to another slot than the key",
            ));
        }
        Ok(CountDownLatch::new(self.shared.clone(), name))
    }

    /// A handle on the fair lock `name` (Redisson `RFairLock`): granted in arrival order across
    /// all clients, Java's included, through the queue `redisson_lock_queue:{name}` and the
    /// deadlines `redisson_lock_timeout:{name}`. A waiter that stops waiting (its wait ran out,
    /// it was cancelled or dropped, its client closed) leaves the queue. Fails as
    /// [`Client::lock`] does.
    pub fn fair_lock(&self, name: &str) -> Result<Lock> {
        self.check_name(name)?;
        Ok(Lock::with_flavor(self.shared.clone(), name, Flavor::fair(name, true)))
    }

    /// A handle on the non-reentrant lock `name` (Redisson 4.4's `getNonReentrantLock`): the
    /// reentrant lock's hash, lease, watchdog and wake-ups, but an owner that holds it and
    /// acquires it again gets `WouldDeadlock` at once (nothing changes in Redis) instead of a
    /// second hold level. Shared with Redisson's non-reentrant and reentrant locks of the same
    /// name both ways. Fails as [`Client::lock`] does.
    pub fn non_reentrant_lock(&self, name: &str) -> Result<Lock> {
        self.check_name(name)?;
        Ok(Lock::with_flavor(self.shared.clone(), name, Flavor::NonReentrant))
    }

    /// A handle on the non-reentrant fair lock `name` (Redisson 4.4's
    /// `getNonReentrantFairLock`): the fair lock's queue and grants in arrival order, with the
    /// re-entry of [`Client::non_reentrant_lock`] refused (`WouldDeadlock`, nothing queued).
    /// Fails as [`Client::lock`] does.
    pub fn non_reentrant_fair_lock(&self, name: &str) -> Result<Lock> {
        self.check_name(name)?;
        Ok(Lock::with_flavor(self.shared.clone(), name, Flavor::fair(name, false)))
    }

    /// A handle on the spin lock `name` (Redisson `RSpinLock`): the reentrant lock's hash, lease
    /// and watchdog, but a release publishes nothing and a waiter polls with exponential
    /// back-off (from a sixteenth of `poll_interval` up to `poll_interval`, with jitter), so a
    /// waiter gets a released lock at most `poll_interval` plus a round trip later. For
    /// endpoints without pub/sub, and for clients that should hold no subscription. Shared with
    /// Redisson's `getSpinLock(name)` both ways. Fails as [`Client::lock`] does.
    pub fn spin_lock(&self, name: &str) -> Result<Lock> {
        self.check_name(name)?;
        Ok(Lock::with_flavor(self.shared.clone(), name, Flavor::Spin))
    }

    /// A handle on the fenced lock `name` (Redisson `RFencedLock`): a reentrant lock whose every
    /// acquire returns a fencing token from the counter `redisson_lock_token:{name}`, which
    /// never expires. Fails as [`Client::lock`] does.
    pub fn fenced_lock(&self, name: &str) -> Result<FencedLock> {
        self.check_name(name)?;
        Ok(FencedLock::new(self.shared.clone(), name))
    }

    /// A handle on the semaphore `name` (Redisson `RSemaphore`): a count of permits in the
    /// STRING `name`, 0 while it does not exist. Fails as [`Client::lock`] does.
    pub fn semaphore(&self, name: &str) -> Result<Semaphore> {
        self.check_name(name)?;
        Ok(Semaphore::new(self.shared.clone(), name))
    }

    /// A handle on the permit-expirable semaphore `name` (Redisson `RPermitExpirableSemaphore`):
    /// the count of free permits in the STRING `name`, held permits (with ids and expiries) in
    /// the ZSET `{name}:timeout`. Permits taken without a lease are renewed by the watchdog.
    /// Fails as [`Client::lock`] does.
    pub fn permit_expirable_semaphore(&self, name: &str) -> Result<PermitExpirableSemaphore> {
        self.check_name(name)?;
        Ok(PermitExpirableSemaphore::new(self.shared.clone(), name))
    }

    /// What lives under `name`, read without changing anything: the kind of primitive found,
    /// its holders (owner, hold count, mode, and who they are from their clients' holder
    /// records), TTL, waiters (subscribers of its channels), a fair lock's queue with deadlines,
    /// a fenced lock's token, a semaphore's permits and a latch's count. See [`Description`]
    /// for the JSON shape (`serde_json::to_string(&d)`).
    ///
    /// One script reads every key of the name atomically; the channels' subscriber counts and
    /// the holder records are read right after it. For a permit-expirable semaphore whose
    /// permits were taken by rlock clients, the records are found with one SCAN over
    /// `rlock:client:*` (stopping once each is found), which costs time in proportion to the
    /// keyspace. Fails as [`Client::lock`] does for a bad name (nothing sent), and with
    /// `Connection`/`Timeout`/`Redis`/`Closed`; a key of another type is kind `other`, never an
    /// error.
    pub async fn describe(&self, name: &str) -> Result<Description> {
        self.check_name(name)?;
        describe::describe(&self.shared, name, None).await
    }

    /// What this client's endpoint does that matters for lock safety (`rlock doctor`): topology,
    /// eviction, persistence, replicas and `WAIT`, pub/sub, script restrictions, round-trip
    /// latency percentiles (`options.pings` `PING`s) and the server's clock rate against this
    /// machine's (over `options.clock_window`), each finding with what rlock does about it and
    /// what to change. Only commands that change nothing; a refused one is a finding
    /// (`unknown`), never an error. Takes about `clock_window` plus the round trips.
    pub async fn doctor(&self, options: &DoctorOptions) -> DoctorReport {
        doctor::examine(&self.shared, options).await
    }

    /// Keys in Redisson's layout holding what nothing can use any more (`rlock sweep`): a fair
    /// lock's waiters past their deadline by more than `options.grace` (crashed without giving
    /// up) or queued without one, a permit-expirable semaphore's permits past their lease by
    /// more than the grace (given back to the count and announced, as the semaphore's next
    /// script would), request latches without an expiry. Found with SCAN (`options.pattern`;
    /// every master of a cluster), each key checked by a script that changes nothing, and with
    /// `options.delete` removed by a script that checks it again. A fenced lock's token counter
    /// is never touched (deleted, it restarts at 1). Costs time in proportion to the keyspace.
    /// A key that cannot be looked at is listed in the report's `errors`; fails only when SCAN
    /// does (`Connection`/`Timeout`/`Redis`/`Closed`: an endpoint without SCAN, such as
    /// twemproxy, answers `Redis`).
    pub async fn sweep(&self, options: &SweepOptions) -> Result<SweepReport> {
        describe::sweep(&self.shared, options).await
    }

    /// [`Client::describe`], reading the name as a `kind` where the keys cannot tell (a
    /// semaphore from a count-down latch, a fair lock nobody waits for from a reentrant lock):
    /// the kind asked for replaces the one found within the same family (locks; counts), or
    /// when nothing was found. Otherwise the kind found stays, with a note saying so.
    pub async fn describe_as(&self, name: &str, kind: Kind) -> Result<Description> {
        self.check_name(name)?;
        describe::describe(&self.shared, name, Some(kind)).await
    }

    /// Names of primitives in Redis, found with SCAN (`MATCH pattern`, default `*`; on a
    /// cluster on every master, in turn) and classified as [`Client::describe`] does, sorted by
    /// name; at most `limit` of them (`None`: all). Keys of other shapes are left out, and
    /// helper keys (token counters, queues, deadlines, permit sets, read-hold keys, request
    /// latches, holder records) name their primitive instead of being listed themselves, so a
    /// free fenced lock is found through its token counter. The pattern is matched against key
    /// names, so `*orders*` also finds `orders` through `redisson_lock_token:{orders}`.
    /// Integer strings are listed as `semaphore_or_latch` unless someone waits on them: any
    /// integer counter looks the same. Never uses KEYS; costs time in proportion to the
    /// keyspace. Fails with `Connection`/`Timeout`/`Redis`/`Closed`.
    pub async fn list(&self, pattern: Option<&str>, limit: Option<usize>) -> Result<Vec<Listed>> {
        describe::list(&self.shared, pattern, limit).await
    }

    /// Checks a primitive's name: not empty, at most [`MAX_NAME_LEN`] bytes, and on a cluster
    /// one whose auxiliary keys share its slot.
    fn check_name(&self, name: &str) -> Result<()> {
        if name.is_empty() {
            return Err(Error::invalid("lock name must not be empty"));
        }
        if name.len() > MAX_NAME_LEN {
            return Err(Error::invalid(format!(
                "lock name is {} bytes; the limit is {MAX_NAME_LEN}",
                name.len()
            )));
        }
        if self.shared.topology() == Topology::Cluster && !keys::shares_one_tag(name) {
            return Err(Error::invalid(
                "on a Redis Cluster a lock name must not contain an empty '{}', an unclosed '{' or a \
                 '}' before its first '{': its channel and latch keys would have another hash tag",
            ));
        }
        Ok(())
    }

    /// Calls `f` (on a library task) whenever the watchdog loses a hold of this client that
    /// `filter` matches ([`LostFilter::all`] for every hold). A panicking listener is caught and
    /// logged. Returns an id for [`Client::remove_lost_listener`].
    pub fn on_lost(&self, filter: LostFilter, f: impl Fn(&LostEvent) + Send + Sync + 'static) -> ListenerId {
        self.shared.watchdog().add_listener(filter, Arc::new(f))
    }

    /// Removes a listener; false when it was already removed.
    pub fn remove_lost_listener(&self, id: ListenerId) -> bool {
        self.shared.watchdog().remove_listener(id)
    }

    /// The client's figures since it connected: acquires (contended, timed out), releases,
    /// renewals and their failures, lost holds, pub/sub wake-ups, reconnects, wait and hold
    /// times (p50/p99), errors by kind (all zero with the `metrics` option off), and the
    /// server's eviction policy when it may evict a held lock's key. Cheap: reads atomics,
    /// sends nothing.
    pub fn stats(&self) -> Stats {
        let mut stats = self.shared.metrics().stats();
        stats.eviction_policy = self.shared.eviction_policy().map(str::to_owned);
        stats
    }

    /// [`Client::stats`] in the Prometheus text exposition format (version 0.0.4), for a
    /// service that already serves `/metrics`: counters `rlock_*_total`, histograms
    /// `rlock_wait_seconds` and `rlock_hold_seconds`, each series labelled `app="<app_name>"`
    /// when that option is set. Give each client of one process its own `app_name`.
    pub fn prometheus_text(&self) -> String {
        let labels = match &self.shared.options().app_name {
            Some(app) => format!("app=\"{}\"", crate::metrics::label_value(app)),
            None => String::new(),
        };
        self.shared.metrics().prometheus(&labels)
    }

    /// Number of holds the client tracks (held, or lost and not yet released).
    pub fn tracked_holds(&self) -> usize {
        self.shared.watchdog().hold_count()
    }

    /// Number of lock channels with local waiters (each one subscription).
    pub fn waited_channels(&self) -> usize {
        self.shared.pubsub().channel_count()
    }

    /// Waits until the clean-up steps of abandoned calls have run, or `limit` passed; true
    /// when none is left. Those steps run in the background: a hold acquired for a caller who
    /// had gone is released, a release or acquire step cut off midway is finished, a fair-lock
    /// waiter that stopped waiting leaves the queue. Call it before the process exits after
    /// cancelling calls (Python does on Ctrl-C, C in `rlock_client_free`).
    pub async fn settle(&self, limit: std::time::Duration) -> bool {
        self.shared.cleanups().settle(limit).await
    }

    /// Stops renewals and pub/sub and fails every pending and later call with `Closed`. Holds
    /// are not released: their leases run out (at most one watchdog timeout later).
    pub fn close(&self) {
        self.shared.close();
    }

    /// Whether [`Client::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.shared.is_closed()
    }
}
