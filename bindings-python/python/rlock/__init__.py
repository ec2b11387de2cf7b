"""rlock: distributed reentrant locks on Redis, stored exactly as Redisson stores them.

>>> import rlock
>>> with rlock.lock("orders"):        # doctest: +SKIP
...     ...                           # one holder at a time, across processes and machines

Sync calls belong to the calling thread (the same thread re-enters, another thread contends);
``async`` calls belong to the current asyncio task. All lock logic lives in the Rust core; this
module only adds Python sugar (context managers, threading-style arguments, task owners).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import weakref
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Awaitable, Callable, Generic, Iterable, List, Literal, Optional, Protocol, Type, TypeVar, cast

from ._typing import Unpack

from . import _native
from ._errors import (
    ClosedError,
    ConnectionError,
    ForkedError,
    WouldDeadlockError,
    InvalidArgumentError,
    LockLostError,
    NotAcquiredError,
    NotHeldError,
    RedisError,
    RLockError,
    TimeoutError,
)
from ._describe import ClientRecord, Description, HeldPermit, Holder, Kind, Listed, QueuedWaiter
from ._options import ClientOptions
from ._stats import Stats, StatsSummary
from ._native import CountDownLatch
from ._native import __version__ as __version__

__all__ = [
    "Client",
    "ClientOptions",
    "Stats",
    "StatsSummary",
    "FencedLock",
    "Lock",
    "ReadWriteLock",
    "Semaphore",
    "PermitExpirableSemaphore",
    "MultiLock",
    "CountDownLatch",
    "Description",
    "Holder",
    "ClientRecord",
    "QueuedWaiter",
    "HeldPermit",
    "Listed",
    "Kind",
    "LostEvent",
    "lock",
    "fenced_lock",
    "read_write_lock",
    "fair_lock",
    "semaphore",
    "permit_expirable_semaphore",
    "multi_lock",
    "red_lock",
    "fenced_red_lock",
    "RedLock",
    "FencedRedLock",
    "count_down_latch",
    "configure",
    "RLockError",
    "NotHeldError",
    "LockLostError",
    "ConnectionError",
    "TimeoutError",
    "InvalidArgumentError",
    "RedisError",
    "ClosedError",
    "NotAcquiredError",
    "ForkedError",
    "WouldDeadlockError",
]

for _cls in (
    RLockError,
    NotHeldError,
    LockLostError,
    ConnectionError,
    TimeoutError,
    InvalidArgumentError,
    RedisError,
    ClosedError,
    NotAcquiredError,
    ForkedError,
    WouldDeadlockError,
):
    _cls.__module__ = "rlock"  # shown as rlock.NotHeldError, where users import it from

_log = logging.getLogger("rlock")


@dataclass(frozen=True)
class LostEvent:
    """A hold the watchdog lost: passed to callbacks registered with :meth:`Lock.on_lost`,
    :meth:`PermitExpirableSemaphore.on_lost` and :meth:`Client.on_lost`. The same fields as on
    every surface."""

    #: The lock (or semaphore) name.
    name: str
    #: The kind of hold: ``"lock"`` (reentrant, fenced and fair locks), ``"read"``,
    #: ``"write"``, ``"permit"`` (a permit of a permit-expirable semaphore), or ``"red_lock"``
    #: (a :class:`RedLock` left with fewer than a majority of its servers).
    kind: str
    #: The owner whose hold was lost, as stored in Redis (``"<client uuid>:<id>"``; for a
    #: permit, the client's owner 0, since permits have no owner).
    owner: str
    #: ``"gone"`` (confirmed: the hold was no longer there: expired, force-unlocked, released
    #: elsewhere, deleted), ``"lease_doubt"`` (no renewal was confirmed in time, so the lease
    #: may end within ``lease_doubt_margin``: told before another owner can take it) or
    #: ``"lease_ending"`` (a lease nobody renews ends within that margin).
    reason: str
    #: The permit id (32 hex characters) for a permit; None for other holds.
    permit_id: Optional[str] = None


LostCallback = Callable[[LostEvent], object]


def _lost_listener(callback: LostCallback, what: str) -> Callable[[str, str, str, str, Optional[str]], None]:
    """The native listener for ``callback``: builds the event; an exception in the callback is
    logged, never propagated."""

    def call(name: str, kind: str, owner: str, reason: str, permit_id: Optional[str]) -> None:
        try:
            callback(LostEvent(name=name, kind=kind, owner=owner, reason=reason, permit_id=permit_id))
        except Exception:
            _log.exception("rlock: on_lost callback for %s %r raised", what, name)

    return call


class _LostListeners(Protocol):
    def on_lost(self, callback: Callable[[str, str, str, str, Optional[str]], object]) -> int: ...
    def remove_lost_listener(self, id: int) -> bool: ...


def _listen(native: _LostListeners, callback: LostCallback, what: str) -> Callable[[], None]:
    """Registers ``callback`` with ``native`` and returns the function that unregisters it."""
    listener = native.on_lost(_lost_listener(callback, what))

    def remove() -> None:
        native.remove_lost_listener(listener)

    return remove


class Client:
    """A connection to Redis that makes locks; also a context manager that closes it.

    ``url`` None means the ``REDIS_URL`` environment variable, else ``redis://127.0.0.1:6379``.
    Also ``redis+cluster://host1:port1,host2:port2/`` (a Redis Cluster),
    ``redis+sentinel://host1:port1,host2:port2/service_name[/db]`` (a master found and followed
    through Sentinels) and ``rediss...`` for TLS. The keyword options are those of
    :class:`ClientOptions` (seconds as floats), e.g. ``watchdog_timeout=10.0``.
    """

    def __init__(self, url: Optional[str] = None, **options: Unpack[ClientOptions]) -> None:
        self._guard = threading.Lock()
        self._task_owners: "weakref.WeakKeyDictionary[asyncio.Task[Any], int]" = weakref.WeakKeyDictionary()
        self._native = _native.Client(url, **options)

    def lock(self, name: str) -> Lock:
        """A handle on the lock ``name`` (also its Redis key). Cheap; make as many as you like."""
        return Lock(self, self._native.lock(name))

    def fenced_lock(self, name: str) -> FencedLock:
        """A handle on the fenced lock ``name`` (Redisson's ``RFencedLock``): a :class:`Lock`
        whose every acquire takes a fencing token, strictly larger than any before for that
        name (see :attr:`FencedLock.token`)."""
        return FencedLock(self, self._native.fenced_lock(name))

    def read_write_lock(self, name: str) -> ReadWriteLock:
        """A handle on the read-write lock ``name`` (Redisson's ``RReadWriteLock``): many readers
        (:meth:`ReadWriteLock.read_lock`) or one writer (:meth:`ReadWriteLock.write_lock`)."""
        read, write = self._native.read_write_lock(name)
        return ReadWriteLock(Lock(self, read), Lock(self, write))

    def semaphore(self, name: str) -> Semaphore:
        """A handle on the semaphore ``name`` (Redisson's ``RSemaphore``): permits in the key
        ``name``; a missing key means 0 permits (see :meth:`Semaphore.try_set_permits`)."""
        return Semaphore(self._native.semaphore(name))

    def permit_expirable_semaphore(self, name: str) -> PermitExpirableSemaphore:
        """A handle on the permit-expirable semaphore ``name`` (Redisson's
        ``RPermitExpirableSemaphore``): permits with ids, each held until released or until its
        lease runs out. Permits taken without a lease are renewed by the watchdog, so they come
        back by themselves within ``watchdog_timeout`` when their process dies."""
        return PermitExpirableSemaphore(self._native.permit_expirable_semaphore(name))
    def count_down_latch(self, name: str) -> CountDownLatch:
        """A handle on the count-down latch ``name`` (Redisson's ``RCountDownLatch``): a count in
        the key ``name``, open at 0; :meth:`CountDownLatch.wait` blocks until it is open."""
        return self._native.count_down_latch(name)

    def fair_lock(self, name: str) -> Lock:
        """A handle on the fair lock ``name`` (Redisson's ``RFairLock``): a :class:`Lock` granted
        in arrival order across every client, Java's included. A waiter that stops waiting
        (timeout, Ctrl-C, cancellation, a closed client) leaves the queue."""
        return Lock(self, self._native.fair_lock(name))

    def describe(self, name: str) -> Description:
        """What lives under ``name``, read without changing anything: the kind found (``"lock"``,
        ``"fenced_lock"``, ..., ``"semaphore_or_latch"`` when nobody waits to tell them apart,
        ``"other"``, ``"none"``), holders with hold counts and who they are (their clients'
        holder records), TTL, waiters, a fair lock's queue, a fenced lock's token, permits and
        counts; durations in float seconds (``ttl``, ``held_for``), instants as Unix times in
        float seconds (``now``, ``since``). A key of another type is ``"other"``, not an error; a bad name raises
        :class:`InvalidArgumentError` (nothing is sent)."""
        return cast(Description, json.loads(self._native.describe(name)))

    def list(self, pattern: Optional[str] = None, limit: Optional[int] = None) -> List[Listed]:
        """Names of locks and synchronizers whose key or helper keys match the Redis glob
        ``pattern`` (None: all), found with SCAN on every master, sorted; at most ``limit``.
        Any integer string counts as a ``"semaphore_or_latch"``. Costs time in proportion to
        the number of keys."""
        return cast(List[Listed], json.loads(self._native.list(pattern, limit)))

    def close(self) -> None:
        """Stops renewals and waiting; later calls raise :class:`ClosedError`. Holds are not
        released: their leases run out within one watchdog timeout."""
        self._native.close()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._native.closed

    def on_lost(self, callback: LostCallback) -> Callable[[], None]:
        """Calls ``callback(LostEvent)`` (on a library thread) whenever this client's watchdog
        loses any of its holds: locks of every kind and permits. An exception in the callback is
        logged, never propagated. Returns a function that unregisters it."""
        return _listen(self._native, callback, "client")

    def stats(self) -> Stats:
        """The client's figures since it connected, as a dict (times in float seconds): acquires
        (contended, timed out), releases, renewals and their failures, lost holds, pub/sub
        wake-ups, reconnects, wait and hold times (``count``, ``p50``, ``p99``, ...) and
        errors by kind. All zero with ``metrics=False``. Cheap: sends nothing to Redis."""
        stats: Stats = json.loads(self._native.stats_json())
        return stats

    def prometheus_text(self) -> str:
        """:meth:`stats` in the Prometheus text exposition format, for a service that already
        serves ``/metrics``: counters ``rlock_*_total`` and histograms ``rlock_wait_seconds`` and
        ``rlock_hold_seconds``, labelled ``app="<app_name>"`` when that option is set."""
        return self._native.prometheus_text()

    def tracked_holds(self) -> int:
        """Holds this client tracks (held, or lost and not yet released); for diagnostics."""
        return self._native.tracked_holds()

    def waited_channels(self) -> int:
        """Lock channels this client is subscribed to for waiters; for diagnostics."""
        return self._native.waited_channels()

    @property
    def topology(self) -> Literal["single", "cluster", "sentinel"]:
        """What the URL named: ``"single"``, ``"cluster"`` or ``"sentinel"``."""
        return self._native.topology

    @property
    def sharded_pubsub(self) -> bool:
        """Whether waiters use sharded pub/sub (SSUBSCRIBE), decided at connect."""
        return self._native.sharded_pubsub

    @property
    def replica_sync(self) -> bool:
        """Whether acquires wait for a replica, decided at connect."""
        return self._native.replica_sync

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def _task_owner(self) -> int:
        """The owner id of the current asyncio task, made on its first lock call."""
        task = asyncio.current_task()
        if task is None:
            raise RLockError("asyncio lock calls must run inside an asyncio task")
        with self._guard:
            owner = self._task_owners.get(task)
            if owner is None:
                owner = self._native.new_owner_id()
                self._task_owners[task] = owner
            return owner

    def _current_owner(self) -> Optional[int]:
        """The current task's owner inside a running asyncio task, else None (this thread)."""
        try:
            task = asyncio.current_task()
        except RuntimeError:
            return None
        return None if task is None else self._task_owner()


def _release_on_exit(release: Callable[[], object], exc_type: Optional[Type[BaseException]]) -> None:
    """Releases at the end of a ``with`` block. A lost hold (:class:`NotHeldError`) is loud, but
    never louder than the exception already on its way."""
    try:
        release()
    except NotHeldError:
        if exc_type is None:
            raise


async def _release_on_exit_async(
    release: Callable[[], Awaitable[object]], exc_type: Optional[Type[BaseException]]
) -> None:
    """:func:`_release_on_exit` for ``async with``."""
    try:
        await release()
    except NotHeldError:
        if exc_type is None:
            raise


def _wait_arg(blocking: bool, timeout: float) -> Optional[float]:
    """``threading``'s (blocking, timeout) as a wait in seconds: None forever, 0 try once."""
    if not blocking:
        if timeout != -1:
            raise InvalidArgumentError("can't specify a timeout for a non-blocking call")
        return 0.0
    if timeout == -1:
        return None
    if timeout < 0:
        raise InvalidArgumentError("timeout must be a non-negative number of seconds, or -1")
    return timeout


_H = TypeVar("_H", bound="_Holds")


class _Holds:
    """``with`` and ``async with`` for what holds a lock: the calling thread (or the current
    task) acquires on entry and releases on exit, where a lost hold is loud unless another
    exception is already on its way (:func:`_release_on_exit`)."""

    __slots__ = ()

    def acquire(self) -> Any:
        raise NotImplementedError

    def release(self) -> Any:
        raise NotImplementedError

    async def acquire_async(self) -> Any:
        raise NotImplementedError

    async def release_async(self) -> Any:
        raise NotImplementedError

    def __enter__(self: _H) -> _H:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        _release_on_exit(self.release, exc_type)

    async def __aenter__(self: _H) -> _H:
        await self.acquire_async()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await _release_on_exit_async(self.release_async, exc_type)


class Lock(_Holds):
    """A distributed reentrant lock with ``threading.RLock``'s interface, plus asyncio.

    ``with lock:`` holds it for the calling thread, ``async with lock:`` for the current task.
    Holds taken without a ``lease`` are renewed by the watchdog until released.
    """

    __slots__ = ("_client", "_native", "__weakref__")

    def __init__(self, client: Client, native: _native.Lock) -> None:
        self._client = client
        self._native = native

    @property
    def name(self) -> str:
        """The lock name (also its Redis key)."""
        return self._native.name

    def __repr__(self) -> str:
        kind = self._native.kind
        return f"<rlock.Lock {self.name!r}>" if kind == "lock" else f"<rlock.Lock {self.name!r} ({kind})>"

    @property
    def kind(self) -> Literal["lock", "fenced", "read", "write", "fair"]:
        """Which lock of the family: ``"lock"`` (reentrant), ``"fenced"``, ``"read"`` or
        ``"write"`` (the sides of a :class:`ReadWriteLock`), or ``"fair"``."""
        return self._native.kind

    def acquire(self, blocking: bool = True, timeout: float = -1, *, lease: Optional[float] = None) -> bool:
        """Acquires for the calling thread, as ``threading.RLock.acquire``: waits up to
        ``timeout`` seconds (-1: forever; ``blocking=False``: try once) and returns whether the
        lock was acquired. ``lease`` None keeps the hold alive with the watchdog; a number is a
        fixed lease in seconds after which the hold ends by itself."""
        return self._native.acquire(None, _wait_arg(blocking, timeout), lease) is not None

    def release(self) -> bool:
        """Releases one hold level of the calling thread; returns True when the lock became
        free, False when the thread still holds it (it had re-entered). Raises
        :class:`NotHeldError` when the thread does not hold the lock and :class:`LockLostError`
        when its hold was lost."""
        return self._native.release(None)

    async def acquire_async(self, timeout: Optional[float] = None, *, lease: Optional[float] = None) -> bool:
        """Acquires for the current asyncio task: waits up to ``timeout`` seconds (None:
        forever; 0: try once). Cancelling the call leaves no hold, renewal or subscription."""
        pending = await self._native.acquire_async(self._client._task_owner(), timeout, lease)
        # No await between the result and the claim, so a cancel cannot come in between; a result
        # the task never received (cancelled too late) is released when it is dropped unclaimed.
        return pending.claim()

    async def release_async(self) -> bool:
        """Releases one hold level of the current task; returns True when the lock became free
        (errors as :meth:`release`)."""
        return await self._native.release_async(self._client._task_owner())


    def locked(self) -> bool:
        """Whether anyone holds the lock."""
        return self._native.locked()

    def is_held(self) -> bool:
        """Whether the current owner holds it (the current asyncio task inside one, else the
        calling thread)."""
        return self._native.is_held(self._client._current_owner())

    def hold_count(self) -> int:
        """How many times the current owner holds it (0 when it does not)."""
        return self._native.hold_count(self._client._current_owner())

    def remaining_ttl(self) -> Optional[float]:
        """Seconds left on the lease; None when nobody holds the lock."""
        return self._native.remaining_ttl()

    def force_unlock(self) -> bool:
        """Deletes the lock whoever holds it; returns whether it was locked. The holder's
        watchdog reports the loss (``on_lost``) and its release raises :class:`LockLostError`."""
        return self._native.force_unlock()

    def is_lost(self) -> bool:
        """Whether the watchdog lost the current owner's hold (the current asyncio task inside
        one, else the calling thread), until it calls release."""
        return self._native.is_lost(self._client._current_owner())

    def on_lost(self, callback: LostCallback) -> Callable[[], None]:
        """Calls ``callback(LostEvent)`` (on a library thread) whenever the watchdog loses a hold
        of this lock made through this lock's client (core routes the events). An exception in
        the callback is logged, never propagated. Returns a function that unregisters it."""
        return _listen(self._native, callback, "lock")


class FencedLock(Lock):
    """A :class:`Lock` whose every acquire (re-entries included) takes a new fencing token from
    the counter ``redisson_lock_token:{name}``, which never expires. Pass the token to the
    storage you write to; it refuses tokens older than the newest it has seen.

    :meth:`acquire` and :meth:`acquire_async` return the token (None when the wait ran out);
    ``with lock as token:`` and ``async with lock as token:`` give it too. It comes in the
    acquire's own reply, never from a second read.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<rlock.FencedLock {self.name!r}>"

    @property
    def token(self) -> Optional[int]:
        """The current owner's latest token (the current asyncio task inside one, else the
        calling thread); None when it does not hold the lock."""
        return self._native.token(self._client._current_owner())

    def acquire(  # type: ignore[override]
        self, blocking: bool = True, timeout: float = -1, *, lease: Optional[float] = None
    ) -> Optional[int]:
        """Acquires as :meth:`Lock.acquire` and returns the new token (always true: tokens
        start at 1), or None when the wait ran out. The token comes in the acquire's own reply,
        so it is there even when the hold is lost right after."""
        return self._native.acquire(None, _wait_arg(blocking, timeout), lease)

    async def acquire_async(  # type: ignore[override]
        self, timeout: Optional[float] = None, *, lease: Optional[float] = None
    ) -> Optional[int]:
        """Acquires as :meth:`Lock.acquire_async` and returns the new token, or None when the
        wait ran out."""
        pending = await self._native.acquire_async(self._client._task_owner(), timeout, lease)
        return pending.claim_token()

    def __enter__(self) -> int:  # type: ignore[override]
        return self._token_of(self.acquire())

    async def __aenter__(self) -> int:  # type: ignore[override]
        return self._token_of(await self.acquire_async())

    def _token_of(self, token: Optional[int]) -> int:
        return _got_token(token, f"fenced lock {self.name!r}")


class ReadWriteLock:
    """Redisson's read-write lock: many readers, or one writer. Both sides are :class:`Lock` objects
    with the whole lock API. Holds are reentrant; the writer may also take read holds (a
    downgrade). A reader asking for the write lock gets :class:`WouldDeadlockError` at once
    (Redisson's waits forever); nothing changes in Redis."""

    __slots__ = ("_read", "_write")

    def __init__(self, read: Lock, write: Lock) -> None:
        self._read = read
        self._write = write

    @property
    def name(self) -> str:
        """The lock name (also its Redis key)."""
        return self._read.name

    def read_lock(self) -> Lock:
        """The read side: shared with other readers, excluded by another owner's write hold."""
        return self._read

    def write_lock(self) -> Lock:
        """The write side: excludes every other owner's reads and writes."""
        return self._write

    def __repr__(self) -> str:
        return f"<rlock.ReadWriteLock {self.name!r}>"


_N = TypeVar("_N", _native.Semaphore, _native.PermitExpirableSemaphore)


class _Permits(Generic[_N]):
    """What the semaphore and the permit-expirable semaphore share: the count of free permits
    in the key ``name`` (set, read, added to)."""

    __slots__ = ("_native",)
    _native: _N

    def __init__(self, native: _N) -> None:
        self._native = native

    @property
    def name(self) -> str:
        """The semaphore name (also the Redis key of its count of free permits)."""
        return self._native.name

    def try_set_permits(self, permits: int, ttl: Optional[float] = None) -> bool:
        """Sets the number of permits when the semaphore does not exist yet (expiring after
        ``ttl`` seconds when given); True when set, False when it existed (nothing changed)."""
        return self._native.try_set_permits(permits, ttl)

    def available_permits(self) -> int:
        """The free permits (0 when the semaphore does not exist; for the permit-expirable
        semaphore, after expired permits came back)."""
        return self._native.available_permits()

    def add_permits(self, n: int) -> int:
        """Adds ``n`` permits (negative removes them); returns the new count of free ones."""
        return self._native.add_permits(n)


class Semaphore(_Permits[_native.Semaphore]):
    """Redisson's semaphore with ``threading.Semaphore``'s interface, plus asyncio: permits are
    not owned (any thread or task may release them) and do not come back when a holder dies.
    ``with sem:`` and ``async with sem:`` take one permit."""

    __slots__ = ()

    def acquire(self, permits: int = 1, blocking: bool = True, timeout: float = -1) -> bool:
        """Takes ``permits`` (at least 1), waiting as ``threading.Semaphore.acquire`` does:
        ``blocking=False`` tries once, ``timeout`` bounds the wait in seconds (-1: forever).
        Returns whether they were taken; an interrupted wait (Ctrl-C) takes none."""
        return self._native.acquire(permits, _wait_arg(blocking, timeout))

    def release(self, permits: int = 1) -> int:
        """Gives back ``permits`` (at least 1) and wakes waiters; returns the new count."""
        return self._native.release(permits)

    async def acquire_async(self, permits: int = 1, timeout: Optional[float] = None) -> bool:
        """Takes ``permits`` for asyncio, waiting up to ``timeout`` seconds (None: forever; 0:
        try once). Cancelling the call takes no permit."""
        pending = await self._native.acquire_async(permits, timeout)
        return pending.claim()

    async def release_async(self, permits: int = 1) -> int:
        """Gives back ``permits``; returns the new count."""
        return await self._native.release_async(permits)

    def drain_permits(self) -> int:
        """Takes every available permit; returns how many there were."""
        return self._native.drain_permits()

    def __enter__(self) -> Semaphore:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.release()

    async def __aenter__(self) -> Semaphore:
        await self.acquire_async()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.release_async()

    def __repr__(self) -> str:
        return f"<rlock.Semaphore {self.name!r}>"


class PermitExpirableSemaphore(_Permits[_native.PermitExpirableSemaphore]):
    """Redisson's permit-expirable semaphore: each permit has an id (32 hex characters) that
    any thread, process or Java service may release, and a lease. Without a lease the watchdog
    renews the permit while this client lives, so a crashed holder's permit comes back within
    ``watchdog_timeout``; a permit the watchdog loses is reported to :meth:`on_lost`.
    ``with sem.permit() as permit_id:`` holds one permit for the block."""

    __slots__ = ()

    def acquire(self, blocking: bool = True, timeout: float = -1, *, lease: Optional[float] = None) -> Optional[str]:
        """Takes a permit and returns its id, waiting as ``threading.Semaphore.acquire`` does
        (``blocking=False`` tries once, ``timeout`` in seconds, -1: forever); None when the
        wait ran out. ``lease`` seconds: the permit expires then unless released or updated;
        None: the watchdog renews it until released. An interrupted wait (Ctrl-C) takes none."""
        return self._native.acquire(_wait_arg(blocking, timeout), lease)

    async def acquire_async(self, timeout: Optional[float] = None, *, lease: Optional[float] = None) -> Optional[str]:
        """Takes a permit for asyncio and returns its id, waiting up to ``timeout`` seconds
        (None: forever; 0: try once); None when the wait ran out. Cancelling takes none."""
        pending = await self._native.acquire_async(timeout, lease)
        return pending.claim_permit()

    def release(self, permit_id: str) -> None:
        """Releases the permit ``permit_id`` (taken by any client, Java's included) and wakes a
        waiter. Raises :class:`NotHeldError` when it is not held (unknown, released, expired)
        and :class:`LockLostError` when this client's watchdog had lost it."""
        self._native.release(permit_id)

    async def release_async(self, permit_id: str) -> None:
        """Like :meth:`release`, for asyncio (runs to the end even when cancelled)."""
        await self._native.release_async(permit_id)

    def update_lease(self, permit_id: str, lease: Optional[float]) -> None:
        """Makes the held permit expire ``lease`` seconds from now; None hands it to this
        client's watchdog. Raises :class:`NotHeldError` when it is not held."""
        self._native.update_lease(permit_id, lease)

    def acquired_permits(self) -> int:
        """The held permits (neither released nor expired)."""
        return self._native.acquired_permits()

    def is_lost(self, permit_id: str) -> bool:
        """Whether this client's watchdog lost the permit (until it is released)."""
        return self._native.is_lost(permit_id)

    def on_lost(self, callback: LostCallback) -> Callable[[], None]:
        """Calls ``callback(LostEvent)`` (on a library thread, ``kind`` ``"permit"`` and
        ``permit_id`` set) whenever this client's watchdog loses a permit of this semaphore. An
        exception in the callback is logged, never propagated. Returns a function that
        unregisters it."""
        return _listen(self._native, callback, "semaphore")

    def permit(self, timeout: Optional[float] = None, *, lease: Optional[float] = None) -> _PermitContext:
        """A context manager (``with`` or ``async with``) that holds one permit for its block
        and gives its id; it raises :class:`NotAcquiredError` when ``timeout`` seconds passed
        first (None: wait forever)."""
        return _PermitContext(self, timeout, lease)

    def __repr__(self) -> str:
        return f"<rlock.PermitExpirableSemaphore {self.name!r}>"


class _PermitContext:
    """One permit held for a ``with`` / ``async with`` block (see
    :meth:`PermitExpirableSemaphore.permit`)."""

    __slots__ = ("_sem", "_timeout", "_lease", "_id")

    def __init__(self, sem: PermitExpirableSemaphore, timeout: Optional[float], lease: Optional[float]) -> None:
        self._sem, self._timeout, self._lease = sem, timeout, lease
        self._id: Optional[str] = None

    def _got(self, permit_id: Optional[str]) -> str:
        if permit_id is None:
            raise NotAcquiredError(f"no permit of semaphore {self._sem.name!r} came free within {self._timeout} s")
        self._id = permit_id
        return permit_id

    def __enter__(self) -> str:
        timeout = -1 if self._timeout is None else self._timeout
        return self._got(self._sem.acquire(timeout=timeout, lease=self._lease))

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if self._id is not None:
            permit_id, self._id = self._id, None
            self._sem.release(permit_id)

    async def __aenter__(self) -> str:
        return self._got(await self._sem.acquire_async(self._timeout, lease=self._lease))

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if self._id is not None:
            permit_id, self._id = self._id, None
            await self._sem.release_async(permit_id)


class MultiLock(_Holds):
    """Several locks taken all-or-nothing (Redisson's ``RedissonMultiLock``): any mix of
    reentrant, fenced, fair, read and write locks, from one client or several (other servers
    included), under one wait. ``with multi:`` holds every member for the calling thread,
    ``async with multi:`` for the current task. Owners taking the same locks in different orders
    never deadlock. Release frees every member and names each one that failed."""

    __slots__ = ("_locks", "_native")

    def __init__(self, locks: Iterable[Lock]) -> None:
        self._locks = tuple(locks)
        self._native = _native.MultiLock([lock._native for lock in self._locks])

    @property
    def locks(self) -> "tuple[Lock, ...]":
        """The member locks, in the order they are taken."""
        return self._locks

    def _client(self) -> Client:
        return self._locks[0]._client

    def acquire(self, blocking: bool = True, timeout: float = -1, *, lease: Optional[float] = None) -> bool:
        """Takes every member for the calling thread, waiting as :meth:`Lock.acquire` does;
        returns whether it did (when not, no member is held). ``lease`` as :meth:`Lock.acquire`,
        for each member."""
        return self._native.acquire(None, _wait_arg(blocking, timeout), lease)

    def release(self) -> None:
        """Releases every member held by the calling thread. When some fail the others are
        released all the same, and the error (the first failure's class) names each one."""
        self._native.release(None)

    async def acquire_async(self, timeout: Optional[float] = None, *, lease: Optional[float] = None) -> bool:
        """Takes every member for the current asyncio task (``timeout`` None: forever; 0: one
        round). Cancelling the call leaves no member held."""
        pending = await self._native.acquire_async(self._client()._task_owner(), timeout, lease)
        return pending.claim()

    async def release_async(self) -> None:
        """Releases every member held by the current task (errors as :meth:`release`)."""
        await self._native.release_async(self._client()._task_owner())

    def is_held(self) -> bool:
        """Whether the current owner (task or thread) holds every member."""
        return self._native.is_held(self._client()._current_owner())


    def __repr__(self) -> str:
        return f"<rlock.MultiLock {[lock.name for lock in self._locks]!r}>"


def multi_lock(locks: Iterable[Lock]) -> MultiLock:
    """A :class:`MultiLock` over ``locks`` (at least one), taken in this order."""
    return MultiLock(locks)


class RedLock(_Holds):
    """One lock name held by a majority of N independent servers (Redisson's
    ``RedissonRedLock``; antirez's algorithm), so it survives the loss of a minority of them.
    Each server stores an ordinary lock in Redisson's layout. ``with lock:`` holds it for the
    calling thread, ``async with lock:`` for the current task; holds taken without a ``lease``
    are renewed by each server's watchdog, and the holder is told (:meth:`on_lost`) as soon as
    fewer than a majority are left."""

    __slots__ = ("_clients", "_native", "__weakref__")

    def __init__(self, name: str, clients: Iterable[Client], *, _fenced: bool = False) -> None:
        self._clients = tuple(clients)
        self._native = _native.RedLock(name, [c._native for c in self._clients], _fenced)

    @property
    def name(self) -> str:
        """The lock name (the key on every server)."""
        return self._native.name

    @property
    def clients(self) -> "tuple[Client, ...]":
        """The clients, one per server."""
        return self._clients

    @property
    def quorum(self) -> int:
        """How many servers make a majority."""
        return self._native.quorum

    def _client(self) -> Client:
        return self._clients[0]

    def acquire(self, blocking: bool = True, timeout: float = -1, *, lease: Optional[float] = None) -> bool:
        """Takes the lock on a majority for the calling thread, waiting as :meth:`Lock.acquire`
        does; returns whether it did (when not, nothing is held). Raises
        :class:`ConnectionError` or :class:`TimeoutError` when more than a minority of the
        servers failed. ``lease`` as :meth:`Lock.acquire`, on each server."""
        return self._native.acquire(None, _wait_arg(blocking, timeout), lease) is not None

    def release(self) -> bool:
        """Releases the calling thread's holds on every server; True when the lock became free
        (False: it had re-entered). Raises :class:`LockLostError` when fewer than a majority
        were still held, :class:`NotHeldError` when it holds none."""
        return self._native.release(None)

    async def acquire_async(self, timeout: Optional[float] = None, *, lease: Optional[float] = None) -> bool:
        """Takes the lock for the current asyncio task (``timeout`` None: forever; 0: one
        round). Cancelling the call leaves nothing held."""
        pending = await self._native.acquire_async(self._client()._task_owner(), timeout, lease)
        return pending.claim()

    async def release_async(self) -> bool:
        """Releases the current task's holds (as :meth:`release`)."""
        return await self._native.release_async(self._client()._task_owner())

    def is_held(self) -> bool:
        """Whether the current owner (task or thread) holds it on a majority of the servers."""
        return self._native.is_held(self._client()._current_owner())

    def is_lost(self) -> bool:
        """Whether the current owner's hold was lost (fewer than a majority left), until it
        calls release."""
        return self._native.is_lost(self._client()._current_owner())

    def on_lost(self, callback: LostCallback) -> Callable[[], None]:
        """Calls ``callback(LostEvent)`` (kind ``"red_lock"``, on a library thread) when a hold
        of this lock is left with fewer than a majority of its servers. Returns a function that
        unregisters it."""
        return _listen(self._native, callback, "RedLock")


    def __repr__(self) -> str:
        return f"<rlock.{type(self).__name__} {self.name!r} on {len(self._clients)} servers>"


class FencedRedLock(RedLock):
    """A :class:`RedLock` whose every acquire hands out a fencing token that strictly increases
    across successful acquires, whichever majority granted them (each server's counter
    ``redisson_lock_token:{name}`` is a quorum register: read from a majority, raised on a
    majority, then handed out). :meth:`acquire` returns it; ``with lock as token:`` gives it."""

    __slots__ = ()

    def __init__(self, name: str, clients: Iterable[Client]) -> None:
        super().__init__(name, clients, _fenced=True)

    @property
    def token(self) -> Optional[int]:
        """The current owner's latest token while it holds the lock; None otherwise."""
        return self._native.token(self._client()._current_owner())

    def acquire(  # type: ignore[override]
        self, blocking: bool = True, timeout: float = -1, *, lease: Optional[float] = None
    ) -> Optional[int]:
        """Acquires as :meth:`RedLock.acquire` and returns the new token, or None when the wait
        ran out."""
        return self._native.acquire(None, _wait_arg(blocking, timeout), lease)

    async def acquire_async(  # type: ignore[override]
        self, timeout: Optional[float] = None, *, lease: Optional[float] = None
    ) -> Optional[int]:
        """Acquires as :meth:`RedLock.acquire_async` and returns the new token, or None."""
        pending = await self._native.acquire_async(self._client()._task_owner(), timeout, lease)
        return pending.claim_token()

    def __enter__(self) -> int:  # type: ignore[override]
        return _got_token(self.acquire(), f"fenced RedLock {self.name!r}")

    async def __aenter__(self) -> int:  # type: ignore[override]
        return _got_token(await self.acquire_async(), f"fenced RedLock {self.name!r}")


def _got_token(token: Optional[int], what: str) -> int:
    if token is None:  # a wait without a bound ends only with a token
        raise NotAcquiredError(f"{what} was not acquired")
    return token


def red_lock(name: str, clients: Iterable[Client]) -> RedLock:
    """A :class:`RedLock` on ``name`` over ``clients`` (an odd number, at least 3, each on its
    own independent server)."""
    return RedLock(name, clients)


def fenced_red_lock(name: str, clients: Iterable[Client]) -> FencedRedLock:
    """A :class:`FencedRedLock` on ``name`` over ``clients`` (as :func:`red_lock`)."""
    return FencedRedLock(name, clients)


_default_guard = threading.Lock()
_default: Optional[Client] = None
# Clients inherited over a fork: kept referenced, since they cannot be used or torn down there.
_inherited: List[Client] = []


def configure(url: Optional[str] = None, **options: Unpack[ClientOptions]) -> Client:
    """Replaces the default client used by :func:`lock` (closing the previous one) and
    returns it. Takes the arguments of :class:`Client`."""
    global _default
    new = Client(url, **options)
    with _default_guard:
        old, _default = _default, new
    if old is not None:
        old.close()
    return new


def _default_client() -> Client:
    global _default
    with _default_guard:
        if _default is None:
            _default = Client()
        return _default


def lock(name: str) -> Lock:
    """The lock ``name`` on the default client, made on first use (see :func:`configure`)."""
    return _default_client().lock(name)


def fenced_lock(name: str) -> FencedLock:
    """The fenced lock ``name`` on the default client, made on first use (see :func:`configure`)."""
    return _default_client().fenced_lock(name)


def read_write_lock(name: str) -> ReadWriteLock:
    """The read-write lock ``name`` on the default client, made on first use (see :func:`configure`)."""
    return _default_client().read_write_lock(name)


def semaphore(name: str) -> Semaphore:
    """The semaphore ``name`` on the default client, made on first use (see :func:`configure`)."""
    return _default_client().semaphore(name)


def permit_expirable_semaphore(name: str) -> PermitExpirableSemaphore:
    """The permit-expirable semaphore ``name`` on the default client, made on first use (see
    :func:`configure`)."""
    return _default_client().permit_expirable_semaphore(name)
def count_down_latch(name: str) -> CountDownLatch:
    """The count-down latch ``name`` on the default client, made on first use (see :func:`configure`)."""
    return _default_client().count_down_latch(name)


def fair_lock(name: str) -> Lock:
    """The fair lock ``name`` on the default client, made on first use (see :func:`configure`)."""
    return _default_client().fair_lock(name)


def _after_fork_in_child() -> None:
    # The default client belongs to the parent; the child makes its own on first use.
    global _default
    if _default is not None:
        _inherited.append(_default)
        _default = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
