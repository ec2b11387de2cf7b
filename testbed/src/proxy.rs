//! A TCP proxy on 127.0.0.1 that can cut the network without closing anything: while cut, no
//! byte gets through either way and the sockets stay open (no FIN, no RST); when healed, what
//! was sent meanwhile arrives, late, as TCP's retransmissions deliver it after a partition
//! shorter than their timeout. For tests that need one client cut off from a server that other
//! clients still reach. It can also hold back only the server's replies, so that commands run
//! and their answers are lost (a reply lost after the server ran the command), or blackhole the
//! connections that subscribed (a pub/sub connection that silently stops delivering). `make
//! netfaults` uses toxiproxy for the richer faults.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

use crate::ports::{self, Reserved};
use crate::{Error, Result, HOST};

#[derive(Default)]
struct State {
    /// What is held back; `healed` is notified when it changes.
    cut: Mutex<Cut>,
    healed: Condvar,
    stop: AtomicBool,
    /// Every socket of every proxied connection, shut down when the proxy drops.
    sockets: Mutex<Vec<TcpStream>>,
    /// Every proxied connection's own state.
    conns: Mutex<Vec<Arc<Conn>>>,
}

/// One proxied connection.
#[derive(Default)]
struct Conn {
    /// Its client sent a SUBSCRIBE or SSUBSCRIBE.
    subscribed: AtomicBool,
    /// Blackholed for good (see [`Proxy::blackhole_subscribers`]).
    blackholed: AtomicBool,
    /// Its client is a replica: it sent PSYNC (see [`Proxy::cut_replicas`]).
    replica: AtomicBool,
}

/// What the proxy holds back.
#[derive(Default, Clone, Copy)]
struct Cut {
    /// Both directions.
    both: bool,
    /// The server's replies only.
    replies: bool,
    /// Both directions of the replicas' connections only.
    replicas: bool,
    /// How late each read of the server's replies is passed on.
    reply_delay: std::time::Duration,
}

impl Cut {
    fn holds(self, reply: bool) -> bool {
        self.both || (reply && self.replies)
    }
}

/// A running proxy to `127.0.0.1:<upstream>`; stops (all its connections closed) when dropped.
pub struct Proxy {
    state: Arc<State>,
    /// The listening socket, shut down on drop to end the accept loop.
    listening: TcpListener,
    accept: Option<thread::JoinHandle<()>>,
    /// Dropped last: the port goes back to other tests only once nothing here listens on it.
    port: Reserved,
}

/// How many ports [`Proxy::start`] tries.
const ATTEMPTS: usize = 20;

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("port", &self.port()).finish_non_exhaustive()
    }
}

