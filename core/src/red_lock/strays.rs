//! Stray tries: member tries a round stopped waiting for, finished in the background. Until
//! one ends, its owner's rounds leave that member alone, through any RedLock handle of the
//! member's client (the marks live on the client: users make a new handle for every acquire).
//!
//! Why: a member's hold count is the owner's, shared by every try. Two tries of one owner in
//! flight on one member (a stopped server answering both at once when it resumes) count two
//! levels; when one of them then times out on the client just as the other's answer made the
//! hold known, the timed-out one is taken for a re-entry and not given back, and its level is
//! left renewed for good (seen in the chaos suite after a SIGCONT).

use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};

use super::{give_back, RedLock};
use crate::error::Result;
use crate::lock::{Guard, Lock};
use crate::owner::Owner;

impl RedLock {
    /// Lets `tries` (a round's member tries still under way, on the members `pending`) finish
    /// on the first client's runtime, giving back every member one of them takes; until each
    /// ends, its member is a stray of `owner` on its client (see [`Lock::stray_since`]).
    /// `had[i]`: whether `owner` held member `i` when the round began (else what is tracked
    /// there meanwhile is the stray's: [`Lock::stray_alone`]).
    pub(super) fn finish_strays<F>(
        &self,
        owner: &Owner,
        pending: Vec<usize>,
        had: &[bool],
        mut tries: FuturesUnordered<F>,
    ) where
        F: std::future::Future<Output = (usize, Result<std::result::Result<Guard, Option<Duration>>>)>
            + Send
            + 'static,
    {
        if tries.is_empty() {
            return;
        }
        let left: Vec<(usize, Lock, Owner)> = pending
            .into_iter()
            .map(|i| {
                let member = self.inner.members[i].clone();
                let o = self.owner_on(i, owner);
                member.stray_started(&o, !had[i]);
                (i, member, o)
            })
            .collect();
        let mut marks = StrayMarks { left };
        self.inner.members[0].shared().cleanups().spawn(async move {
            while let Some((i, r)) = tries.next().await {
                if let Ok(Ok(g)) = r {
                    // The member answered: what is left is the give-back, asked only now.
                    marks.answered(i);
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
    left: Vec<(usize, Lock, Owner)>,
}

impl StrayMarks {
    /// The try on member `i` answered (see [`Lock::stray_answered`]).
    fn answered(&self, i: usize) {
        if let Some((_, member, o)) = self.left.iter().find(|(x, _, _)| *x == i) {
            member.stray_answered(o);
        }
    }

    fn end(&mut self, i: usize) {
        if let Some(pos) = self.left.iter().position(|(x, _, _)| *x == i) {
            let (_, member, o) = self.left.swap_remove(pos);
            member.stray_ended(&o);
        }
    }
}

impl Drop for StrayMarks {
    fn drop(&mut self) {
        for (_, member, o) in self.left.drain(..) {
            member.stray_ended(&o);
        }
    }
}
