//! Core calls polled on one thread of the surface's choosing, woken from any thread through one
//! ready list and a bell.
//!
//! Node's event loop and an asyncio loop each live on one thread. Running their calls as tasks
//! on a tokio worker costs a hop to the worker and another back for every call; instead the
//! surface keeps its calls in a [`LocalCalls`] on its own thread and polls them there: once when
//! the call is made (its request goes out at once) and again when woken. The tokio runtime still
//! runs the connections and timers. A waker, on any thread, adds its call to the ready list and
//! rings the bell only when the list was empty, so a burst of replies costs the surface's thread
//! one wake-up ([`LocalCalls::woken`] then hands over every call to poll).
//!
//! The bell is the surface's: Node calls a threadsafe function, Python writes to a socket pair
//! its loop watches. It is rung under the ready list's lock and never after [`Closer::close`],
//! so a surface can free what the bell uses once it has closed the list.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use tokio::runtime::Handle;

/// A call kept by [`LocalCalls`]: a core future, boxed.
pub type LocalCall<O> = Pin<Box<dyn Future<Output = O> + Send>>;

/// Names one call of a [`LocalCalls`]. A key of a call that ended names nothing, even when its
/// slot holds a newer call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallKey {
    slot: usize,
    generation: u64,
}

/// The message a surface gives its caller for [`Polled::Panicked`].
pub const PANIC_MESSAGE: &str = "internal error in rlock (a bug: please report it)";

/// Below this many pending calls (a surface's link drivers not counted), a surface writes each
/// call's request at once, so Redis works on it while the thread makes the next (measured best
/// with 1 and 16 owners on Node and on asyncio); with more, it writes every few calls and lets
/// the drain write the rest, so one write carries several ([`LocalCalls::flush_for_call`]).
pub const FLUSH_ALONE_BELOW: usize = 17;

/// Polls woken calls until a take finds none, which ends the drain the surface began
/// ([`LocalCalls::begin_drain`]): a reply a local link's driver reads meanwhile wakes its call
/// into the same drain, with no bell, and polling a woken driver writes every request queued
/// so far. `woken` takes the ready list ([`LocalCalls::woken`]; None when the surface's calls
/// are gone), `poll` polls one call; the two are the surface's because polling a call completes
/// the surface's own future or promise, outside any borrow of its [`LocalCalls`].
pub fn drain_woken(mut woken: impl FnMut() -> Option<Vec<CallKey>>, mut poll: impl FnMut(CallKey)) {
    while let Some(keys) = woken().filter(|keys| !keys.is_empty()) {
        for key in keys {
            poll(key);
        }
    }
}

/// What polling a call gave.
#[derive(Debug)]
pub enum Polled<O, T> {
    /// Not finished; it is polled again after its waker fires.
    Pending,
    /// Finished with this output; the call is gone and its data is given back.
    Ready(O, T),
    /// The call panicked (a bug in core); it is gone and its data is given back. The surface
    /// fails the call with [`PANIC_MESSAGE`].
    Panicked(T),
}

/// The ready list wakers add to, and the bell.
struct Ready {
    woken: Mutex<Woken>,
    bell: Box<dyn Fn() + Send + Sync>,
}

struct Woken {
    keys: Vec<CallKey>,
    closed: bool,
    /// The surface's thread is polling woken calls until the list is empty: no bell needed.
    draining: bool,
}

impl Ready {
    fn lock(&self) -> std::sync::MutexGuard<'_, Woken> {
        self.woken.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Wakes one call: adds it to the ready list, ringing the bell when the list was empty.
struct CallWaker {
    ready: Arc<Ready>,
    key: CallKey,
}

impl Wake for CallWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut woken = self.ready.lock();
        if woken.closed {
            return;
        }
        woken.keys.push(self.key);
        if woken.keys.len() == 1 && !woken.draining {
            (self.ready.bell)();
        }
    }
}

/// Closes a [`LocalCalls`]'s ready list from anywhere: its bell is never rung again.
#[derive(Clone)]
pub struct Closer(Arc<Ready>);

