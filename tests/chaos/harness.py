"""The fault suite's harness (tests/chaos): private servers, worker processes of every surface
speaking the line protocol, the case context that stops everything it started, and the checks
the cases share. The cases live in run.py (and red_lock.py); run.py is the entry point."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import redis

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from testbed import HeldPort, Testbed  # noqa: E402, F401 (HeldPort: for netfaults)
SURFACES = ("rust", "python", "node", "c")
# Where each surface's waiter comes from in the holder/waiter cases: never its own surface.
NEXT = {"rust": "python", "python": "node", "node": "c", "c": "rust"}


def worker_command(surface: str) -> List[str]:
    return {
        "rust": [str(ROOT / "target/release/chaos")],
        "python": [str(ROOT / ".venv/bin/python"), str(ROOT / "tests/chaos/worker.py")],
        "node": ["node", str(ROOT / "tests/chaos/worker.mjs")],
        "c": [str(ROOT / "build/chaos/worker")],
        # The real Redisson (tests/interop/redisson, `make interop-jar`): the protocol's lock
        # commands only, for the network-fault scenarios.
        "redisson": ["java", "-cp", f"{ROOT}/tests/interop/redisson/target/interop.jar:"
                     f"{ROOT}/tests/interop/redisson/target/lib/*", "rlock.interop.Worker"],
    }[surface]


class Fail(Exception):
    """A failed assertion of a case."""


class CaseTimeout(BaseException):
    """Raised in the main thread when a case exceeds its time bound."""


def check(cond: bool, message: str) -> None:
    if not cond:
        raise Fail(message)


def eventually(cond: Callable[[], bool], limit: float, what: str, step: float = 0.01) -> float:
    """Polls a real condition (one without an event to wait on) until it holds; returns the
    seconds it took. Fails after `limit` seconds."""
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > limit:
            raise Fail(f"timed out after {limit:.0f} s waiting for {what}")
        time.sleep(step)
    return time.monotonic() - start


def channel(name: str) -> str:
    return f"redisson_lock__channel:{{{name}}}"


def bare(spec: str) -> str:
    """The lock name of a worker's lock spec (`NAME` or `KIND@NAME`)."""
    return spec.partition("@")[2] or spec


class Server:
    """A private redis-server from rlock-testbed: loopback only, a port outside the ephemeral
    range, a temporary directory, no persistence unless asked (then an append-only file that
    survives restart()). rlock-testbed kills and restarts it, and removes it when closed."""

    def __init__(self, password: Optional[str] = None, persistent: bool = False, fsync_always: bool = False) -> None:
        args = (["--requirepass", password] if password else []) + (["--appendonly"] if persistent else [])
        if fsync_always:  # every write on disk before its reply: a restart loses nothing acknowledged
            args += ["--appendonly", "--", "--appendfsync", "always"]
        # `make services` runs cases against a managed-endpoint stand-in of one server instead
        # (proxy-endpoint, restricted, evicting: docs/operations/managed-services.md).
        topology = os.environ.get("CHAOS_STANDIN", "single")
        if topology != "single" and args:
            raise ValueError(f"CHAOS_STANDIN={topology}: a case that needs {args} runs on a plain server only")
        self.testbed = Testbed(topology, *args)
        self.password = password
        self.port = self.testbed.port
        self.paused = False

    @property
    def url(self) -> str:
        return self.testbed.url

    def conn(self, timeout: float = 5) -> redis.Redis:
        return redis.Redis(port=self.port, password=self.password, socket_timeout=timeout, decode_responses=True)

    def restart(self, down: float) -> None:
        """SIGKILL, `down` seconds without a server, then a new server on the same port (with an
        empty dataset, unless persistent)."""
        self.testbed.kill()
        time.sleep(down)  # the length of the outage, not a wait for anything
        self.testbed.restart()

    def signal(self, sig: int) -> None:
        """SIGSTOP or SIGCONT."""
        if sig == signal.SIGSTOP:
            self.testbed.stop()
            self.paused = True
        elif sig == signal.SIGCONT:
            self.testbed.cont()
            self.paused = False
        else:
            raise ValueError(f"signal {sig}: only SIGSTOP and SIGCONT")

    def kill(self) -> None:
        """Stops the server for good (rlock-testbed kills it and removes its directory)."""
        self.testbed.close()

    def evals(self) -> int:
        """Script calls recorded by INFO commandstats (EVALSHA and EVAL)."""
        stats = self.conn().info("commandstats")
        return sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in ("evalsha", "eval"))

    def numsub(self, spec: str) -> int:
        """Subscribers waiting on the lock of `spec` (a read-write lock's channel; a fair lock's
        waiters each have their own; a semaphore's and a permit-expirable semaphore's wait on
        `redisson_sc:{NAME}`; a multi-lock's on the channel of the member they wait for)."""
        kind, _, name = spec.rpartition("@")
        r = self.conn()
        if kind in ("read", "write"):
            chans = [f"redisson_rwlock:{{{name}}}"]
        elif kind in ("fair", "nrf"):
            chans = r.pubsub_channels(f"redisson_lock__channel:{{{name}}}:*")
        elif kind in ("sem", "pes"):
            chans = [f"redisson_sc:{{{name}}}"]
        elif kind == "multi":
            chans = [channel(f"{name}:x"), channel(f"{name}:y")]
        else:
            chans = [channel(name)]
        return sum(int(n) for _, n in r.pubsub_numsub(*chans)) if chans else 0


