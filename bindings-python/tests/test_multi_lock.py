"""The multi-lock: all-or-nothing over locks of every kind and two servers, threads taking
opposite orders, asyncio with cancels, release naming every failure."""

from __future__ import annotations

import asyncio
import threading

import pytest

import rlock

from conftest import Testbed


def test_all_or_nothing_over_kinds_and_servers(client: rlock.Client, name: str) -> None:
    with Testbed("single") as other_server, rlock.Client(other_server.url) as other:
        members = [
            client.lock(f"{name}:a"),
            other.fair_lock(f"{name}:b"),
            client.read_write_lock(f"{name}:c").write_lock(),
            other.read_write_lock(f"{name}:d").read_lock(),
        ]
        multi = rlock.multi_lock(members)
        # Another thread holds the fair member: nothing is taken.
        held, done = threading.Event(), threading.Event()

        def hold() -> None:
            with members[1]:
                held.set()
                done.wait(10)

        t = threading.Thread(target=hold)
        t.start()
        assert held.wait(10)
        assert multi.acquire(timeout=0.2) is False
        assert not any(m.locked() for m in (members[0], members[2], members[3]))
        done.set()
        t.join()
        with multi:
            assert multi.is_held()
            assert all(m.locked() for m in members)
        assert not any(m.locked() for m in members)


def test_threads_in_opposite_orders_never_deadlock(client: rlock.Client, name: str) -> None:
    a, b = f"{name}:a", f"{name}:b"
    orders = [rlock.multi_lock([client.lock(a), client.lock(b)]), rlock.multi_lock([client.lock(b), client.lock(a)])]
    inside = 0
    entered = 0
    guard = threading.Lock()

    def work(multi: rlock.MultiLock) -> None:
        nonlocal inside, entered
        for _ in range(40):
            with multi:
                with guard:
                    inside += 1
                    assert inside == 1
                with guard:
                    inside -= 1
                    entered += 1

    threads = [threading.Thread(target=work, args=(orders[i % 2],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "deadlocked"
    assert entered == 160


def test_asyncio_and_cancels(client: rlock.Client, name: str) -> None:
    multi = rlock.multi_lock([client.lock(f"{name}:a"), client.lock(f"{name}:b")])

    async def main() -> None:
        async with multi:
            assert multi.is_held()
        blocker = client.lock(f"{name}:b")
        assert blocker.acquire()
        for i in range(50):
            task = asyncio.ensure_future(multi.acquire_async())
            await asyncio.sleep(0.0005 * (i % 7))
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        blocker.release()
        assert await multi.acquire_async(timeout=5) is True
        await multi.release_async()

    asyncio.run(main())
    assert not client.lock(f"{name}:a").locked()


def test_release_names_every_failure(client: rlock.Client, name: str) -> None:
    locks = [client.lock(f"{name}:{x}") for x in "abc"]
    multi = rlock.MultiLock(locks)
    assert multi.acquire()
    locks[0].force_unlock()
    locks[2].force_unlock()
    with pytest.raises(rlock.NotHeldError) as err:
        multi.release()
    assert "2 of 3" in str(err.value) and f"'{name}:a'" in str(err.value) and f"'{name}:c'" in str(err.value)
    assert not locks[1].locked()
    with pytest.raises(rlock.InvalidArgumentError):
        rlock.multi_lock([])