impl Closer {
    /// From now on wakers ring no bell (a bell being rung finishes first).
    pub fn close(&self) {
        self.0.lock().closed = true;
    }
}

struct Slot<O, T> {
    call: LocalCall<O>,
    waker: Waker,
    data: T,
    generation: u64,
    /// A local link's driver ([`LocalCalls::link`]), not a call the surface's user made.
    background: bool,
}

/// The pending calls of one thread, each with data of the surface's (the promise or future to
/// complete). Used from that thread only; its wakers from anywhere.
pub struct LocalCalls<O, T> {
    ready: Arc<Ready>,
    slots: Vec<Option<Slot<O, T>>>,
    free: Vec<usize>,
    generation: u64,
    /// How many of the pending calls are background calls (links' drivers).
    background: usize,
    /// Calls counted by [`Self::flush_for_call`] since the last drain began.
    unflushed: usize,
    /// The clients (by id) that tried to link on this thread, each with its link's driver
    /// (`None`: the client cannot have one).
    linked: Vec<(u128, Option<CallKey>)>,
}

impl<O, T> LocalCalls<O, T> {
    /// No calls yet; `bell` is rung (from any thread) when a call is woken and the ready list
    /// was empty.
    pub fn new(bell: impl Fn() + Send + Sync + 'static) -> Self {
        let ready = Arc::new(Ready {
            woken: Mutex::new(Woken { keys: Vec::new(), closed: false, draining: false }),
            bell: Box::new(bell),
        });
        LocalCalls {
            ready,
            slots: Vec::new(),
            free: Vec::new(),
            generation: 0,
            background: 0,
            unflushed: 0,
            linked: Vec::new(),
        }
    }

    /// Keeps `call` with `data` until it ends or is cancelled. It is not polled here: the
    /// surface polls it once right away (so its request goes out in the call), then on wake-ups.
    pub fn add(&mut self, call: LocalCall<O>, data: T) -> CallKey {
        self.keep(call, data, false)
    }

    fn keep(&mut self, call: LocalCall<O>, data: T, background: bool) -> CallKey {
        self.generation += 1;
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        let key = CallKey { slot, generation: self.generation };
        let waker = Waker::from(Arc::new(CallWaker { ready: self.ready.clone(), key }));
        self.slots[slot] = Some(Slot { call, waker, data, generation: key.generation, background });
        self.background += usize::from(background);
        key
    }

    /// How many calls are pending.
    pub fn pending(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// How many calls are pending, links' drivers not counted: the calls the surface's user
    /// made.
    pub fn foreground(&self) -> usize {
        self.pending() - self.background
    }

    /// Counts a call the surface is about to add and says whether its request goes out at once.
    /// With fewer than [`FLUSH_ALONE_BELOW`] foreground calls pending it does, so Redis works
    /// on it while the thread makes the next; with more, only every `flush_every`th call's
    /// does (writing what is queued), and the bell's drain writes the rest, so one write
    /// carries several. When it does, a drain begins ([`Self::begin_drain`]), which the
    /// surface ends right after adding and polling the call.
    pub fn flush_for_call(&mut self, flush_every: usize) -> bool {
        self.unflushed += 1;
        let flush = self.foreground() < FLUSH_ALONE_BELOW || self.unflushed >= flush_every;
        if flush {
            self.begin_drain();
        }
        flush
    }

    /// Whether client `id` tried to link on this thread already ([`Self::link`]).
    pub fn is_linked(&self, id: u128) -> bool {
        self.linked.iter().any(|(c, _)| *c == id)
    }

    /// Records that client `id` tried to link on this thread, with its link's driver and data
    /// when it got one: kept as a background call, which [`Self::foreground`] does not count,
    /// until it ends (its client closed) or [`Self::unlink_all`]. The driver's key, for the
    /// surface to poll it once (it connects).
    pub fn link(&mut self, id: u128, driver: Option<(LocalCall<O>, T)>) -> Option<CallKey> {
        let key = driver.map(|(call, data)| self.keep(call, data, true));
        self.linked.push((id, key));
        key
    }

    /// The links' drivers ([`Self::link`]).
    pub fn links(&self) -> impl Iterator<Item = CallKey> + '_ {
        self.linked.iter().filter_map(|(_, key)| *key)
    }

