"""The permit-expirable semaphore: Redisson's layout, permit ids, leases, the watchdog bringing a
killed holder's permit back, lost permits, asyncio and cancel-safety."""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
import threading
import time
from typing import List

import pytest
import redis

import rlock

from conftest import wait_until


def timeouts_key(name: str) -> str:
    return f"{{{name}}}:timeout"


def test_permit_ids_in_redissons_layout(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    sem = client.permit_expirable_semaphore(name)
    assert sem.acquire(blocking=False) is None, "a missing key is 0 permits"
    assert sem.try_set_permits(2) is True
    first = sem.acquire(lease=60.0)
    assert first is not None and len(first) == 32 and int(first, 16) >= 0
    # Held as 16 raw bytes scored by the expiry (ms).
    score = raw.zscore(timeouts_key(name), bytes.fromhex(first))
    assert score is not None and score > time.time() * 1000 + 50_000
    with sem.permit(timeout=1.0) as second:
        assert second != first
        assert sem.acquired_permits() == 2 and sem.available_permits() == 0
        assert sem.acquire(blocking=False) is None
        # Core's error, in the words C and Node use, with its code.
        with pytest.raises(rlock.NotAcquiredError) as refused:
            with sem.permit(timeout=0.05):
                pass
        assert str(refused.value) == f"a permit of semaphore '{name}' was not acquired within 50 ms"
        assert refused.value.code == "RLOCK_NOT_ACQUIRED"
    assert sem.available_permits() == 1
    sem.release(first)
    with pytest.raises(rlock.NotHeldError):
        sem.release(first)
    assert raw.get(name) == b"2" and raw.zcard(timeouts_key(name)) == 0


def test_lease_expiry_and_update(client: rlock.Client, name: str) -> None:
    sem = client.permit_expirable_semaphore(name)
    sem.try_set_permits(1)
    short = sem.acquire(lease=0.2)
    assert short is not None
    # No message announces an expiry: the waiter sleeps until the earliest one.
    taken = sem.acquire(timeout=10, lease=60.0)
    assert taken is not None
    with pytest.raises(rlock.NotHeldError):
        sem.release(short)
    sem.update_lease(taken, None)  # now renewed by the watchdog
    sem.release(taken)
    with pytest.raises(rlock.NotHeldError):
        sem.update_lease(taken, 5.0)
    assert sem.available_permits() == 1


def test_bad_input_changes_nothing(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    sem = client.permit_expirable_semaphore(name)
    sem.try_set_permits(1)
    held = sem.acquire()
    assert held is not None
    for bad in ("", "xyz", held[:31], "+" + held[1:], held[:-1] + "g"):
        with pytest.raises(rlock.InvalidArgumentError):
            sem.release(bad)
        with pytest.raises(rlock.InvalidArgumentError):
            sem.update_lease(bad, 1.0)
    for lease in (0.0, -1.0):
        with pytest.raises(rlock.InvalidArgumentError):
            sem.acquire(lease=lease)
    with pytest.raises(rlock.InvalidArgumentError):
        sem.try_set_permits(-1)
    with pytest.raises(rlock.InvalidArgumentError):
        client.permit_expirable_semaphore("")
    assert raw.get(name) == b"0" and raw.zcard(timeouts_key(name)) == 1, "nothing changed"
    sem.release(held)


HOLDER = """
import sys, time, rlock
client = rlock.Client(sys.argv[1], watchdog_timeout=1.0)
sem = client.permit_expirable_semaphore(sys.argv[2])
print(sem.acquire(), flush=True)
time.sleep(600)
"""


def test_a_killed_holders_permit_comes_back(url: str, client: rlock.Client, name: str) -> None:
    sem = client.permit_expirable_semaphore(name)
    sem.try_set_permits(1)
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, url, name], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        held = proc.stdout.readline().strip()
        assert len(held) == 32
        # While the holder lives its permit stays, well past its 1 s lease.
        assert sem.acquire(timeout=2.5) is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        started = time.monotonic()
        back = sem.acquire(timeout=10)
        assert back is not None, "the killed holder's permit came back"
        assert time.monotonic() - started < 3.0
        sem.release(back)
    finally:
        proc.kill()
        proc.wait()


def test_a_permit_removed_under_the_watchdog_is_reported_lost(url: str, name: str, raw: redis.Redis) -> None:
    # Renewed every second; a shorter lease could be in doubt (not "gone") after a stall.
    with rlock.Client(url, watchdog_timeout=3.0) as client:
        sem = client.permit_expirable_semaphore(name)
        sem.try_set_permits(1)
        events: List[rlock.LostEvent] = []
        heard = threading.Event()

        def on_lost(e: rlock.LostEvent) -> None:
            events.append(e)
            heard.set()

        remove = sem.on_lost(on_lost)
        held = sem.acquire()
        assert held is not None
        assert raw.zrem(timeouts_key(name), bytes.fromhex(held)) == 1
        assert heard.wait(10)
        owner0 = client._native.owner_name(0)
        assert events == [rlock.LostEvent(name=name, kind="permit", owner=owner0, reason="gone", permit_id=held)]
        assert sem.is_lost(held)
        with pytest.raises(rlock.LockLostError):
            sem.release(held)
        remove()


def test_asyncio_permits_and_cancelled_acquires(client: rlock.Client, name: str) -> None:
    sem = client.permit_expirable_semaphore(name)
    sem.try_set_permits(2)

    async def one(delay: float) -> None:
        task = asyncio.ensure_future(sem.acquire_async())
        await asyncio.sleep(delay)
        if task.cancel():
            try:
                await task
            except asyncio.CancelledError:
                return
        permit = task.result()
        if permit is not None:
            await sem.release_async(permit)

    async def main() -> None:
        async with sem.permit() as p:
            assert len(p) == 32 and sem.acquired_permits() == 1
            assert await sem.acquire_async(timeout=0.0, lease=1.0) is not None
        rng = random.Random(5)
        await asyncio.gather(*(one(rng.random() * 0.003) for _ in range(200)))

    asyncio.run(main())
    # Permits taken for a cancelled task go back in the background; the one taken with a
    # lease above expires.
    wait_until(lambda: sem.available_permits() == 2 and sem.acquired_permits() == 0, what="every permit back")


def test_module_function(url: str, name: str) -> None:
    rlock.configure(url)
    sem = rlock.permit_expirable_semaphore(name)
    assert sem.try_set_permits(1)
    with sem.permit() as p:
        assert sem.acquire(blocking=False) is None
        assert len(p) == 32
    assert sem.available_permits() == 1


def test_async_permit_refused_in_cores_words(client: rlock.Client, name: str) -> None:
    sem = client.permit_expirable_semaphore(name)
    sem.try_set_permits(1)
    held = sem.acquire(lease=30.0)
    assert held is not None

    async def main() -> None:
        assert await sem.acquire_async(timeout=0.0) is None
        with pytest.raises(rlock.NotAcquiredError) as refused:
            async with sem.permit(timeout=0.05):
                pass
        assert str(refused.value) == f"a permit of semaphore '{name}' was not acquired within 50 ms"

    asyncio.run(main())
    sem.release(held)
    assert sem.available_permits() == 1
