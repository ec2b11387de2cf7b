//! Opening the connections of one server or master, and the hooks the connection holders
//! (cluster, Sentinel) use to watch request outcomes. Imported by `mod.rs`, `cluster.rs` and
//! `sentinel.rs`; imports nothing of theirs.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{ProtocolVersion, PushInfo, RedisFuture, RedisResult};

use crate::error::{Error, Result};
use crate::options::ClientOptions;

/// Receives every push (pub/sub message, subscription confirmation, disconnect) of the pub/sub
/// connections. Runs on the connection's task: it must not block.
pub(crate) type PushHandler = Arc<dyn Fn(PushInfo) + Send + Sync>;

/// Which of a Sentinel master's connections a `Commands` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// Lock commands, renewals, queries.
    Main,
    /// Acquires followed by `WAIT` (replica sync), kept apart because `WAIT` blocks its
    /// connection until the replicas answer.
    Sync,
}

/// A connection holder that looks at every request's outcome: a cluster link (to rebuild a
/// connection that stopped answering) or a Sentinel link (to look for a failover at once).
pub(crate) trait Observe: Send + Sync + 'static {
    /// Looks at one request's outcome.
    fn observe<T>(self: &Arc<Self>, result: &RedisResult<T>);
}

/// `request`, with its outcome shown to `link`.
pub(crate) fn observed<'a, T: Send + 'a, L: Observe>(
    link: &Arc<L>,
    request: impl std::future::Future<Output = RedisResult<T>> + Send + 'a,
) -> RedisFuture<'a, T> {
    let link = link.clone();
    Box::pin(async move {
        let result = request.await;
        link.observe(&result);
        result
    })
}

/// Opens the connections of one master (or one server): commands, replica sync, pub/sub.
#[derive(Clone)]
pub(crate) struct Opener {
    pub(super) options: ClientOptions,
    pub(super) on_push: PushHandler,
    pub(super) with_sync: bool,
    /// Connections to a Sentinel-managed master (see `manager_config`).
    pub(super) sentinel: bool,
}

/// The connections of one master.
pub(crate) struct Opened {
    pub(crate) commands: ConnectionManager,
    /// More command connections (`command_connections` - 1; one server only).
    pub(crate) more: Vec<ConnectionManager>,
    pub(crate) sync: Option<ConnectionManager>,
    pub(crate) pubsub: ConnectionManager,
}

impl Opener {
    /// The client's `retry_attempts`.
    pub(crate) fn retry_attempts(&self) -> u32 {
        self.options.retry_attempts
    }

    /// The client's `retry_delay`.
    pub(crate) fn retry_delay(&self) -> Duration {
        self.options.retry_delay
    }

    fn manager_config(&self, response_timeout: Option<Duration>) -> ConnectionManagerConfig {
        let o = &self.options;
        // Behind Sentinel a manager redials once, then the request fails, so rlock's next retry
        // goes to the current master instead of waiting out every backoff against a dead one.
        // One server has nowhere else to go: its manager redials `retry_attempts` times, which
        // carries requests and waiters through a short restart. Either way the pub/sub side
        // pings a manager that gave up until it is back (pubsub::run).
        let redials = if self.sentinel { 1 } else { o.retry_attempts as usize };
        ConnectionManagerConfig::new()
            .set_connection_timeout(Some(o.connect_timeout))
            .set_response_timeout(response_timeout)
            .set_number_of_retries(redials)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(o.retry_delay.max(Duration::from_millis(50)))
    }

    /// Opens the connections to the server `client` names.
    pub(crate) async fn open(&self, client: &redis::Client) -> Result<Opened> {
        let (commands, more, sync) = self.open_commands(client).await?;
        let pubsub = self.open_pubsub(client).await?;
        Ok(Opened { commands, more, sync, pubsub })
    }