class ExpiredKeys:
    """The names of the keys that expire on a server from now on (keyspace notifications; a
    pattern subscription, so PUBSUB CHANNELS stays empty). `lock_keys()` leaves out the holder
    records (rlock:client:<uuid>), which expire by design once a client holds nothing."""

    def __init__(self, srv: "Server") -> None:
        # Kept for the watcher's lifetime: a Redis client that is garbage-collected closes its
        # pool, the subscription's connection included (the watcher used to die right here,
        # "Bad file descriptor", so that nothing it was to catch could fail a case).
        self.r = srv.conn()
        self.r.config_set("notify-keyspace-events", "Ex")
        self.names: List[str] = []
        self.error: Optional[BaseException] = None
        self.ps = self.r.pubsub()
        self.ps.psubscribe(**{"__keyevent@*__:expired": lambda m: self.names.append(str(m["data"]))})
        # Confirmed before anything of the case runs: no expiry after this is missed.
        msg = self.ps.get_message(timeout=5)
        if not msg or msg.get("type") != "psubscribe":
            raise Fail(f"keyspace notifications: no psubscribe confirmation ({msg})")
        self.stopping = False
        self.thread = self.ps.run_in_thread(sleep_time=0.05, daemon=True, exception_handler=self._on_error)

    def _on_error(self, error: BaseException, _ps: object, thread: Any) -> None:
        # stop() closes the connection under the thread's read: that error is the stop itself.
        # Any other ends the watch, and lock_keys() fails the case with it.
        if not self.stopping:
            self.error = error
        thread.stop()

    def lock_keys(self) -> List[str]:
        """The expired keys but holder records; fails when the watch did not last."""
        if self.error is not None:
            raise Fail(f"the keyspace-notification watcher died: {self.error!r}")
        return [k for k in self.names if not k.startswith("rlock:client:")]

    def stop(self) -> None:
        self.stopping = True
        self.thread.stop()
        self.thread.join(timeout=5)


def existing(r: redis.Redis, keys: Iterable[str]) -> int:
    """How many of `keys` exist, asked one key at a time: a multi-key EXISTS is refused with
    CROSSSLOT behind a proxy endpoint (`make services` runs cases there)."""
    return sum(r.exists(k) for k in keys)


