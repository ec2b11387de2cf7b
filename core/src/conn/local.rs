//! Command connections whose socket I/O runs on the surface's own thread.
//!
//! Node's event loop (and an asyncio loop) polls its calls on its own thread ([`LocalCalls`]).
//! With only the client's shared connection, each request still crosses to the tokio worker
//! that owns the socket and each reply crosses back: two thread wake-ups per round trip more
//! than a client that reads and writes its socket on the event loop (ioredis). A *local link*
//! is a second command connection to the same server whose driver is polled by the surface
//! like one of its calls, and whose socket readiness comes from the surface's event loop (a
//! libuv poll handle). Commands of a call polled on that thread go out on it; everything else
//! (the watchdog, pub/sub, clean-ups on tokio tasks, other threads) keeps using the shared
//! connection, so a busy event loop never delays a renewal.
//!
//! A link is one server's plain TCP or Unix connection (TLS, Cluster, Sentinel and pooled
//! clients have none). It is the `redis` crate's multiplexed connection over a non-blocking
//! socket; its handshake (AUTH, SELECT, client name) is the crate's. While it is down (not yet
//! connected, lost, reconnecting after `retry_delay`) commands take the shared connection;
//! commands in flight when it drops fail with a connection error, as on the shared connection.
//!
//! [`LocalCalls`]: crate::local_calls::LocalCalls

use std::cell::RefCell;
use std::io::{self, Write};
use std::net::TcpStream;
#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Cmd, ConnectionAddr, RedisResult, Value};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::options::ClientOptions;

/// The socket of a local link, as the surface's event loop watches it: a file descriptor on
/// Unix, a `SOCKET` on Windows.
#[cfg(unix)]
pub type RawSocket = std::os::fd::RawFd;
/// The socket of a local link, as the surface's event loop watches it.
#[cfg(windows)]
pub type RawSocket = std::os::windows::io::RawSocket;

/// Told by the link what to watch; reports readiness to [`LocalIo::ready`]. Made by the
/// surface for each connection of a link and dropped (on the polling thread) when the
/// connection ends: the surface stops watching then.
pub trait Watcher: Send + 'static {
    /// Whether to report writability too (`true`, after a write would have blocked) or only
    /// readability (reported from the start to the drop).
    fn write_interest(&mut self, on: bool);
}

/// Makes the [`Watcher`] of one connection of a link: watch `socket`, report to `io`. An error
/// (the event loop refused the handle) leaves the link down until its next try.
pub type Watch = Box<dyn FnMut(RawSocket, Arc<LocalIo>) -> Result<Box<dyn Watcher>> + Send>;

/// Readiness of one link connection, reported by the surface.
pub struct LocalIo {
    state: Mutex<IoState>,
}

#[derive(Default)]
struct IoState {
    reader: Option<Waker>,
    writer: Option<Waker>,
    watcher: Option<Box<dyn Watcher>>,
    writing: bool,
    /// A read found no bytes (or fewer than it had room for), and the loop has not reported the
    /// socket readable since: reads wait for that report instead of asking the socket again
    /// (the loop reports readability for as long as bytes are there, so none are missed).
    drained: bool,
}

impl LocalIo {
    fn lock(&self) -> MutexGuard<'_, IoState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The socket is readable and/or writable: wakes the link's driver. Called by the
    /// surface's event loop on the polling thread.
    pub fn ready(&self, readable: bool, writable: bool) {
        let (reader, writer) = {
            let mut s = self.lock();
            let writer = if writable { s.writer.take() } else { None };
            if readable {
                s.drained = false;
            }
            if writable && s.writing {
                s.writing = false;
                if let Some(w) = s.watcher.as_mut() {
                    w.write_interest(false);
                }
            }
            (if readable { s.reader.take() } else { None }, writer)
        };
        reader.into_iter().chain(writer).for_each(Waker::wake);
    }
}

enum Socket {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(UnixStream),
}

