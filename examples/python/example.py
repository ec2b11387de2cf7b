"""A short tour of rlock for Python (checked with `mypy --strict` by `make test`).

Run against a Redis server: `REDIS_URL=redis://127.0.0.1:6379 python examples/python/example.py`.
"""

from __future__ import annotations

import asyncio
import threading

import rlock


def sync_part(client: rlock.Client) -> None:
    lock = client.lock("example:orders")
    with lock:  # the calling thread holds it; the watchdog renews the lease
        with lock:  # the same thread re-enters
            assert lock.hold_count() == 2

    # threading.RLock's arguments: wait at most 0.5 s, and hold for at most 10 s.
    if lock.acquire(timeout=0.5, lease=10.0):
        try:
            print("remaining lease:", lock.remaining_ttl())
        finally:
            lock.release()

    # Another thread is another owner: it contends instead of re-entering.
    with lock:
        other: list[bool] = []
        t = threading.Thread(target=lambda: other.append(lock.acquire(blocking=False)))
        t.start()
        t.join()
        assert other == [False]


async def async_part(client: rlock.Client) -> None:
    lock = client.lock("example:orders")

    def report(event: rlock.LostEvent) -> None:
        print(f"lost {event.name} held by {event.owner}: {event.reason}")

    remove = lock.on_lost(report)
    async with lock:  # the current asyncio task holds it
        # Another task is another owner, even on the same thread.
        assert not await asyncio.create_task(lock.acquire_async(timeout=0))
    remove()

    try:
        await lock.release_async()
    except rlock.NotHeldError as e:  # also a RuntimeError, as in threading
        print("not held:", e)


def main() -> None:
    with rlock.Client() as client:
        sync_part(client)
        asyncio.run(async_part(client))


if __name__ == "__main__":
    main()
