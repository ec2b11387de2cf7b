//! The retry policy of the connection layer: which errors may go away by trying again, and
//! the loop that tries again.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::error::{Error, ErrorKind, Result};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn transient_kinds() {
        assert!(is_transient(&Error::new(ErrorKind::Connection, "x")));
        assert!(is_transient(&Error::new(ErrorKind::Timeout, "x")));
        assert!(!is_transient(&Error::new(ErrorKind::Redis, "x")));
        assert!(!is_transient(&Error::new(ErrorKind::InvalidArgument, "x")));
    }

    #[tokio::test(start_paused = true)]
    async fn retries_transient_errors_then_gives_up() {
        let calls = AtomicU32::new(0);
        let r: Result<()> = retry_transient(2, Duration::from_millis(10), None, || async {
            calls.fetch_add(1, Ordering::Relaxed);
            Err(Error::new(ErrorKind::Connection, "down"))
        })
        .await;
        assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::Connection));
        assert_eq!(calls.load(Ordering::Relaxed), 3);
        // A non-transient error is returned at once.
        calls.store(0, Ordering::Relaxed);
        let r: Result<()> = retry_transient(5, Duration::from_millis(10), None, || async {
            calls.fetch_add(1, Ordering::Relaxed);
            Err(Error::new(ErrorKind::Redis, "WRONGTYPE"))
        })
        .await;
        assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::Redis));
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_closed_token_stops_the_retries() {
        let token = CancellationToken::new();
        token.cancel();
        let r: Result<()> =
            retry_transient(5, Duration::from_secs(1), Some(&token), || async { Ok(()) }).await;
        assert_eq!(r.map_err(|e| e.kind()), Err(ErrorKind::Closed));
    }
}
