"""make bench, Python part: rlock (threads and asyncio) against redis-py's Lock, uncontended
pairs/s and hand-off latency, on the server in REDIS_URL. Prints one JSON object per line."""
import asyncio
import json
import os
import threading
import time

import redis
import rlock

URL = os.environ["REDIS_URL"]
SECS = float(os.environ.get("BENCH_SECONDS", "3"))


def emit(**kw):
    print(json.dumps(kw), flush=True)


def threads_pairs(make_lock, owners):
    stop = time.monotonic() + SECS
    counts = [0] * owners

    def run(i):
        lock = make_lock(i)
        n = 0
        while time.monotonic() < stop:
            lock.acquire()
            lock.release()
            n += 1
        counts[i] = n

    ts = [threading.Thread(target=run, args=(i,)) for i in range(owners)]
    start = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(counts) / (time.monotonic() - start)


async def asyncio_pairs(client, owners):
    stop = time.monotonic() + SECS
    counts = [0] * owners

    async def run(i):
        lock = client.lock(f"bench:py:aio:{i}")
        n = 0
        while time.monotonic() < stop:
            await lock.acquire_async()
            await lock.release_async()
            n += 1
        counts[i] = n

    start = time.monotonic()
    await asyncio.gather(*(run(i) for i in range(owners)))
    return sum(counts) / (time.monotonic() - start)


def handoff(make_lock, acquire, waiters=16, rounds=300):
    """From the holder calling release to another thread's acquire returning."""
    state = {"released": None, "by": None, "taken": 0}
    guard = threading.Lock()
    samples = []
    done = threading.Event()

    def run(i):
        lock = make_lock()
        while not done.is_set():
            if not acquire(lock):
                continue
            now = time.perf_counter()
            with guard:
                if state["released"] is not None and state["by"] != i:
                    samples.append(now - state["released"])
                state["released"] = None
                state["taken"] += 1
                if state["taken"] >= rounds:
                    done.set()
            time.sleep(0.0002)
            with guard:
                state["released"], state["by"] = time.perf_counter(), i
            lock.release()
            time.sleep(0.002)

    ts = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(waiters)]
    for t in ts:
        t.start()
    done.wait(120)
    for t in ts:
        t.join(10)
    samples.sort()
    pick = lambda p: samples[int((len(samples) - 1) * p)] * 1e6 if samples else 0.0
    return pick(0.5), pick(0.99)


def main():
    client = rlock.Client(URL)
    r = redis.Redis.from_url(URL)
    for owners in (1, 16):
        rate = threads_pairs(lambda i: client.lock(f"bench:py:th:{i}"), owners)
        emit(bench="pairs", surface="python-threads", owners=owners, pairs_per_s=rate)
    for owners in (1, 16, 64):
        rate = asyncio.run(asyncio_pairs(client, owners))
        emit(bench="pairs", surface="python-asyncio", owners=owners, pairs_per_s=rate)
    for owners in (1, 16):
        rate = threads_pairs(lambda i: r.lock(f"bench:py:redispy:{i}", timeout=30), owners)
        emit(bench="pairs", surface="peer redis-py Lock", owners=owners, pairs_per_s=rate)
    p50, p99 = handoff(lambda: client.lock("bench:py:handoff"), lambda l: l.acquire(timeout=5))
    emit(bench="handoff", surface="python-threads", waiters=16, p50_us=p50, p99_us=p99)
    p50, p99 = handoff(lambda: r.lock("bench:py:redispy:handoff", timeout=30), lambda l: l.acquire(blocking_timeout=5))
    emit(bench="handoff", surface="peer redis-py Lock", waiters=16, p50_us=p50, p99_us=p99)
    client.close()


if __name__ == "__main__":
    main()
