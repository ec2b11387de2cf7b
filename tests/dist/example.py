import asyncio

import rlock

with rlock.lock("orders"):  # held by this thread; the watchdog keeps the lease alive
    assert rlock.lock("orders").is_held()
assert not rlock.lock("orders").locked()


async def main() -> None:
    with rlock.Client() as client:
        lock = client.lock("orders")
        async with lock:  # held by the current task
            assert lock.is_held() and lock.locked()
        assert not lock.locked()


asyncio.run(main())
print(rlock.__version__)
