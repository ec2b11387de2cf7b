//! Queries (read without changing anything) and lost-hold listeners.

use std::sync::Arc;
use std::time::Duration;

use redis::AsyncCommands;

use crate::error::{Error, Result};
use crate::owner::Owner;
use crate::watchdog::{ListenerId, LostEvent, LostFilter};

use super::{Flavor, Lock, Ttl};

impl Lock {
    /// Whether the lock is locked: anyone holds it (`EXISTS`); for the read side of a
    /// read-write lock, whether read holds exist; for the write side, whether it is write
    /// locked (Redisson's answers).
    pub async fn is_locked(&self) -> Result<bool> {
        let name = &self.inner.name;
        let flavor = &self.inner.flavor;
        self.inner
            .shared
            .retrying(|mut c| async move {
                let failed = |e| Error::from_redis("is_locked failed", e);
                match flavor {
                    Flavor::Read { .. } => {
                        let (mode, fields): (Option<String>, i64) = redis::pipe()
                            .hget(&**name, "mode")
                            .hlen(&**name)
                            .query_async(&mut c)
                            .await
                            .map_err(failed)?;
                        // In write mode the fields are the mode, the writer, and its read holds.
                        Ok(match mode.as_deref() {
                            Some("read") => true,
                            Some("write") => fields > 2,
                            _ => false,
                        })
                    }
                    Flavor::Write => {
                        let mode: Option<String> = c.hget(&**name, "mode").await.map_err(failed)?;
                        Ok(mode.as_deref() == Some("write"))
                    }
                    _ => c.exists(&**name).await.map_err(failed),
                }
            })
            .await
    }

    /// Whether `owner` holds the lock (`HEXISTS`; for the write side, its write hold).
    pub async fn is_held(&self, owner: &Owner) -> Result<bool> {
        self.inner.shared.check_owner(owner)?;
        let name = &self.inner.name;
        let field = self.field(owner);
        let field = &*field;
        self.inner
            .shared
            .retrying(|mut c| async move {
                c.hexists(&**name, field).await.map_err(|e| Error::from_redis("HEXISTS failed", e))
            })
            .await
    }

    /// How many times `owner` holds the lock (0 when it does not).
    pub async fn hold_count(&self, owner: &Owner) -> Result<u32> {
        self.inner.shared.check_owner(owner)?;
        let name = &self.inner.name;
        let field = self.field(owner);
        let field = &*field;
        let n: Option<i64> = self
            .inner
            .shared
            .retrying(|mut c| async move {
                c.hget(&**name, field).await.map_err(|e| Error::from_redis("HGET failed", e))
            })
            .await?;
        Ok(n.and_then(|n| u32::try_from(n).ok()).unwrap_or(0))
    }

    /// The remaining lease of the lock key.
    pub async fn remaining_ttl(&self) -> Result<Ttl> {
        let name = &self.inner.name;
        let ms: i64 = self
            .inner
            .shared
            .retrying(|mut c| async move {
                c.pttl(&**name).await.map_err(|e| Error::from_redis("PTTL failed", e))
            })
            .await?;
        Ok(match ms {
            -2 => Ttl::Absent,
            m if m < 0 => Ttl::NoExpiry,
            m => Ttl::Remaining(Duration::from_millis(m as u64)),
        })
    }

    /// Whether the watchdog lost `owner`'s hold (until its release is called).
    pub fn is_lost(&self, owner: &Owner) -> bool {
        self.inner.shared.watchdog().is_lost(&self.key(owner))
    }

    /// How long local time still proves `owner`'s hold: until the send of its last confirmed
    /// renewal (or of its acquire), plus the lease, minus the lease-doubt margin. Zero when
    /// `owner` does not hold it through this client, or the hold is lost or in doubt (which
    /// marks it lost at once). A holder without fencing checks it before each write. No query.
    pub fn valid_for(&self, owner: &Owner) -> Duration {
        self.inner.shared.watchdog().valid_for(&self.key(owner))
    }

    /// Calls `f` (on a library task) when the watchdog loses a hold of this lock (of this
    /// side, for a read-write lock): by `owner` only, or by any owner of this client when
    /// `owner` is `None`. A panicking listener is
    /// caught and logged. Remove it with [`Client::remove_lost_listener`](crate::Client::remove_lost_listener).
    pub fn on_lost(
        &self,
        owner: Option<&Owner>,
        f: impl Fn(&LostEvent) + Send + Sync + 'static,
    ) -> ListenerId {
        let mut filter = match owner {
            Some(o) => LostFilter::hold(self.name(), o),
            None => LostFilter::name(self.name()),
        };
        // The read and write sides of one owner are separate holds with separate listeners.
        filter.kind = Some(self.inner.flavor.kind().name);
        self.inner.shared.watchdog().add_listener(filter, Arc::new(f))
    }

    /// Removes a listener added with [`Lock::on_lost`] (or the client's); false when it was
    /// already removed.
    pub fn remove_lost_listener(&self, id: ListenerId) -> bool {
        self.inner.shared.watchdog().remove_listener(id)
    }
}
