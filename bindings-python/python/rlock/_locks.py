"""The locks: the reentrant lock and its family (fenced, fair, read-write), the multi-lock and
RedLock, with what they share: ``with``/``async with``, threading-style waits and owners (the
calling thread, or the current asyncio task)."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Awaitable, Callable, Iterable, Literal, Optional, Protocol, Type, TypeVar

from ._errors import InvalidArgumentError, NotHeldError
from ._lost import LostCallback, _listen
from ._native import Lock as NativeLock
from ._native import MultiLock as NativeMultiLock
from ._native import PendingAcquire
from ._owners import Owners



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


_T = TypeVar("_T")


def _answered(value: Optional[_T]) -> _T:
    """What an acquire that must end with a hold answered: a wait without a time limit, or one
    whose native call raises core's NotAcquiredError when it runs out. None would be a bug."""
    if value is None:
        raise RuntimeError("rlock: an acquire answered neither a hold nor an error")
    return value


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


class _NativeHolder(Protocol):
    """What the native lock, multi-lock and RedLock share: acquires and queries by owner id
    (None: the calling thread)."""

    def acquire(
        self, owner: Optional[int] = None, timeout: Optional[float] = None, lease: Optional[float] = None
    ) -> object: ...
    def acquire_async(
        self, owner: int, timeout: Optional[float] = None, lease: Optional[float] = None
    ) -> Awaitable[PendingAcquire]: ...
    def is_held(self, owner: Optional[int] = None) -> bool: ...


class _Owned(_Holds):
    """What holds belong to an owner: the calling thread for sync calls, the current asyncio
    task for async ones (its client makes the task owners)."""

    __slots__ = ()
    _owners: Owners
    _native: _NativeHolder

    async def acquire_async(self, timeout: Optional[float] = None, *, lease: Optional[float] = None) -> bool:
        """Acquires for the current asyncio task: waits up to ``timeout`` seconds (None:
        forever; 0: try once, or one round). Cancelling the call leaves nothing held, renewed
        or subscribed."""
        pending = await self._native.acquire_async(self._owners.task(), timeout, lease)
        # No await between the result and the claim, so a cancel cannot come in between; a result
        # the task never received (cancelled too late) is released when it is dropped unclaimed.
        return pending.claim()

    def is_held(self) -> bool:
        """Whether the current owner holds it (the current asyncio task inside one, else the
        calling thread); a multi-lock: every member; a RedLock: on a majority of its servers."""
        return self._native.is_held(self._owners.current())


class _NativeLock(_NativeHolder, Protocol):
    @property
    def name(self) -> str: ...
    def acquire(
        self, owner: Optional[int] = None, timeout: Optional[float] = None, lease: Optional[float] = None
    ) -> Optional[int]: ...
    def release(self, owner: Optional[int] = None) -> bool: ...
    def release_async(self, owner: int) -> Awaitable[bool]: ...
    def is_lost(self, owner: Optional[int] = None) -> bool: ...
    def valid_for(self, owner: Optional[int] = None) -> float: ...
    def token(self, owner: Optional[int] = None) -> Optional[int]: ...
    def on_lost(self, callback: Callable[[str, str, str, str, Optional[str]], object]) -> int: ...
    def remove_lost_listener(self, id: int) -> bool: ...


class _Reentrant(_Owned):
    """What the lock and RedLock share: reentrant holds that the watchdog renews, and the
    lost-hold pair."""

    __slots__ = ()
    _native: _NativeLock
    #: How lost-hold callbacks that raise are named in the log.
    _what = "lock"

    @property
    def name(self) -> str:
        """The lock name (also its Redis key; on every server, for a RedLock)."""
        return self._native.name

    def acquire(self, blocking: bool = True, timeout: float = -1, *, lease: Optional[float] = None) -> bool:
        """Acquires for the calling thread, as ``threading.RLock.acquire``: waits up to
        ``timeout`` seconds (-1: forever; ``blocking=False``: try once) and returns whether the
        lock was acquired. ``lease`` None keeps the hold alive with the watchdog; a number is a
        fixed lease in seconds after which the hold ends by itself."""
        return self._native.acquire(None, _wait_arg(blocking, timeout), lease) is not None

    def release(self) -> bool:
        """Releases one hold level of the calling thread; returns True when the lock became
        free, False when the thread still holds it (it had re-entered), or when only levels of
        acquires whose reply was lost are left (nobody holds those: they are not renewed and end
        with their lease). Raises
        :class:`NotHeldError` when the thread does not hold the lock and :class:`LockLostError`
        when its hold was lost."""
        return self._native.release(None)

    async def release_async(self) -> bool:
        """Releases one hold level of the current task; returns True when the lock became free
        (errors as :meth:`release`)."""
        return await self._native.release_async(self._owners.task())

    def is_lost(self) -> bool:
        """Whether the current owner's hold was lost (the current asyncio task inside one, else
        the calling thread), until it calls release."""
        return self._native.is_lost(self._owners.current())

    def valid_for(self) -> float:
        """How long, in seconds, local time still proves the current owner's hold: until the
        send of its last confirmed renewal (or its acquire), plus the lease, minus the
        lease-doubt margin (for a RedLock, on a majority of its servers). 0.0 when it does not
        hold it, or the hold is lost or in doubt (which marks it lost at once). Check it before
        each write when the storage takes no fencing token. Sends nothing."""
        return self._native.valid_for(self._owners.current())

    def on_lost(self, callback: LostCallback) -> Callable[[], None]:
        """Calls ``callback(LostEvent)`` (on a library thread) whenever a hold of this lock made
        through this lock's client is lost (core routes the events). An exception in the
        callback is logged, never propagated. Returns a function that unregisters it."""
        return _listen(self._native, callback, self._what)


