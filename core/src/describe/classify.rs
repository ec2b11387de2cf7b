//! Telling what a snapshot is: the kind of primitive its keys and channels show, and a kind
//! the caller forced.

use super::snapshot::Snapshot;
use super::Kind;

/// Whether `field` looks like an owner: `<something>:<integer>`, optionally `:write` after it
/// (the write hold of a read-write lock).
pub(super) fn owner_field(field: &str) -> bool {
    let owner = field.strip_suffix(":write").unwrap_or(field);
    owner.rsplit_once(':').is_some_and(|(client, id)| {
        !client.is_empty() && !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Whether every field of the hash is an owner with a positive count (and `mode` when `rw`).
pub(super) fn owners_only(fields: &[(String, String)], rw: bool) -> bool {
    fields.iter().all(|(f, v)| {
        if rw && f == "mode" {
            return v == "read" || v == "write";
        }
        owner_field(f) && v.parse::<u64>().is_ok_and(|n| n > 0)
    })
}

/// Subscribers of the semaphore and latch channels, where they decide a STRING's kind.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct CountSubscribers {
    pub(super) semaphore: u64,
    pub(super) latch: u64,
    /// On the reentrant lock's channel (a fair lock's waiters each have their own).
    pub(super) lock: u64,
}

/// The kind of what `s` read, with remarks.
pub(super) fn classify(s: &Snapshot, subs: CountSubscribers) -> (Kind, Vec<String>) {
    let mut notes = Vec::new();
    let queued = s.queue.is_some() || s.deadlines.is_some();
    let kind = match s.redis_type.as_str() {
        "hash" => match (&s.mode, &s.fields) {
            (Some(m), Some(f)) if (m == "read" || m == "write") && owners_only(f, true) => {
                Kind::ReadWriteLock
            }
            (Some(m), None) if m == "read" || m == "write" => {
                notes.push(format!("{} fields: holders not listed", s.hash_len));
                Kind::ReadWriteLock
            }
            (None, Some(f)) if owners_only(f, false) => {
                if s.token.is_some() {
                    Kind::FencedLock
                } else if queued {
                    Kind::FairLock
                } else {
                    if subs.lock == 0 {
                        notes.push(
                            "a reentrant lock, or a fair lock that nobody waits for (they look the same)"
                                .into(),
                        );
                    }
                    Kind::Lock
                }
            }
            _ => Kind::Other,
        },
        "string" => match s.integer() {
            None => Kind::Other,
            Some(_) if s.permits.is_some() => Kind::PermitExpirableSemaphore,
            Some(_) => match (subs.semaphore > 0, subs.latch > 0) {
                (true, false) => Kind::Semaphore,
                (false, true) => Kind::CountDownLatch,
                _ => {
                    notes.push(
                        "a semaphore or a count-down latch (or a permit-expirable semaphore with no permit \
                         held): nobody waits on either channel to tell them apart"
                            .into(),
                    );
                    Kind::SemaphoreOrLatch
                }
            },
        },
        "none" if s.token.is_some() => {
            notes.push("free; the token counter stays for good (Redisson's layout)".into());
            Kind::FencedLock
        }
        "none" if queued => Kind::FairLock,
        "none" if s.permits.is_some() => Kind::PermitExpirableSemaphore,
        "none" => Kind::None,
        _ => Kind::Other,
    };
    (kind, notes)
}

/// The kind to report when the caller asked for `forced`: it replaces `found` within its
/// family (locks; counts) and when nothing was found; otherwise `found` stays, with a note.
pub(super) fn force(found: Kind, forced: Kind, notes: &mut Vec<String>) -> Kind {
    let fits = found == forced
        || found == Kind::None
        || (found.is_lock() && forced.is_lock())
        || (found.is_count() && forced.is_count());
    if fits {
        if found != forced {
            notes.push(format!("read as a {forced} as asked (found: {found})"));
        }
        forced
    } else {
        notes.push(format!("not read as a {forced} as asked: the name holds a {found}"));
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::Kind;

    fn snap(t: &str) -> Snapshot {
        Snapshot { redis_type: t.into(), pttl: -2, ..Default::default() }
    }

    fn fields(f: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
        Some(f.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect())
    }

    #[test]
    fn kinds_follow_the_keys() {
        let none = CountSubscribers::default();
        let mut s = snap("hash");
        s.fields = fields(&[("7c1e:1", "2")]);
        assert_eq!(classify(&s, none).0, Kind::Lock);
        s.token = Some("3".into());
        assert_eq!(classify(&s, none).0, Kind::FencedLock);
        s.token = None;
        s.queue = Some(vec!["u:2".into()]);
        assert_eq!(classify(&s, none).0, Kind::FairLock);
        let mut rw = snap("hash");
        rw.mode = Some("write".into());
        rw.fields = fields(&[("mode", "write"), ("u:1:write", "1"), ("u:1", "2")]);
        assert_eq!(classify(&rw, none).0, Kind::ReadWriteLock);
        let mut user = snap("hash");
        user.fields = fields(&[("email", "a@b")]);
        assert_eq!(classify(&user, none).0, Kind::Other);

        let mut st = snap("string");
        st.value = Some("3".into());
        assert_eq!(classify(&st, none).0, Kind::SemaphoreOrLatch);
        assert_eq!(classify(&st, CountSubscribers { semaphore: 1, ..none }).0, Kind::Semaphore);
        assert_eq!(classify(&st, CountSubscribers { latch: 2, ..none }).0, Kind::CountDownLatch);
        st.permits = Some(vec![]);
        assert_eq!(classify(&st, none).0, Kind::PermitExpirableSemaphore);
        let mut text = snap("string");
        text.value = Some("hello".into());
        assert_eq!(classify(&text, none).0, Kind::Other);

        let mut free = snap("none");
        assert_eq!(classify(&free, none).0, Kind::None);
        free.token = Some("9".into());
        assert_eq!(classify(&free, none).0, Kind::FencedLock);
        assert_eq!(classify(&snap("list"), none).0, Kind::Other);
    }

    #[test]
    fn forcing_stays_within_a_family() {
        let mut notes = vec![];
        assert_eq!(force(Kind::SemaphoreOrLatch, Kind::CountDownLatch, &mut notes), Kind::CountDownLatch);
        assert_eq!(force(Kind::None, Kind::Semaphore, &mut notes), Kind::Semaphore);
        assert_eq!(force(Kind::Lock, Kind::FairLock, &mut notes), Kind::FairLock);
        assert_eq!(force(Kind::Lock, Kind::Semaphore, &mut notes), Kind::Lock);
        assert_eq!(notes.len(), 4);
    }
}
