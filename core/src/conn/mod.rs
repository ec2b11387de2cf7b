//! The connection layer: where lock commands go and where waiters subscribe, for one server,
//! a Redis Cluster or a Sentinel-managed master. Everything below is the `redis` crate's: the
//! auto-reconnecting `ConnectionManager`, the cluster client (slot routing, MOVED/ASK,
//! topology refresh, resubscription) and the Sentinel master lookup. The rest of rlock asks
//! this module for a connection, a batch group and the publish command only.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use futures_util::future::join_all;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_routing::{
    MultipleNodeRoutingInfo, ResponsePolicy, Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr,
};
use redis::{Cmd, FromRedisValue, Pipeline, ProtocolVersion, RedisFuture, RedisResult, Value};

mod cluster;
pub(crate) mod local;
mod open;
mod resp2;
mod retry;
mod sentinel;
pub(crate) mod thread;

pub(crate) use open::{config_value, PushHandler};
pub(crate) use retry::{is_transient, retry_transient};

use cluster::ClusterLink;
use open::{observed, Observe, Opener, Use};
use sentinel::Link;

use crate::error::{Error, ErrorKind, Result};
use crate::keys;
use crate::options::ClientOptions;
use crate::url::Target;

/// What kind of deployment a client talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Topology {
    /// One server (`redis://`, `rediss://`, `redis+unix://`).
    Single,
    /// A Redis Cluster (`redis+cluster://`).
    Cluster,
    /// A master found and followed through Sentinels (`redis+sentinel://`).
    Sentinel,
}

impl Topology {
    /// A short stable name: `"single"`, `"cluster"` or `"sentinel"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Topology::Single => "single",
            Topology::Cluster => "cluster",
            Topology::Sentinel => "sentinel",
        }
    }
}

/// Where lock commands go. Cloning is cheap (shared multiplexed connections).
#[derive(Clone)]
pub(crate) enum Commands {
    /// One server, with the route of its local and thread links (see [`local`], [`thread`])
    /// where it has one.
    Single(ConnectionManager, Option<Arc<local::Route>>),
    /// One server over several connections, used in turn (`command_connections` > 1).
    Pooled(Arc<Pool>),
    /// A Redis Cluster: commands go to the master of their key's slot.
    Cluster(Arc<ClusterLink>),
    /// The current master of a Sentinel set (swapped on failover).
    Sentinel(Arc<Link>, Use),
}

impl ConnectionLike for Commands {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Commands::Single(c, _) => c.req_packed_command(cmd),
            Commands::Pooled(p) => {
                let mut c = p.next();
                Box::pin(async move { c.req_packed_command(cmd).await })
            }
            Commands::Cluster(link) => {
                let mut c = link.current();
                observed(link, async move { c.req_packed_command(cmd).await })
            }
            Commands::Sentinel(link, role) => {
                let mut c = link.connection(*role);
                observed(link, async move { c.req_packed_command(cmd).await })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Commands::Single(c, _) => c.req_packed_commands(pipeline, offset, count),
            Commands::Pooled(p) => {
                let mut c = p.next();
                Box::pin(async move { c.req_packed_commands(pipeline, offset, count).await })
            }
            Commands::Cluster(link) => {
                let mut c = link.current();
                observed(link, async move { c.req_packed_commands(pipeline, offset, count).await })
            }
            Commands::Sentinel(link, role) => {
                let mut c = link.connection(*role);
                observed(link, async move { c.req_packed_commands(pipeline, offset, count).await })
            }
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Commands::Single(c, _) => c.get_db(),
            Commands::Pooled(p) => p.first.get_db(),
            Commands::Cluster(_) => 0,
            Commands::Sentinel(link, _) => link.db(),
        }
    }
}

impl Commands {
    /// The route of this one-server client's local and thread links, if it can have them.
    pub(crate) fn local_route(&self) -> Option<Arc<local::Route>> {
        match self {
            Commands::Single(_, route) => route.clone(),
            _ => None,
        }
    }