impl Socket {
    /// Reads into the unfilled part of `buf` and fills it by what was read. On Unix straight
    /// into its uninitialized memory: zeroing the codec's 8 KiB buffer before every read
    /// (`initialize_unfilled`) cost more instructions than the rest of a call's Rust code.
    fn read_into(&mut self, buf: &mut ReadBuf<'_>) -> io::Result<usize> {
        #[cfg(unix)]
        {
            // SAFETY: read(2) writes at most `unfilled.len()` bytes into `unfilled` and never
            // reads it; exactly the `n` bytes it wrote are then marked initialized and filled.
            let unfilled = unsafe { buf.unfilled_mut() };
            let n = unsafe { libc::read(self.raw(), unfilled.as_mut_ptr().cast(), unfilled.len()) };
            let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
            unsafe { buf.assume_init(n) };
            buf.advance(n);
            Ok(n)
        }
        #[cfg(windows)]
        {
            use std::io::Read as _;
            let Socket::Tcp(s) = self;
            let n = s.read(buf.initialize_unfilled())?;
            buf.advance(n);
            Ok(n)
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.write(buf),
            #[cfg(unix)]
            Socket::Unix(s) => s.write(buf),
        }
    }

    fn shutdown(&self) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.shutdown(std::net::Shutdown::Write),
            #[cfg(unix)]
            Socket::Unix(s) => s.shutdown(std::net::Shutdown::Write),
        }
    }

    /// Ends the connection both ways (the server sees it close) while the socket stays open.
    fn shutdown_both(&self) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            #[cfg(unix)]
            Socket::Unix(s) => s.shutdown(std::net::Shutdown::Both),
        }
    }

    /// A second handle on the same socket.
    fn try_clone(&self) -> io::Result<Socket> {
        Ok(match self {
            Socket::Tcp(s) => Socket::Tcp(s.try_clone()?),
            #[cfg(unix)]
            Socket::Unix(s) => Socket::Unix(s.try_clone()?),
        })
    }

    #[cfg(unix)]
    fn raw(&self) -> RawSocket {
        use std::os::fd::AsRawFd;
        match self {
            Socket::Tcp(s) => s.as_raw_fd(),
            Socket::Unix(s) => s.as_raw_fd(),
        }
    }

    #[cfg(windows)]
    fn raw(&self) -> RawSocket {
        use std::os::windows::io::AsRawSocket;
        match self {
            Socket::Tcp(s) => s.as_raw_socket(),
        }
    }
}

/// What a link's stall watch looks at: requests awaiting replies and the last progress.
///
/// The `redis` crate's per-request response timeout is a tokio timer armed and disarmed for
/// every command (measured: 4-5% of Node's pairs/s at 16 handles). A link has none; instead one
/// watch per link finds it stalled when requests have waited `command_timeout` with nothing
/// read, and ends it: its requests then fail with a timeout, as on the shared connection.
#[derive(Default)]
struct Stall {
    /// Requests sent on the link whose reply has not come (or whose caller went away).
    waiting: AtomicUsize,
    /// When the link last made progress (ms since [`epoch`]): a read, or the first request
    /// after none was waiting.
    progress: AtomicU64,
    /// The watch found the link stalled: its reads fail from now on.
    stalled: AtomicBool,
}

/// The start of [`now_ms`]'s clock: the first time it was read (or [`start_clock`] ran).
static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// The clock of [`Stall::progress`].
fn now_ms() -> u64 {
    crate::millis::whole_ms(EPOCH.get_or_init(std::time::Instant::now).elapsed())
}

/// Starts [`now_ms`]'s clock now, if it has not started (see `scripts::make_all` for why: a
/// fork must not copy its once-cell half filled).
pub(crate) fn start_clock() {
    EPOCH.get_or_init(std::time::Instant::now);
}

/// One request waiting on a link, until dropped.
struct Waiting<'a>(&'a Stall);

