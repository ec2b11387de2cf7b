"""RedLock on the Python surface, over three private servers: the shape every lock has
(acquire/release, with, async with, is_held), exclusion across threads, Redisson's layout on each
server, a server down, a majority down, the fenced token's order and the lost-hold signal."""

from __future__ import annotations

import asyncio
import threading
from typing import Iterator, List

import pytest
import redis

import rlock
from conftest import Testbed, wait_until


@pytest.fixture
def servers() -> Iterator[List[Testbed]]:
    beds = [Testbed("single") for _ in range(3)]
    try:
        yield beds
    finally:
        for b in beds:
            b.close()


@pytest.fixture
def clients(servers: List[Testbed]) -> Iterator[List[rlock.Client]]:
    cs = [rlock.Client(s.url, command_timeout=2.0, retry_attempts=0) for s in servers]
    yield cs
    for c in cs:
        c.close()


def test_the_shape_of_every_lock(clients: List[rlock.Client], servers: List[Testbed], name: str) -> None:
    lock = rlock.red_lock(name, clients)
    assert (lock.name, lock.quorum) == (name, 2)
    with lock:
        assert lock.is_held()
        held = [redis.Redis(port=s.port).hgetall(name) for s in servers]
        assert sum(1 for h in held if h) >= 2
        for h in held:  # Redisson's layout: {"<client uuid>:<owner id>": hold count}
            assert all(v == b"1" and k.count(b":") >= 1 for k, v in h.items())
        got: List[bool] = []
        t = threading.Thread(target=lambda: got.append(lock.acquire(timeout=0.2)))
        t.start()
        t.join()
        assert got == [False]  # another thread is another owner
    assert not lock.is_held()
    with pytest.raises(rlock.NotHeldError):
        lock.release()

    async def in_a_task() -> None:
        async with lock:
            assert lock.is_held()
        assert await lock.acquire_async(timeout=1.0)
        assert await lock.release_async()

    asyncio.run(in_a_task())


def test_a_waiter_is_woken_by_the_release(clients: List[rlock.Client], servers: List[Testbed], name: str) -> None:
    lock = rlock.red_lock(name, clients)
    assert lock.acquire()
    got: List[bool] = []
    t = threading.Thread(target=lambda: got.append(lock.acquire(timeout=20)))
    t.start()
    channel = f"redisson_lock__channel:{{{name}}}"
    wait_until(
        lambda: all(redis.Redis(port=s.port).pubsub_numsub(channel)[0][1] >= 1 for s in servers),
        what="the waiter subscribed on every server",
    )
    assert lock.release()
    t.join(25)
    assert got == [True]


def test_bad_client_lists_are_refused(clients: List[rlock.Client], name: str) -> None:
    for n in (0, 1, 2):
        with pytest.raises(rlock.InvalidArgumentError):
            rlock.red_lock(name, clients[:n])
    with pytest.raises(rlock.InvalidArgumentError):
        rlock.red_lock(name, [clients[0], clients[0], clients[1]])


def test_a_minority_down_still_locks_a_majority_down_fails_typed(
    clients: List[rlock.Client], servers: List[Testbed], name: str
) -> None:
    lock = rlock.red_lock(name, clients)
    servers[2].kill()
    with lock:
        assert lock.is_held()
    servers[1].kill()
    with pytest.raises((rlock.ConnectionError, rlock.TimeoutError)) as e:
        lock.acquire(timeout=1)
    assert "majority of 2" in str(e.value)
    wait_until(lambda: redis.Redis(port=servers[0].port).exists(name) == 0, what="the live member given back")


def test_fenced_tokens_increase_whatever_the_majority(
    clients: List[rlock.Client], servers: List[Testbed], name: str
) -> None:
    for s, v in zip(servers, (1, 1, 100)):
        redis.Redis(port=s.port).set(f"redisson_lock_token:{{{name}}}", v)
    lock = rlock.fenced_red_lock(name, clients)
    servers[1].stop()
    with lock as a:
        assert lock.token == a
    servers[1].cont()
    servers[2].stop()
    with lock as b:
        pass
    servers[2].cont()
    assert a > 100 and b > a
    assert lock.token is None


def test_the_holder_hears_when_a_majority_is_lost(servers: List[Testbed], name: str) -> None:
    clients = [
        rlock.Client(s.url, command_timeout=2.0, retry_attempts=0, watchdog_timeout=1.5, lease_doubt_margin=0.3)
        for s in servers
    ]
    try:
        lock = rlock.red_lock(name, clients)
        heard: List[rlock.LostEvent] = []
        lock.on_lost(heard.append)
        assert lock.acquire()
        servers[0].kill()
        servers[1].kill()
        wait_until(lambda: bool(heard), what="the lost-hold event")
        assert lock.is_lost()
        assert (heard[0].name, heard[0].kind) == (name, "red_lock")
        with pytest.raises(rlock.LockLostError):
            lock.release()
    finally:
        for c in clients:
            c.close()
