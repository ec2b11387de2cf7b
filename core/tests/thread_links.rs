//! Thread links: the connections of threads that block in calls (`rlock::blocking`, which C and
//! Python's sync API wrap their waits in), against a private redis-server. The threads here are
//! plain std threads blocking on a runtime's handle, as librlock's and Python's callers do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use common::{wait_for, Inspect, Server};
use rlock::surface::THREAD_LINK_NAME;
use rlock::{Client, ClientOptions, ErrorKind, Released};
use tokio::runtime::{Handle, Runtime};

/// Whether a thread uses its connection depends on how many threads of the process are in
/// blocking calls: the tests here run one at a time (each holds this), so that another test's
/// threads never count.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// One blocking call, as the surfaces make it.
fn call<F: Future>(rt: &Handle, fut: F) -> F::Output {
    rlock::blocking(|| rt.block_on(fut))
}

/// The server's connections named as thread links, by client id.
fn links(server: &Server) -> Vec<u64> {
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut server.conn()).unwrap();
    let suffix = format!(" name={THREAD_LINK_NAME} ");
    list.lines()
        .filter(|l| l.contains(&suffix))
        .map(|l| l.split_whitespace().next().unwrap().trim_start_matches("id=").parse().unwrap())
        .collect()
}

/// Has the server end link `id`, then lets it stay idle past the check a link gets before its
/// next command once it has been idle 5 ms (a link in steady use skips it), so that its thread
/// finds the end before sending.
fn kill_idle_link(server: &Server, id: u64) {
    let n: i64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query(&mut server.conn()).unwrap();
    assert_eq!(n, 1);
    wait_for(Duration::from_secs(5), "the connection to close", || !links(server).contains(&id));
    std::thread::sleep(Duration::from_millis(20));
}

fn connect(rt: &Runtime, server: &Server, options: ClientOptions) -> Client {
    rt.block_on(Client::connect(&server.url(), options)).unwrap()
}

#[test]
fn a_thread_gets_its_own_connection_from_its_second_blocking_call_until_it_ends() {
    let _serial = serial();
    let server = Server::start().unwrap();
    let rt = runtime();
    let client = connect(&rt, &server, ClientOptions::default());
    let (h, lock) = (rt.handle().clone(), client.lock("tl-own").unwrap());
    let server_ref = &server;
    std::thread::scope(|s| {
        s.spawn(|| {
            let me = client.new_owner();
            call(&h, lock.acquire(&me)).unwrap();
            assert_eq!(links(server_ref).len(), 0, "a thread's first call takes the shared connection");
            assert!(call(&h, lock.release(&me)).unwrap().is_unlocked());
            let first = links(server_ref);
            assert_eq!(first.len(), 1, "from its second call on, the thread has a connection");
            for _ in 0..20 {
                call(&h, lock.acquire(&me)).unwrap();
                assert!(call(&h, lock.release(&me)).unwrap().is_unlocked());
            }
            assert_eq!(links(server_ref), first, "the same connection for every later call");
        });
    });
    wait_for(Duration::from_secs(5), "the ended thread's connection to close", || links(&server).is_empty());
    // Async calls never take one.
    for _ in 0..3 {
        let me = client.new_owner();
        rt.block_on(lock.acquire(&me)).unwrap();
        rt.block_on(lock.release(&me)).unwrap();
    }
    assert!(links(&server).is_empty());
}

