"""The client: one connection to Redis (a single server, a Cluster or a Sentinel-managed
master) that makes every primitive, and the owners of its asyncio tasks."""

from __future__ import annotations

import json
from types import TracebackType
from typing import Callable, List, Literal, Optional, Type, cast

from . import _native
from ._describe import Description, Listed
from ._locks import FencedLock, Lock, ReadWriteLock
from ._logging import forward as _forward_logs
from ._lost import LostCallback, _listen
from ._native import CountDownLatch
from ._options import ClientOptions
from ._owners import Owners
from ._semaphores import PermitExpirableSemaphore, Semaphore
from ._stats import Stats
from ._typing import Unpack


class Client:
    """A connection to Redis that makes locks; also a context manager that closes it.

    ``url`` None means the ``REDIS_URL`` environment variable, else ``redis://127.0.0.1:6379``.
    Also ``redis+cluster://host1:port1,host2:port2/`` (a Redis Cluster),
    ``redis+sentinel://host1:port1,host2:port2/service_name[/db]`` (a master found and followed
    through Sentinels) and ``rediss...`` for TLS. The keyword options are those of
    :class:`ClientOptions` (seconds as floats), e.g. ``watchdog_timeout=10.0``.
    """

    def __init__(self, url: Optional[str] = None, **options: Unpack[ClientOptions]) -> None:
        _forward_logs()  # core's warnings (of this connect too) to `logging`
        self._native = _native.Client(url, **options)
        self._owners = Owners(self._native)

    def lock(self, name: str) -> Lock:
        """A handle on the lock ``name`` (also its Redis key). Cheap; make as many as you like."""
        return Lock(self._owners, self._native.lock(name))

    def fenced_lock(self, name: str) -> FencedLock:
        """A handle on the fenced lock ``name`` (Redisson's ``RFencedLock``): a :class:`Lock`
        whose every acquire takes a fencing token, strictly larger than any before for that
        name (see :attr:`FencedLock.token`)."""
        return FencedLock(self._owners, self._native.fenced_lock(name))

    def read_write_lock(self, name: str) -> ReadWriteLock:
        """A handle on the read-write lock ``name`` (Redisson's ``RReadWriteLock``): many readers
        (:meth:`ReadWriteLock.read_lock`) or one writer (:meth:`ReadWriteLock.write_lock`)."""
        read, write = self._native.read_write_lock(name)
        return ReadWriteLock(Lock(self._owners, read), Lock(self._owners, write))

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
        return Lock(self._owners, self._native.fair_lock(name))

    def spin_lock(self, name: str) -> Lock:
        """A handle on the spin lock ``name`` (Redisson's ``RSpinLock``): a :class:`Lock` on the
        reentrant lock's hash whose releases publish nothing and whose waiters poll with
        exponential back-off up to ``poll_interval`` (with jitter), so a waiter gets a released
        lock at most ``poll_interval`` plus a round trip later. For endpoints without pub/sub,
        and for clients that should hold no subscription."""
        return Lock(self._owners, self._native.spin_lock(name))

    def non_reentrant_lock(self, name: str) -> Lock:
        """A handle on the non-reentrant lock ``name`` (Redisson 4.4's ``getNonReentrantLock``):
        a :class:`Lock` on the reentrant lock's hash, but an owner (thread or task) that holds it
        and acquires it again gets :class:`WouldDeadlockError` at once, with nothing changed in
        Redis, where :meth:`lock` would count a second hold. As :class:`threading.Lock` is to
        :class:`threading.RLock`, except that the re-entry fails instead of hanging."""
        return Lock(self._owners, self._native.non_reentrant_lock(name))

    def non_reentrant_fair_lock(self, name: str) -> Lock:
        """A handle on the non-reentrant fair lock ``name`` (Redisson 4.4's
        ``getNonReentrantFairLock``): granted in arrival order as :meth:`fair_lock`'s, with a
        re-entry refused as :meth:`non_reentrant_lock`'s is."""
        return Lock(self._owners, self._native.non_reentrant_fair_lock(name))

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
        errors by kind (all zero with ``metrics=False``), and ``eviction_policy``: the server's
        ``maxmemory-policy`` when it may evict a held lock's key. Cheap: sends nothing to Redis."""
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
