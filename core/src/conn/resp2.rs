//! A pub/sub connection in RESP2, for an endpoint that refuses `HELLO 3` but has `SUBSCRIBE`
//! (Tencent Cloud's proxy, a Redis Cloud database set to RESP2): a connection in subscriber
//! mode whose messages a task hands to the same push handler as RESP3 pushes. Unlike the RESP3
//! `ConnectionManager`, it does not reconnect by itself: when it stops answering, the pub/sub
//! loop opens a new one and subscribes its channels again (`Subscriber::reopen`).

use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::PubSubSink;
use redis::{PushInfo, PushKind, RedisResult, Value};

use super::open::PushHandler;
use crate::error::{Error, Result};

/// The channel the connect-time probe subscribes to and leaves at once (nothing publishes on
/// it).
const PROBE_CHANNEL: &str = "rlock:probe:subscribe";

/// A RESP2 subscriber connection: its sink, and the task that hands its messages on (stopped
/// when this is dropped).
pub(crate) struct Resp2Subscriber {
    sink: PubSubSink,
    forward: tokio::task::JoinHandle<()>,
}

impl Drop for Resp2Subscriber {
    fn drop(&mut self) {
        self.forward.abort();
    }
}

impl Resp2Subscriber {
    /// Opens a RESP2 subscriber connection to the server `client` names, messages to
    /// `on_push`. `Ok(None)` when the endpoint refuses `SUBSCRIBE` (an error answer, the
    /// connection closed, or no answer within `timeout`: twemproxy closes the connection);
    /// fails only when no connection can be opened.
    pub(crate) async fn open(
        client: &redis::Client,
        on_push: PushHandler,
        timeout: Duration,
    ) -> Result<Option<Resp2Subscriber>> {
        let pubsub = tokio::time::timeout(timeout, client.get_async_pubsub())
            .await
            .map_err(|_| {
                Error::new(crate::error::ErrorKind::Timeout, "opening the pub/sub connection timed out")
            })?
            .map_err(|e| Error::from_redis("could not open the pub/sub connection", e))?;
        let (mut sink, mut stream) = pubsub.split();
        let forward = tokio::spawn(async move {
            while let Some(msg) = stream.next().await {
                let data = vec![
                    Value::BulkString(msg.get_channel_name().as_bytes().to_vec()),
                    Value::BulkString(msg.get_payload_bytes().to_vec()),
                ];
                on_push(PushInfo { kind: PushKind::Message, data });
            }
        });
        let probe = async {
            sink.subscribe(PROBE_CHANNEL).await?;
            sink.unsubscribe(PROBE_CHANNEL).await
        };
        let refused = match tokio::time::timeout(timeout, probe).await {
            Ok(Ok(())) => return Ok(Some(Resp2Subscriber { sink, forward })),
            Ok(Err(e)) => format!("refused SUBSCRIBE ({e})"),
            Err(_) => "did not answer SUBSCRIBE".to_owned(),
        };
        log::warn!("rlock: the endpoint {refused}: no pub/sub here, so waiters poll");
        forward.abort();
        Ok(None)
    }

    /// Subscribes to `names`.
    pub(crate) async fn subscribe(&mut self, names: &[&str]) -> RedisResult<()> {
        self.sink.subscribe(names).await
    }

    /// Unsubscribes from `names`.
    pub(crate) async fn unsubscribe(&mut self, names: &[&str]) -> RedisResult<()> {
        self.sink.unsubscribe(names).await
    }

    /// Whether the connection answers a PING (in subscriber mode) within `timeout`.
    pub(crate) async fn answers(&self, timeout: Duration) -> bool {
        let mut sink = self.sink.clone();
        matches!(tokio::time::timeout(timeout, sink.ping::<Value>()).await, Ok(Ok(_)))
    }
}
