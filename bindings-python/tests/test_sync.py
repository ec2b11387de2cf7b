"""The synchronous API: threading.RLock semantics, thread ownership, queries, default client."""

from __future__ import annotations

import queue
import threading
import time

import pytest
import redis

import rlock
from conftest import wait_until


def in_thread(fn):  # type: ignore[no-untyped-def]
    """Runs `fn` on a new thread and returns its result (or raises its exception)."""
    out: list = []

    def run() -> None:
        try:
            out.append(("ok", fn()))
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out.append(("err", e))

    t = threading.Thread(target=run)
    t.start()
    t.join(30)
    assert out, "thread did not finish"
    kind, value = out[0]
    if kind == "err":
        raise value
    return value


def test_with_block_holds_and_releases(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    lock = client.lock(name)
    assert lock.name == name
    assert not lock.locked() and not lock.is_held() and lock.hold_count() == 0
    assert lock.remaining_ttl() is None
    with lock as same:
        assert same is lock
        assert lock.locked() and lock.is_held() and lock.hold_count() == 1
        ttl = lock.remaining_ttl()
        assert ttl is not None and 20.0 < ttl <= 30.0  # the watchdog lease
        # Redisson's layout: a hash with one field "<client uuid>:<thread id>" -> count.
        fields = raw.hgetall(name)
        assert list(fields.values()) == [b"1"]
        assert list(fields)[0].decode() == client._native.owner_name()
    assert not lock.locked()
    assert raw.exists(name) == 0


def test_same_thread_reenters_other_thread_contends(client: rlock.Client, name: str) -> None:
    lock = client.lock(name)
    assert lock.acquire()
    assert lock.acquire(blocking=False)
    assert lock.acquire(timeout=1)
    assert lock.hold_count() == 3
    assert in_thread(lambda: lock.acquire(blocking=False)) is False
    start = time.monotonic()
    assert in_thread(lambda: lock.acquire(timeout=0.3)) is False
    assert time.monotonic() - start >= 0.29
    assert in_thread(lambda: lock.is_held()) is False
    assert in_thread(lambda: lock.hold_count()) == 0
    with pytest.raises(rlock.NotHeldError):
        in_thread(lambda: lock.release())
    lock.release()
    lock.release()
    assert lock.hold_count() == 1 and lock.locked()
    lock.release()
    assert not lock.locked()
    # Now another thread gets it at once.
    assert in_thread(lambda: (lock.acquire(blocking=False), lock.release())[0]) is True


def test_waiter_gets_lock_when_released(client: rlock.Client, name: str) -> None:
    lock = client.lock(name)
    lock.acquire()
    got = threading.Event()

    def waiter() -> None:
        if lock.acquire(timeout=20):
            got.set()
            lock.release()

    t = threading.Thread(target=waiter)
    t.start()
    wait_until(lambda: client.waited_channels() == 1, what="the waiter to subscribe")
    assert not got.is_set()
    lock.release()
    assert got.wait(20)
    t.join(20)
    assert client.waited_channels() == 0


def test_threading_argument_rules(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    lock = client.lock(name)
    with pytest.raises(ValueError):
        lock.acquire(blocking=False, timeout=1)
    with pytest.raises(ValueError):
        lock.acquire(timeout=-2)
    with pytest.raises(rlock.InvalidArgumentError):
        lock.acquire(timeout=float("nan"))
    assert raw.exists(name) == 0


def test_fixed_lease_ends_after_the_holder_was_told(client: rlock.Client, name: str) -> None:
    lock = client.lock(name)
    events: "queue.Queue[rlock.LostEvent]" = queue.Queue()
    lock.on_lost(events.put)
    assert lock.acquire(lease=0.5)
    ttl = lock.remaining_ttl()
    assert ttl is not None and 0 < ttl <= 0.5
    # Told before the lease ends (within lease_doubt_margin, here a quarter of 0.5 s).
    event = events.get(timeout=5)
    assert (event.name, event.reason) == (name, "lease_ending")
    assert lock.is_lost()
    wait_until(lambda: not lock.locked(), what="the lease to expire")
    with pytest.raises(rlock.LockLostError) as info:
        lock.release()
    assert isinstance(info.value, RuntimeError)


def test_force_unlock(client: rlock.Client, url: str, name: str) -> None:
    lock = client.lock(name)
    assert lock.force_unlock() is False
    with rlock.Client(url) as other:
        lock.acquire(lease=30)
        assert other.lock(name).force_unlock() is True
        assert not lock.locked()
        assert other.lock(name).force_unlock() is False


def test_16_threads_x_500_increments(client: rlock.Client, name: str) -> None:
    lock = client.lock(name)
    counter = [0]

    def work() -> None:
        for _ in range(500):
            with lock:
                v = counter[0]
                time.sleep(0)  # hand the GIL over mid-update: without the lock this loses counts
                counter[0] = v + 1

    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads)
    assert counter[0] == 16 * 500
    assert not lock.locked()
    assert client.tracked_holds() == 0


def test_client_url_from_environment(url: str, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", url)
    with rlock.Client() as c:
        with c.lock(name):
            assert c.lock(name).is_held()
    assert c.closed


def test_default_client_lock_and_configure(url: str, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDIS_URL", url)
    monkeypatch.setattr(rlock, "_default", None)
    with rlock.lock(name) as lock:
        assert lock.is_held()
    first = rlock._default
    assert first is not None
    second = rlock.configure(url, watchdog_timeout=5.0)
    assert first.closed and rlock._default is second
    with rlock.lock(name):
        ttl = rlock.lock(name).remaining_ttl()
        assert ttl is not None and ttl <= 5.0
    second.close()
    monkeypatch.setattr(rlock, "_default", None)


def test_closed_client_raises(url: str, name: str) -> None:
    c = rlock.Client(url)
    lock = c.lock(name)
    c.close()
    assert c.closed
    with pytest.raises(rlock.ClosedError):
        lock.acquire()