    /// Forgets the link whose driver `key` ended, so its client may link again.
    pub fn unlink(&mut self, key: CallKey) {
        self.linked.retain(|(_, k)| *k != Some(key));
    }

    /// Forgets every link and takes their drivers out unfinished, with their data ([`Self::take`]):
    /// for a surface whose links end (its event loop changed).
    pub fn unlink_all(&mut self) -> Vec<(LocalCall<O>, T)> {
        let keys: Vec<CallKey> =
            std::mem::take(&mut self.linked).into_iter().filter_map(|(_, k)| k).collect();
        keys.into_iter().filter_map(|k| self.take(k)).collect()
    }

    /// Polls call `key` once inside `runtime`'s context (core futures use its timers, and a
    /// call dropped unfinished hands its clean-up to a task). None when `key` names no pending
    /// call (it ended or was cancelled: a stale wake-up). A panic is caught here: it must not
    /// unwind into the surface's host.
    pub fn poll(&mut self, key: CallKey, runtime: &Handle) -> Option<Polled<O, T>> {
        let _context = runtime.enter();
        let s = self.slots.get_mut(key.slot)?.as_mut().filter(|s| s.generation == key.generation)?;
        let polled = catch_unwind(AssertUnwindSafe(|| {
            crate::conn::local::polling_call(|| s.call.as_mut().poll(&mut Context::from_waker(&s.waker)))
        }));
        let output = match polled {
            Ok(Poll::Pending) => return Some(Polled::Pending),
            Ok(Poll::Ready(output)) => Some(output),
            Err(_) => None,
        };
        let Slot { call, data, .. } = self.remove(key.slot);
        let _ = catch_unwind(AssertUnwindSafe(|| drop(call)));
        Some(match output {
            Some(output) => Polled::Ready(output, data),
            None => Polled::Panicked(data),
        })
    }

    /// [`Self::poll`] for a surface that fails a call that panicked with
    /// `panicked(`[`PANIC_MESSAGE`]`)`: once the call ended, its data and output; None while it
    /// is pending (or when `key` names no pending call).
    pub fn poll_ended(
        &mut self,
        key: CallKey,
        runtime: &Handle,
        panicked: impl FnOnce(&str) -> O,
    ) -> Option<(T, O)> {
        match self.poll(key, runtime)? {
            Polled::Pending => None,
            Polled::Ready(output, data) => Some((data, output)),
            Polled::Panicked(data) => Some((data, panicked(PANIC_MESSAGE))),
        }
    }

    /// Drops call `key` unfinished (core calls are cancel-safe) inside `runtime`'s context and
    /// gives back its data; None when it already ended.
    pub fn cancel(&mut self, key: CallKey, runtime: &Handle) -> Option<T> {
        let (call, data) = self.take(key)?;
        let _context = runtime.enter();
        drop(call);
        Some(data)
    }

    /// Takes call `key` out unfinished, with its data; None when it already ended. For a
    /// surface that must drop the call later (inside the runtime's context), when dropping it
    /// runs the surface's own code (a local link's watcher).
    pub fn take(&mut self, key: CallKey) -> Option<(LocalCall<O>, T)> {
        self.slots.get(key.slot)?.as_ref().filter(|s| s.generation == key.generation)?;
        let Slot { call, data, .. } = self.remove(key.slot);
        Some((call, data))
    }

    /// Takes the ready list: the calls woken since the last time, to poll. An empty list ends
    /// a drain ([`Self::begin_drain`]).
    pub fn woken(&self) -> Vec<CallKey> {
        let mut woken = self.ready.lock();
        if woken.keys.is_empty() {
            woken.draining = false;
        }
        std::mem::take(&mut woken.keys)
    }

    /// The surface's thread starts polling woken calls and goes on ([`Self::woken`], then
    /// polling each) until the list it takes is empty. Until then wakers ring no bell: a
    /// waker on this thread (a reply read by a local link's driver) or elsewhere only adds
    /// to the list the drain takes next, which saves the surface a wake-up it does not need.
    /// The drain writes every queued request: [`Self::flush_for_call`] counts from here.
    pub fn begin_drain(&mut self) {
        self.unflushed = 0;
        self.ready.lock().draining = true;
    }

