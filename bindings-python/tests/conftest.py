"""Fixtures: a private redis-server on a free loopback port in a temporary directory."""

from __future__ import annotations

import os
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
    """The private 3-master cluster `make test-python` starts (examples/redis.sh,
    ``start_private_cluster``) and names in ``RLOCK_CLUSTER_URL``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.seed = int(url.split("://", 1)[1].split(",", 1)[0].rsplit(":", 1)[1].rstrip("/"))

    def owner_of(self, key: str) -> redis.Redis:
        """A plain connection to the master serving ``key``."""
        seed = redis.Redis(port=self.seed)
        slot = seed.execute_command("CLUSTER", "KEYSLOT", key)
        for first, last, master, *_ in seed.execute_command("CLUSTER", "SLOTS"):
            if first <= slot <= last:
                return redis.Redis(port=int(master[1]))
        raise AssertionError(f"no master for slot {slot}")


@pytest.fixture(scope="session")
def cluster() -> RedisCluster:
    url = os.environ.get("RLOCK_CLUSTER_URL")
    if not url:
        raise RuntimeError("RLOCK_CLUSTER_URL is not set: run the tests with `make test-python`, "
                           "which starts a private cluster (examples/redis.sh)")
    return RedisCluster(url)