    /// Opens the command connections to the server `client` names: the first, the more of
    /// `command_connections`, and the replica-sync one (when wanted).
    pub(crate) async fn open_commands(
        &self,
        client: &redis::Client,
    ) -> Result<(ConnectionManager, Vec<ConnectionManager>, Option<ConnectionManager>)> {
        let open = |config, what: &'static str| async move {
            client.get_connection_manager_with_config(config).await.map_err(|e| Error::from_redis(what, e))
        };
        let command_config = || self.manager_config(self.options.command_timeout);
        let commands = open(command_config(), "could not connect to Redis").await?;
        let mut more = Vec::new();
        if !self.sentinel {
            for _ in 1..self.options.command_connections {
                more.push(open(command_config(), "could not connect to Redis").await?);
            }
        }
        let sync = if self.with_sync {
            // WAIT may take up to the sync timeout on top of the command.
            let timeout = self.options.command_timeout.map(|t| t + self.options.replica_sync_timeout);
            Some(open(self.manager_config(timeout), "could not open the replica-sync connection").await?)
        } else {
            None
        };
        Ok((commands, more, sync))
    }

    /// What the endpoint `client` names allows, asked on a connection of its own (opened in
    /// RESP2, then dropped), so a proxy that closes a connection on a command it does not know
    /// (twemproxy) closes only this one:
    /// - whether it speaks RESP3, which rlock's pub/sub connection prefers (`HELLO 3`; else
    ///   it subscribes in RESP2, see `resp2`);
    /// - its `maxmemory-policy` (`CONFIG GET`), on the same connection afterwards.
    ///
    /// A refusal is "no" (or "not known"): an error answer, or the connection closed. Fails
    /// only when no connection can be opened at all.
    pub(crate) async fn probe(&self, client: &redis::Client) -> Result<Probed> {
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.options.connect_timeout))
            .set_response_timeout(self.options.command_timeout);
        let mut probe = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| Error::from_redis("could not connect to Redis", e))?;
        let resp3 = match redis::cmd("HELLO").arg(3).query_async::<redis::Value>(&mut probe).await {
            Ok(_) => true,
            Err(e) => {
                log::info!(
                    "rlock: the endpoint refused HELLO 3 ({e}): waiters subscribe in RESP2 where it \
                     has SUBSCRIBE, else they poll (every poll_interval at most)"
                );
                false
            }
        };
        Ok(Probed { resp3, maxmemory_policy: maxmemory_policy(&mut probe).await })
    }

    /// Opens the pub/sub connection to the server `client` names: RESP3, so subscriptions
    /// share a multiplexed connection and the crate resubscribes after a reconnect; pushes go
    /// to `on_push`.
    pub(crate) async fn open_pubsub(&self, client: &redis::Client) -> Result<ConnectionManager> {
        let info = client.get_connection_info().clone();
        let settings = info.redis_settings().clone().set_protocol(ProtocolVersion::RESP3);
        let resp3 = redis::Client::open(info.set_redis_settings(settings))
            .map_err(|e| Error::from_redis("could not configure the pub/sub connection", e))?;
        let on_push = self.on_push.clone();
        let config = self
            .manager_config(Some(self.options.subscription_timeout))
            .set_push_sender(move |push| -> std::result::Result<(), redis::aio::SendError> {
                on_push(push);
                Ok(())
            })
            .set_automatic_resubscription();
        resp3
            .get_connection_manager_with_config(config)
            .await
            .map_err(|e| Error::from_redis("could not open the pub/sub connection", e))
    }
}

/// What [`Opener::probe`] found out about an endpoint.
pub(crate) struct Probed {
    /// Whether it answered `HELLO 3`.
    pub(crate) resp3: bool,
    /// Its `maxmemory-policy`, when `CONFIG GET` was answered.
    pub(crate) maxmemory_policy: Option<String>,
}

/// The server's `maxmemory-policy` (`CONFIG GET`), `None` when the command is refused (managed
/// services often rename or forbid `CONFIG`) or answered in a shape not expected.
pub(crate) async fn maxmemory_policy(conn: &mut impl redis::aio::ConnectionLike) -> Option<String> {
    config_value(conn.req_packed_command(&config_get("maxmemory-policy")).await.ok()?, "maxmemory-policy")
}

/// `CONFIG GET name`, for [`maxmemory_policy`] and the routed reads of `conn::routed_config`.
pub(crate) fn config_get(name: &str) -> redis::Cmd {
    let mut get = redis::cmd("CONFIG");
    get.arg("GET").arg(name);
    get
}

/// `name`'s value in a reply to [`config_get`] (a map in RESP3, pairs in RESP2); `None` for
/// any other reply.
pub(crate) fn config_value(reply: redis::Value, name: &str) -> Option<String> {
    let pairs: std::collections::HashMap<String, String> = redis::from_redis_value(reply).ok()?;
    pairs.get(name).cloned()
}
