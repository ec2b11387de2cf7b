"""The read-write and fair locks: every side is a Lock with the whole API."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import redis

import rlock


def test_readers_share_and_a_writer_excludes(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    rw = client.read_write_lock(name)
    assert rw.read_lock().kind == "read" and rw.write_lock().kind == "write"
    inside = threading.Barrier(3, timeout=10)

    def reader() -> None:
        with rw.read_lock():
            inside.wait()  # all three read at once

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    with rw.read_lock():
        assert raw.hget(name, "mode") == b"read"
        inside.wait()
        assert rw.read_lock().locked() and not rw.write_lock().locked()
    for t in threads:
        t.join()

    with rw.write_lock():
        assert raw.hget(name, "mode") == b"write"
        assert raw.hget(name, client._native.owner_name() + ":write") == b"1"
        got: list[bool] = []
        t = threading.Thread(target=lambda: got.append(rw.read_lock().acquire(timeout=0.1)))
        t.start()
        t.join()
        assert got == [False], "another thread's read waits for the writer"
        with rw.read_lock():  # the writer may read (a downgrade)
            pass
    assert not raw.exists(name)


def test_downgrade_and_the_refused_upgrade(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    rw = client.read_write_lock(name)
    write, read = rw.write_lock(), rw.read_lock()
    assert write.acquire()
    assert read.acquire()
    assert write.release() is False, "read holds remain"
    assert raw.hget(name, "mode") == b"read"
    before = raw.hgetall(name)
    with pytest.raises(rlock.WouldDeadlockError, match="release the read holds first"):
        write.acquire()
    with pytest.raises(rlock.WouldDeadlockError):
        write.acquire(timeout=5)
    assert raw.hgetall(name) == before, "nothing changed"
    with pytest.raises(rlock.NotHeldError):
        write.release()
    assert read.release() is True
    assert not raw.exists(name)


def test_asyncio_readers_and_writer(client: rlock.Client, name: str) -> None:
    rw = client.read_write_lock(name)
    log: list[str] = []

    async def reader(i: int) -> None:
        async with rw.read_lock():
            log.append(f"r{i}")
            await asyncio.sleep(0.05)

    async def main() -> None:
        async with rw.write_lock():
            tasks = [asyncio.create_task(reader(i)) for i in range(3)]
            await asyncio.sleep(0.1)
            assert log == [], "readers wait for the writer"
            log.append("w")
        await asyncio.gather(*tasks)

    asyncio.run(main())
    assert log[0] == "w" and sorted(log[1:]) == ["r0", "r1", "r2"]


def test_spin_lock_polls_without_a_subscription(client: rlock.Client, url: str, name: str, raw: redis.Redis) -> None:
    spin = client.spin_lock(name)
    assert spin.kind == "spin"
    assert spin.acquire()
    # The reentrant lock's hash: the same lock as client.lock(name).
    assert raw.hvals(name) == [b"1"]
    other = rlock.Client(url)
    assert not other.lock(name).acquire(blocking=False)
    got = threading.Event()

    def waiter() -> None:
        with other.spin_lock(name):
            got.set()

    before = raw.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
    t = threading.Thread(target=waiter)
    t.start()
    # It tries again and again, never subscribed to the lock's channel.
    deadline = time.monotonic() + 10
    while raw.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0) < before + 3:
        assert time.monotonic() < deadline, "the waiter never polled"
        time.sleep(0.01)
    channel = "redisson_lock__channel:{" + name + "}"
    assert raw.pubsub_numsub(channel) == [(channel.encode(), 0)]
    assert not got.is_set()
    assert spin.release()
    t.join(10)
    assert got.is_set() and not t.is_alive()
    other.close()


@pytest.mark.parametrize("fair", [False, True])
def test_non_reentrant_locks_refuse_reentry(client: rlock.Client, name: str, raw: redis.Redis, fair: bool) -> None:
    lock = client.non_reentrant_fair_lock(name) if fair else client.non_reentrant_lock(name)
    assert lock.kind == ("non_reentrant_fair" if fair else "non_reentrant")
    assert lock.acquire(lease=60)
    before = (raw.hgetall(name), raw.keys(f"*{name}*"))
    # Every way in again fails at once, even without a bound, and changes nothing.
    for again in (lambda: lock.acquire(), lambda: lock.acquire(timeout=2, lease=90), lambda: lock.acquire(False)):
        with pytest.raises(rlock.WouldDeadlockError, match="not reentrant") as e:
            again()
        assert e.value.code == "RLOCK_WOULD_DEADLOCK"
    with pytest.raises(rlock.WouldDeadlockError):
        with lock:
            pass
    assert (raw.hgetall(name), raw.keys(f"*{name}*")) == before
    assert lock.hold_count() == 1 and 0 < raw.pttl(name) <= 60_000
    # Another thread is another owner: it contends, through a reentrant handle too.
    out: list[bool] = []
    t = threading.Thread(target=lambda: out.extend([lock.acquire(False), client.lock(name).acquire(False)]))
    t.start()
    t.join(10)
    assert out == [False, False]
    assert lock.release()
    with pytest.raises(rlock.NotHeldError):
        lock.release()
    with lock:
        assert lock.hold_count() == 1


def test_non_reentrant_lock_refuses_reentry_in_a_task(client: rlock.Client, name: str) -> None:
    lock = client.non_reentrant_lock(name)

    async def main() -> None:
        async with lock:
            with pytest.raises(rlock.WouldDeadlockError):
                await lock.acquire_async()
            assert lock.hold_count() == 1
        assert not lock.locked()

    asyncio.run(main())


def test_fair_lock_grants_in_arrival_order(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    lock = client.fair_lock(name)
    assert lock.kind == "fair"
    queue = "redisson_lock_queue:{" + name + "}"
    order: list[int] = []
    assert lock.acquire()

    def waiter(i: int) -> None:
        with lock:
            order.append(i)

    threads = []
    for i in range(4):
        t = threading.Thread(target=waiter, args=(i,))
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 10
        while raw.llen(queue) != i + 1:
            assert time.monotonic() < deadline, "waiter never queued"
            time.sleep(0.005)
    lock.release()
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2, 3]
    assert not raw.exists(queue) and not raw.exists("redisson_lock_timeout:{" + name + "}")


def test_fair_waiters_that_give_up_leave_the_queue(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    lock = client.fair_lock(name)
    queue = "redisson_lock_queue:{" + name + "}"
    holder = threading.Event()
    done = threading.Event()

    def hold() -> None:
        with lock:
            holder.set()
            done.wait(20)

    t = threading.Thread(target=hold)
    t.start()
    assert holder.wait(10)
    assert lock.acquire(blocking=False) is False
    assert not raw.exists(queue), "a try without a wait does not queue"
    assert lock.acquire(timeout=0.2) is False
    assert not raw.exists(queue), "out of the queue when the wait ran out"

    async def cancelled() -> None:
        task = asyncio.create_task(lock.acquire_async())
        deadline = time.monotonic() + 10
        while not raw.exists(queue):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    deadline = time.monotonic() + 10
    while raw.exists(queue):
        assert time.monotonic() < deadline, "a cancelled task left the queue"
        time.sleep(0.005)
    done.set()
    t.join()
    assert not raw.exists("redisson_lock_timeout:{" + name + "}")


CTRL_C_CHILD = textwrap.dedent(
    """
    import signal, sys, rlock
    signal.signal(signal.SIGINT, signal.default_int_handler)
    client = rlock.Client(sys.argv[1])
    lock = client.fair_lock(sys.argv[2])
    print("waiting", flush=True)
    try:
        lock.acquire()
        print("acquired", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    """
)


def test_ctrl_c_takes_a_fair_waiter_out_of_the_queue(
    client: rlock.Client, url: str, name: str, raw: redis.Redis
) -> None:
    holder = client.fair_lock(name)
    assert holder.acquire()
    queue = "redisson_lock_queue:{" + name + "}"
    proc = subprocess.Popen([sys.executable, "-c", CTRL_C_CHILD, url, name], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "waiting"
        deadline = time.monotonic() + 20
        while raw.llen(queue) == 0:
            assert time.monotonic() < deadline, "child never queued"
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        assert proc.stdout.readline().strip() == "interrupted"
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert raw.llen(queue) == 0 and not raw.exists("redisson_lock_timeout:{" + name + "}")
    holder.release()


def test_module_level_functions(url: str, name: str) -> None:
    rlock.configure(url)
    rw = rlock.read_write_lock(name)
    with rw.read_lock(), rw.read_lock():
        assert rw.read_lock().hold_count() == 2
    with rlock.fair_lock(name + "f"):
        pass
    with pytest.raises(rlock.InvalidArgumentError):
        rlock.read_write_lock("")
