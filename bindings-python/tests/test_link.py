"""The event loop's own command connection (core's local link): a client's asyncio calls go out
and come back on a connection whose socket the loop watches, from the loop's eighth call on;
they go on when it is killed or stalls, and it closes with its loop or its client."""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable, Optional

import redis

import rlock


def clients(raw: redis.Redis) -> dict[int, str]:
    """The server's connections: id -> the last command each ran."""
    return {int(c["id"]): c["cmd"] for c in raw.client_list()}


def newest(raw: redis.Redis, known: set[int]) -> Optional[int]:
    """The newest connection that is not in `known`, or None."""
    fresh = [i for i in clients(raw) if i not in known]
    return max(fresh) if fresh else None


async def eventually(cond: Callable[[], Awaitable[bool]], what: str, timeout: float = 10.0) -> None:
    """Awaits `cond` until true, letting the loop run in between (states with no event)."""
    deadline = time.monotonic() + timeout
    while not await cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def pair(lock: rlock.Lock) -> None:
    assert await lock.acquire_async()
    assert await lock.release_async()


async def link_of(raw: redis.Redis, lock: rlock.Lock, known: set[int]) -> int:
    """Waits for a new connection, then until it is the one that carries `lock`'s scripts."""

    async def connected() -> bool:
        await pair(lock)
        return newest(raw, known) is not None

    await eventually(connected, "the loop's connection")
    link = newest(raw, known)
    assert link is not None

    async def carries() -> bool:
        await pair(lock)
        return clients(raw).get(link) == "evalsha"

    await eventually(carries, "the loop's connection to carry the scripts")
    return link


def test_calls_go_over_the_loops_own_connection_which_comes_back_after_it_is_killed(
    url: str, raw: redis.Redis, name: str
) -> None:
    with rlock.Client(url) as client:
        known = set(clients(raw))
        lock = client.lock(name)

        async def main() -> None:
            first = await link_of(raw, lock, known)
            raw.execute_command("CLIENT", "KILL", "ID", first)
            known.add(first)
            # Calls right after go on (on the shared connection, or retried there).
            for _ in range(5):
                await pair(lock)
            await link_of(raw, lock, known)

        asyncio.run(main())


def test_a_counter_stays_exact_while_the_link_is_killed_under_load(
    url: str, raw: redis.Redis, name: str
) -> None:
    counter = f"{name}:counter"
    raw.set(counter, 0)
    with rlock.Client(url) as client:
        known = set(clients(raw))
        done = [0]

        async def owner() -> None:
            lock = client.lock(name)
            for _ in range(40):
                async with lock:
                    # Non-atomic read-modify-write: exact only if the lock holds.
                    seen = int(raw.get(counter) or 0)
                    await asyncio.sleep(0)
                    raw.set(counter, seen + 1)
                done[0] += 1

        async def killer() -> None:
            for at in (100, 400):

                async def ready() -> bool:
                    return done[0] >= at and newest(raw, known) is not None

                await eventually(ready, f"{at} increments and a link", timeout=60)
                link = newest(raw, known)
                assert link is not None
                raw.execute_command("CLIENT", "KILL", "ID", link)
                known.add(link)

        async def main() -> None:
            await asyncio.gather(killer(), *(owner() for _ in range(16)))

        asyncio.run(main())
    assert int(raw.get(counter) or 0) == 16 * 40


