"""The fenced lock: every acquire takes a larger token, shown by ``lock.token`` and ``with``."""

from __future__ import annotations

import asyncio
import threading

import redis

import rlock


def test_tokens_rise_with_every_acquire(client: rlock.Client, name: str, raw: redis.Redis) -> None:
    lock = client.fenced_lock(name)
    assert isinstance(lock, rlock.Lock) and lock.token is None
    with lock as t1:
        assert lock.token == t1 and t1 >= 1
        with lock as t2:  # re-entry: a new token
            assert t2 > t1 and lock.token == t2
        assert raw.hget(name, client._native.owner_name()) == b"1"
    assert lock.token is None, "no token once released"
    assert int(raw.get("redisson_lock_token:{" + name + "}") or 0) == t2
    assert raw.pttl("redisson_lock_token:{" + name + "}") == -1, "the counter never expires"
    t3 = lock.acquire(timeout=1)  # the acquire returns its token
    assert t3 is not None and t3 > t2 and lock.token == t3
    assert lock.release() is True


def test_the_token_comes_with_the_acquire_even_when_the_hold_is_gone_at_once(
    client: rlock.Client, name: str, raw: redis.Redis
) -> None:
    lock = client.fenced_lock(name)
    # A hold this client force-unlocks right after taking it: there is no token to read back,
    # and the acquire still returned the one it took.
    token = lock.acquire()
    client.lock(name).force_unlock()
    assert lock.token is None
    assert token is not None and token == int(raw.get("redisson_lock_token:{" + name + "}") or 0)

    async def main() -> None:
        t = await lock.acquire_async(timeout=1)
        assert t is not None and t > token
        await lock.release_async()
        holder = client.fenced_lock(name)
        assert holder.acquire(blocking=False)
        assert await lock.acquire_async(timeout=0) is None, "held elsewhere: no token"
        holder.release()

    asyncio.run(main())


def test_threads_and_tasks_get_distinct_increasing_tokens(client: rlock.Client, name: str) -> None:
    lock = client.fenced_lock(name)
    seen: list[int] = []
    guard = threading.Lock()

    def work() -> None:
        for _ in range(20):
            with lock as token:
                with guard:
                    seen.append(token)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    async def task() -> list[int]:
        out = []
        for _ in range(10):
            async with lock as token:
                out.append(token)
        return out

    async def main() -> list[list[int]]:
        return await asyncio.gather(task(), task())

    for tokens in asyncio.run(main()):
        assert tokens == sorted(tokens)
        seen.extend(tokens)
    assert len(seen) == len(set(seen)) == 100, "no token given twice"
    # Holds were exclusive: the order tokens were given in is the order of the critical sections.
    assert seen[:80] == sorted(seen[:80])


def test_default_client_fenced_lock(url: str, name: str) -> None:
    rlock.configure(url)
    lock = rlock.fenced_lock(name)
    with lock as token:
        assert token == lock.token