    /// `cmd.query_async(self)`, without the boxed future that `ConnectionLike` costs on one
    /// server: every acquire and release sends a script, and a boxed call future of over a
    /// kilobyte per command showed in profiles (the allocation and glibc's consolidation it
    /// sets off). Other topologies go through `ConnectionLike` as before. On one server a
    /// command of a blocking call goes out on its thread's link (see [`thread`]), and a call
    /// polled on a thread with a local link up (see [`local`]) sends on that link.
    pub(crate) async fn query<T: FromRedisValue>(&mut self, cmd: &Cmd) -> RedisResult<T> {
        let value = match self {
            Commands::Single(c, route) => match route {
                Some(route) => match thread::query(route, cmd) {
                    Some(value) => value?,
                    None => match local::query(route, cmd).await {
                        Some(value) => value?,
                        None => c.send_packed_command(cmd).await?,
                    },
                },
                None => c.send_packed_command(cmd).await?,
            },
            _ => self.req_packed_command(cmd).await?,
        };
        Ok(redis::from_redis_value(value.extract_error()?)?)
    }

    /// Sends `cmd` to the node `routing` names (a cluster), or to the one server.
    pub(crate) async fn route(&mut self, cmd: Cmd, routing: RoutingInfo) -> RedisResult<Value> {
        match self {
            Commands::Cluster(link) => {
                let result = link.current().route_command(cmd, routing).await;
                link.observe(&result);
                result
            }
            other => cmd.query_async(other).await,
        }
    }

    /// The hash slot whose master serves `key` on a cluster; 0 elsewhere (one master). What
    /// replica sync looks a key's master up by.
    pub(crate) fn master_slot(&self, key: &str) -> u16 {
        match self {
            Commands::Cluster(_) => keys::slot(key.as_bytes()),
            Commands::Single(..) | Commands::Pooled(_) | Commands::Sentinel(..) => 0,
        }
    }

    /// Whether one plain multi-key command (a `DEL` of release latches) may name keys of
    /// several hash tags here: asked of the endpoint with a read of two keys in two slots. A
    /// proxy in front of a sharded cluster refuses it (`CROSSSLOT`), and so does anything that
    /// does not answer it: then each command names keys of one tag. Never on a cluster, whose
    /// client routes a command by one slot. Scripts never span tags, whatever this says: a
    /// proxy that shards by key runs a script where its first key lives.
    pub(crate) async fn spans_tags(&self) -> bool {
        if let Commands::Cluster(_) = self {
            return false;
        }
        let mut exists = redis::cmd("EXISTS");
        // Slots 15495 and 3300: two slots, so two shards behind any sharded endpoint.
        exists.arg("rlock:probe:{a}").arg("rlock:probe:{b}");
        exists.query_async::<i64>(&mut self.clone()).await.is_ok()
    }
}

/// Connections to one server, used in turn.
pub(crate) struct Pool {
    first: ConnectionManager,
    more: Vec<ConnectionManager>,
    turn: std::sync::atomic::AtomicUsize,
}

impl Pool {
    fn next(&self) -> ConnectionManager {
        let i = self.turn.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % (self.more.len() + 1);
        i.checked_sub(1).and_then(|j| self.more.get(j)).unwrap_or(&self.first).clone()
    }
}

/// The connection waiters subscribe on, with Redisson's choice of classic or sharded pub/sub.
pub(crate) enum Subscriber {
    /// One server: classic SUBSCRIBE; `reopen` opens a new connection to it.
    Single { conn: ConnectionManager, reopen: Box<Reopen> },
    /// One server that refused `HELLO 3` but has `SUBSCRIBE`: classic SUBSCRIBE in RESP2.
    Resp2 { sub: resp2::Resp2Subscriber, reopen: Box<Reopen> },
    /// A cluster: SUBSCRIBE, or SSUBSCRIBE (one per slot) when `sharded`.
    Cluster { link: Arc<ClusterLink>, sharded: bool, epoch: watch::Receiver<u64> },
    /// A Sentinel master: classic SUBSCRIBE on the current master's pub/sub connection.
    Sentinel(Arc<Link>, watch::Receiver<u64>),
}

impl Subscriber {
    /// Subscribes to `names` (all at once where the server allows).
    pub(crate) async fn subscribe(&mut self, names: &[&str]) -> RedisResult<()> {
        match self {
            Subscriber::Single { conn, .. } => conn.subscribe(names).await,
            Subscriber::Resp2 { sub, .. } => sub.subscribe(names).await,
            Subscriber::Cluster { link, sharded, .. } => cluster_pubsub(link, *sharded, names, true).await,
            Subscriber::Sentinel(link, _) => link.pubsub().subscribe(names).await,
        }
    }

