"""Fixtures: a private redis-server on a free loopback port in a temporary directory."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from typing import Iterator

import pytest
import redis

import rlock


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="rlock-py-redis-")
        last_error = "not started"
        for _ in range(20):
            self.port = _free_port()
            self.proc = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self.dir],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    if redis.Redis(port=self.port, socket_timeout=1).ping():
                        return
                except redis.exceptions.ConnectionError as e:
                    last_error = str(e)
                time.sleep(0.02)
            self.stop()  # port taken by someone else, or too slow: try another
        raise RuntimeError(f"could not start redis-server: {last_error}")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="session")
def server() -> Iterator[RedisServer]:
    s = RedisServer()
    try:
        yield s
    finally:
        s.stop()
        shutil.rmtree(s.dir, ignore_errors=True)


@pytest.fixture
def url(server: RedisServer) -> str:
    return server.url


@pytest.fixture
def raw(server: RedisServer) -> Iterator[redis.Redis]:
    """A plain redis-py connection to inspect what the library stored."""
    r = redis.Redis(port=server.port)
    yield r
    r.close()


@pytest.fixture
def client(url: str) -> Iterator[rlock.Client]:
    c = rlock.Client(url)
    yield c
    c.close()


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A lock name of this test's own."""
    return f"test:{request.node.name}"


def wait_until(cond, timeout: float = 10.0, what: str = "condition") -> None:  # type: ignore[no-untyped-def]
    """Polls `cond` until true; for states that have no event to wait on."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


class RedisCluster:
    """Three masters on free loopback ports, joined with ``redis-cli --cluster create``."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="rlock-py-cluster-")
        self.procs: list[subprocess.Popen[bytes]] = []
        self.ports: list[int] = []
        for i in range(3):
            port, bus = _free_port(), _free_port()
            node_dir = f"{self.dir}/{i}"
            subprocess.run(["mkdir", "-p", node_dir], check=True)
            self.procs.append(subprocess.Popen(
                ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", node_dir, "--cluster-enabled", "yes",
                 "--cluster-port", str(bus), "--cluster-node-timeout", "1000"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ))
            self.ports.append(port)
        for port in self.ports:
            wait_until(lambda: _pings(port), what=f"cluster node {port}")
        subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in self.ports],
                        "--cluster-yes"], check=True, stdout=subprocess.DEVNULL)
        for port in self.ports:
            wait_until(lambda: b"cluster_state:ok" in redis.Redis(port=port).execute_command("CLUSTER", "INFO"),
                       what="the cluster to form")

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports) + "/"

    def owner_of(self, key: str) -> redis.Redis:
        """A plain connection to the master serving ``key``."""
        slot = redis.Redis(port=self.ports[0]).execute_command("CLUSTER", "KEYSLOT", key)
        for first, last, master, *_ in redis.Redis(port=self.ports[0]).execute_command("CLUSTER", "SLOTS"):
            if first <= slot <= last:
                return redis.Redis(port=int(master[1]))
        raise AssertionError(f"no master for slot {slot}")

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def _pings(port: int) -> bool:
    try:
        return bool(redis.Redis(port=port, socket_timeout=1).ping())
    except redis.exceptions.ConnectionError:
        return False


@pytest.fixture(scope="session")
def cluster() -> Iterator[RedisCluster]:
    c = RedisCluster()
    try:
        yield c
    finally:
        c.stop()
