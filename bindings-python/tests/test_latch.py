"""The count-down latch: Redisson's layout, threads and asyncio tasks woken at zero, timed
waits, Ctrl-C, bad input."""

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
from conftest import RedisCluster, wait_until


def channel(name: str) -> str:
    return "redisson_countdownlatch__channel__{" + name + "}"


def subscribers(raw: redis.Redis, name: str) -> int:
    return int(raw.pubsub_numsub(channel(name))[0][1])


def test_count_in_redissons_layout(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    latch = client.count_down_latch(name)
    assert repr(latch) == f"<rlock.CountDownLatch {name!r}>"
    assert latch.name == name
    assert latch.count() == 0, "a missing key is an open latch"
    assert latch.wait(0) is True
    assert latch.try_set_count(2) is True
    assert latch.try_set_count(5) is False
    assert raw.get(name) == b"2", "the losing try_set_count changed nothing"
    latch.count_down()
    assert latch.count() == 1
    assert latch.wait(0) is False
    latch.count_down()
    assert not raw.exists(name), "the key goes at zero"
    assert latch.count() == 0
    latch.count_down()
    assert not raw.exists(name), "counting down an open latch leaves it open"
    assert latch.try_set_count(3) is True
    assert latch.delete() is True
    assert latch.delete() is False


def test_threads_wake_when_another_client_counts_to_zero(url: str, name: str, raw: redis.Redis) -> None:
    with rlock.Client(url) as a, rlock.Client(url) as b:
        latch = a.count_down_latch(name)
        assert latch.try_set_count(2)
        opened: list[float] = []
        guard = threading.Lock()

        def wait() -> None:
            assert b.count_down_latch(name).wait() is True
            with guard:
                opened.append(time.monotonic())

        threads = [threading.Thread(target=wait) for _ in range(3)]
        for t in threads:
            t.start()
        wait_until(lambda: subscribers(raw, name) == 1, what="waiters subscribed")
        latch.count_down()
        assert latch.count() == 1
        assert not opened, "one count-down of two opened nothing"
        zero = time.monotonic()
        latch.count_down()
        for t in threads:
            t.join(10)
        assert len(opened) == 3
        # The periodic re-read is 1 s apart: the zero message woke them.
        assert max(opened) - zero < 0.5, f"{max(opened) - zero:.3f} s"
        wait_until(lambda: subscribers(raw, name) == 0, what="subscription dropped")


def test_asyncio_wait_count_down_and_cancel(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    latch = client.count_down_latch(name)
    assert latch.try_set_count(2)

    async def main() -> None:
        waiters = [asyncio.ensure_future(latch.wait_async()) for _ in range(3)]
        timed = asyncio.ensure_future(latch.wait_async(timeout=0.1))
        assert await timed is False
        cancelled = asyncio.ensure_future(latch.wait_async())
        while subscribers(raw, name) != 1:
            await asyncio.sleep(0.005)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        await latch.count_down_async()
        assert not any(w.done() for w in waiters)
        await latch.count_down_async()
        assert await asyncio.wait_for(asyncio.gather(*waiters), 10) == [True, True, True]

    asyncio.run(main())
    assert not raw.exists(name)
    wait_until(lambda: client.waited_channels() == 0, what="no subscription left")


def test_timed_wait_and_bad_input(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    latch = client.count_down_latch(name)
    assert latch.try_set_count(1)
    start = time.monotonic()
    assert latch.wait(timeout=0.2) is False
    assert 0.2 <= time.monotonic() - start < 2
    with pytest.raises(rlock.InvalidArgumentError):
        latch.try_set_count(-1)
    with pytest.raises(rlock.InvalidArgumentError):
        latch.wait(timeout=-1)
    with pytest.raises(rlock.InvalidArgumentError):
        client.count_down_latch("")
    raw.hset(name + ":hash", "f", 1)
    with pytest.raises(rlock.RedisError):
        client.count_down_latch(name + ":hash").count_down()
    assert raw.get(name) == b"1", "nothing changed"
    assert raw.hget(name + ":hash", "f") == b"1"


CTRL_C_CHILD = textwrap.dedent(
    """
    import signal, sys, time, rlock
    signal.signal(signal.SIGINT, signal.default_int_handler)
    client = rlock.Client(sys.argv[1])
    latch = client.count_down_latch(sys.argv[2])
    print("waiting", flush=True)
    try:
        latch.wait()
        print("opened", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        deadline = time.monotonic() + 10
        while client.waited_channels() and time.monotonic() < deadline:
            time.sleep(0.01)
        print("channels", client.waited_channels(), flush=True)
    """
)


def test_ctrl_c_interrupts_a_wait(client: rlock.Client, url: str, name: str, raw: redis.Redis) -> None:
    latch = client.count_down_latch(name)
    assert latch.try_set_count(1)
    proc = subprocess.Popen([sys.executable, "-c", CTRL_C_CHILD, url, name], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "waiting"
        wait_until(lambda: subscribers(raw, name) == 1, timeout=20, what="child waiting")
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        assert proc.stdout.readline().strip() == "interrupted"
        assert time.monotonic() - sent < 1.0
        assert proc.stdout.readline().strip() == "channels 0"
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert latch.count() == 1, "the interrupted wait changed nothing"


def test_module_latch_and_cluster(url: str, name: str, cluster: RedisCluster) -> None:
    rlock.configure(url)
    latch = rlock.count_down_latch(name)
    assert latch.try_set_count(1)
    latch.count_down()
    assert latch.wait(0)
    with rlock.Client(cluster.url) as c:
        on_cluster = c.count_down_latch(name)
        assert on_cluster.try_set_count(1)
        assert cluster.owner_of(name).get(name) == b"1"
        on_cluster.count_down()
        assert on_cluster.wait(0)
        with pytest.raises(rlock.InvalidArgumentError):
            c.count_down_latch("jobs{7}")