    /// Unsubscribes from `names`.
    pub(crate) async fn unsubscribe(&mut self, names: &[&str]) -> RedisResult<()> {
        match self {
            Subscriber::Single { conn, .. } => conn.unsubscribe(names).await,
            Subscriber::Resp2 { sub, .. } => sub.unsubscribe(names).await,
            Subscriber::Cluster { link, sharded, .. } => cluster_pubsub(link, *sharded, names, false).await,
            Subscriber::Sentinel(link, _) => link.pubsub().unsubscribe(names).await,
        }
    }

    /// The `ConnectionManager` behind a single server's or a Sentinel master's subscriptions
    /// (it resubscribes by itself once reconnected); `None` on a cluster, whose client must be
    /// told to subscribe again (see `pubsub::run`), and for a RESP2 connection (reopened when
    /// it stops answering, then subscribed again).
    pub(crate) fn manager(&self) -> Option<ConnectionManager> {
        match self {
            Subscriber::Single { conn, .. } => Some(conn.clone()),
            Subscriber::Sentinel(link, _) => Some(link.pubsub()),
            Subscriber::Cluster { .. } | Subscriber::Resp2 { .. } => None,
        }
    }

    /// Whether the connection still answers: a PING within `timeout` (on a cluster, a PING to
    /// every master, where sharded and classic subscriptions live). A connection can stop
    /// delivering without closing (a middlebox dropped it, a partition): the `redis` crate
    /// reconnects only once it sees the socket closed, and a waiter would miss every unlock
    /// message meanwhile.
    pub(crate) async fn answers(&self, timeout: Duration) -> bool {
        let ping = redis::cmd("PING");
        let answered = match self {
            Subscriber::Single { conn, .. } => {
                tokio::time::timeout(timeout, ping.query_async::<()>(&mut conn.clone()))
                    .await
                    .map(|r| r.is_ok())
            }
            Subscriber::Sentinel(link, _) => {
                tokio::time::timeout(timeout, ping.query_async::<()>(&mut link.pubsub()))
                    .await
                    .map(|r| r.is_ok())
            }
            Subscriber::Resp2 { sub, .. } => Ok(sub.answers(timeout).await),
            Subscriber::Cluster { link, .. } => {
                let every_master = RoutingInfo::MultiNode((
                    MultipleNodeRoutingInfo::AllMasters,
                    Some(ResponsePolicy::AllSucceeded),
                ));
                let mut conn = link.current();
                tokio::time::timeout(timeout, conn.route_command(ping, every_master)).await.map(|r| r.is_ok())
            }
        };
        answered.unwrap_or(false)
    }

    /// Replaces the connection by a new one (after [`Subscriber::answers`] said it stopped
    /// answering): to the same server, to the Sentinel's current master, or a cluster
    /// connection rebuilt from the seed nodes. The caller subscribes its channels again. Fails
    /// when the new connection cannot be opened.
    pub(crate) async fn reopen(&mut self) -> Result<()> {
        match self {
            Subscriber::Single { conn, reopen } => *conn = reopen.opener.open_pubsub(&reopen.client).await?,
            Subscriber::Resp2 { sub, reopen } => {
                let timeout = reopen.opener.options.subscription_timeout;
                *sub = resp2::Resp2Subscriber::open(&reopen.client, reopen.opener.on_push.clone(), timeout)
                    .await?
                    .ok_or_else(|| Error::new(ErrorKind::Connection, "the endpoint refused SUBSCRIBE"))?;
            }
            Subscriber::Sentinel(link, _) => link.reopen_pubsub().await?,
            Subscriber::Cluster { link, epoch, .. } => {
                link.rebuild_now().await?;
                // The caller subscribes again now: the swap needs no second pass.
                epoch.borrow_and_update();
            }
        }
        Ok(())
    }

    /// Pause between repair steps after a disconnect (see `pubsub::run`).
    pub(crate) fn repair_pause(&self) -> Duration {
        match self {
            // Resubscribing every channel costs the cluster more than a PING.
            Subscriber::Cluster { .. } => Duration::from_millis(500),
            _ => Duration::from_millis(250),
        }
    }

