"""Private redis-servers for the Python suites, from rlock-testbed (testbed/ in this repository).

The binary starts a topology (ports outside the kernel's ephemeral range, servers started once they
answer PING, the server's log printed on stderr when one does not come up), prints one JSON line
describing it, and stays as its supervisor until its stdin closes. This module spawns it with
stdin=PIPE, reads that line, sends it fault-injection commands (kill, restart, stop, cont, log),
and closes its stdin to stop everything. A test process that dies closes the pipe too, so its
servers never outlive it.

    with Testbed("single", "--requirepass", "pw") as tb:
        tb.url, tb.port, tb.pid
        tb.kill(); tb.restart()

The binary is $RLOCK_TESTBED (exported by make) or target/release/rlock-testbed (`make testbed`).
It runs the server binary $RLOCK_SERVER names (a path, or NAME-VERSION from `make servers`' cache),
else redis-server on PATH; the environment passes through, so every suite honours it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
from pathlib import Path
from typing import IO, Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]


def binary() -> str:
    path = os.environ.get("RLOCK_TESTBED") or str(ROOT / "target/release/rlock-testbed")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"missing {path}: run 'make testbed'")
    return path


def _port() -> Dict[str, Any]:
    out = subprocess.run([binary(), "port"], check=True, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    return dict(json.loads(out.stdout))


class HeldPort:
    """A port outside the ephemeral range that no other test takes until close(): for something
    this process starts listening on (a toxiproxy, a proxy it adds, a small service), or an
    address where nothing listens.

    rlock-testbed claims the ports of its servers with an exclusive flock on one file per port
    and releases a `port` answer's claim as it exits; this claims that same file again, so test
    binaries and suites running side by side never choose it while it is in use. A port taken
    between the two (another process claimed it, or something listens there) is passed over."""

    def __init__(self) -> None:
        self._fd: Optional[int] = None
        for _ in range(50):
            answer = _port()
            # flock needs only a descriptor: read-only opens a lock file another user made too.
            # Where none can be opened the port goes unclaimed (as rlock-testbed's own claim
            # does then), checked free by binding it.
            fd: Optional[int]
            try:
                fd = os.open(str(answer["lock"]), os.O_RDONLY | os.O_CREAT, 0o644)
            except OSError:
                fd = None
            if fd is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)
                    continue
            port = int(answer["port"])
            with socket.socket() as probe:
                try:
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    probe.bind(("127.0.0.1", port))
                except OSError:
                    if fd is not None:
                        os.close(fd)
                    continue
            self.port: int = port
            self._fd = fd
            return
        raise TestbedError("no port could be held after 50 tries")

    def close(self) -> None:
        """Lets other tests have the port (once nothing here listens on it any more)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> "HeldPort":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TestbedError(RuntimeError):
    """The testbed did not start, or a command failed."""

    __test__ = False  # not a pytest test class


class Testbed:
    """One rlock-testbed process and the topology it started (``info`` is its JSON line)."""

    __test__ = False  # not a pytest test class

    def __init__(self, topology: str = "single", *args: str) -> None:
        self.args = [topology, *args]
        # stderr is inherited: when a server does not come up, its log shows in the test output.
        self.proc = subprocess.Popen(
            [binary(), *self.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in: IO[str] = self.proc.stdin
        self._out: IO[str] = self.proc.stdout
        line = self._out.readline()
        if not line:
            code = self.proc.wait()
            raise TestbedError(f"rlock-testbed {' '.join(self.args)} did not start (exit {code}); "
                               "its reason and the server's log are on stderr above")
        self.info: Dict[str, Any] = json.loads(line)

    # What the suites read most.
    @property
    def url(self) -> str:
        return str(self.info["url"])

    @property
    def port(self) -> int:
        """The port of the only node (single, tls)."""
        return int(self.info["port"])

    @property
    def ports(self) -> List[int]:
        return [int(p) for p in self.info["ports"]]

    @property
    def pid(self) -> Optional[int]:
        """The pid of the only node as last reported (None once killed)."""
        return self.info.get("pid")

    @property
    def dir(self) -> str:
        return str(self.info["dir"])

    @property
    def password(self) -> Optional[str]:
        return self.info.get("password")

    def command(self, line: str) -> Dict[str, Any]:
        """Sends one command line and returns its JSON answer; raises TestbedError on "ok": false."""
        self._in.write(line + "\n")
        self._in.flush()
        answer = self._out.readline()
        if not answer:
            raise TestbedError(f"rlock-testbed exited (code {self.proc.poll()}) on {line!r}")
        reply: Dict[str, Any] = json.loads(answer)
        if not reply.get("ok"):
            raise TestbedError(f"{line!r}: {reply.get('error')}")
        if "pid" in reply and len(self.info.get("nodes", [])) == 1:
            self.info["pid"] = reply["pid"]
        return reply

    def _node(self, verb: str, node: Optional[str]) -> Dict[str, Any]:
        return self.command(verb if node is None else f"{verb} {node}")

    def kill(self, node: Optional[str] = None) -> Dict[str, Any]:
        """SIGKILL (node: a name, port or index; may be left out with one node)."""
        return self._node("kill", node)

    def restart(self, node: Optional[str] = None) -> Dict[str, Any]:
        """Starts it again on the same port in the same directory (AOF data comes back)."""
        return self._node("restart", node)

    def stop(self, node: Optional[str] = None) -> Dict[str, Any]:
        """SIGSTOP."""
        return self._node("stop", node)

    def cont(self, node: Optional[str] = None) -> Dict[str, Any]:
        """SIGCONT."""
        return self._node("cont", node)

    def log(self, node: Optional[str] = None, lines: int = 60) -> str:
        """The last lines of a node's log."""
        name = node if node is not None else self.info["nodes"][0]["name"]
        return str(self.command(f"log {name} {lines}")["log"])

    def close(self, timeout: float = 30) -> None:
        """Closes its stdin: it stops every server and removes their directories, then exits."""
        try:
            self._in.close()
        except OSError:
            pass  # it already exited
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait()
        self._out.close()

    def __enter__(self) -> "Testbed":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
