"""The Python worker of the fault suite (`make chaos`, driver tests/chaos/run.py).

Usage: `worker.py <redis-url> [watchdog_ms=N] [command_timeout_ms=N] [retry_attempts=N]
[retry_delay_ms=N] [label=S]`. Connects, prints `{"event":"ready",...}`, then answers one command
per stdin line with one JSON line (see tests/chaos/README.md). Sync commands hold for the main
thread; `cancel` runs asyncio tasks (each its own owner) cancelled at random moments.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import socket
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

import redis

import rlock


class Taking:
    """sem@NAME, pes@NAME and multi@NAME behind the Lock methods the commands use: each acquire
    takes one permit (a permit-expirable one renewed by the watchdog unless given a lease) or
    every member, and is remembered (a permit's id) for the release that gives one back."""

    def __init__(
        self, obj: Union[rlock.Semaphore, rlock.PermitExpirableSemaphore, rlock.MultiLock, rlock.RedLock]
    ) -> None:
        self.obj = obj
        self.taken: List[str] = []

    def _took(self, got: Union[bool, str, None]) -> bool:
        if got is None or got is False:
            return False
        self.taken.append(got if isinstance(got, str) else "")
        return True

    def _give(self) -> str:
        if not self.taken:
            raise rlock.NotHeldError(f"this worker holds none of {self.obj!r}")
        return self.taken.pop()

    def acquire(self, timeout: float = -1, lease: Optional[float] = None) -> bool:
        o = self.obj
        if isinstance(o, rlock.Semaphore):
            return self._took(o.acquire(timeout=timeout))
        return self._took(o.acquire(timeout=timeout, lease=lease))

    async def acquire_async(self) -> bool:
        return self._took(await self.obj.acquire_async())

    def release(self) -> None:
        took = self._give()
        if isinstance(self.obj, rlock.PermitExpirableSemaphore):
            self.obj.release(took)
        else:
            self.obj.release()

    async def release_async(self) -> None:
        took = self._give()
        o = self.obj
        await (o.release_async(took) if isinstance(o, rlock.PermitExpirableSemaphore) else o.release_async())

    def hold_count(self) -> int:
        return len(self.taken)

    def locked(self) -> bool:
        raise rlock.InvalidArgumentError("locked and held are for locks, not sem/pes/multi")

    is_held = locked

    def on_lost(self, callback: Callable[[Any], object]) -> None:
        if isinstance(self.obj, rlock.PermitExpirableSemaphore):
            self.obj.on_lost(callback)


Target = Union[rlock.Lock, Taking]


def family_lock(client: rlock.Client, spec: str, label: str, others: Sequence[rlock.Client] = ()) -> Target:
    """A lock spec is NAME (the reentrant lock), KIND@NAME with KIND read, write, fair, nr or nrf
    (that lock of the family; nr and nrf the non-reentrant and non-reentrant fair locks), sem@NAME, pes@NAME (a semaphore's or a permit-expirable semaphore's
    permits), multi@NAME (the multi-lock over NAME:x and NAME:y, taken x,y when the label ends
    in an even digit, else y,x) or red@NAME (the RedLock NAME over `client` and `others`)."""
    kind, at, name = spec.partition("@")
    if not at:
        return client.lock(spec)
    if kind == "read":
        return client.read_write_lock(name).read_lock()
    if kind == "write":
        return client.read_write_lock(name).write_lock()
    if kind == "fair":
        return client.fair_lock(name)
    if kind == "nr":
        return client.non_reentrant_lock(name)
    if kind == "nrf":
        return client.non_reentrant_fair_lock(name)
    if kind == "fenced":
        return client.fenced_lock(name)
    if kind == "sem":
        return Taking(client.semaphore(name))
    if kind == "pes":
        return Taking(client.permit_expirable_semaphore(name))
    if kind == "multi":
        x, y = client.lock(f"{name}:x"), client.lock(f"{name}:y")
        return Taking(rlock.multi_lock([x, y] if label.endswith(("0", "2", "4", "6", "8")) else [y, x]))
    if kind == "red":
        return Taking(rlock.red_lock(name, [client, *others]))
    return client.lock(spec)


_out = threading.Lock()


def emit(**event: Any) -> None:
    line = json.dumps(event)
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


# Most specific first: LockLostError is a NotHeldError.
CODES = [
    (rlock.LockLostError, "LOST"),
    (rlock.NotHeldError, "NOT_HELD"),
    (rlock.InvalidArgumentError, "INVALID_ARGUMENT"),
    (rlock.TimeoutError, "TIMEOUT"),
    (rlock.ConnectionError, "CONNECTION"),
    (rlock.RedisError, "REDIS"),
    (rlock.ClosedError, "CLOSED"),
]


def code(e: BaseException) -> str:
    for cls, name in CODES:
        if isinstance(e, cls):
            return name
    return type(e).__name__


def error(op: str, e: BaseException) -> None:
    emit(event="error", op=op, code=code(e), message=str(e))


def store_write(port: int, spec: str, token: int, label: str) -> bool:
    """One write to the network-fault suite's fenced store (tests/netfaults/history.py) on
    127.0.0.1:`port`: the lock's name (the spec without its kind), the token and this worker's
    label; whether the store accepted it (it refuses a token below the highest it has seen)."""
    key = spec.split("@", 1)[-1]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(f"write {key} {token} {label}\n".encode())
        return conn.makefile("r").readline().strip() == "accepted"


def cancel_delay(rng: random.Random) -> float:
    """A random moment (seconds) to cancel an acquire at: mostly within a round trip or two,
    sometimes while it waits for another holder."""
    r = rng.random()
    if r < 0.3:
        return rng.uniform(0, 0.0003)
    if r < 0.8:
        return rng.uniform(0, 0.003)
    return rng.uniform(0, 0.03)


class Worker:
    def __init__(self, url: str, label: str, options: Dict[str, Any], red_urls: Sequence[str] = ()) -> None:
        self.url = url
        self.label = label
        self.client = rlock.Client(url, **options)
        # The other servers' clients of a RedLock (red@NAME).
        self.others = [rlock.Client(u, **options) for u in red_urls]
        self.locks: Dict[str, Target] = {}
        # The token each fenced lock's last acquire returned, by spec: what `write` writes with.
        self.tokens: Dict[str, int] = {}

    def lock(self, name: str) -> Target:
        lock = self.locks.get(name)
        if lock is None:
            lock = self.locks[name] = family_lock(self.client, name, self.label, self.others)
            lock.on_lost(lambda e: emit(event="lost", name=e.name, reason=e.reason))
        return lock

    def command(self, words: List[str]) -> None:
        op = words[0]
        try:
            if op == "acquire":
                lock = self.lock(words[1])
                wait = int(words[2]) / 1000 if len(words) > 2 else -1
                lease = int(words[3]) / 1000 if len(words) > 3 else None
                got = lock.acquire(timeout=wait, lease=lease)
                token = lock.token if got and isinstance(lock, rlock.FencedLock) else None
                if token is not None:
                    self.tokens[words[1]] = token
                emit(event="acquired" if got else "not_acquired", name=words[1], token=token)
            elif op == "release":
                lock = self.lock(words[1])
                lock.release()
                emit(event="released", free=lock.hold_count() == 0)
            elif op == "locked":
                emit(event="locked", value=self.lock(words[1]).locked())
            elif op == "held":
                emit(event="held", value=self.lock(words[1]).is_held())
            elif op == "write":
                token = self.tokens.get(words[1])
                if token is None:
                    emit(event="error", op="write", code="INVALID_ARGUMENT",
                         message=f"no fenced acquire of {words[1]} to write with")
                else:
                    accepted = store_write(int(words[2]), words[1], token, self.label)
                    emit(event="written", name=words[1], token=token, accepted=accepted)
            elif op == "stats":
                emit(event="stats", tracked=self.client.tracked_holds(), channels=self.client.waited_channels())
            elif op == "mx":
                self.mx(words[1], int(words[2]), int(words[3]))
            elif op == "cancel":
                self.cancel(words[1], int(words[2]), int(words[3]), int(words[4]))
            elif op == "bad":
                bad(self, *words[1:5])
            else:
                emit(event="error", op="parse", code="UNKNOWN_COMMAND", message=" ".join(words))
        except rlock.RLockError as e:
            error(op, e)

    def mx(self, prefix: str, names: int, sections: int) -> None:
        data = redis.Redis.from_url(self.url, decode_responses=True)
        rng = random.Random()
        locks = [family_lock(self.client, f"{prefix}:{k}", self.label, self.others) for k in range(names)]
        per_name = [0] * names
        violations = crossings = 0
        surface = self.label.split("-")[0] + "-"
        for _ in range(sections):
            k = rng.randrange(names)
            name = f"{prefix}:{k}"
            locks[k].acquire()
            is_set = data.set(f"{name}:marker", self.label, nx=True)
            if not is_set:
                violations += 1
            n = int(data.get(f"{name}:counter") or 0) + 1
            data.set(f"{name}:counter", n)
            last = data.set(f"{name}:last", self.label, get=True)
            if isinstance(last, str) and not last.startswith(surface):
                crossings += 1
            if is_set:
                data.delete(f"{name}:marker")
            locks[k].release()
            per_name[k] += 1
        data.close()
        emit(event="mx_done", sections=sections, violations=violations, crossings=crossings, per_name=per_name)

    def cancel(self, prefix: str, names: int, count: int, concurrency: int) -> None:
        """`count` acquires on `names` locks, `concurrency` tasks at a time; each acquire runs in
        its own task (its own owner), which is cancelled (`task.cancel()`) at a random moment;
        one that finished first is released, as its caller would."""
        locks = [family_lock(self.client, f"{prefix}:{k}", self.label, self.others) for k in range(names)]
        counts = {"acquired": 0, "cancelled": 0}

        async def attempt(lock: Target, delay: float) -> None:
            task = asyncio.current_task()
            assert task is not None
            timer = asyncio.get_running_loop().call_later(delay, task.cancel)
            try:
                await lock.acquire_async()
            except asyncio.CancelledError:
                counts["cancelled"] += 1
                return
            finally:
                timer.cancel()  # no await since the acquire returned: the cancel cannot land now
            counts["acquired"] += 1
            await lock.release_async()

        async def loop(seed: int, n: int) -> None:
            rng = random.Random(seed)
            for _ in range(n):
                await asyncio.create_task(attempt(rng.choice(locks), cancel_delay(rng)))

        async def main() -> None:
            base = random.randrange(1 << 30)
            await asyncio.gather(
                *(loop(base + t, count // concurrency + (t < count % concurrency)) for t in range(concurrency))
            )

        asyncio.run(main())
        emit(event="cancel_done", **counts)


def bad(w: Worker, guard: str, wrongtype: str, wrong_pw_url: str, dead_url: str) -> None:
    """The Python rows of the bad-input table; after each row, waits for `next` on stdin."""
    closed = rlock.Client(w.url)
    closed.close()
    rows: List[tuple[str, str, Callable[[], object]]] = [
        ("client.lock(42)", "TypeError", lambda: w.client.lock(42)),  # type: ignore[arg-type]
        ("client.lock(None)", "TypeError", lambda: w.client.lock(None)),  # type: ignore[arg-type]
        ("client.lock('')", "INVALID_ARGUMENT", lambda: w.client.lock("")),
        ("client.lock(name with a lone surrogate)", "UnicodeEncodeError", lambda: w.client.lock("lock-\udcff")),
        ("client.lock('x' * 70000)", "INVALID_ARGUMENT", lambda: w.client.lock("x" * 70_000)),
        ("guard.acquire(lease=-1)", "INVALID_ARGUMENT", lambda: w.client.lock(guard).acquire(lease=-1)),
        ("guard.acquire(lease=0)", "INVALID_ARGUMENT", lambda: w.client.lock(guard).acquire(lease=0)),
        ("guard.acquire(lease=1e12)", "INVALID_ARGUMENT", lambda: w.client.lock(guard).acquire(lease=1e12)),
        ("guard.acquire(lease=nan)", "INVALID_ARGUMENT", lambda: w.client.lock(guard).acquire(lease=float("nan"))),
        ("guard.acquire(lease='1')", "TypeError", lambda: w.client.lock(guard).acquire(lease="1")),  # type: ignore[arg-type]
        ("guard.acquire(timeout=-0.5)", "INVALID_ARGUMENT", lambda: w.client.lock(guard).acquire(timeout=-0.5)),
        ("guard.acquire(blocking=False, timeout=1)", "INVALID_ARGUMENT",
         lambda: w.client.lock(guard).acquire(blocking=False, timeout=1)),
        ("await guard.acquire_async(lease=-1)", "INVALID_ARGUMENT",
         lambda: asyncio.run(w.client.lock(guard).acquire_async(lease=-1))),
        ("guard.acquire(timeout=0.05) held by another", "False", lambda: w.client.lock(guard).acquire(timeout=0.05)),
        ("guard.release() held by another", "NOT_HELD", lambda: w.client.lock(guard).release()),
        ("await guard.release_async() held by another", "NOT_HELD",
         lambda: asyncio.run(_release_async(w.client.lock(guard)))),
        ("rlock.Client('nonsense')", "INVALID_ARGUMENT", lambda: rlock.Client("nonsense")),
        ("rlock.Client('http://127.0.0.1:6379')", "INVALID_ARGUMENT", lambda: rlock.Client("http://127.0.0.1:6379")),
        ("rlock.Client(42)", "TypeError", lambda: rlock.Client(42)),  # type: ignore[arg-type]
        ("rlock.Client(url, watchdog_timeout=-1)", "INVALID_ARGUMENT", lambda: rlock.Client(w.url, watchdog_timeout=-1)),
        ("rlock.Client(url, no_such_option=1)", "TypeError", lambda: rlock.Client(w.url, no_such_option=1)),
        ("rlock.Client(wrong password)", "REDIS", lambda: rlock.Client(wrong_pw_url)),
        ("rlock.Client(port nobody listens on)", "CONNECTION",
         lambda: rlock.Client(dead_url, retry_attempts=0, connect_timeout=2.0)),
        ("acquire() of a key of the wrong type", "REDIS", lambda: w.client.lock(wrongtype).acquire()),
        ("force_unlock() of a key of the wrong type", "REDIS", lambda: w.client.lock(wrongtype).force_unlock()),
        ("closed client: guard.acquire()", "CLOSED", lambda: closed.lock(guard).acquire()),
        ("closed client: guard.locked()", "CLOSED", lambda: closed.lock(guard).locked()),
    ]
    for text, expected, call in rows:
        try:
            got = str(call())
        except rlock.RLockError as e:
            got = code(e)
        except Exception as e:  # the typed errors that are Python's own (TypeError, ...)
            got = type(e).__name__
        emit(event="row", surface="python", input=text, expected=expected, got=got)
        if not sys.stdin.readline():
            return
    emit(event="bad_done")


async def _release_async(lock: rlock.Lock) -> None:
    await lock.release_async()


def main(argv: List[str]) -> int:
    url = argv[1]
    options: Dict[str, Any] = {}
    label = "python"
    red_urls: List[str] = []
    for arg in argv[2:]:
        key, _, value = arg.partition("=")
        if key == "watchdog_ms":
            options["watchdog_timeout"] = int(value) / 1000
        elif key == "command_timeout_ms":
            options["command_timeout"] = int(value) / 1000
        elif key == "retry_attempts":
            options["retry_attempts"] = int(value)
        elif key == "retry_delay_ms":
            options["retry_delay"] = int(value) / 1000
        elif key == "fair_wait_ms":
            options["fair_lock_wait_timeout"] = int(value) / 1000
        elif key == "subscription_timeout_ms":
            options["subscription_timeout"] = int(value) / 1000
        elif key == "replica_sync":
            options["replica_sync"] = value == "1"
        elif key == "label":
            label = value
        elif key == "red_urls":
            red_urls = value.split(",")
        else:
            raise SystemExit(f"unknown option {key}")
    try:
        w = Worker(url, label, options, red_urls)
    except rlock.RLockError as e:
        emit(event="fatal", message=f"connect: {code(e)} {e}")
        return 1
    emit(event="ready", surface="python", pid=os.getpid())
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words == ["exit"]:
            break
        w.command(words)
    w.client.close()
    for c in w.others:
        c.close()
    emit(event="bye")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
