//! A private redis-server per test: a free loopback port, a temporary directory, killed on drop.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    pub port: u16,
    child: Child,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Starts a server with extra `redis-server` arguments (e.g. `--requirepass`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        Self::launch(None, extra)
    }

    /// Starts a server on `port` (to restart one that was killed).
    pub fn start_on(port: u16) -> RedisServer {
        Self::launch(Some(port), &[])
    }

    /// Starts a server on `port` with extra arguments (e.g. the `--dir` of a killed one).
    pub fn start_on_with(port: u16, extra: &[&str]) -> RedisServer {
        Self::launch(Some(port), extra)
    }

    fn launch(fixed_port: Option<u16>, extra: &[&str]) -> RedisServer {
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..20 {
            let port = fixed_port
                .unwrap_or_else(|| TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
            let mut child = Command::new("redis-server")
                .args([
                    "--port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .arg("--dir")
                .arg(dir.path())
                .args(extra)
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
                        return RedisServer { port, child, _dir: dir };
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("could not start redis-server");
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

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
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
