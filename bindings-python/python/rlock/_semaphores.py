"""The semaphores: Redisson's semaphore (counted permits, not owned) and its
permit-expirable semaphore (permits with ids and leases, renewed by the watchdog)."""

from __future__ import annotations

from types import TracebackType
from typing import Callable, Generic, Optional, Type, TypeVar

from . import _native
from ._errors import NotAcquiredError
from ._locks import _answered, _wait_arg
from ._lost import LostCallback, _listen


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
        try:
            return self._native.acquire(_wait_arg(blocking, timeout), lease)
        except NotAcquiredError:
            return None

    async def acquire_async(self, timeout: Optional[float] = None, *, lease: Optional[float] = None) -> Optional[str]:
        """Takes a permit for asyncio and returns its id, waiting up to ``timeout`` seconds
        (None: forever; 0: try once); None when the wait ran out. Cancelling takes none."""
        try:
            pending = await self._native.acquire_async(timeout, lease)
        except NotAcquiredError:
            return None
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

    def valid_for(self, permit_id: str) -> float:
        """How long, in seconds, local time still proves the permit (see
        :meth:`Lock.valid_for`): 0.0 for one this client does not hold, a lost permit, or one in
        doubt. Sends nothing."""
        return self._native.valid_for(permit_id)

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

    # The native acquire raises core's NotAcquiredError ("a permit of semaphore 'NAME' was not
    # acquired within N ms", as C and Node say it) when the wait runs out.
    def _got(self, permit_id: Optional[str]) -> str:
        self._id = _answered(permit_id)
        return self._id

    def __enter__(self) -> str:
        return self._got(self._sem._native.acquire(self._timeout, self._lease))

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
        pending = await self._sem._native.acquire_async(self._timeout, self._lease)
        return self._got(pending.claim_permit())

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if self._id is not None:
            permit_id, self._id = self._id, None
            await self._sem.release_async(permit_id)
