"""Fixtures: a private redis-server from rlock-testbed (tests/testbed.py), the launcher every
suite uses: a port outside the kernel's ephemeral range, a temporary directory, its log printed
when it does not come up."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest
import redis

import rlock

# tests/testbed.py at the repository root, shared with tests/chaos.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from testbed import HeldPort, Testbed  # noqa: E402

__all__ = ["HeldPort", "Testbed"]


@pytest.fixture(scope="session")
def server() -> Iterator[Testbed]:
    with Testbed("single") as s:
        yield s


@pytest.fixture
def url(server: Testbed) -> str:
    return server.url


@pytest.fixture
def raw(server: Testbed) -> Iterator[redis.Redis]:
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

    def masters(self) -> list[redis.Redis]:
        """A plain connection to each master."""
        seed = redis.Redis(port=self.seed)
        return [redis.Redis(port=int(master[1])) for _, _, master, *_ in seed.execute_command("CLUSTER", "SLOTS")]

    def answers_shardnumsub(self) -> bool:
        """Whether the cluster has sharded pub/sub (Redis 7 and later answer PUBSUB SHARDNUMSUB,
        6.2 does not): what decides rlock's choice, and Redisson's."""
        try:
            redis.Redis(port=self.seed).execute_command("PUBSUB", "SHARDNUMSUB")
            return True
        except redis.ResponseError:
            return False


@pytest.fixture(scope="session")
def cluster() -> RedisCluster:
    url = os.environ.get("RLOCK_CLUSTER_URL")
    if not url:
        raise RuntimeError("RLOCK_CLUSTER_URL is not set: run the tests with `make test-python`, "
                           "which starts a private cluster (examples/redis.sh)")
    return RedisCluster(url)
