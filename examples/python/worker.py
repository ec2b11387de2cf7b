"""The Python worker of `make demo`: takes the lock `demo:lock` N times and, inside each critical
section, increments the non-atomic counter `demo:counter` (GET, then SET).

Usage: `worker.py <label> <iterations>`; Redis URL from `REDIS_URL`.
"""

from __future__ import annotations

import os
import sys

import redis

import rlock


def main(argv: list[str]) -> int:
    label = argv[1] if len(argv) > 1 else "python"
    iterations = int(argv[2]) if len(argv) > 2 else 100
    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379")

    with rlock.Client(url) as client:
        data = redis.Redis.from_url(url)
        lock = client.lock("demo:lock")
        handoffs = 0
        for _ in range(iterations):
            with lock:
                n = int(data.get("demo:counter") or 0) + 1
                prev = data.get("demo:last")
                last = prev.decode() if isinstance(prev, bytes) else prev
                data.set("demo:counter", n)
                data.set("demo:last", label)
            if last is not None and last != label:
                handoffs += 1
                if handoffs <= 3:
                    print(f"[{label}] got the lock from {last}, counter = {n}")
        print(f"[{label}] done: {iterations} critical sections, {handoffs} hand-offs from other workers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
