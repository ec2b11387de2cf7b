"""The Python holder of the pause test (run.py): see core/examples/pause_holder.rs for the
protocol. Usage: holder.py URL NAME."""

from __future__ import annotations

import json
import queue
import sys
import time

import rlock

#: A gap between two looks this long can only be the parent's pause.
GAP = 1.0


def main() -> None:
    url, name = sys.argv[1], sys.argv[2]
    client = rlock.Client(url, watchdog_timeout=1.5)
    lock = client.lock(name)
    assert lock.acquire()
    heard: "queue.Queue[float]" = queue.Queue()
    lock.on_lost(lambda _event: heard.put(time.monotonic()))
    print("held", flush=True)
    sys.stdin.readline()
    # Before "armed": the parent may stop this process as soon as it reads it.
    prev, after_pause = time.monotonic(), False
    print("armed", flush=True)

    while True:
        a = time.monotonic()
        lost = lock.is_lost()
        b = time.monotonic()
        if after_pause or a - prev > GAP:
            first, looked = lost, a
            break
        # Paused inside the look: it may have answered before the pause; the next one is first.
        after_pause = b - a > GAP
        prev = b
    valid_for = lock.valid_for()
    try:
        # 0 when it ran before the first look (the watchdog's timer fired first on SIGCONT).
        callback_ms = max(0, round((heard.get(timeout=5) - looked) * 1000))
    except queue.Empty:
        callback_ms = -1
    try:
        lock.release()
        release = "released"
    except rlock.LockLostError:
        release = "lost"
    except rlock.RLockError as e:
        release = f"error: {e}"
    report = {"first": first, "valid_for_ms": round(valid_for * 1000), "callback_ms": callback_ms, "release": release}
    print(json.dumps(report), flush=True)
    client.close()


if __name__ == "__main__":
    main()