def test_a_link_that_stops_answering_fails_its_calls_with_a_timeout_then_comes_back(
    url: str, raw: redis.Redis, name: str
) -> None:
    with rlock.Client(url, command_timeout=0.3, retry_attempts=0) as client:
        known = set(clients(raw))
        lock = client.lock(name)

        async def main() -> None:
            first = await link_of(raw, lock, known)
            # Redis holds every write (the scripts) back: the link gets no answer.
            raw.execute_command("CLIENT", "PAUSE", 5000, "WRITE")
            try:
                started = time.monotonic()
                try:
                    await lock.acquire_async()
                    raise AssertionError("the acquire returned on a paused server")
                except rlock.TimeoutError:
                    pass
                assert time.monotonic() - started < 3, "found within 1.25 command_timeout"
            finally:
                raw.execute_command("CLIENT", "UNPAUSE")
            # The stalled link was ended; a new one carries the calls.
            known.add(first)

            async def gone() -> bool:
                return first not in clients(raw)

            await eventually(gone, "the stalled link to close")
            await link_of(raw, lock, known)
            assert not lock.locked()

        asyncio.run(main())


def test_a_new_loop_replaces_the_old_loops_link_and_a_few_calls_open_none(
    url: str, raw: redis.Redis, name: str
) -> None:
    def accepted() -> int:
        return int(raw.info("stats")["total_connections_received"])

    with rlock.Client(url) as client:
        lock = client.lock(name)
        latch = client.count_down_latch(f"{name}:latch")
        known = set(clients(raw))
        before = accepted()
        async def few() -> None:
            for _ in range(7):
                await latch.count_down_async()

        # Seven calls per loop: no link.
        for _ in range(3):
            asyncio.run(few())
        first = asyncio.run(link_of(raw, lock, known))
        assert accepted() - before == 1, "only the last loop opened a connection"

        async def again() -> int:
            link = await link_of(raw, lock, known | {first})

            async def old_gone() -> bool:
                return first not in clients(raw)

            await eventually(old_gone, "the old loop's link to close")
            return link

        second = asyncio.run(again())
        assert second != first
    # The client's close ends the link of a loop that no longer runs.
    deadline = time.monotonic() + 10
    while second in clients(raw):
        assert time.monotonic() < deadline, "the link closed with its client"
        time.sleep(0.01)


def test_a_cancelled_acquire_in_flight_when_its_loop_ends_gives_back_what_it_took(
    url: str, raw: redis.Redis, name: str
) -> None:
    """The acquire's request is on the link when its task is cancelled and asyncio.run returns:
    nobody reads the link any more, and Redis runs the acquire only after that. The call,
    finishing on the client's runtime, gives up on the reply after command_timeout and gives
    the permit back (before, it waited for ever and the permit stayed taken)."""

    def scripts_run() -> int:
        return int(raw.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))

    with rlock.Client(url, command_timeout=1.0, retry_attempts=0) as client:
        lock, sem = client.lock(name), client.permit_expirable_semaphore(f"{name}:pes")
        assert sem.try_set_permits(2)
        known = set(clients(raw))

        async def main() -> None:
            await link_of(raw, lock, known)
            permit = await sem.acquire_async()  # its script is loaded
            assert permit is not None
            await sem.release_async(permit)
            raw.execute_command("CLIENT", "PAUSE", 5000, "WRITE")  # scripts wait
            task = asyncio.create_task(sem.acquire_async())

            async def postponed() -> bool:  # the request reached Redis, which holds it back
                return int(raw.info("clients")["blocked_clients"]) == 1

            await eventually(postponed, "the acquire to reach the paused server")
            task.cancel()
            try:
                await task
                raise AssertionError("the acquire returned on a paused server")
            except asyncio.CancelledError:
                pass

        before = scripts_run()
        try:
            asyncio.run(main())
        finally:
            raw.execute_command("CLIENT", "UNPAUSE")  # the acquire runs now, unanswered
        deadline = time.monotonic() + 10
        while scripts_run() <= before + 2:  # the pair's two, then the cancelled acquire
            assert time.monotonic() < deadline, "the cancelled acquire never ran"
            time.sleep(0.01)
        while raw.zcard(f"{{{name}:pes}}:timeout") != 0:
            assert time.monotonic() < deadline, "the unanswered acquire's permit was never given back"
            time.sleep(0.01)
        assert sem.available_permits() == 2
        assert client.tracked_holds() == 0
