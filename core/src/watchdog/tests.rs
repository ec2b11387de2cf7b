//! The watchdog's unit tests: lease doubt from local time, release tickets, listeners.

use super::*;

fn kind(id: u8) -> &'static HoldKind {
    static A: HoldKind = HoldKind { id: 1, name: "a", renew: |_, _, _| Box::pin(async { Ok(Vec::new()) }) };
    static B: HoldKind = HoldKind { id: 2, name: "b", renew: |_, _, _| Box::pin(async { Ok(Vec::new()) }) };
    if id == 1 {
        &A
    } else {
        &B
    }
}

/// A watchdog with a 30 s lease and a 1 s doubt margin.
fn watchdog() -> Arc<Watchdog> {
    Watchdog::new(Duration::from_secs(30), None, Duration::from_secs(1), Arc::new(Metrics::new(true)))
}

/// A watchdog with a 300 ms lease and a 50 ms doubt margin, for the lease-doubt tests.
fn short_watchdog() -> Arc<Watchdog> {
    Watchdog::new(Duration::from_millis(300), None, Duration::from_millis(50), Arc::new(Metrics::new(true)))
}

/// Records a watchdog-renewed hold of `owner` under `key`, just acquired.
fn hold(wd: &Watchdog, k: u8, key: &HoldKey, owner: &Owner) {
    wd.acquired(kind(k), key.clone(), owner, Duration::from_secs(30), true, Instant::now());
}

/// No renewal task runs here: only local time can say the lease is in doubt. A hold whose
/// lease, counted from its send, ended while the process was paused is lost at the first
/// look, its listener runs at once, and it stays lost.
#[test]
fn a_hold_past_its_doubt_moment_is_lost_at_the_first_look_without_the_timer() {
    let wd = short_watchdog();
    let owner = Owner::new(uuid::Uuid::new_v4(), 1);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    wd.add_listener(LostFilter::all(), Arc::new(move |e: &LostEvent| lock(&h).push(e.reason)));
    let fresh = HoldKey { kind: 1, name: "fresh".into(), owner: 1 };
    wd.acquired(kind(1), fresh.clone(), &owner, Duration::from_millis(300), true, Instant::now());
    assert!(!wd.is_lost(&fresh));
    // Sent 260 ms ago: its lease is proven until 40 ms from now, in doubt since 10 ms ago.
    let sent = Instant::now() - Duration::from_millis(260);
    let paused = HoldKey { kind: 1, name: "paused".into(), owner: 1 };
    wd.acquired(kind(1), paused.clone(), &owner, Duration::from_millis(300), true, sent);
    assert!(wd.is_lost(&paused));
    assert_eq!(*lock(&heard), [LostReason::LeaseDoubt]);
    assert!(wd.is_lost(&paused));
    assert_eq!(lock(&heard).len(), 1, "told once");
    assert!(!wd.is_lost(&fresh));
}

/// A loss a renewal sees while a release is under way waits for the release's outcome; a
/// ticket dropped without an end (an early return, a dropped future) ends it as failed, so
/// the loss is reported then and never held back for good.
#[test]
fn a_dropped_release_ticket_reports_a_loss_seen_meanwhile() {
    let wd = watchdog();
    let owner = Owner::new(uuid::Uuid::new_v4(), 1);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let h = heard.clone();
    wd.add_listener(LostFilter::all(), Arc::new(move |e: &LostEvent| lock(&h).push(e.reason)));
    let key = HoldKey { kind: 1, name: "x".into(), owner: 1 };
    hold(&wd, 1, &key, &owner);
    let generation = lock(&wd.holds)[&key].generation;
    let ticket = wd.start_release(key.clone());
    wd.mark_lost(&key, generation, LostReason::Gone);
    assert!(lock(&heard).is_empty(), "held back while the release may free it");
    drop(ticket);
    assert_eq!(*lock(&heard), [LostReason::Gone]);
    assert!(wd.is_lost(&key));
    // A ticket whose release freed the hold reports nothing more and forgets it.
    let again = HoldKey { kind: 1, name: "y".into(), owner: 1 };
    hold(&wd, 1, &again, &owner);
    assert!(matches!(wd.start_release(again.clone()).freed(), Forgotten::NotHeld));
    assert!(!wd.is_tracked(&again));
    assert_eq!(lock(&heard).len(), 1);
}

/// `valid_for` counts from the send, less the margin; it is zero for a hold past that moment
/// (which it marks lost at once, with no timer) and for one never taken.
#[test]
fn valid_for_is_the_time_local_time_still_proves() {
    let wd = short_watchdog();
    let owner = Owner::new(uuid::Uuid::new_v4(), 1);
    let sent = Instant::now() - Duration::from_millis(100);
    let young = HoldKey { kind: 1, name: "young".into(), owner: 1 };
    wd.acquired(kind(1), young.clone(), &owner, Duration::from_millis(300), true, sent);
    let left = wd.valid_for(&young);
    assert!(left <= Duration::from_millis(150) && left > Duration::from_millis(100), "{left:?}");
    let old = HoldKey { kind: 1, name: "old".into(), owner: 1 };
    let sent = Instant::now() - Duration::from_millis(260);
    wd.acquired(kind(1), old.clone(), &owner, Duration::from_millis(300), true, sent);
    assert_eq!(wd.valid_for(&old), Duration::ZERO);
    assert!(lock(&wd.holds)[&old].lost.is_some(), "marked lost by the look itself");
    let never = HoldKey { kind: 1, name: "never".into(), owner: 1 };
    assert_eq!(wd.valid_for(&never), Duration::ZERO);
}