class _Fenced(_Reentrant):
    """Fencing tokens: every acquire returns a new token, larger than any before for the name;
    ``with lock as token:`` and ``async with lock as token:`` give it too."""

    __slots__ = ()

    @property
    def token(self) -> Optional[int]:
        """The current owner's latest token (the current asyncio task inside one, else the
        calling thread); None when it does not hold the lock."""
        return self._native.token(self._owners.current())

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
        pending = await self._native.acquire_async(self._owners.task(), timeout, lease)
        return pending.claim_token()

    def __enter__(self) -> int:  # type: ignore[override]
        return _answered(self.acquire())

    async def __aenter__(self) -> int:  # type: ignore[override]
        return _answered(await self.acquire_async())


class Lock(_Reentrant):
    """A distributed reentrant lock with ``threading.RLock``'s interface, plus asyncio.

    ``with lock:`` holds it for the calling thread, ``async with lock:`` for the current task.
    Holds taken without a ``lease`` are renewed by the watchdog until released.
    """

    __slots__ = ("_owners", "_native", "__weakref__")
    _native: NativeLock

    def __init__(self, owners: Owners, native: NativeLock) -> None:
        self._owners = owners
        self._native = native

    def __repr__(self) -> str:
        kind = self._native.kind
        return f"<rlock.Lock {self.name!r}>" if kind == "lock" else f"<rlock.Lock {self.name!r} ({kind})>"

    @property
    def kind(
        self,
    ) -> Literal["lock", "fenced", "read", "write", "fair", "spin", "non_reentrant", "non_reentrant_fair"]:
        """Which lock of the family: ``"lock"`` (reentrant), ``"fenced"``, ``"read"`` or
        ``"write"`` (the sides of a :class:`ReadWriteLock`), ``"fair"``, ``"spin"``,
        ``"non_reentrant"`` or ``"non_reentrant_fair"``."""
        return self._native.kind

    def locked(self) -> bool:
        """Whether anyone holds the lock."""
        return self._native.locked()

    def hold_count(self) -> int:
        """How many times the current owner holds it (0 when it does not)."""
        return self._native.hold_count(self._owners.current())

    def remaining_ttl(self) -> Optional[float]:
        """Seconds left on the lease; None when nobody holds the lock."""
        return self._native.remaining_ttl()

    def force_unlock(self) -> bool:
        """Deletes the lock whoever holds it; returns whether it was locked. The holder's
        watchdog reports the loss (``on_lost``) and its release raises :class:`LockLostError`."""
        return self._native.force_unlock()


class FencedLock(_Fenced, Lock):
    """A :class:`Lock` whose every acquire (re-entries included) takes a new fencing token from
    the counter ``redisson_lock_token:{name}``, which never expires. Pass the token to the
    storage you write to; it refuses tokens older than the newest it has seen.

    :meth:`acquire` and :meth:`acquire_async` return the token (None when the wait ran out);
    ``with lock as token:`` and ``async with lock as token:`` give it too. It comes in the
    acquire's own reply, never from a second read.
    """

    __slots__ = ()
    _what = "fenced lock"

    def __repr__(self) -> str:
        return f"<rlock.FencedLock {self.name!r}>"


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


class MultiLock(_Owned):
    """Several locks taken all-or-nothing (Redisson's ``RedissonMultiLock``): any mix of
    reentrant, fenced, fair, read and write locks, from one client or several (other servers
    included), under one wait. ``with multi:`` holds every member for the calling thread,
    ``async with multi:`` for the current task. Owners taking the same locks in different orders
    never deadlock. Release frees every member and names each one that failed."""

    __slots__ = ("_locks", "_owners", "_native")
    _native: NativeMultiLock

    def __init__(self, locks: Iterable[Lock]) -> None:
        self._locks = tuple(locks)
        self._native = NativeMultiLock([lock._native for lock in self._locks])
        self._owners = self._locks[0]._owners

    @property
    def locks(self) -> "tuple[Lock, ...]":
        """The member locks, in the order they are taken."""
        return self._locks

    def acquire(self, blocking: bool = True, timeout: float = -1, *, lease: Optional[float] = None) -> bool:
        """Takes every member for the calling thread, waiting as :meth:`Lock.acquire` does;
        returns whether it did (when not, no member is held). ``lease`` as :meth:`Lock.acquire`,
        for each member."""
        return self._native.acquire(None, _wait_arg(blocking, timeout), lease)

    def release(self) -> None:
        """Releases every member held by the calling thread. When some fail the others are
        released all the same, and the error (the first failure's class) names each one."""
        self._native.release(None)

    async def release_async(self) -> None:
        """Releases every member held by the current task (errors as :meth:`release`)."""
        await self._native.release_async(self._owners.task())

    def __repr__(self) -> str:
        return f"<rlock.MultiLock {[lock.name for lock in self._locks]!r}>"