class HolderWatch:
    """Watches `keys` in a thread from now until `stop()`: for each key seen held in that time,
    its last holders (each owner field `<client uuid>:<id>` with its count and the worker whose
    client it is: the holder record `rlock:client:<uuid>` names the process) and its PTTL. A
    key that expires instead of being released then names the surface that took it, also when
    its acquire landed after the first look found every key gone."""

    def __init__(self, r: redis.Redis, keys: List[str], workers: Iterable["Worker"]) -> None:
        self.r, self.keys = r, keys
        self.by_pid = {w.proc.pid: w.label for w in workers}
        self.seen: Dict[str, Dict[str, Any]] = {}
        self.start = time.monotonic()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.is_set():
            try:
                for k in self.keys:
                    fields, pttl = self.r.hgetall(k), self.r.pttl(k)
                    if not fields:
                        continue
                    owners = {}
                    for owner, count in fields.items():
                        record = self.r.get(f"rlock:client:{str(owner).rsplit(':', 1)[0]}")
                        pid = json.loads(record).get("pid") if record else None
                        owners[owner] = {"count": count, "worker": self.by_pid.get(pid, f"pid {pid}")}
                    self.seen[k] = {"owners": owners, "pttl_ms": pttl, "at_s": round(time.monotonic() - self.start, 3)}
            except redis.RedisError as e:  # the watch is a diagnostic: it never fails a case
                self.seen["error"] = {"error": str(e)}
                return
            self.done.wait(0.02)

    def stop(self) -> Dict[str, Dict[str, Any]]:
        """Ends the watch; what it saw."""
        self.done.set()
        self.thread.join(5)
        return self.seen


def locks_gone(r: redis.Redis, keys: List[str], workers: Iterable["Worker"]) -> None:
    """Waits up to 10 s for every key of `keys` to be gone; else fails saying whose holds are
    left (each key's hash names its owners' client uuids, and its PTTL whether someone renews it)
    and what each worker still tracks."""
    try:
        eventually(lambda: existing(r, keys) == 0, 10, "every lock key gone")
    except Fail:
        stats = {w.label: w.call("stats", "stats") for w in workers}
        left = [(k, r.hgetall(k), r.pttl(k)) for k in keys if r.exists(k)]
        raise Fail(f"lock keys left: {left}; workers: {stats}") from None