impl<'a> Waiting<'a> {
    fn new(stall: &'a Stall) -> Self {
        if stall.waiting.fetch_add(1, Ordering::Relaxed) == 0 {
            stall.progress.store(now_ms(), Ordering::Relaxed);
        }
        Waiting(stall)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Ends the link once requests waited `timeout` with nothing read; checks four times per
/// `timeout`, so a stall is found within 1.25 `timeout`.
async fn watch_stall(stall: &Stall, io: &LocalIo, timeout: Duration) {
    let limit = crate::millis::whole_ms(timeout);
    loop {
        tokio::time::sleep(timeout / 4).await;
        let idle = now_ms().saturating_sub(stall.progress.load(Ordering::Relaxed));
        if stall.waiting.load(Ordering::Relaxed) > 0 && idle >= limit {
            stall.stalled.store(true, Ordering::Relaxed);
            // The driver reads again, gets the timeout, fails its requests and ends.
            io.ready(true, false);
            return std::future::pending().await;
        }
    }
}

/// A non-blocking socket whose readiness the surface reports through [`LocalIo`].
struct LocalStream {
    socket: Socket,
    io: Arc<LocalIo>,
    stall: Arc<Stall>,
}

impl Drop for LocalStream {
    fn drop(&mut self) {
        // The surface stops watching before the socket closes (the watcher goes first).
        let watcher = self.io.lock().watcher.take();
        drop(watcher);
    }
}

impl AsyncRead for LocalStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.stall.stalled.load(Ordering::Relaxed) {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, "Redis did not answer in time")));
        }
        loop {
            {
                // The event loop reports readability while the socket is readable, so a reply
                // that comes after the socket was found drained still wakes this waker.
                let mut s = this.io.lock();
                if s.drained {
                    s.reader = Some(cx.waker().clone());
                    return Poll::Pending;
                }
            }
            let room = buf.remaining();
            match this.socket.read_into(buf) {
                Ok(n) => {
                    this.stall.progress.store(now_ms(), Ordering::Relaxed);
                    if n > 0 && n < room {
                        // A short read took all there was: the next read waits for the loop's
                        // report (as libuv stops reading a stream after a short read) instead
                        // of a system call that finds the socket empty.
                        this.io.lock().drained = true;
                    }
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => this.io.lock().drained = true,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for LocalStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            match this.socket.write(buf) {
                Ok(n) => return Poll::Ready(Ok(n)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let mut s = this.io.lock();
                    s.writer = Some(cx.waker().clone());
                    if !s.writing {
                        s.writing = true;
                        if let Some(w) = s.watcher.as_mut() {
                            w.write_interest(true);
                        }
                    }
                    return Poll::Pending;
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.socket.shutdown())
    }
}

/// Where a client's local links and thread links (`conn::thread`) connect, and the key its
/// links are found by.
pub(crate) struct Route {
    pub(super) key: u64,
    pub(super) client: redis::Client,
    pub(super) connect_timeout: Duration,
    pub(super) response_timeout: Option<Duration>,
    pub(super) retry_delay: Duration,
    /// How many thread links this client may have at once (`thread_connections`).
    pub(super) thread_cap: usize,
    /// How many it has.
    pub(super) thread_links: AtomicUsize,
}

impl Route {
    /// The route of a one-server client, when a link can reach that server: plain TCP or a
    /// Unix socket (a TLS connection's encryption would stay on tokio's side anyway).
    pub(crate) fn new(client: &redis::Client, options: &ClientOptions) -> Option<Arc<Route>> {
        static KEYS: AtomicU64 = AtomicU64::new(1);
        match client.get_connection_info().addr() {
            ConnectionAddr::Tcp(..) => {}
            #[cfg(unix)]
            ConnectionAddr::Unix(_) => {}
            _ => return None,
        }
        Some(Arc::new(Route {
            key: KEYS.fetch_add(1, Ordering::Relaxed),
            client: client.clone(),
            connect_timeout: options.connect_timeout,
            response_timeout: options.command_timeout,
            retry_delay: options.retry_delay.max(Duration::from_millis(50)),
            thread_cap: options.thread_connections,
            thread_links: AtomicUsize::new(0),
        }))
    }

    /// This thread's link of this route, when it is up and a surface's call is being polled.
    fn link(&self) -> Option<(MultiplexedConnection, Arc<Stall>)> {
        if !POLLING.with(std::cell::Cell::get) {
            return None;
        }
        LINKS.with(|l| {
            l.borrow().iter().find(|(k, ..)| *k == self.key).map(|(_, c, s)| (c.clone(), s.clone()))
        })
    }
}

thread_local! {
    /// The links that are up on this thread, by route key.
    static LINKS: RefCell<Vec<(u64, MultiplexedConnection, Arc<Stall>)>> = const { RefCell::new(Vec::new()) };
    /// Whether this thread is polling a call of its `LocalCalls`: only those calls use a link.
    static POLLING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `poll` as the polling of a surface's call (`LocalCalls`): only such a call sends on
/// its thread's link. Any other wait on that thread (a blocking call made by mistake on an
/// event loop's thread) keeps the shared connection, whose replies do not need the loop.
pub(crate) fn polling_call<R>(poll: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            POLLING.with(|p| p.set(self.0));
        }
    }
    let _reset = Reset(POLLING.with(|p| p.replace(true)));
    poll()
}

/// `cmd` on this thread's link of `route` when it is up; `None` (nothing sent) when it is not.
pub(crate) async fn query(route: &Route, cmd: &Cmd) -> Option<RedisResult<Value>> {
    let (mut link, stall) = route.link()?;
    let waiting = Waiting::new(&stall);
    let limit = route.response_timeout.unwrap_or(ABANDONED_LIMIT);
    let reply = Abandonable::new(link.send_packed_command(cmd), limit).await;
    drop(waiting);
    Some(match reply {
        // Ended by the stall watch: every request it cut off timed out.
        Err(e) if stall.stalled.load(Ordering::Relaxed) && !e.is_timeout() => {
            Err(io::Error::new(io::ErrorKind::TimedOut, "Redis did not answer in time").into())
        }
        reply => reply,
    })
}

/// How long a request moved off its link's thread waits for its reply without a command
/// timeout (the shared connection's stuck limit).
const ABANDONED_LIMIT: Duration = Duration::from_secs(10);

/// A link request's reply, with a timer once the request is polled off the link's thread: a
/// call its caller gave up on finishes on a tokio task ([`crate::finish::Finish`]), and the
/// link's driver (with its stall watch) is polled only by the surface's loop, which may have
/// ended (an `asyncio.run` that returned). Without the timer such a request waited for ever,
/// and what its acquire took was never given back. Polled on its own thread, no timer: the
/// stall watch covers it.
struct Abandonable<F> {
    reply: Pin<Box<F>>,
    home: std::thread::ThreadId,
    limit: Duration,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<F> Abandonable<F> {
    fn new(reply: F, limit: Duration) -> Self {
        Abandonable { reply: Box::pin(reply), home: std::thread::current().id(), limit, timer: None }
    }
}

impl<F: std::future::Future<Output = RedisResult<Value>>> std::future::Future for Abandonable<F> {
    type Output = RedisResult<Value>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Poll::Ready(reply) = self.reply.as_mut().poll(cx) {
            return Poll::Ready(reply);
        }
        if self.timer.is_none() && std::thread::current().id() != self.home {
            // Off the link's thread means on a tokio task: its runtime has the timer.
            if tokio::runtime::Handle::try_current().is_ok() {
                self.timer = Some(Box::pin(tokio::time::sleep(self.limit)));
            }
        }
        match self.timer.as_mut().map(|t| t.as_mut().poll(cx)) {
            Some(Poll::Ready(())) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "Redis did not answer in time (the call's event loop has stopped)",
            )
            .into())),
            _ => Poll::Pending,
        }
    }
}

