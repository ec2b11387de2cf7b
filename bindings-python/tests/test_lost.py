"""Lost holds are loud: on_lost callbacks (per lock and per client), is_lost(), LockLostError at release."""

from __future__ import annotations

import asyncio
import queue
from typing import Iterator

import pytest

import rlock


@pytest.fixture
def fast(url: str) -> Iterator[rlock.Client]:
    """A client whose watchdog renews every second, so losses show up quickly; not faster, so a
    stalled process (a loaded CI machine) does not put its leases in doubt before a loss is seen."""
    c = rlock.Client(url, watchdog_timeout=3.0)
    yield c
    c.close()


def test_force_unlock_by_other_client_is_reported(fast: rlock.Client, client: rlock.Client, name: str) -> None:
    lock = fast.lock(name)
    events: "queue.Queue[rlock.LostEvent]" = queue.Queue()
    every: "queue.Queue[rlock.LostEvent]" = queue.Queue()
    remove = lock.on_lost(events.put)
    remove_client_listener = fast.on_lost(every.put)
    assert lock.valid_for() == 0.0  # not held yet
    assert lock.acquire()
    assert not lock.is_lost()
    # The 3 s lease from its send, less the 0.75 s margin (a quarter of the lease).
    assert 0.0 < lock.valid_for() <= 2.25
    owner = fast._native.owner_name()
    assert client.lock(name).force_unlock()
    event = events.get(timeout=20)
    assert event == rlock.LostEvent(name=name, kind="lock", owner=owner, reason="gone")
    assert every.get(timeout=20) == event, "the client's listener hears every hold's loss"
    remove_client_listener()
    assert lock.is_lost()
    assert lock.valid_for() == 0.0
    with pytest.raises(rlock.LockLostError) as info:
        lock.release()
    assert info.value.code == "RLOCK_LOST"  # as Node's RLockError and C's result say it
    assert not lock.is_lost()  # the release reported it; the hold is forgotten
    remove()


def test_with_block_raises_lock_lost(fast: rlock.Client, client: rlock.Client, name: str) -> None:
    lock = fast.lock(name)
    events: "queue.Queue[rlock.LostEvent]" = queue.Queue()
    lock.on_lost(events.put)
    with pytest.raises(rlock.LockLostError):
        with lock:
            client.lock(name).force_unlock()
            events.get(timeout=20)
    # Another exception already on its way wins over the lost hold.
    with pytest.raises(KeyError):
        with lock:
            client.lock(name).force_unlock()
            events.get(timeout=20)
            raise KeyError("mine")
    assert fast.tracked_holds() == 0


def test_async_with_raises_lock_lost(fast: rlock.Client, client: rlock.Client, name: str) -> None:
    lock = fast.lock(name)
    events: "queue.Queue[rlock.LostEvent]" = queue.Queue()
    lock.on_lost(events.put)

    async def main() -> None:
        with pytest.raises(rlock.LockLostError):
            async with lock:
                client.lock(name).force_unlock()
                await asyncio.get_running_loop().run_in_executor(None, lambda: events.get(timeout=20))
                assert lock.is_lost()

    asyncio.run(main())


def test_failing_callback_does_not_stop_others(fast: rlock.Client, client: rlock.Client, name: str) -> None:
    lock = fast.lock(name)
    events: "queue.Queue[rlock.LostEvent]" = queue.Queue()

    def bad(_: rlock.LostEvent) -> None:
        raise RuntimeError("callback bug")

    lock.on_lost(bad)
    lock.on_lost(events.put)
    other_lock_events: "queue.Queue[rlock.LostEvent]" = queue.Queue()
    fast.lock(name + ":other").on_lost(other_lock_events.put)
    assert lock.acquire()
    client.lock(name).force_unlock()
    assert events.get(timeout=20).name == name
    assert other_lock_events.empty()
    with pytest.raises(rlock.LockLostError):
        lock.release()


def test_unreachable_redis_puts_the_lease_in_doubt(name: str) -> None:
    from conftest import Testbed

    with Testbed("single") as server:
        with rlock.Client(server.url, watchdog_timeout=1.0, command_timeout=0.2, retry_attempts=0) as c:
            lock = c.lock(name)
            events: "queue.Queue[rlock.LostEvent]" = queue.Queue()
            lock.on_lost(events.put)
            assert lock.acquire()
            server.stop()  # SIGSTOP: renewals stop getting answers
            try:
                event = events.get(timeout=30)
            finally:
                server.cont()
            assert (event.name, event.reason) == (name, "lease_doubt")
            assert lock.is_lost()
            with pytest.raises(rlock.LockLostError):
                lock.release()
