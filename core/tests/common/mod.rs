//! A private redis-server per test: a free loopback port, a temporary directory, killed on drop.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    pub port: u16,
    child: Child,
    killed: bool,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Starts a server with extra `redis-server` arguments (e.g. `--requirepass`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        Self::launch(None, None, &|_| extra.clone())
    }

    /// Starts a server on `port` (to restart one that was killed).
    pub fn start_on(port: u16) -> RedisServer {
        Self::launch(Some(port), None, &|_| Vec::new())
    }

    /// Starts a server on `port` with extra arguments (e.g. the `--dir` of a killed one).
    pub fn start_on_with(port: u16, extra: &[&str]) -> RedisServer {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        Self::launch(Some(port), None, &|_| extra.clone())
    }

    /// Starts a process of the redis-server binary: `conf` (written to its directory and passed
    /// first, e.g. a sentinel config, which may use `{port}`), then the port, bind address and
    /// `extra(port)` arguments.
    pub fn launch(
        fixed_port: Option<u16>,
        conf: Option<&str>,
        extra: &dyn Fn(u16) -> Vec<String>,
    ) -> RedisServer {
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..20 {
            let port = fixed_port.unwrap_or_else(free_port);
            let mut cmd = Command::new("redis-server");
            match conf {
                Some(conf) => {
                    let path = dir.path().join("redis.conf");
                    std::fs::write(&path, conf.replace("{port}", &port.to_string())).unwrap();
                    cmd.arg(path);
                }
                // A data node: no persistence (the tests restart servers to lose data).
                None => {
                    cmd.args(["--save", "", "--appendonly", "no"]);
                }
            }
            let mut child = cmd
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .arg("--dir")
                .arg(dir.path())
                .args(extra(port))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server must be installed (make test installs it)");
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(10) {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // port taken by someone else: try another
                }
                if let Ok(mut c) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                    use std::io::{Read, Write};
                    let mut buf = [0u8; 64];
                    // Any reply to PING (PONG or NOAUTH) means the server is up.
                    if c.write_all(b"PING\r\n").is_ok() && c.read(&mut buf).is_ok_and(|n| n > 0) {
                        return RedisServer { port, child, killed: false, _dir: dir };
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("could not start redis-server");
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// A plain synchronous connection for inspecting the server.
    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url()).unwrap().get_connection().unwrap()
    }

    /// Calls of one command recorded in `INFO commandstats`.
    pub fn calls(&self, command: &str) -> u64 {
        let info: String = redis::cmd("INFO").arg("commandstats").query(&mut self.conn()).unwrap();
        let prefix = format!("cmdstat_{command}:calls=");
        info.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map(|rest| rest.split(',').next().unwrap().parse().unwrap())
            .unwrap_or(0)
    }

    pub fn pubsub_channels(&self) -> Vec<String> {
        redis::cmd("PUBSUB").arg("CHANNELS").query(&mut self.conn()).unwrap()
    }

    pub fn numsub(&self, channel: &str) -> i64 {
        let v: Vec<redis::Value> =
            redis::cmd("PUBSUB").arg("NUMSUB").arg(channel).query(&mut self.conn()).unwrap();
        match v.get(1) {
            Some(redis::Value::Int(n)) => *n,
            _ => 0,
        }
    }

    /// Sends `signal` (e.g. "STOP", "CONT") to the server process.
    pub fn signal(&self, signal: &str) {
        let ok =
            Command::new("kill").arg(format!("-{signal}")).arg(self.child.id().to_string()).status().unwrap();
        assert!(ok.success());
    }

    /// Whether [`RedisServer::kill`] has not been called yet.
    pub fn is_running(&self) -> bool {
        !self.killed
    }

    pub fn kill(&mut self) {
        self.killed = true;
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub mod topology;

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A free loopback TCP port (free when asked; callers retry when another process takes it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Polls `cond` every 5 ms until it holds or `limit` passes; returns whether it held.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    cond()
}
