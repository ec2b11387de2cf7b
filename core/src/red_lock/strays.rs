//! Stray tries: member tries a round stopped waiting for, finished in the background. Until
//! one ends, its owner's rounds leave that member alone (`RedInner::strays`).

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};

use super::{give_back, lock_map, RedInner, RedLock};
use crate::error::Result;
use crate::lock::Guard;
use crate::owner::Owner;

impl RedLock {
    /// Lets `tries` (a round's member tries still under way, on the members `pending`) finish
    /// on the first client's runtime, giving back every member one of them takes; until each
    /// ends, its member is a stray of `owner` (see `RedInner::strays`).
    pub(super) fn finish_strays<F>(&self, owner: &Owner, pending: Vec<usize>, mut tries: FuturesUnordered<F>)
    where
        F: std::future::Future<Output = (usize, Result<std::result::Result<Guard, Option<Duration>>>)>
            + Send
            + 'static,
    {
        if tries.is_empty() {
            return;
        }
        {
            let mut strays = lock_map(&self.inner.strays);
            for &i in &pending {
                *strays.entry((owner.id(), i)).or_insert(0) += 1;
            }
        }
        let mut marks = StrayMarks { inner: Arc::downgrade(&self.inner), id: owner.id(), left: pending };
        self.inner.members[0].shared().cleanups().spawn(async move {
            while let Some((i, r)) = tries.next().await {
                if let Ok(Ok(g)) = r {
                    give_back(vec![g]).await;
                }
                marks.end(i);
            }
        });
    }
}

/// The stray marks of one round's unfinished tries, each taken back when its try ends (the
/// rest when the task finishing them is dropped).
struct StrayMarks {
    inner: Weak<RedInner>,
    id: u64,
    left: Vec<usize>,
}

impl StrayMarks {
    fn end(&mut self, i: usize) {
        if let Some(pos) = self.left.iter().position(|&x| x == i) {
            self.left.swap_remove(pos);
            if let Some(inner) = self.inner.upgrade() {
                unmark_stray(&inner, self.id, i);
            }
        }
    }
}

impl Drop for StrayMarks {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.upgrade() {
            for &i in &self.left {
                unmark_stray(&inner, self.id, i);
            }
        }
    }
}

fn unmark_stray(inner: &RedInner, id: u64, i: usize) {
    let mut strays = lock_map(&inner.strays);
    if let Some(n) = strays.get_mut(&(id, i)) {
        *n -= 1;
        if *n == 0 {
            strays.remove(&(id, i));
        }
    }
}