class Worker:
    """One worker process of one surface; a reader thread queues its event lines."""

    def __init__(self, surface: str, url: str, tmp: Path, label: str, env: Optional[Dict[str, str]] = None,
                 **options: Any) -> None:
        """`options` go to the worker's command line; `env` adds to its environment."""
        self.surface, self.label = surface, label
        self.log = tmp / f"{label}.stderr"
        opts = [f"{k}={v}" for k, v in options.items()] + [f"label={label}"]
        with open(self.log, "w") as stderr:
            self.proc = subprocess.Popen(
                worker_command(surface) + [url] + opts, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=stderr, text=True, bufsize=1, cwd=ROOT, env={**os.environ, **(env or {})},
            )
        self.events: "queue.Queue[Tuple[float, Dict[str, Any]]]" = queue.Queue()
        self.lost: List[Tuple[float, str]] = []
        # The same reports whole (with the reason where the worker gives one).
        self.lost_events: List[Tuple[float, Dict[str, Any]]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            now = time.monotonic()
            try:
                event = json.loads(line)
            except ValueError:
                event = {"event": "garbage", "line": line.rstrip()}
            if event.get("event") == "lost":
                self.lost.append((now, event.get("name", "")))
                self.lost_events.append((now, event))
            else:
                self.events.put((now, event))
        self.events.put((time.monotonic(), {"event": "eof"}))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise Fail(f"{self.label}: cannot send {line!r}: {e}")

    def reply(self, timeout: float) -> Tuple[float, Dict[str, Any]]:
        """The next event and when it arrived (time.monotonic())."""
        try:
            return self.events.get(timeout=timeout)
        except queue.Empty:
            raise Fail(f"{self.label}: no answer within {timeout:.0f} s")

    def expect(self, event: str, timeout: float = 20) -> Tuple[float, Dict[str, Any]]:
        t, e = self.reply(timeout)
        check(e.get("event") == event, f"{self.label}: expected {event}, got {e}{self.stderr_tail()}")
        return t, e

    def call(self, line: str, event: str, timeout: float = 20) -> Dict[str, Any]:
        self.send(line)
        return self.expect(event, timeout)[1]

    def pending(self) -> bool:
        return not self.events.empty()

    def stderr_tail(self) -> str:
        try:
            text = self.log.read_text(errors="replace").strip()
        except OSError:
            return ""
        return f"\n      {self.label} stderr: " + text[-600:].replace("\n", "\n        ") if text else ""

    def panicked(self) -> bool:
        try:
            return "panicked" in self.log.read_text(errors="replace")
        except OSError:
            return False

    def exit(self, timeout: float = 10) -> None:
        """Asks the worker to close its client and exit; kills it if it does not."""
        if self.proc.poll() is None:
            try:
                self.send("exit")
                self.proc.wait(timeout=timeout)
            except (Fail, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            if sig == signal.SIGKILL:
                self.proc.wait()


class Ctx:
    """What one case started; everything is stopped by cleanup()."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.servers: List[Server] = []
        self.workers: List[Worker] = []

    def server(self, password: Optional[str] = None, persistent: bool = False, fsync_always: bool = False) -> Server:
        s = Server(password, persistent, fsync_always)
        self.servers.append(s)
        return s

    def worker(self, surface: str, server: Server, label: Optional[str] = None, **options: Any) -> Worker:
        return self.worker_at(surface, server.url, label, **options)

    def worker_at(self, surface: str, url: str, label: Optional[str] = None, **options: Any) -> Worker:
        """A worker of `surface` on `url` (a proxy, a Sentinel set), stopped with the case."""
        label = label or f"{surface}-{len(self.workers)}"
        w = Worker(surface, url, self.tmp, label, **options)
        self.workers.append(w)
        return w

    def ready(self, *workers: Worker) -> None:
        for w in workers:
            w.expect("ready", timeout=30)

    def cleanup(self) -> None:
        for s in self.servers:  # a stopped server must not keep workers hanging
            if s.paused:
                try:
                    s.signal(signal.SIGCONT)
                except Exception:  # the case was interrupted mid-command: killing it is enough
                    pass
        for w in self.workers:
            w.kill()
        for s in self.servers:
            s.kill()


def run_mx(srv: Server, workers: List[Worker], prefix: str, names: int, total: int,
           during: Optional[Callable[[], None]] = None) -> Tuple[int, float]:
    """`total` critical sections (the `mx` command) on `names` locks `<prefix>:<k>`, shared out
    among `workers`, started together. Checks 0 violations, every counter equal to the sections
    run on its name, no key but the counters left (latches go in the background), hand-offs
    between surfaces. `during` runs once every worker has its command (a fault to inject while
    they work). Returns the hand-offs and the seconds it took."""
    shares = [total // len(workers) + (i < total % len(workers)) for i in range(len(workers))]
    start = time.monotonic()
    for w, n in zip(workers, shares):
        w.send(f"mx {prefix} {names} {n}")
    if during is not None:
        during()
    per_name = [0] * names
    violations = crossings = 0
    for w, n in zip(workers, shares):
        _, done = w.expect("mx_done", timeout=240)
        check(sum(done["per_name"]) == n, f"{w.label}: ran {sum(done['per_name'])} sections, asked {n}")
        violations += done["violations"]
        crossings += done["crossings"]
        per_name = [a + b for a, b in zip(per_name, done["per_name"])]
    took = time.monotonic() - start
    r = srv.conn()
    counters = [int(r.get(f"{prefix}:{k}:counter") or 0) for k in range(names)]
    check(violations == 0, f"{prefix}: {violations} critical sections found another's marker set")
    check(sum(per_name) == total, f"{prefix}: workers ran {sum(per_name)} sections, expected {total}")
    check(counters == per_name, f"{prefix}: counters {counters} != sections per name {per_name}")
    base = bare(prefix)

    def left() -> List[str]:
        return [str(k) for k in r.keys(f"*{base}*") if not str(k).endswith((":counter", ":last"))]
    try:
        eventually(lambda: not left(), 10, "no lock, queue, deadline or latch key left")
    except Fail:
        raise Fail(f"{prefix}: left behind: {left()}")
    check(crossings > 0, f"{prefix}: the lock never passed between surfaces")
    return crossings, took
