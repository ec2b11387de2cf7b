"""make bench, Python part: rlock (threads and asyncio) against redis-py's Lock and
python-redis-lock, uncontended pairs/s and hand-off latency, on the server in REDIS_URL. Prints
one JSON object per line.

Peers as they ship: redis-py's Lock with its defaults (polls every 0.1 s while waiting;
timeout=30 gives it a 30 s lease like rlock's watchdog lease), python-redis-lock with its
defaults (waiters block in BLPOP on a signal list that release pushes to; expire=30 for the
same lease, auto_renewal off as by default).

BENCH_SECONDS (default 3) per pairs run. BENCH_SHORT=1 (make bench-short): 0.5 s pairs runs when
BENCH_SECONDS is not given, and 50 hand-off acquisitions instead of 300."""
import asyncio
import json
import os
import sys
import threading
import time

import redis
import redis_lock
import rlock

URL = os.environ["REDIS_URL"]
SHORT = os.environ.get("BENCH_SHORT", "0") not in ("", "0")
SECS = float(os.environ.get("BENCH_SECONDS", "0.5" if SHORT else "3"))
HANDOFFS = 50 if SHORT else 300

# The short run fails when a surface or peer no longer runs: an exception in a bench thread (which
# threading prints, and the full run carries on after) or a hand-off that never completes.
failures = []
if SHORT:
    def _record(args):
        who = args.thread.name if args.thread else "a thread"
        failures.append(f"{who}: {args.exc_type.__name__}: {args.exc_value}")
        threading.__excepthook__(args)

    threading.excepthook = _record


def emit(**kw):
    print(json.dumps(kw), flush=True)


def threads_pairs(make_lock, owners, handle_per_pair=False):
    """Pairs/s of `owners` threads, thread i on make_lock(i): made once, or for every pair when
    handle_per_pair (what a program that does not keep its handles pays)."""
    stop = time.monotonic() + SECS
    counts = [0] * owners

    def run(i):
        lock = make_lock(i)
        n = 0
        while time.monotonic() < stop:
            if handle_per_pair:
                lock = make_lock(i)
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


def handoff(make_lock, acquire, waiters=16, rounds=HANDOFFS):
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
    give_up = time.monotonic() + 120
    # (failures is only ever filled in short mode: a failed thread ends the wait there.)
    while not done.wait(0.1) and not failures and time.monotonic() < give_up:
        pass
    if not done.is_set() and SHORT:
        failures.append(f"hand-off: {state['taken']} of {rounds} acquisitions done")
        done.set()  # the threads still alive leave at their next turn
    for t in ts:
        t.join(10)
    samples.sort()
    pick = lambda p: samples[round((len(samples) - 1) * p)] * 1e6 if samples else 0.0
    return pick(0.5), pick(0.99), len(samples)


def main():
    client = rlock.Client(URL)
    r = redis.Redis.from_url(URL)
    owner_counts = (1, 16, 64)
    # Threads also at 256 (issue 46: thread-per-request servers run many more threads than cores).
    for owners in owner_counts + (256,):
        rate = threads_pairs(lambda i: client.lock(f"bench:py:th:{i}"), owners)
        emit(bench="pairs", surface="python-threads", owners=owners, pairs_per_s=rate)
    # What a handle costs (issue 46): client.lock(name) alone, and the pairs with a handle made
    # per pair, as a program that does not keep its handles would.
    rounds = 20000 if SHORT else 200000
    start = time.perf_counter()
    for _ in range(rounds):
        client.lock("bench:py:handle")
    emit(bench="handle", surface="python", new_ns=(time.perf_counter() - start) / rounds * 1e9)
    for owners in (1, 64):
        rate = threads_pairs(lambda i: client.lock(f"bench:py:fresh:{i}"), owners, handle_per_pair=True)
        emit(bench="pairs", surface="python-threads (handle per pair)", owners=owners, pairs_per_s=rate)
    # asyncio also with 256 tasks: one thread carries them all, as one process would.
    for owners in owner_counts + (256,):
        rate = asyncio.run(asyncio_pairs(client, owners))
        emit(bench="pairs", surface="python-asyncio", owners=owners, pairs_per_s=rate)
    peers = [
        ("peer redis-py Lock", "bench:py:redispy", lambda name: r.lock(name, timeout=30)),
        ("peer python-redis-lock", "bench:py:prl", lambda name: redis_lock.Lock(r, name, expire=30)),
    ]
    for surface, prefix, make in peers:
        for owners in owner_counts:
            rate = threads_pairs(lambda i: make(f"{prefix}:{i}"), owners)
            emit(bench="pairs", surface=surface, vs="python-threads", owners=owners, pairs_per_s=rate)
    p50, p99, n = handoff(lambda: client.lock("bench:py:handoff"), lambda l: l.acquire(timeout=5))
    emit(bench="handoff", surface="python-threads", waiters=16, p50_us=p50, p99_us=p99, samples=n)
    waits = {"peer redis-py Lock": lambda l: l.acquire(blocking_timeout=5), "peer python-redis-lock": lambda l: l.acquire(timeout=5)}
    for surface, prefix, make in peers:
        p50, p99, n = handoff(lambda: make(f"{prefix}:handoff"), waits[surface])
        emit(bench="handoff", surface=surface, vs="python-threads", waiters=16, p50_us=p50, p99_us=p99, samples=n)
    client.close()
    if failures:
        sys.exit("py_bench: failed:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