impl Proxy {
    /// Starts a proxy on a free port outside the ephemeral range, forwarding to
    /// `127.0.0.1:upstream` (one upstream connection per accepted one).
    pub fn start(upstream: u16) -> Result<Proxy> {
        let mut taken = Vec::new();
        for _ in 0..ATTEMPTS {
            let port = ports::reserve(1)?;
            let listen = *port.ports().first().ok_or_else(|| Error::new("no port reserved"))?;
            match TcpListener::bind((HOST, listen)) {
                Ok(listener) => return Proxy::serve(port, listener, upstream),
                // A program that does not claim its ports as the testbed does (ports::claim)
                // bound it after the check: another port.
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => taken.push(listen),
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::new(format!("no proxy port could be bound: {taken:?} were in use once reserved")))
    }

    fn serve(port: Reserved, listener: TcpListener, upstream: u16) -> Result<Proxy> {
        let listening = listener.try_clone()?;
        let state = Arc::new(State::default());
        let st = state.clone();
        let accept = thread::Builder::new().name("testbed-proxy".into()).spawn(move || {
            for conn in listener.incoming() {
                if st.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = conn else { continue };
                let Ok(server) = TcpStream::connect((HOST, upstream)) else { continue };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                if let Err(e) = pipe(&st, client, server) {
                    eprintln!("testbed proxy: {e}");
                }
            }
        })?;
        Ok(Proxy { state, listening, accept: Some(accept), port })
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.port.ports().first().copied().unwrap_or_default()
    }

    /// A `redis://` URL through the proxy.
    pub fn url(&self) -> String {
        format!("redis://{HOST}:{}/", self.port())
    }

    /// Cuts the network (`true`): nothing gets through either way, connections stay open.
    /// Heals it (`false`): what was held back is delivered, in order.
    pub fn cut(&self, on: bool) {
        self.state.cut.lock().unwrap_or_else(|p| p.into_inner()).both = on;
        self.state.healed.notify_all();
    }

    /// Holds back the server's replies only (`true`): requests still reach the server and run,
    /// their answers never come back while this lasts. `false` delivers them, in order.
    pub fn cut_replies(&self, on: bool) {
        self.state.cut.lock().unwrap_or_else(|p| p.into_inner()).replies = on;
        self.state.healed.notify_all();
    }

    /// Blackholes, for good, every connection open now whose client has subscribed: nothing
    /// gets through either way and the sockets stay open, as when a middlebox drops a quiet
    /// connection. Connections opened later pass. Returns how many were blackholed.
    pub fn blackhole_subscribers(&self) -> usize {
        let conns = self.state.conns.lock().unwrap_or_else(|p| p.into_inner());
        let mut n = 0;
        for c in conns.iter().filter(|c| c.subscribed.load(Ordering::SeqCst)) {
            c.blackholed.store(true, Ordering::SeqCst);
            n += 1;
        }
        n
    }

    /// Closes every connection open now, both ways (as a middlebox that restarts, or
    /// toxiproxy when a `timeout` toxic is removed): the clients see their connections end and
    /// connect again, through whatever cut is on. Connections opened later pass.
    pub fn drop_connections(&self) {
        for s in self.state.sockets.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Cuts the replicas' connections only (`true`): those whose client sent PSYNC; the
    /// other clients (sentinels, applications) still get through. `false` heals them, delivering
    /// what was held back, in order.
    pub fn cut_replicas(&self, on: bool) {
        self.state.cut.lock().unwrap_or_else(|p| p.into_inner()).replicas = on;
        self.state.healed.notify_all();
    }

    /// Passes the server's replies on `delay` late (each read of them; zero: at once): a slow
    /// server or link that still answers.
    pub fn delay_replies(&self, delay: std::time::Duration) {
        self.state.cut.lock().unwrap_or_else(|p| p.into_inner()).reply_delay = delay;
    }
}

/// Forwards both directions of one connection, each on a thread of its own.
fn pipe(st: &Arc<State>, client: TcpStream, server: TcpStream) -> std::io::Result<()> {
    {
        let mut sockets = st.sockets.lock().unwrap_or_else(|p| p.into_inner());
        sockets.push(client.try_clone()?);
        sockets.push(server.try_clone()?);
    }
    let conn = Arc::new(Conn::default());
    st.conns.lock().unwrap_or_else(|p| p.into_inner()).push(conn.clone());
    for (from, to, reply) in [(client.try_clone()?, server.try_clone()?, false), (server, client, true)] {
        let (st, conn) = (st.clone(), conn.clone());
        thread::Builder::new()
            .name("testbed-proxy-pipe".into())
            .spawn(move || copy(&st, &conn, from, to, reply))?;
    }
    Ok(())
}

/// Whether `request` bytes hold a SUBSCRIBE or SSUBSCRIBE (clients send commands upper case).
fn subscribes(request: &[u8]) -> bool {
    request.windows(b"SUBSCRIBE".len()).any(|w| w == b"SUBSCRIBE")
}

/// Whether `request` bytes hold a PSYNC (a replica's handshake; replicas send it upper case).
fn replicates(request: &[u8]) -> bool {
    request.windows(b"PSYNC".len()).any(|w| w == b"PSYNC")
}

/// Copies `from` to `to`; `reply`: the server-to-client direction.
fn copy(st: &State, conn: &Conn, mut from: TcpStream, mut to: TcpStream, reply: bool) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !reply && subscribes(&buf[..n]) {
            conn.subscribed.store(true, Ordering::SeqCst);
        }
        if !reply && replicates(&buf[..n]) {
            conn.replica.store(true, Ordering::SeqCst);
        }
        // Held back while cut (in this buffer, and in the socket's behind it).
        let mut cut = st.cut.lock().unwrap_or_else(|p| p.into_inner());
        while (cut.holds(reply)
            || conn.blackholed.load(Ordering::SeqCst)
            || (cut.replicas && conn.replica.load(Ordering::SeqCst)))
            && !st.stop.load(Ordering::SeqCst)
        {
            cut = st.healed.wait(cut).unwrap_or_else(|p| p.into_inner());
        }
        let delay = if reply { cut.reply_delay } else { std::time::Duration::ZERO };
        drop(cut);
        if !delay.is_zero() {
            thread::sleep(delay);
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        self.cut(false);
        self.cut_replies(false);
        // Wakes the accept loop (accept fails on a listening socket shut down), which then
        // sees the stop flag; joined, so its socket is closed before the port is released.
        // SAFETY: shutdown(2) on a descriptor `self.listening` owns and keeps open.
        unsafe { libc::shutdown(self.listening.as_raw_fd(), libc::SHUT_RDWR) };
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        for s in self.state.sockets.lock().unwrap_or_else(|p| p.into_inner()).drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}
