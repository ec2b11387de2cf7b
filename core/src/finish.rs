//! Cancel-safety, one mechanism for every primitive.
//!
//! - [`Finish`]: a call that changes Redis (an acquire step, a release) runs to the end even
//!   when its caller drops the future: the rest is handed to a task on the client's runtime.
//! - [`Undo`]: what such a call took (a hold, permits) is handed to the caller in the same
//!   poll that finished the call. Until the caller [`keep`](Undo::keep)s it, dropping it runs
//!   the undo step (a release) on the client's runtime, so a result nobody took is given back.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::runtime::Handle;
use tokio::sync::Notify;

/// Where the rest of abandoned calls runs: a client's runtime, counting what is under way so
/// that a process about to exit can wait for it ([`Cleanups::settle`]).
#[derive(Clone)]
pub(crate) struct Cleanups {
    handle: Handle,
    running: Arc<(AtomicUsize, Notify)>,
}

impl Cleanups {
    pub(crate) fn new(handle: Handle) -> Self {
        Cleanups { handle, running: Arc::new((AtomicUsize::new(0), Notify::new())) }
    }

    pub(crate) fn spawn(&self, fut: impl Future<Output = ()> + Send + 'static) {
        let running = self.running.clone();
        running.0.fetch_add(1, Ordering::SeqCst);
        // Counted down when the task ends or is dropped unfinished (a runtime shutting down).
        struct Done(Arc<(AtomicUsize, Notify)>);
        impl Drop for Done {
            fn drop(&mut self) {
                if self.0 .0.fetch_sub(1, Ordering::SeqCst) == 1 {
                    self.0 .1.notify_waiters();
                }
            }
        }
        let done = Done(running);
        self.handle.spawn(async move {
            fut.await;
            drop(done);
        });
    }

    /// Waits until every clean-up under way has ended, or `limit` passed; true when none is
    /// left.
    pub(crate) async fn settle(&self, limit: Duration) -> bool {
        let (count, notify) = &*self.running;
        let wait = async {
            loop {
                let ended = notify.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                if count.load(Ordering::SeqCst) == 0 {
                    return;
                }
                ended.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }
}

/// A future polled in place by its caller that runs to the end even when the caller drops it:
/// dropped unfinished, it hands the rest of its work to a task on `handle` (its output is then
/// dropped there, which undoes whatever it took: see [`Undo`]). Costs one allocation, where
/// spawning every call up front cost a task and a channel per call.
pub(crate) struct Finish<T: Send + 'static> {
    fut: Option<Pin<Box<dyn Future<Output = T> + Send>>>,
    cleanups: Cleanups,
}

impl<T: Send + 'static> Finish<T> {
    /// Wraps `fut`; `cleanups` is where it finishes when dropped early.
    pub(crate) fn new(cleanups: &Cleanups, fut: impl Future<Output = T> + Send + 'static) -> Self {
        Finish { fut: Some(Box::pin(fut)), cleanups: cleanups.clone() }
    }
}

impl<T: Send + 'static> Future for Finish<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let Some(fut) = self.fut.as_mut() else {
            // Only polled again after completion by a caller that ignores the contract.
            return Poll::Pending;
        };
        let out = fut.as_mut().poll(cx);
        if out.is_ready() {
            self.fut = None;
        }
        out
    }
}

impl<T: Send + 'static> Drop for Finish<T> {
    fn drop(&mut self) {
        if let Some(fut) = self.fut.take() {
            // An unfinished call: let it finish on the client's runtime.
            self.cleanups.spawn(async move {
                drop(fut.await);
            });
        }
    }
}

/// Something taken in Redis that is given back when dropped unless kept: a hold, permits.
#[must_use = "dropping an Undo gives back what it holds"]
pub(crate) struct Undo {
    undo: Option<BoxFuture<'static, ()>>,
    cleanups: Cleanups,
}

impl Undo {
    /// `undo` runs on `cleanups` when this is dropped without [`keep`](Self::keep). It should
    /// log, not fail: nobody is left to report to.
    pub(crate) fn new(cleanups: &Cleanups, undo: impl Future<Output = ()> + Send + 'static) -> Self {
        Undo { undo: Some(Box::pin(undo)), cleanups: cleanups.clone() }
    }

    /// The caller took what this holds: nothing is given back.
    pub(crate) fn keep(mut self) {
        self.undo = None;
    }

    /// Gives back now and waits until that is done (run to the end even when this future is
    /// dropped).
    pub(crate) async fn now(mut self) {
        if let Some(undo) = self.undo.take() {
            Finish::new(&self.cleanups, undo).await;
        }
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        if let Some(undo) = self.undo.take() {
            self.cleanups.spawn(undo);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[tokio::test]
    async fn a_dropped_finish_runs_to_the_end_and_drops_its_output_there() {
        let cleanups = Cleanups::new(Handle::current());
        let done = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let d = done.clone();
        let inner = cleanups.clone();
        let call = Finish::new(&cleanups, async move {
            let _ = rx.await;
            d.fetch_add(1, Ordering::SeqCst);
            let d = d.clone();
            // The output gives itself back when nobody takes it.
            Undo::new(&inner, async move {
                d.fetch_add(10, Ordering::SeqCst);
            })
        });
        drop(call);
        let _ = tx.send(());
        assert!(cleanups.settle(Duration::from_secs(5)).await, "the finish and its undo ran");
        assert_eq!(done.load(Ordering::SeqCst), 11);
    }

    #[tokio::test]
    async fn a_kept_undo_gives_nothing_back() {
        let cleanups = Cleanups::new(Handle::current());
        let given_back = Arc::new(AtomicUsize::new(0));
        let g = given_back.clone();
        let undo = Undo::new(&cleanups, async move {
            g.fetch_add(1, Ordering::SeqCst);
        });
        undo.keep();
        let g = given_back.clone();
        drop(Undo::new(&cleanups, async move {
            g.fetch_add(1, Ordering::SeqCst);
        }));
        assert!(cleanups.settle(Duration::from_secs(5)).await);
        assert_eq!(given_back.load(Ordering::SeqCst), 1);
    }
}
