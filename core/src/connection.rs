//! The connection layer: one auto-reconnecting multiplexed connection for commands and one for
//! pub/sub, both from the `redis` crate. Cluster and Sentinel modes slot in as further variants
//! of [`Commands`]; the rest of rlock only asks it for a connection, a batch group and the
//! publish command.

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Pipeline, ProtocolVersion, RedisFuture, Value};

use crate::error::{Error, Result};
use crate::options::ClientOptions;

/// Where lock commands go. Cloning is cheap (a shared multiplexed connection).
#[derive(Clone)]
pub(crate) enum Commands {
    /// One server (TCP, TLS or a unix socket).
    Single(ConnectionManager),
}

impl ConnectionLike for Commands {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Commands::Single(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Commands::Single(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Commands::Single(c) => c.get_db(),
        }
    }
}

impl Commands {
    /// The group a key's watchdog renewals are batched in: keys of one group may share one
    /// script call. On a cluster this is the key's hash slot; on one server everything is group 0.
    pub(crate) fn batch_group(&self, _key: &str) -> u16 {
        match self {
            Commands::Single(_) => 0,
        }
    }

    /// `PUBLISH`, or `SPUBLISH` where waiters use sharded pub/sub (Redis 7+ clusters).
    pub(crate) fn publish_command(&self) -> &'static str {
        match self {
            Commands::Single(_) => "PUBLISH",
        }
    }
}

/// Parses and checks a URL; the error never repeats the URL (it may carry a password).
pub(crate) fn client_for(url: &str, options: &ClientOptions) -> Result<redis::Client> {
    let scheme = url.split("://").next().unwrap_or_default();
    match scheme {
        "redis" | "rediss" | "redis+unix" | "unix" => {}
        _ if !url.contains("://") => {
            return Err(Error::invalid(
                "not a Redis URL: expected redis://[user:pass@]host:port/db, rediss://... or \
                 redis+unix:///path",
            ))
        }
        other => {
            return Err(Error::invalid(format!(
                "unsupported URL scheme '{other}': use redis://, rediss:// or redis+unix://"
            )))
        }
    }
    if scheme == "rediss" {
        // The redis crate leaves the rustls crypto provider to the application; pick ring
        // unless the process already chose one.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    if let (true, Some(ca)) = (scheme == "rediss", &options.tls_ca_file) {
        let pem = std::fs::read(ca)
            .map_err(|e| Error::invalid(format!("cannot read tls_ca_file {}: {e}", ca.display())))?;
        let certs = redis::TlsCertificates { client_tls: None, root_cert: Some(pem) };
        return redis::Client::build_with_tls(url, certs).map_err(|e| {
            Error::invalid(format!("invalid Redis URL or CA file ({:?}): expected rediss://[user:pass@]host:port/db and a PEM CA", e.kind()))
        });
    }
    redis::Client::open(url).map_err(|e| {
        Error::invalid(format!(
            "invalid Redis URL ({:?}): expected redis://[user:pass@]host:port/db",
            e.kind()
        ))
    })
}

fn manager_config(options: &ClientOptions, response_timeout: Option<Duration>) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(options.connect_timeout))
        .set_response_timeout(response_timeout)
        .set_number_of_retries(options.retry_attempts as usize)
        .set_min_delay(Duration::from_millis(50))
        .set_max_delay(options.retry_delay.max(Duration::from_millis(50)))
}

/// Opens the command connection.
pub(crate) async fn connect_commands(client: &redis::Client, options: &ClientOptions) -> Result<Commands> {
    let config = manager_config(options, options.command_timeout);
    let manager = client
        .get_connection_manager_with_config(config)
        .await
        .map_err(|e| Error::from_redis("could not connect to Redis", e))?;
    Ok(Commands::Single(manager))
}

/// Opens the pub/sub connection (RESP3, so subscriptions share a multiplexed connection and the
/// crate resubscribes after a reconnect). Messages go to `on_push`, on the connection's task.
pub(crate) async fn connect_pubsub(
    client: &redis::Client,
    options: &ClientOptions,
    on_push: impl Fn(redis::PushInfo) -> std::result::Result<(), redis::aio::SendError> + Send + Sync + 'static,
) -> Result<ConnectionManager> {
    let info = client.get_connection_info().clone();
    let settings = info.redis_settings().clone().set_protocol(ProtocolVersion::RESP3);
    let resp3 = redis::Client::open(info.set_redis_settings(settings))
        .map_err(|e| Error::from_redis("could not configure the pub/sub connection", e))?;
    let config = manager_config(options, Some(options.subscription_timeout))
        .set_push_sender(on_push)
        .set_automatic_resubscription();
    resp3
        .get_connection_manager_with_config(config)
        .await
        .map_err(|e| Error::from_redis("could not open the pub/sub connection", e))
}