    /// Resolves when the pub/sub connection was replaced by a new one (a Sentinel failover,
    /// a rebuilt cluster connection): the caller then subscribes its channels again. Never
    /// resolves for a single server.
    pub(crate) async fn replaced(&mut self) {
        let epoch = match self {
            Subscriber::Sentinel(_, epoch) | Subscriber::Cluster { epoch, .. } => epoch,
            Subscriber::Single { .. } | Subscriber::Resp2 { .. } => return std::future::pending().await,
        };
        if epoch.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// What opens a single server's pub/sub connection again (see [`Subscriber::reopen`]).
pub(crate) struct Reopen {
    opener: Opener,
    client: redis::Client,
}

/// The routing of a command to the master of `key`'s slot (on a cluster).
pub(crate) fn slot_master(key: &str) -> RoutingInfo {
    master_of_slot(keys::slot(key.as_bytes()))
}

/// The master of cluster slot `slot` (see [`slot_master`]).
pub(crate) fn master_of_slot(slot: u16) -> RoutingInfo {
    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master)))
}

/// SUBSCRIBE / UNSUBSCRIBE (`subscribe` false) on a cluster; sharded, one call per slot.
async fn cluster_pubsub(
    link: &Arc<ClusterLink>,
    sharded: bool,
    names: &[&str],
    subscribe: bool,
) -> RedisResult<()> {
    let result = if sharded {
        let calls = by_slot(names).into_iter().map(|group| {
            let mut conn = link.current();
            async move {
                if subscribe {
                    conn.ssubscribe(group).await
                } else {
                    conn.sunsubscribe(group).await
                }
            }
        });
        join_all(calls).await.into_iter().collect()
    } else if subscribe {
        link.current().subscribe(names).await
    } else {
        link.current().unsubscribe(names).await
    };
    link.observe(&result);
    result
}

/// Groups channel names by hash slot (SSUBSCRIBE takes channels of one slot per call).
fn by_slot<'a>(names: &[&'a str]) -> Vec<Vec<&'a str>> {
    let mut groups: std::collections::BTreeMap<u16, Vec<&'a str>> = Default::default();
    for n in names {
        groups.entry(keys::slot(n.as_bytes())).or_default().push(n);
    }
    groups.into_values().collect()
}

/// Everything a client talks to Redis with.
pub(crate) struct Connections {
    pub(crate) topology: Topology,
    pub(crate) commands: Commands,
    /// The connection for replica-synced acquires, when replica sync is on.
    pub(crate) sync: Option<Commands>,
    /// Where waiters subscribe; `None` where the endpoint has no pub/sub (waiters poll).
    pub(crate) subscriber: Option<Subscriber>,
    /// Whether waiters use sharded pub/sub (SPUBLISH in the scripts).
    pub(crate) sharded: bool,
    /// The Sentinel monitor, when there is one; the client runs it until it closes.
    pub(crate) monitor: Option<sentinel::Monitor>,
    /// Bumped when a Sentinel client switches to a new master.
    pub(crate) master_changes: Option<watch::Receiver<u64>>,
    /// The server's `maxmemory-policy` as read at connect (a cluster's: slot 0's master's);
    /// `None` when `CONFIG GET` was refused.
    pub(crate) maxmemory_policy: Option<String>,
}

