//! Command connections of threads that block in a call (*thread links*).
//!
//! C's calls and Python's synchronous ones block their thread until the answer. With only the
//! client's shared connection, the request goes to the tokio worker that owns the socket and
//! the reply comes back through it: the worker is woken (or kept busy) for every round trip and
//! wakes the parked caller in turn. A thread link is a plain blocking connection of the calling
//! thread's own: a command of a blocking call is written and its reply read on that thread,
//! inside the poll of the call's future, and the kernel wakes the thread when the reply
//! arrives. Measured on two cores against the shared connection (acquire + release pairs,
//! alternating runs): C +12% with 1 thread, +50% with 16; Python threads +15% and +50%;
//! hand-off p50 -20% (bench/README.md). With many threads in calls the shared connection wins
//! (see "When" below).
//!
//! Which commands: those of a future polled inside [`blocking`] (the surfaces' blocking entry
//! points wrap their wait in it) for a one-server client over plain TCP or a Unix socket (the
//! clients with a local route). Everything else (the watchdog, pub/sub, clean-ups that run on
//! tokio tasks, async calls) keeps using the shared connection, so a thread that stops making
//! calls never holds up a renewal.
//!
//! When: a thread gets a link for a client on a command of its second blocking call or later
//! (a thread that makes one call never pays for a connection), while the client has fewer than
//! `thread_connections` links; a thread over that number uses the shared connection. And only
//! while at most `thread_connections` threads of the process are inside blocking calls at
//! once: past that, every command goes on the shared connection (a link stays open, unused,
//! until the threads in calls are few again). On one socket each, every command is a read and
//! a write of its own for Redis, which bounds many threads by the server's CPU; on the shared
//! connection their commands come pipelined, and Redis' work per pair halves while the client
//! pays a hop through the runtime per reply. Measured on two cores with the server beside the
//! client (bench/README.md, 2026-12-05): links ahead up to about 32 to 48 threads in calls, the
//! shared connection ahead from 48 to 64; default 32. The link
//! is a socket of its own (`TCP_NODELAY`, the client's `command_timeout` on reads and writes)
//! with the handshake the client's URL asks for (HELLO 3 for RESP3, AUTH, SELECT) and the name
//! [`THREAD_LINK_NAME`]; replies are read with the `redis` crate's parser.
//!
//! Failures: a link that had been idle is first checked for an end the server sent meanwhile
//! (a restart, `CLIENT KILL`, an idle timeout: the socket is readable with nothing asked), and
//! replaced before the command goes out, as the shared connection reconnects on its own. A
//! link whose command fails on the connection (an I/O error, a timeout) is dropped and the
//! error is returned as the shared connection's would be (the callers' retry policy applies);
//! that thread then uses the shared connection for `retry_delay` before it connects again. Any
//! failure to connect or to shake hands only leaves the thread on the shared connection. A
//! link of a client that is gone is closed on its thread's next blocking call, or when the
//! thread ends.
//!
//! Fork: a child process inherits the forking thread's links with its memory, but never uses
//! them (a client from the parent refuses every call in the child) and never shuts their
//! sockets down (dropping one only closes the child's descriptor), so the parent's links go on.

use std::cell::{Cell, RefCell};
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use redis::{Cmd, ConnectionAddr, RedisResult, Value};

use super::local::Route;

/// How long a link may have been idle before it is checked for an end the server sent (one
/// system call; a link in steady use skips it).
const IDLE_CHECK: Duration = Duration::from_millis(5);

/// The name thread links give themselves (`CLIENT SETNAME`), as `CLIENT LIST` shows them.
pub const THREAD_LINK_NAME: &str = "rlock-thread";

