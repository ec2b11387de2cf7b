"""The semaphore: Redisson's layout, threading.Semaphore's interface, asyncio, cancel-safety."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest
import redis

import rlock


def test_permits_in_redissons_layout(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    sem = client.semaphore(name)
    assert sem.available_permits() == 0, "a missing key is 0 permits"
    assert sem.acquire(blocking=False) is False
    assert sem.try_set_permits(2) is True
    assert sem.try_set_permits(5) is False
    assert raw.get(name) == b"2"
    with sem:
        assert sem.available_permits() == 1
        assert sem.acquire(2, timeout=0.05) is False
    assert sem.acquire(2) is True
    assert sem.release(2) == 2
    assert sem.add_permits(3) == 5
    assert sem.drain_permits() == 5
    assert sem.available_permits() == 0


def test_threads_never_exceed_the_permits(client: rlock.Client, name: str) -> None:
    sem = client.semaphore(name)
    sem.try_set_permits(3)
    inside = 0
    most = 0
    guard = threading.Lock()

    def work() -> None:
        nonlocal inside, most
        for _ in range(30):
            with sem:
                with guard:
                    inside += 1
                    most = max(most, inside)
                with guard:
                    inside -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most <= 3
    assert sem.available_permits() == 3

    # Three holders at once are admitted (they meet at a barrier while holding); a fourth is not.
    together = threading.Barrier(4, timeout=10)
    done = threading.Event()

    def hold() -> None:
        with sem:
            together.wait()
            done.wait(10)

    holders = [threading.Thread(target=hold) for _ in range(3)]
    for t in holders:
        t.start()
    together.wait()
    assert sem.acquire(blocking=False) is False
    done.set()
    for t in holders:
        t.join()
    assert sem.available_permits() == 3


def test_cancelled_asyncio_acquires_keep_the_count(client: rlock.Client, name: str) -> None:
    sem = client.semaphore(name)
    sem.try_set_permits(2)

    async def one(delay: float) -> None:
        task = asyncio.ensure_future(sem.acquire_async())
        await asyncio.sleep(delay)
        if task.cancel():
            try:
                await task
            except asyncio.CancelledError:
                return
        if task.result():
            await sem.release_async()

    async def main() -> None:
        rng = random.Random(3)
        await asyncio.gather(*(one(rng.random() * 0.003) for _ in range(300)))

    asyncio.run(main())
    # Permits taken for a cancelled task go back in the background.
    deadline = time.monotonic() + 10
    while sem.available_permits() != 2:
        assert time.monotonic() < deadline, f"{sem.available_permits()} permits, want 2"
        time.sleep(0.01)


def test_async_with_and_bad_input(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    sem = client.semaphore(name)
    sem.try_set_permits(1)

    async def main() -> None:
        async with sem:
            assert sem.available_permits() == 0
            assert await sem.acquire_async(timeout=0) is False

    asyncio.run(main())
    assert sem.available_permits() == 1
    for bad in (0, -1):
        with pytest.raises(rlock.InvalidArgumentError):
            sem.acquire(bad)
        with pytest.raises(rlock.InvalidArgumentError):
            sem.release(bad)
    with pytest.raises(rlock.InvalidArgumentError):
        sem.try_set_permits(-1)
    with pytest.raises(rlock.InvalidArgumentError):
        sem.acquire(timeout=-5)
    with pytest.raises(rlock.InvalidArgumentError):
        client.semaphore("")
    assert raw.get(name) == b"1", "nothing changed"


def test_module_semaphore(url: str, name: str) -> None:
    rlock.configure(url)
    sem = rlock.semaphore(name)
    assert sem.try_set_permits(1)
    with sem:
        assert sem.acquire(blocking=False) is False