/// Connects to what `target` names. `on_push` receives the pub/sub pushes.
pub(crate) async fn connect(
    target: Target,
    options: &ClientOptions,
    on_push: PushHandler,
) -> Result<Connections> {
    let topology = match &target {
        Target::Single(_) => Topology::Single,
        Target::Cluster { .. } => Topology::Cluster,
        Target::Sentinel(_) => Topology::Sentinel,
    };
    // Redisson syncs replicas on every topology but a single server; asking for fsynced
    // replicas asks for replica sync.
    let with_sync = options.replica_sync.unwrap_or(topology != Topology::Single || options.replica_sync_aof);
    let opener =
        Opener { options: options.clone(), on_push, with_sync, sentinel: topology == Topology::Sentinel };
    match target {
        Target::Single(client) => {
            let (first, more, sync) = opener.open_commands(&client).await?;
            let commands = if more.is_empty() {
                Commands::Single(first, local::Route::new(&client, options))
            } else {
                Commands::Pooled(Arc::new(Pool { first, more, turn: Default::default() }))
            };
            // A `redis://` URL may name a proxy without pub/sub or RESP3 (twemproxy): then
            // there is no subscriber, and waiters poll.
            let probed = opener.probe(&client).await?;
            // RESP3 where the endpoint speaks it; else RESP2 where it has SUBSCRIBE; else none.
            let subscriber = if probed.resp3 {
                let conn = opener.open_pubsub(&client).await?;
                Some(Subscriber::Single { conn, reopen: Box::new(Reopen { opener, client }) })
            } else {
                let timeout = options.subscription_timeout;
                resp2::Resp2Subscriber::open(&client, opener.on_push.clone(), timeout)
                    .await?
                    .map(|sub| Subscriber::Resp2 { sub, reopen: Box::new(Reopen { opener, client }) })
            };
            Ok(Connections {
                topology,
                commands,
                sync: sync.map(|c| Commands::Single(c, None)),
                subscriber,
                sharded: false,
                monitor: None,
                master_changes: None,
                maxmemory_policy: probed.maxmemory_policy,
            })
        }
        Target::Cluster { nodes, certs } => {
            let builder = |response_timeout: Option<Duration>| {
                let mut b = ClusterClientBuilder::new(nodes.clone())
                    .connection_timeout(options.connect_timeout)
                    .retries(options.retry_attempts)
                    .min_retry_wait(50)
                    .max_retry_wait(crate::millis::whole_ms(options.retry_delay).max(50));
                if let Some(t) = response_timeout {
                    b = b.response_timeout(t);
                }
                if let Some(c) = &certs {
                    b = b.certs(c.clone());
                }
                b
            };
            let build = |b: ClusterClientBuilder| {
                b.build().map_err(|e| {
                    Error::invalid(format!("invalid redis+cluster configuration ({:?})", e.kind()))
                })
            };
            // A connection that stays silent for a whole command timeout is rebuilt.
            let stuck_after = options.command_timeout.unwrap_or(Duration::from_secs(10));
            let link = |b, stuck_after, what| async move {
                ClusterLink::connect(build(b)?, stuck_after, options.connect_timeout, what).await
            };
            let main = link(builder(options.command_timeout), stuck_after, "cluster connection").await?;
            let sync = if with_sync {
                let timeout = options.command_timeout.map(|t| t + options.replica_sync_timeout);
                let stuck = stuck_after + options.replica_sync_timeout;
                Some(Commands::Cluster(
                    link(builder(timeout), stuck, "cluster replica-sync connection").await?,
                ))
            } else {
                None
            };
            let push = opener.on_push.clone();
            let pubsub = builder(Some(options.subscription_timeout))
                .use_protocol(ProtocolVersion::RESP3)
                .push_sender(move |p| -> std::result::Result<(), redis::aio::SendError> {
                    push(p);
                    Ok(())
                });
            let pubsub = link(pubsub, options.subscription_timeout, "cluster pub/sub connection").await?;
            let mut commands = Commands::Cluster(main);
            let sharded = match options.sharded_pubsub {
                Some(false) => false,
                Some(true) => {
                    if !supports_sharded_pubsub(&mut commands).await? {
                        // Every SPUBLISH in the scripts would fail: refuse now, typed.
                        let server = server_named(&mut commands).await;
                        return Err(Error::new(
                            ErrorKind::InvalidArgument,
                            format!(
                                "sharded_pubsub is on, but this cluster{server} does not answer PUBSUB \
                                 SHARDNUMSUB (sharded pub/sub needs Redis 7 or Valkey 7 and later); leave \
                                 the option unset to use classic pub/sub here"
                            ),
                        ));
                    }
                    true
                }
                None => supports_sharded_pubsub(&mut commands).await?,
            };
            let epoch = pubsub.epochs();
            let maxmemory_policy = routed_config(&mut commands, "maxmemory-policy").await;
            Ok(Connections {
                topology,
                commands,
                sync,
                subscriber: Some(Subscriber::Cluster { link: pubsub, sharded, epoch }),
                sharded,
                monitor: None,
                master_changes: None,
                maxmemory_policy,
            })
        }
        Target::Sentinel(t) => {
            let (link, monitor) = sentinel::connect(t, opener).await?;
            let epoch = link.epochs();
            let mut commands = Commands::Sentinel(link.clone(), Use::Main);
            let maxmemory_policy = routed_config(&mut commands, "maxmemory-policy").await;
            Ok(Connections {
                topology,
                commands,
                sync: with_sync.then(|| Commands::Sentinel(link.clone(), Use::Sync)),
                master_changes: Some(link.epochs()),
                subscriber: Some(Subscriber::Sentinel(link, epoch)),
                sharded: false,
                monitor: Some(monitor),
                maxmemory_policy,
            })
        }
    }
}