thread_local! {
    /// Whether this thread is inside a blocking call ([`blocking`]).
    static IN_CALL: Cell<bool> = const { Cell::new(false) };
    /// Blocking calls this thread has made (saturating).
    static CALLS: Cell<u32> = const { Cell::new(0) };
    /// This thread's links, one per client (route) it made blocking calls to.
    static LINKS: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// Runs `call` as a blocking call of the calling thread: commands of the futures it polls on
/// this thread may go out on the thread's own connection. The surfaces wrap their blocking
/// waits in it (C's calls, Python's synchronous API); never use it on a thread that runs an
/// event loop or a tokio runtime.
pub fn blocking<R>(call: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            IN_CALL.with(|c| c.set(self.0));
        }
    }
    /// Counts the thread out of [`BLOCKED`] when its outermost blocking call ends.
    struct Counted(bool);
    impl Drop for Counted {
        fn drop(&mut self) {
            if self.0 {
                BLOCKED.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
    CALLS.with(|c| c.set(c.get().saturating_add(1)));
    let nested = IN_CALL.with(|c| c.replace(true));
    if !nested {
        count_in_children();
        BLOCKED.fetch_add(1, Ordering::Relaxed);
    }
    let _counted = Counted(!nested);
    let _reset = Reset(nested);
    call()
}

/// One client's link on this thread, or why it has none.
struct Entry {
    route: Weak<Route>,
    link: Option<Link>,
    /// After a failure: no new link before then.
    retry_at: Option<Instant>,
}

/// A connection counted in its route's `thread_links` until dropped.
struct Link {
    socket: Socket,
    parser: redis::Parser,
    used: Instant,
    route: Weak<Route>,
}

impl Drop for Link {
    fn drop(&mut self) {
        if let Some(route) = self.route.upgrade() {
            route.thread_links.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A blocking socket to the server.
enum Socket {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(UnixStream),
}

impl Socket {
    fn connect(addr: &ConnectionAddr, timeout: Duration, io_timeout: Option<Duration>) -> io::Result<Socket> {
        let socket = match addr {
            ConnectionAddr::Tcp(host, port) => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, "the host name resolved to nothing");
                let mut found = None;
                for a in (host.as_str(), *port).to_socket_addrs()? {
                    match TcpStream::connect_timeout(&a, timeout) {
                        Ok(s) => {
                            found = Some(s);
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                let s = found.ok_or(last)?;
                s.set_nodelay(true)?;
                s.set_read_timeout(io_timeout)?;
                s.set_write_timeout(io_timeout)?;
                Socket::Tcp(s)
            }
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => {
                let s = UnixStream::connect(path)?;
                s.set_read_timeout(io_timeout)?;
                s.set_write_timeout(io_timeout)?;
                Socket::Unix(s)
            }
            _ => return Err(io::Error::other("no thread connection for this address")),
        };
        Ok(socket)
    }

    fn io(&mut self) -> &mut dyn ReadWrite {
        match self {
            Socket::Tcp(s) => s,
            #[cfg(unix)]
            Socket::Unix(s) => s,
        }
    }

    /// Whether the server ended the connection (or sent something unasked) while it was idle:
    /// then it is readable although no reply is due.
    #[cfg(unix)]
    fn ended(&self) -> bool {
        use std::os::fd::AsRawFd;
        let fd = match self {
            Socket::Tcp(s) => s.as_raw_fd(),
            Socket::Unix(s) => s.as_raw_fd(),
        };
        let mut byte = 0u8;
        // SAFETY: `fd` is this socket's, open for the call; one byte of writable buffer.
        let n = unsafe { libc::recv(fd, (&raw mut byte).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
        n >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::WouldBlock
    }

    #[cfg(not(unix))]
    fn ended(&self) -> bool {
        false
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

impl Link {
    /// Connects a link for `route`, when the route has room for one more.
    fn open(route: &Arc<Route>) -> Option<RedisResult<Link>> {
        let claimed = route
            .thread_links
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < route.thread_cap).then_some(n + 1));
        if claimed.is_err() {
            return None;
        }
        let info = route.client.get_connection_info();
        let connected = Socket::connect(info.addr(), route.connect_timeout, route.response_timeout)
            .map_err(redis::RedisError::from)
            .map(|socket| Link {
                socket,
                parser: redis::Parser::new(),
                used: Instant::now(),
                route: Arc::downgrade(route),
            });
        // Counted from the claim: a failed connection gives its room back (a Link does on drop).
        let mut link = match connected {
            Ok(link) => link,
            Err(e) => {
                route.thread_links.fetch_sub(1, Ordering::Relaxed);
                return Some(Err(e));
            }
        };
        Some(link.handshake(info.redis_settings()).map(|()| link))
    }

    /// What the `redis` crate's connections send first, for the settings a URL can give: HELLO 3
    /// (with AUTH) for RESP3, else AUTH when there is a password; SELECT for a database other
    /// than 0. An error reply to one of them fails the link (the thread keeps the shared
    /// connection). Then `CLIENT SETNAME rlock-thread`, so that `CLIENT LIST` tells these
    /// connections apart (its error, e.g. where an ACL forbids it, is ignored). One write, one
    /// round trip.
    fn handshake(&mut self, settings: &redis::RedisConnectionInfo) -> RedisResult<()> {
        let mut first = redis::pipe();
        if settings.protocol().supports_resp3() {
            let hello = first.cmd("HELLO").arg(3);
            if let Some(password) = settings.password() {
                hello.arg("AUTH").arg(settings.username().unwrap_or("default")).arg(password);
            }
        } else if let Some(password) = settings.password() {
            let auth = first.cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            auth.arg(password);
        }
        if settings.db() != 0 {
            first.cmd("SELECT").arg(settings.db());
        }
        let required = first.len();
        first.cmd("CLIENT").arg("SETNAME").arg(THREAD_LINK_NAME);
        self.socket.io().write_all(&first.get_packed_pipeline())?;
        for i in 0..first.len() {
            if let (Value::ServerError(e), true) = (self.read()?, i < required) {
                return Err(redis::RedisError::from(e));
            }
        }
        Ok(())
    }

    /// Writes `cmd` and reads its reply.
    fn send(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        self.socket.io().write_all(&cmd.get_packed_command())?;
        self.read()
    }

    /// Reads the next reply (push messages are passed over).
    fn read(&mut self) -> RedisResult<Value> {
        loop {
            match self.parser.parse_value(self.socket.io())? {
                Value::Push { .. } => continue,
                reply => return Ok(reply),
            }
        }
    }
}

/// How many threads of this process are inside a blocking call ([`blocking`]) now. Threads
/// waiting for a lock (a pub/sub wait inside the call) count too.
static BLOCKED: AtomicUsize = AtomicUsize::new(0);

/// Makes [`BLOCKED`] right in a forked child, once per process: the child has only the forking
/// thread, so it counts that one if it is inside a call, and no parent thread that was.
fn count_in_children() {
    #[cfg(unix)]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        extern "C" fn in_child() {
            let in_call = IN_CALL.try_with(Cell::get).unwrap_or(false);
            BLOCKED.store(usize::from(in_call), Ordering::Relaxed);
        }
        // SAFETY: registers a handler that only stores to an atomic and reads a const-initialized
        // thread-local of the forking thread (no allocation, no lock).
        ONCE.call_once(|| unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        });
    }
}

/// `cmd` on this thread's link of `route`, when this thread is in a blocking call and has (or
/// may now open) one; `None` (nothing sent) otherwise: the caller uses the shared connection.
/// Blocks the thread until the reply.
pub(crate) fn query(route: &Arc<Route>, cmd: &Cmd) -> Option<RedisResult<Value>> {
    if route.thread_cap == 0 || !IN_CALL.with(Cell::get) {
        return None;
    }
    LINKS.with(|links| {
        let mut links = links.try_borrow_mut().ok()?;
        // The links of clients that are gone close here.
        links.retain(|e| e.route.strong_count() > 0);
        // Past `thread_cap` threads in blocking calls at once, every command goes on the shared
        // connection, where the threads' commands come and go pipelined (see the module's doc).
        if BLOCKED.load(Ordering::Relaxed) > route.thread_cap {
            return None;
        }
        // Every entry's route is alive now, so its address names it.
        let i = match links.iter().position(|e| std::ptr::eq(e.route.as_ptr(), Arc::as_ptr(route))) {
            Some(i) => i,
            None => {
                links.push(Entry { route: Arc::downgrade(route), link: None, retry_at: None });
                links.len() - 1
            }
        };
        let entry = &mut links[i];
        let now = Instant::now();
        if entry.link.as_ref().is_some_and(|l| now.duration_since(l.used) >= IDLE_CHECK && l.socket.ended()) {
            entry.link = None;
        }
        if entry.link.is_none() {
            if CALLS.with(Cell::get) < 2 || entry.retry_at.is_some_and(|t| now < t) {
                return None;
            }
            match Link::open(route)? {
                Ok(link) => {
                    entry.link = Some(link);
                    entry.retry_at = None;
                }
                Err(e) => {
                    log::debug!(
                        "rlock: no thread connection ({e}); this thread's commands use the shared one"
                    );
                    entry.retry_at = Some(now + route.retry_delay);
                    return None;
                }
            }
        }
        let link = entry.link.as_mut()?;
        let reply = link.send(cmd);
        link.used = Instant::now();
        // An error is the connection's (the server's error replies are values): it is in
        // doubt now.
        if reply.is_err() {
            entry.link = None;
            entry.retry_at = Some(Instant::now() + route.retry_delay);
        }
        Some(reply)
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// The count a child forked by this thread sees (its exit code): `libc::_exit` right after
    /// reading an atomic, as little as a child of a threaded process may do.
    fn blocked_in_a_child() -> i32 {
        // SAFETY: the child only reads an atomic and calls `_exit`, both async-signal-safe.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let n = BLOCKED.load(Ordering::Relaxed);
            // SAFETY: ends the child at once (no destructors, no atexit handlers).
            unsafe { libc::_exit(i32::try_from(n.min(100)).unwrap_or(100)) };
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status), "the child did not exit: {status}");
        libc::WEXITSTATUS(status)
    }

    #[test]
    fn a_forked_child_counts_only_its_own_thread_among_the_threads_in_calls() {
        // Three threads inside blocking calls, each until told to go on.
        let (entered_tx, entered) = mpsc::channel();
        let mut go = Vec::new();
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let (go_tx, go_rx) = mpsc::channel::<()>();
                go.push(go_tx);
                let entered_tx = entered_tx.clone();
                std::thread::spawn(move || {
                    blocking(|| {
                        let _ = entered_tx.send(());
                        let _ = go_rx.recv();
                    })
                })
            })
            .collect();
        for _ in 0..3 {
            entered.recv().unwrap_or_default();
        }
        assert!(BLOCKED.load(Ordering::Relaxed) >= 3);
        // The child has only the forking thread: outside a call it counts none, inside one one
        // (the parent's three would keep a child past a small thread_connections for good).
        let outside = blocked_in_a_child();
        let inside = blocking(blocked_in_a_child);
        drop(go);
        for t in threads {
            t.join().unwrap_or_default();
        }
        assert_eq!((outside, inside), (0, 1));
    }
}