/// Lists a link as up on this thread until dropped.
struct Up(u64);

impl Up {
    fn new(key: u64, conn: MultiplexedConnection, stall: Arc<Stall>) -> Up {
        LINKS.with(|l| l.borrow_mut().push((key, conn, stall)));
        Up(key)
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        // `try_with`: a thread's locals may already be gone when a link is dropped at its end.
        let _ = LINKS.try_with(|l| l.borrow_mut().retain(|(k, ..)| *k != self.0));
    }
}

/// Ends a link's connection when the link ends, however it ends. A shutdown, not only the
/// close of the driver's socket: the close watch holds a second handle on it until its task
/// next runs, and until then closing one handle would leave the server's side open (with a
/// request that timed out still queued there).
struct Ending {
    socket: Arc<Socket>,
    _watch: tokio_util::sync::DropGuard,
}

impl Drop for Ending {
    fn drop(&mut self) {
        let _ = self.socket.shutdown_both();
    }
}

/// Runs a client's local link on the thread that polls it, until `closed`: connects, serves
/// that thread's commands while up, connects again `retry_delay` after a loss or a failed try.
pub(crate) async fn run(route: Arc<Route>, closed: CancellationToken, mut watch: Watch) {
    loop {
        let served = async {
            let (conn, driver, io, stall, end) = connect(&route, &mut watch).await?;
            let _up = Up::new(route.key, conn, stall.clone());
            // Ends the server's side when the client closes, also if the surface's loop never
            // polls this again (a closed asyncio loop): the socket itself closes with the link.
            let end = Arc::new(end);
            let ended = CancellationToken::new();
            let _ending = Ending { socket: end.clone(), _watch: ended.clone().drop_guard() };
            let closing = closed.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = closing.cancelled() => drop(end.shutdown_both()),
                    _ = ended.cancelled() => {}
                }
            });
            match route.response_timeout {
                Some(timeout) => {
                    tokio::select! {
                        _ = driver => {}
                        _ = watch_stall(&stall, &io, timeout) => {}
                    }
                }
                None => driver.await,
            }
            Ok::<(), Error>(())
        };
        let ended = tokio::select! {
            _ = closed.cancelled() => return,
            ended = served => ended,
        };
        if let Err(e) = ended {
            log::debug!("rlock: local command connection not up ({e}); commands use the shared one");
        }
        tokio::select! {
            _ = closed.cancelled() => return,
            _ = tokio::time::sleep(route.retry_delay) => {}
        }
    }
}