/// Redisson's probe: sharded pub/sub when the cluster knows `PUBSUB SHARDNUMSUB` (Redis 7+).
/// An error answer means it does not; getting no answer is an error (a guess could leave this
/// client and Redisson's on different kinds of channels).
async fn supports_sharded_pubsub(conn: &mut Commands) -> Result<bool> {
    match redis::cmd("PUBSUB").arg("SHARDNUMSUB").query_async::<Value>(conn).await {
        Ok(_) => Ok(true),
        // No answer at all: unknown.
        Err(e) if answered_nothing(&e) => {
            Err(Error::from_redis("probing for sharded pub/sub (PUBSUB SHARDNUMSUB) failed", e))
        }
        // An error answer (ERR unknown subcommand; through the cluster client, a reply of the
        // wrong shape): not supported.
        Err(_) => Ok(false),
    }
}

/// Whether a command got no answer at all (the connection failed, dropped or timed out), as
/// opposed to an error answer: a probe refused is "not available", one not answered is not
/// known.
pub(crate) fn answered_nothing(e: &redis::RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped()
}

/// `CONFIG GET name` on the master of slot 0 (on a Sentinel set, the master), `None` when
/// `CONFIG GET` is refused or not answered.
pub(crate) async fn routed_config(conn: &mut Commands, name: &str) -> Option<String> {
    open::config_value(conn.route(open::config_get(name), master_of_slot(0)).await.ok()?, name)
}

/// `INFO section` of the master of slot 0 (on a Sentinel set, the master), `None` when refused
/// or not answered.
pub(crate) async fn routed_info(conn: &mut Commands, section: &str) -> Option<String> {
    let mut info = redis::cmd("INFO");
    info.arg(section);
    redis::from_redis_value(conn.route(info, master_of_slot(0)).await.ok()?).ok()
}

/// The server's own name and version, as ` (Redis 6.2.16)` or ` (Valkey 8.0.1)`, for an error
/// that refuses what the server lacks; empty when `INFO server` is not answered (an ACL may
/// forbid it). On a cluster, the master of slot 0's. Only ever shown to a person: what the
/// server supports is probed, never read from this.
pub(crate) async fn server_named(conn: &mut Commands) -> String {
    routed_info(conn, "server")
        .await
        .as_deref()
        .and_then(server_version)
        .map(|v| format!(" ({v})"))
        .unwrap_or_default()
}

/// `Valkey V` or `Redis V` from an `INFO server` reply (Valkey also reports the Redis version
/// it is compatible with as `redis_version`, so its own comes first).
pub(crate) fn server_version(info: &str) -> Option<String> {
    match info_field(info, "valkey_version") {
        Some(v) => Some(format!("Valkey {v}")),
        None => info_field(info, "redis_version").map(|v| format!("Redis {v}")),
    }
}

/// The value of field `key` in an `INFO` reply (`key:value` lines), trimmed; `None` when it is
/// missing or empty.
pub(crate) fn info_field<'a>(info: &'a str, key: &str) -> Option<&'a str> {
    info.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':')).map(str::trim).filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_version_is_read_from_info_server() {
        let redis = "# Server\r\nredis_version:6.2.16\r\nredis_git_sha1:00000000\r\n";
        assert_eq!(server_version(redis).as_deref(), Some("Redis 6.2.16"));
        let valkey = "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n";
        assert_eq!(server_version(valkey).as_deref(), Some("Valkey 8.0.1"));
        assert_eq!(server_version("# Server\r\nredis_version:\r\n"), None);
        assert_eq!(server_version(""), None);
    }

    #[test]
    fn channels_are_grouped_by_slot_for_ssubscribe() {
        let names = ["redisson_lock__channel:{a}", "redisson_lock__channel:{b}", "x{a}y", "{b}"];
        let mut groups = by_slot(&names);
        groups.iter_mut().for_each(|g| g.sort_unstable());
        groups.sort();
        assert_eq!(
            groups,
            [vec!["redisson_lock__channel:{a}", "x{a}y"], vec!["redisson_lock__channel:{b}", "{b}"]]
        );
        assert!(by_slot(&[]).is_empty());
    }

    #[test]
    fn topology_names_are_stable() {
        assert_eq!(Topology::Single.as_str(), "single");
        assert_eq!(Topology::Cluster.as_str(), "cluster");
        assert_eq!(Topology::Sentinel.as_str(), "sentinel");
    }
}