#[test]
fn lost_events_reach_the_listeners_whose_filter_matches() {
    let wd = watchdog();
    let client = uuid::Uuid::new_v4();
    let (o1, o2) = (Owner::new(client, 1), Owner::new(client, 2));
    let heard = Arc::new(Mutex::new(Vec::new()));
    let listen = |filter: LostFilter, tag: &'static str| {
        let heard = heard.clone();
        wd.add_listener(
            filter,
            Arc::new(move |e: &LostEvent| lock(&heard).push((tag, e.name.to_string(), e.owner.id(), e.kind))),
        )
    };
    listen(LostFilter::all(), "all");
    listen(LostFilter::name("x"), "x");
    let only_o2 = listen(LostFilter::hold("x", &o2), "x/2");
    let key = |name: &str, owner: u64, k: u8| HoldKey { kind: k, name: name.into(), owner };
    for (name, owner, k) in [("x", &o1, 1), ("x", &o2, 2), ("y", &o1, 1)] {
        hold(&wd, k, &key(name, owner.id(), k), owner);
    }
    let generation = |k: &HoldKey| lock(&wd.holds).get(k).map(|h| h.generation).unwrap_or_default();
    for (name, owner, k) in [("x", 1, 1), ("x", 2, 2), ("y", 1, 1)] {
        let hk = key(name, owner, k);
        wd.mark_lost(&hk, generation(&hk), LostReason::Gone);
    }
    let mut got = lock(&heard).clone();
    got.sort();
    assert_eq!(
        got,
        [
            ("all", "x".into(), 1, "a"),
            ("all", "x".into(), 2, "b"),
            ("all", "y".into(), 1, "a"),
            ("x", "x".into(), 1, "a"),
            ("x", "x".into(), 2, "b"),
            ("x/2", "x".into(), 2, "b"),
        ]
    );
    // A hold is lost once; removed listeners hear nothing more.
    assert!(wd.remove_listener(only_o2));
    assert!(!wd.remove_listener(only_o2));
    assert!(wd.is_lost(&key("x", 2, 2)));
    assert!(matches!(wd.forget(&key("x", 2, 2)), Forgotten::Lost));
    assert!(matches!(wd.forget(&key("x", 2, 2)), Forgotten::NotHeld));
}

#[test]
fn a_renewal_racing_a_release_reports_a_loss_only_when_the_release_did_not_free_the_hold() {
    let wd = watchdog();
    let owner = Owner::new(uuid::Uuid::new_v4(), 7);
    let heard = Arc::new(Mutex::new(0));
    let h = heard.clone();
    wd.add_listener(LostFilter::all(), Arc::new(move |_: &LostEvent| *lock(&h) += 1));
    let key = HoldKey { kind: 1, name: "r".into(), owner: 7 };
    let generation = |wd: &Watchdog| lock(&wd.holds).get(&key).map(|h| h.generation).unwrap_or_default();

    // The release freed the lock; the renewal that ran after it saw it gone: no loss.
    hold(&wd, 1, &key, &owner);
    wd.release_started(&key);
    wd.mark_lost(&key, generation(&wd), LostReason::Gone);
    wd.released(&key);
    assert_eq!(*lock(&heard), 0);

    // The release found it not held: it was lost, and the listeners hear of it.
    hold(&wd, 1, &key, &owner);
    wd.release_started(&key);
    wd.mark_lost(&key, generation(&wd), LostReason::Gone);
    assert!(matches!(wd.forget(&key), Forgotten::Lost));
    assert_eq!(*lock(&heard), 1);

    // The release failed (or was a re-entered level): the loss is reported when it ends.
    hold(&wd, 1, &key, &owner);
    wd.release_started(&key);
    wd.mark_lost(&key, generation(&wd), LostReason::LeaseDoubt);
    assert_eq!(*lock(&heard), 1);
    wd.release_ended(&key);
    assert_eq!(*lock(&heard), 2);
    assert!(wd.is_lost(&key));
}

/// An undo whose release failed (nobody sends it again) ends only the level its acquire took:
/// a re-entered hold its owner still holds a level of stays tracked and renewed; a hold with no
/// level left is forgotten, so its lease ends it on the server.
#[test]
fn an_abandoned_undo_ends_its_own_level_only() {
    let wd = watchdog();
    let owner = Owner::new(uuid::Uuid::new_v4(), 1);
    let key = HoldKey { kind: 1, name: "reentered".into(), owner: 1 };
    // The owner's level, then a re-entry nobody was handed (its caller gave up).
    wd.start_acquire(key.clone()).took(kind(1), &owner, Duration::from_secs(30), true, None);
    wd.start_acquire(key.clone()).took(kind(1), &owner, Duration::from_secs(30), true, None);
    wd.start_release(key.clone()).abandoned();
    assert!(wd.is_tracked(&key), "the owner's own level is still held and renewed");
    assert!(!wd.is_lost(&key));
    assert_eq!(lock(&wd.holds)[&key].levels, 1);
    // An undo of the only level: nobody holds it, so nothing renews it.
    wd.start_release(key.clone()).abandoned();
    assert!(!wd.is_tracked(&key));
    // The unsynced acquire's level is counted as nobody's before its undo.
    let fresh = HoldKey { kind: 1, name: "unsynced".into(), owner: 1 };
    wd.start_acquire(fresh.clone()).took(kind(1), &owner, Duration::from_secs(30), true, Some(7));
    wd.start_acquire(fresh.clone()).took_unhanded();
    wd.start_release(fresh.clone()).abandoned();
    assert!(wd.is_tracked(&fresh));
    assert_eq!(wd.token(&fresh), Some(7), "the token of the level still held");
}