/// One connection of a link: the socket, its watcher, the `redis` crate's handshake.
async fn connect(
    route: &Route,
    watch: &mut Watch,
) -> Result<(
    MultiplexedConnection,
    Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    Arc<LocalIo>,
    Arc<Stall>,
    Socket,
)> {
    let info = route.client.get_connection_info();
    let failed = |e: io::Error| {
        Error::new(crate::error::ErrorKind::Connection, format!("could not connect to Redis: {e}"))
    };
    let dial = async {
        Ok::<Socket, io::Error>(match info.addr() {
            ConnectionAddr::Tcp(host, port) => {
                let s = tokio::net::TcpStream::connect((host.as_str(), *port)).await?;
                s.set_nodelay(true)?;
                Socket::Tcp(s.into_std()?)
            }
            #[cfg(unix)]
            ConnectionAddr::Unix(path) => {
                Socket::Unix(tokio::net::UnixStream::connect(path).await?.into_std()?)
            }
            _ => return Err(io::Error::other("no local link for this address")),
        })
    };
    let socket = tokio::time::timeout(route.connect_timeout, dial)
        .await
        .map_err(|_| Error::new(crate::error::ErrorKind::Timeout, "connecting to Redis timed out"))?
        .map_err(failed)?;
    let end = socket.try_clone().map_err(failed)?;
    let io = Arc::new(LocalIo { state: Mutex::new(IoState::default()) });
    let watcher = watch(socket.raw(), io.clone())?;
    io.lock().watcher = Some(watcher);
    let stall = Arc::new(Stall::default());
    let stream = LocalStream { socket, io: io.clone(), stall: stall.clone() };
    // Room for every request a burst of calls makes before the driver's next poll.
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(route.connect_timeout))
        // No timer per request: the stall watch (see `Stall`).
        .set_response_timeout(None)
        .set_pipeline_buffer_size(1024);
    let handshake = MultiplexedConnection::new_with_config(info.redis_settings(), stream, config);
    let (conn, driver) = tokio::time::timeout(route.connect_timeout, handshake)
        .await
        .map_err(|_| Error::new(crate::error::ErrorKind::Timeout, "the Redis handshake timed out"))?
        .map_err(|e| Error::from_redis("could not connect to Redis", e))?;
    Ok((conn, Box::pin(driver), io, stall, end))
}
