//! Cancel-safety, one mechanism for every primitive.
//!
//! - [`Finish`]: a call that changes Redis (an acquire step, a release) runs to the end even
//!   when its caller drops the future: the rest is handed to a task on the client's runtime.
//! - [`Undo`]: what such a call took (a hold, permits) is handed to the caller in the same
//!   poll that finished the call. Until the caller [`keep`](Undo::keep)s it, dropping it runs
//!   the undo step (a release) on the client's runtime, so a result nobody took is given back.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use tokio::runtime::Handle;

/// A future polled in place by its caller that runs to the end even when the caller drops it:
/// dropped unfinished, it hands the rest of its work to a task on `handle` (its output is then
/// dropped there, which undoes whatever it took: see [`Undo`]). Costs one allocation, where
/// spawning every call up front cost a task and a channel per call.
pub(crate) struct Finish<T: Send + 'static> {
    fut: Option<Pin<Box<dyn Future<Output = T> + Send>>>,
    handle: Handle,
}

impl<T: Send + 'static> Finish<T> {
    /// Wraps `fut`; `handle` is where it finishes when dropped early.
    pub(crate) fn new(handle: &Handle, fut: impl Future<Output = T> + Send + 'static) -> Self {
        Finish { fut: Some(Box::pin(fut)), handle: handle.clone() }
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
            self.handle.spawn(async move {
                drop(fut.await);
            });
        }
    }
}

/// Something taken in Redis that is given back when dropped unless kept: a hold, permits.
#[must_use = "dropping an Undo gives back what it holds"]
pub(crate) struct Undo {
    undo: Option<BoxFuture<'static, ()>>,
    handle: Handle,
}

impl Undo {
    /// `undo` runs on `handle` when this is dropped without [`keep`](Self::keep). It should
    /// log, not fail: nobody is left to report to.
    pub(crate) fn new(handle: &Handle, undo: impl Future<Output = ()> + Send + 'static) -> Self {
        Undo { undo: Some(Box::pin(undo)), handle: handle.clone() }
    }

    /// The caller took what this holds: nothing is given back.
    pub(crate) fn keep(mut self) {
        self.undo = None;
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        if let Some(undo) = self.undo.take() {
            self.handle.spawn(undo);
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
        let handle = Handle::current();
        let done = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let d = done.clone();
        let call = Finish::new(&handle, async move {
            let _ = rx.await;
            d.fetch_add(1, Ordering::SeqCst);
            let d = d.clone();
            // The output gives itself back when nobody takes it.
            Undo::new(&Handle::current(), async move {
                d.fetch_add(10, Ordering::SeqCst);
            })
        });
        drop(call);
        let _ = tx.send(());
        for _ in 0..100 {
            if done.load(Ordering::SeqCst) == 11 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(done.load(Ordering::SeqCst), 11);
    }

    #[tokio::test]
    async fn a_kept_undo_gives_nothing_back() {
        let given_back = Arc::new(AtomicUsize::new(0));
        let g = given_back.clone();
        let undo = Undo::new(&Handle::current(), async move {
            g.fetch_add(1, Ordering::SeqCst);
        });
        undo.keep();
        let g = given_back.clone();
        drop(Undo::new(&Handle::current(), async move {
            g.fetch_add(1, Ordering::SeqCst);
        }));
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(given_back.load(Ordering::SeqCst), 1);
    }
}