#[test]
fn thread_links_keep_a_contended_lock_exact() {
    let _serial = serial();
    let server = Server::start().unwrap();
    let rt = runtime();
    let client = connect(&rt, &server, ClientOptions::default());
    let h = rt.handle().clone();
    // Plain load and store: only mutual exclusion keeps the count.
    let counter = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|s| {
        for _ in 0..8 {
            let (h, lock, me, counter) =
                (&h, client.lock("tl-exact").unwrap(), client.new_owner(), counter.clone());
            s.spawn(move || {
                for _ in 0..50 {
                    call(h, lock.acquire(&me)).unwrap();
                    call(h, lock.acquire(&me)).unwrap(); // reentrant
                    let seen = counter.load(Ordering::SeqCst);
                    std::thread::yield_now();
                    counter.store(seen + 1, Ordering::SeqCst);
                    assert_eq!(call(h, lock.release(&me)).unwrap(), Released::StillHeld);
                    assert_eq!(call(h, lock.release(&me)).unwrap(), Released::Unlocked);
                }
            });
        }
    });
    assert_eq!(counter.load(Ordering::SeqCst), 8 * 50);
    assert_eq!(client.tracked_holds(), 0);
    assert!(!rt.block_on(client.lock("tl-exact").unwrap().is_locked()).unwrap());
}

#[test]
fn thread_connections_caps_how_many_threads_have_one_and_0_turns_them_off() {
    let _serial = serial();
    let server = Server::start().unwrap();
    let rt = runtime();
    let bad =
        rt.block_on(Client::connect(&server.url(), ClientOptions::default().with_thread_connections(1025)));
    assert_eq!(bad.err().map(|e| e.kind()), Some(ErrorKind::InvalidArgument));
    for (cap, expected) in [(2, 2), (0, 0)] {
        let client = connect(&rt, &server, ClientOptions::default().with_thread_connections(cap));
        let h = rt.handle().clone();
        let (all_called, counted) = (Barrier::new(5), Barrier::new(5));
        // One thread in a call at a time: with more than `cap` threads in calls at once,
        // none uses (or opens) its connection (the next test).
        let one_at_a_time = std::sync::Mutex::new(());
        std::thread::scope(|s| {
            for i in 0..4 {
                let (h, lock, me) = (&h, client.lock(&format!("tl-cap-{i}")).unwrap(), client.new_owner());
                let (all_called, counted, one_at_a_time) = (&all_called, &counted, &one_at_a_time);
                s.spawn(move || {
                    for _ in 0..3 {
                        let _turn = one_at_a_time.lock().unwrap();
                        call(h, lock.acquire(&me)).unwrap();
                        call(h, lock.release(&me)).unwrap();
                    }
                    all_called.wait();
                    counted.wait(); // alive (with its connection, if any) while counted
                });
            }
            all_called.wait();
            assert_eq!(links(&server).len(), expected, "thread_connections = {cap}");
            counted.wait();
        });
        wait_for(Duration::from_secs(5), "the threads' connections to close", || links(&server).is_empty());
    }
}

/// With more than `thread_connections` threads inside blocking calls at once, a thread's
/// commands go on the shared connection, pipelined with the others, not on its own (which
/// costs Redis a read and a write per command); with that many or fewer, on its own. Seen
/// through a killed connection: a thread that uses its own replaces it before its command.
#[test]
fn past_thread_connections_threads_in_calls_every_command_takes_the_shared_connection() {
    let _serial = serial();
    let server = Server::start().unwrap();
    let rt = runtime();
    let client = connect(&rt, &server, ClientOptions::default().with_thread_connections(2));
    let h = rt.handle().clone();
    let (held, holder) = (client.lock("tl-busy").unwrap(), client.new_owner());
    rt.block_on(held.acquire(&holder)).unwrap();
    let (lock, me) = (client.lock("tl-busy-own").unwrap(), client.new_owner());
    std::thread::scope(|s| {
        // This thread's connection, made on its second call.
        call(&h, lock.acquire(&me)).unwrap();
        call(&h, lock.release(&me)).unwrap();
        for (waiters, on_own) in [(1usize, true), (2, false)] {
            let own = links(&server);
            assert_eq!(own.len(), 1, "{waiters} waiter(s): this thread's connection is up");
            kill_idle_link(&server, own[0]);
            // Lets the waiters go however this round ends (a failure in the scope would
            // otherwise wait for them for good).
            struct LetGo<'a>(&'a Runtime, &'a rlock::Lock, &'a rlock::Owner);
            impl Drop for LetGo<'_> {
                fn drop(&mut self) {
                    let _ = self.0.block_on(self.1.release(self.2));
                }
            }
            let let_go = LetGo(&rt, &held, &holder);
            let started = Arc::new(AtomicUsize::new(0));
            let waiting: Vec<_> = (0..waiters)
                .map(|_| {
                    let (h, held, started, me) = (&h, &held, started.clone(), client.new_owner());
                    s.spawn(move || {
                        call(h, async {
                            started.fetch_add(1, Ordering::SeqCst);
                            held.acquire(&me).await.unwrap();
                            held.release(&me).await.unwrap();
                        })
                    })
                })
                .collect();
            wait_for(Duration::from_secs(5), "the waiters to be in their calls", || {
                started.load(Ordering::SeqCst) == waiters
            });
            // This thread in calls too: 1 + waiters threads in calls, against the cap of 2.
            let acquired = call(&h, lock.acquire(&me));
            let released = call(&h, lock.release(&me));
            let after = links(&server).len();
            // Asserted once the waiters are gone.
            drop(let_go);
            for w in waiting {
                w.join().unwrap();
            }
            rt.block_on(held.acquire(&holder)).unwrap();
            assert!(acquired.is_ok() && released.is_ok());
            let (expected, way) =
                if on_own { (1, "its own connection, replaced") } else { (0, "the shared one") };
            assert_eq!(after, expected, "{} threads in calls: {way}", 1 + waiters);
        }
    });
}