    /// Takes from the ready list those of `keys` that are in it, leaving the others: for a
    /// surface that polls only some calls now (a link's driver, to write a request), then
    /// [`Self::end_drain`].
    pub fn woken_of(&self, keys: &[CallKey]) -> Vec<CallKey> {
        let mut woken = self.ready.lock();
        let mut taken = Vec::new();
        woken.keys.retain(|k| {
            if !keys.contains(k) {
                return true;
            }
            if !taken.contains(k) {
                taken.push(*k);
            }
            false
        });
        taken
    }

    /// Ends a drain ([`Self::begin_drain`]) without taking the ready list: for a surface that
    /// polled only some calls ([`Self::woken_of`]). Calls woken meanwhile are left to the bell,
    /// rung now if there are any.
    pub fn end_drain(&self) {
        let mut woken = self.ready.lock();
        woken.draining = false;
        if !woken.keys.is_empty() && !woken.closed {
            (self.ready.bell)();
        }
    }

    /// A handle that closes the ready list (see [`Closer::close`]).
    pub fn closer(&self) -> Closer {
        Closer(self.ready.clone())
    }

    fn remove(&mut self, slot: usize) -> Slot<O, T> {
        self.free.push(slot);
        let removed = self.slots[slot].take().unwrap_or_else(|| unreachable!("checked by the caller"));
        self.background -= usize::from(removed.background);
        removed
    }
}

