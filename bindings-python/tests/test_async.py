"""The asyncio API: task ownership, waiting, cancellation."""

from __future__ import annotations

import asyncio

import pytest
import redis

import rlock


def test_async_with_and_task_ownership(client: rlock.Client, name: str) -> None:
    lock = client.lock(name)

    async def main() -> None:
        async with lock:
            assert lock.is_held() and lock.hold_count() == 1
            # The same task re-enters.
            assert await lock.acquire_async(timeout=0)
            assert lock.hold_count() == 2
            await lock.release_async()
            # Another task on the same thread contends.
            assert await asyncio.create_task(lock.acquire_async(timeout=0)) is False
            assert await asyncio.create_task(lock.acquire_async(timeout=0.3)) is False

            async def other_task_view() -> tuple[bool, int]:
                return lock.is_held(), lock.hold_count()

            assert await asyncio.create_task(other_task_view()) == (False, 0)
        assert not lock.locked()
        with pytest.raises(rlock.NotHeldError):
            await lock.release_async()

    asyncio.run(main())


def test_async_waiter_and_lease(client: rlock.Client, name: str) -> None:
    lock = client.lock(name)

    async def main() -> None:
        assert await lock.acquire_async(lease=5.0)
        ttl = lock.remaining_ttl()
        assert ttl is not None and ttl <= 5.0
        waiter = asyncio.create_task(lock.acquire_async(timeout=20))
        while client.waited_channels() == 0:  # no event tells when the waiter has subscribed
            await asyncio.sleep(0.01)
        assert not waiter.done()
        await lock.release_async()
        assert await asyncio.wait_for(waiter, 20) is True
        assert lock.locked() and not lock.is_held()

    asyncio.run(main())
    # The waiter task ended while holding the lock; clean up.
    assert lock.force_unlock()


def test_50_tasks_on_one_thread(client: rlock.Client, name: str) -> None:
    lock = client.lock(name)
    counter = [0]

    async def work() -> None:
        for _ in range(100):
            async with lock:
                v = counter[0]
                await asyncio.sleep(0)  # let the other tasks run mid-update
                counter[0] = v + 1

    async def main() -> None:
        await asyncio.wait_for(asyncio.gather(*(work() for _ in range(50))), 300)

    asyncio.run(main())
    assert counter[0] == 50 * 100
    assert not lock.locked()
    assert client.tracked_holds() == 0 and client.waited_channels() == 0


def test_cancelled_acquire_leaves_nothing(client: rlock.Client, url: str, name: str) -> None:
    lock = client.lock(name)

    async def main() -> None:
        with rlock.Client(url) as other:
            holder = other.lock(name)
            assert holder.acquire(lease=30)
            waiter = asyncio.create_task(lock.acquire_async())
            while client.waited_channels() == 0:
                await asyncio.sleep(0.01)
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
            # The subscription goes away with the cancelled acquire.
            for _ in range(1000):
                if client.waited_channels() == 0:
                    break
                await asyncio.sleep(0.01)
            assert client.waited_channels() == 0
            holder.release()
        assert not lock.locked()
        assert client.tracked_holds() == 0

    asyncio.run(main())


def test_async_calls_need_a_task(client: rlock.Client, name: str) -> None:
    # Outside a running loop there is no task to own the hold.
    with pytest.raises(RuntimeError):
        client._owners.task()


def test_cancel_at_random_moments_leaves_nothing(client: rlock.Client, name: str) -> None:
    import random

    lock = client.lock(name)
    rng = random.Random(4)
    outcomes = {"cancelled": 0, "finished": 0}

    async def grab() -> None:
        if await lock.acquire_async():
            await lock.release_async()

    async def main() -> None:
        for _ in range(200):
            task = asyncio.create_task(grab())
            await asyncio.sleep(rng.uniform(0, 0.002))
            task.cancel()
            try:
                await task
                outcomes["finished"] += 1
            except asyncio.CancelledError:
                outcomes["cancelled"] += 1

    asyncio.run(main())
    assert outcomes["cancelled"] > 0
    # Holds undone in the background (cancelled just as they succeeded) finish within a round trip.
    from conftest import wait_until

    wait_until(lambda: not lock.locked() and client.tracked_holds() == 0, what="no hold left")
    assert client.waited_channels() == 0


def test_acquire_cancelled_after_it_succeeded_leaves_no_hold(
    client: rlock.Client, name: str, raw: redis.Redis
) -> None:
    """The acquire succeeds while the event loop is busy, and its task is cancelled before the
    loop hands it the result: the hold must be released, not kept (and renewed) for nobody."""
    import time

    from conftest import wait_until

    lock = client.lock(name)

    async def main(delay: float) -> None:
        task = asyncio.create_task(lock.acquire_async())
        await asyncio.sleep(0)  # the task starts and awaits the native acquire
        # Block the loop until the acquire has succeeded in Redis, then a little longer (its
        # result is handed to the loop meanwhile, or not yet: both orders must leave no hold).
        wait_until(lambda: raw.exists(name), what="the acquire to succeed in Redis")
        time.sleep(delay)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    for delay in (0.0, 0.01, 0.05, 0.2):
        asyncio.run(main(delay))
        wait_until(lambda: not raw.exists(name) and client.tracked_holds() == 0, timeout=5, what="the hold released")


def test_event_loops_one_after_another_and_on_several_threads(
    client: rlock.Client, name: str, raw: redis.Redis
) -> None:
    """asyncio calls are polled on their loop's thread: a thread's second `asyncio.run` (a new
    loop), and loops on other threads at the same time, each get their results and wake-ups."""
    import threading

    async def work(tag: str) -> str:
        lock = client.lock(f"{name}:{tag}")
        for _ in range(30):
            async with lock:
                pass
        # A waiter in another task, woken by this task's release.
        await lock.acquire_async()

        async def other() -> str:
            async with lock:
                return "woken"

        waiter = asyncio.create_task(other())
        channel = f"redisson_lock__channel:{{{name}:{tag}}}"
        while raw.pubsub_numsub(channel)[0][1] == 0:  # no event tells when the waiter has subscribed
            await asyncio.sleep(0.01)
        assert not waiter.done()
        await lock.release_async()
        return await asyncio.wait_for(waiter, 10)

    assert asyncio.run(work("first")) == "woken"
    assert asyncio.run(work("second")) == "woken"
    results: list[str] = []
    errors: list[BaseException] = []

    def on_thread(i: int) -> None:
        try:
            results.append(asyncio.run(work(f"thread-{i}")))
        except BaseException as e:  # reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=on_thread, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and results == ["woken"] * 3
    assert client.tracked_holds() == 0 and client.waited_channels() == 0


def test_threads_that_ran_asyncio_leave_no_file_descriptor(client: rlock.Client, name: str) -> None:
    """Each thread's asyncio calls share one socket pair (the loop's wake-up), and its loop's
    own connection (from the loop's eighth call); both close when the thread ends (the
    connection a moment later, on the runtime), so a program starting many threads does not run
    out of descriptors."""
    import os
    import threading

    from conftest import wait_until

    lock = client.lock(name)

    async def one() -> None:
        for _ in range(5):
            async with lock:
                pass

    def run() -> None:
        asyncio.run(one())

    run()
    open_fds = lambda: len(os.listdir("/proc/self/fd"))  # noqa: E731
    before = open_fds()
    for _ in range(100):
        t = threading.Thread(target=run)
        t.start()
        t.join()
    wait_until(lambda: open_fds() <= before + 4, what="the threads' descriptors to close")
    assert client.tracked_holds() == 0