#[test]
fn a_thread_link_the_server_closed_is_replaced_before_the_next_command() {
    let _serial = serial();
    let server = Server::start().unwrap();
    let rt = runtime();
    // No retries: a command that failed on a dead connection would fail the call.
    let client = connect(&rt, &server, ClientOptions::default().with_retry_attempts(0));
    let (h, lock) = (rt.handle().clone(), client.lock("tl-killed").unwrap());
    let server_ref = &server;
    std::thread::scope(|s| {
        s.spawn(|| {
            let me = client.new_owner();
            for _ in 0..2 {
                call(&h, lock.acquire(&me)).unwrap();
                call(&h, lock.release(&me)).unwrap();
            }
            let killed = links(server_ref);
            assert_eq!(killed.len(), 1);
            kill_idle_link(server_ref, killed[0]);
            call(&h, lock.acquire(&me)).unwrap();
            assert!(call(&h, lock.release(&me)).unwrap().is_unlocked());
            let now = links(server_ref);
            assert_eq!(now.len(), 1, "a new connection took the killed one's place");
            assert_ne!(now, killed);
        });
    });
}

#[test]
fn a_gone_clients_link_closes_at_its_threads_next_blocking_call() {
    let _serial = serial();
    let server = Server::start().unwrap();
    let rt = runtime();
    let first = connect(&rt, &server, ClientOptions::default());
    let second = connect(&rt, &server, ClientOptions::default());
    let h = rt.handle().clone();
    let (made, dropped) = (Barrier::new(2), Barrier::new(2));
    let closing = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        let (a, b) = (first.lock("tl-gone-a").unwrap(), second.lock("tl-gone-b").unwrap());
        let (ma, mb) = (first.new_owner(), second.new_owner());
        let (h, made, dropped, closing, server) = (&h, &made, &dropped, &closing, &server);
        s.spawn(move || {
            for _ in 0..2 {
                call(h, a.acquire(&ma)).unwrap();
                call(h, a.release(&ma)).unwrap();
            }
            drop(a);
            made.wait();
            dropped.wait();
            // Calls on the other client: once the first client is gone, one of them closes
            // its link, and this thread's link to the second client takes its place.
            let closing = closing.lock().unwrap().clone();
            wait_for(Duration::from_secs(10), "the gone client's link to close", || {
                call(h, b.acquire(&mb)).unwrap();
                call(h, b.release(&mb)).unwrap();
                let now = links(server);
                now.len() == 1 && now != closing
            });
        });
        made.wait();
        *closing.lock().unwrap() = links(server);
        assert_eq!(closing.lock().unwrap().len(), 1);
        first.close();
        drop(first);
        dropped.wait();
    });
}
