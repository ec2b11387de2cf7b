"""Many threads sharing one client, its lock objects and a semaphore, with exact counters.

Where the GIL is off (a free-threaded CPython, issue 43) every native object rlock hands Python
is shared for real: a data race in the module or its wrapper shows here as a count that is off,
two holders at once, a crash or a hang. With the GIL on, the same test checks the same rules.
The critical sections update plain Python ints without a Python lock, so only the Redis lock
keeps their updates from being lost."""

from __future__ import annotations

import asyncio
import sys
import sysconfig
import threading
import time
from typing import Dict, List

import redis

import rlock

THREADS = 64
ROUNDS = 8
# Threads that run an event loop each, taking the same locks from asyncio tasks.
LOOPS = 8
PERMITS = 4


def test_importing_rlock_leaves_the_gil_as_the_build_has_it() -> None:
    free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    gil_on = getattr(sys, "_is_gil_enabled", lambda: True)()
    # A module that does not declare itself free-threading safe turns the GIL back on at import.
    assert "rlock._native" in sys.modules
    assert gil_on is not free_threaded, f"free-threaded build: {free_threaded}, GIL on: {gil_on}"


class Tally:
    """What the critical sections saw. `inside`, `most` and `entered` are taken under a Python
    lock (they measure exclusion); `count` is not: only a Redis lock keeps its updates."""

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.inside = 0
        self.most = 0
        self.entered = 0
        self.count = 0

    def section(self, exclusive: bool) -> None:
        with self.guard:
            self.inside += 1
            self.entered += 1
            self.most = max(self.most, self.inside)
        if exclusive:
            seen = self.count
            # A switch point between the read and the write: a lost update if two are inside.
            time.sleep(0.0005)
            self.count = seen + 1
        with self.guard:
            self.inside -= 1


def test_64_threads_share_one_client_its_lock_objects_and_a_semaphore(
    url: str, raw: redis.Redis, name: str
) -> None:
    with rlock.Client(url) as client:
        run_the_workers(client, raw, name)


def run_the_workers(client: rlock.Client, raw: redis.Redis, name: str) -> None:
    shared = client.lock(f"{name}:shared")
    sem = client.semaphore(f"{name}:sem")
    assert sem.try_set_permits(PERMITS)
    locked, fresh, permits = Tally(), Tally(), Tally()
    errors: List[BaseException] = []
    start = threading.Barrier(THREADS + LOOPS)

    def in_thread() -> None:
        try:
            start.wait()
            for _ in range(ROUNDS):
                with shared:  # one lock object, shared by every thread
                    locked.section(True)
                with client.lock(f"{name}:fresh"):  # a lock object made for this call
                    fresh.section(True)
                with sem:
                    permits.section(False)
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    async def tasks() -> None:
        async def one() -> None:
            for _ in range(ROUNDS):
                async with shared:
                    locked.section(True)
                async with sem:
                    permits.section(False)

        await asyncio.gather(one(), one())

    def in_loop() -> None:
        try:
            start.wait()
            asyncio.run(tasks())
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    workers = [threading.Thread(target=in_thread) for _ in range(THREADS)]
    workers += [threading.Thread(target=in_loop) for _ in range(LOOPS)]
    for w in workers:
        w.start()
    deadline = time.monotonic() + 120
    for w in workers:
        w.join(max(0.0, deadline - time.monotonic()))
    assert not [w for w in workers if w.is_alive()], "a worker hung"
    assert not errors, errors

    by_tasks = LOOPS * 2 * ROUNDS
    expected: Dict[str, int] = {
        "locked": THREADS * ROUNDS + by_tasks,
        "fresh": THREADS * ROUNDS,
        "permits": THREADS * ROUNDS + by_tasks,
    }
    entered = {"locked": locked.entered, "fresh": fresh.entered, "permits": permits.entered}
    assert entered == expected
    assert (locked.count, fresh.count) == (locked.entered, fresh.entered), "two holders were inside at once"
    assert locked.most == 1 and fresh.most == 1, (locked.most, fresh.most)
    assert 1 <= permits.most <= PERMITS, permits.most
    assert sem.available_permits() == PERMITS
    assert not raw.exists(f"{name}:shared") and not raw.exists(f"{name}:fresh")

    stats = client.stats()
    acquires = sum(expected.values())
    assert (stats["acquires"], stats["releases"]) == (acquires, acquires), stats
    assert stats["lost_holds"] == 0, stats