impl<O: Send + 'static, T: Send + 'static> LocalCalls<O, T> {
    /// Hands the pending calls to a task on `runtime` that drops them: for a thread that ends
    /// with calls pending, where the runtime's context can no longer be entered (thread-local
    /// destructors).
    pub fn drop_pending_on(&mut self, runtime: &Handle) {
        let slots = std::mem::take(&mut self.slots);
        self.free.clear();
        self.background = 0;
        if slots.iter().any(Option::is_some) {
            runtime.spawn(async move { drop(slots) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().build().unwrap_or_else(|e| unreachable!("{e}"))
    }

    /// A runtime, a bell count, and calls whose bell adds to it.
    fn setup() -> (tokio::runtime::Runtime, Arc<AtomicUsize>, LocalCalls<u32, &'static str>) {
        let rings = Arc::new(AtomicUsize::new(0));
        let bell = rings.clone();
        let calls = LocalCalls::new(move || {
            bell.fetch_add(1, Ordering::SeqCst);
        });
        (runtime(), rings, calls)
    }

    /// A call waiting for a value, polled once (pending), and the sender that wakes it.
    fn pending(
        calls: &mut LocalCalls<u32, &'static str>,
        rt: &tokio::runtime::Runtime,
        name: &'static str,
    ) -> (tokio::sync::oneshot::Sender<u32>, CallKey) {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let key = calls.add(Box::pin(async move { rx.await.unwrap_or(0) }), name);
        assert!(matches!(calls.poll(key, rt.handle()), Some(Polled::Pending)));
        (tx, key)
    }

    #[test]
    fn calls_wake_through_one_bell_and_end_once() {
        let (rt, rings, mut calls) = setup();
        let (tx_a, a) = pending(&mut calls, &rt, "a");
        let (tx_b, b) = pending(&mut calls, &rt, "b");
        assert_eq!((calls.pending(), rings.load(Ordering::SeqCst)), (2, 0));

        // Two wake-ups, one bell; both calls in the ready list.
        tx_a.send(1).unwrap_or_else(|_| unreachable!());
        tx_b.send(2).unwrap_or_else(|_| unreachable!());
        assert_eq!(rings.load(Ordering::SeqCst), 1);
        assert_eq!(calls.woken(), vec![a, b]);
        assert!(matches!(calls.poll(a, rt.handle()), Some(Polled::Ready(1, "a"))));
        assert!(matches!(calls.poll(b, rt.handle()), Some(Polled::Ready(2, "b"))));
        assert_eq!(calls.pending(), 0);

        // An ended call's key names nothing, also once its slot holds a new call.
        assert!(calls.poll(a, rt.handle()).is_none());
        let c = calls.add(Box::pin(std::future::pending()), "c");
        assert!(calls.poll(a, rt.handle()).is_none() && calls.cancel(b, rt.handle()).is_none());
        assert_eq!(calls.cancel(c, rt.handle()), Some("c"));
        assert_eq!(calls.pending(), 0);
    }

    #[test]
    fn a_panic_ends_the_call_and_a_closed_list_rings_no_bell() {
        let (rt, rings, mut calls) = setup();
        let boom = calls.add(Box::pin(async { panic!("a bug") }), "boom");
        assert!(matches!(calls.poll(boom, rt.handle()), Some(Polled::Panicked("boom"))));

        let (tx, _waiting) = pending(&mut calls, &rt, "w");
        calls.closer().close();
        tx.send(7).unwrap_or_else(|_| unreachable!());
        assert_eq!((rings.load(Ordering::SeqCst), calls.woken()), (0, vec![]));
    }

    #[test]
    fn an_ended_call_gives_its_data_and_output_or_what_the_surface_makes_of_a_panic() {
        let (rt, _rings, mut calls) = setup();
        let message_len = |m: &str| u32::try_from(m.len()).unwrap_or(0);
        let boom = calls.add(Box::pin(async { panic!("a bug") }), "boom");
        assert_eq!(
            calls.poll_ended(boom, rt.handle(), message_len),
            Some(("boom", message_len(PANIC_MESSAGE)))
        );
        let (tx, one) = pending(&mut calls, &rt, "one");
        assert_eq!(calls.poll_ended(one, rt.handle(), message_len), None);
        tx.send(1).unwrap_or_else(|_| unreachable!());
        assert_eq!(calls.poll_ended(one, rt.handle(), message_len), Some(("one", 1)));
        assert_eq!(calls.poll_ended(one, rt.handle(), message_len), None);
    }

    #[test]
    fn a_drain_rings_no_bell_until_it_ends() {
        let (rt, rings, mut calls) = setup();
        let (tx_a, a) = pending(&mut calls, &rt, "a");
        let (tx_b, b) = pending(&mut calls, &rt, "b");

        calls.begin_drain();
        tx_a.send(1).unwrap_or_else(|_| unreachable!());
        assert_eq!((rings.load(Ordering::SeqCst), calls.woken()), (0, vec![a]));
        // Woken while the drain polls what it took: still no bell, the next take has it.
        tx_b.send(2).unwrap_or_else(|_| unreachable!());
        assert!(matches!(calls.poll(a, rt.handle()), Some(Polled::Ready(1, "a"))));
        assert_eq!((rings.load(Ordering::SeqCst), calls.woken()), (0, vec![b]));
        assert!(matches!(calls.poll(b, rt.handle()), Some(Polled::Ready(2, "b"))));
        // The empty take ends the drain: a later wake-up rings again.
        assert_eq!(calls.woken(), vec![]);
        let (tx_c, c) = pending(&mut calls, &rt, "c");
        tx_c.send(3).unwrap_or_else(|_| unreachable!());
        assert_eq!((rings.load(Ordering::SeqCst), calls.woken()), (1, vec![c]));
    }

    #[test]
    fn a_drain_ended_untaken_rings_for_the_calls_woken_meanwhile() {
        let (rt, rings, mut calls) = setup();
        let (tx_a, a) = pending(&mut calls, &rt, "a");

        // Nothing woken, or only what the drain took: no bell.
        calls.begin_drain();
        calls.end_drain();
        let (tx_b, b) = pending(&mut calls, &rt, "b");
        calls.begin_drain();
        tx_b.send(2).unwrap_or_else(|_| unreachable!());
        assert_eq!(calls.woken_of(&[a, b]), vec![b]);
        assert!(matches!(calls.poll(b, rt.handle()), Some(Polled::Ready(2, "b"))));
        calls.end_drain();
        assert_eq!(rings.load(Ordering::SeqCst), 0);
        // Woken during the drain: no bell then, one at its end, and the call is still listed.
        calls.begin_drain();
        tx_a.send(1).unwrap_or_else(|_| unreachable!());
        assert_eq!(rings.load(Ordering::SeqCst), 0);
        calls.end_drain();
        assert_eq!((rings.load(Ordering::SeqCst), calls.woken()), (1, vec![a]));
        assert!(matches!(calls.poll(a, rt.handle()), Some(Polled::Ready(1, "a"))));
    }

    #[test]
    fn calls_flush_alone_while_few_are_pending_then_every_few() {
        let (rt, rings, mut calls) = setup();
        // A link's driver is a background call: not counted.
        let link = calls.link(7, Some((Box::pin(std::future::pending()), "link")));
        assert_eq!(calls.link(8, None), None); // a client that cannot link is recorded too
        assert!(calls.is_linked(7) && calls.is_linked(8) && !calls.is_linked(9));
        assert_eq!(calls.links().collect::<Vec<_>>(), Vec::from_iter(link));
        let mut senders = Vec::new();
        for _ in 0..FLUSH_ALONE_BELOW {
            // Few pending: every call flushes.
            assert!(calls.flush_for_call(4));
            senders.push(pending(&mut calls, &rt, "w").0);
        }
        assert_eq!((calls.pending(), calls.foreground()), (FLUSH_ALONE_BELOW + 1, FLUSH_ALONE_BELOW));
        // A flush begins a drain: a wake-up meanwhile rings no bell.
        if let Some(tx) = senders.pop() {
            tx.send(1).unwrap_or_else(|_| unreachable!());
        }
        assert_eq!((rings.load(Ordering::SeqCst), calls.woken().len()), (0, 1));
        // The empty take ends the drain.
        assert_eq!(calls.woken(), vec![]);
        // Many pending: every 4th call flushes; a drain begun elsewhere starts the count again.
        let flushes: Vec<bool> = (0..8).map(|_| calls.flush_for_call(4)).collect();
        assert_eq!(flushes, [false, false, false, true, false, false, false, true]);
        assert!(!calls.flush_for_call(4));
        calls.begin_drain();
        assert_eq!([calls.flush_for_call(4), calls.flush_for_call(4)], [false, false]);
        // Unlinked (the surface's loop changed), the driver is taken out and its client may
        // link again.
        let drivers: Vec<&str> = calls.unlink_all().into_iter().map(|(_, name)| name).collect();
        assert_eq!(drivers, ["link"]);
        assert!(!calls.is_linked(7) && calls.links().next().is_none());
        assert_eq!(calls.foreground(), calls.pending());
    }

    #[test]
    fn drain_woken_polls_calls_woken_while_it_runs_then_ends_the_drain() {
        let (rt, rings, mut calls) = setup();
        let (tx_a, a) = pending(&mut calls, &rt, "a");
        let (tx_b, b) = pending(&mut calls, &rt, "b");
        let calls = std::cell::RefCell::new(calls);
        let mut tx_b = Some(tx_b);
        let mut ended = Vec::new();

        calls.borrow_mut().begin_drain();
        tx_a.send(1).unwrap_or_else(|_| unreachable!());
        drain_woken(
            || Some(calls.borrow().woken()),
            |key| {
                // Polling `a` wakes `b`, as a link's driver wakes the call whose reply it read.
                if let Some(tx) = tx_b.take() {
                    tx.send(2).unwrap_or_else(|_| unreachable!());
                }
                if let Some(Polled::Ready(value, name)) = calls.borrow_mut().poll(key, rt.handle()) {
                    ended.push((key, value, name));
                }
            },
        );
        assert_eq!(ended, vec![(a, 1, "a"), (b, 2, "b")]);
        assert_eq!(rings.load(Ordering::SeqCst), 0);
        // The drain ended with its empty take: the next wake-up rings.
        let (tx_c, _c) = pending(&mut calls.borrow_mut(), &rt, "c");
        tx_c.send(3).unwrap_or_else(|_| unreachable!());
        assert_eq!(rings.load(Ordering::SeqCst), 1);
    }
}
