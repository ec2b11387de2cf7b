"""rlock: distributed reentrant locks on Redis, stored exactly as Redisson stores them.

>>> import rlock
>>> with rlock.lock("orders"):        # doctest: +SKIP
...     ...                           # one holder at a time, across processes and machines

Sync calls belong to the calling thread (the same thread re-enters, another thread contends);
``async`` calls belong to the current asyncio task. All lock logic lives in the Rust core; this
module only adds Python sugar (context managers, threading-style arguments, task owners).
"""

from __future__ import annotations

import os
import threading
from typing import Iterable, List, Optional

from ._typing import Unpack

# BEGIN GENERATED imports (make generated)
from ._errors import (
    ClosedError,
    ConnectionError,
    ForkedError,
    InvalidArgumentError,
    LockLostError,
    NotAcquiredError,
    NotHeldError,
    RLockError,
    RedisError,
    TimeoutError,
    WouldDeadlockError,
)
# END GENERATED
from ._client import Client
from ._describe import ClientRecord, Description, HeldPermit, Holder, Kind, Listed, QueuedWaiter
from ._locks import FencedLock, Lock, MultiLock, ReadWriteLock
from ._lost import LostEvent
from ._options import ClientOptions
from ._red_lock import FencedRedLock, RedLock
from ._semaphores import PermitExpirableSemaphore, Semaphore
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
    "spin_lock",
    "non_reentrant_lock",
    "non_reentrant_fair_lock",
    "semaphore",
    "permit_expirable_semaphore",
    "multi_lock",
    "red_lock",
    "fenced_red_lock",
    "RedLock",
    "FencedRedLock",
    "count_down_latch",
    "configure",
    # BEGIN GENERATED exports (make generated)
    "RLockError",
    "NotAcquiredError",
    "NotHeldError",
    "LockLostError",
    "InvalidArgumentError",
    "ConnectionError",
    "TimeoutError",
    "RedisError",
    "ClosedError",
    "ForkedError",
    "WouldDeadlockError",
    # END GENERATED
]


def multi_lock(locks: Iterable[Lock]) -> MultiLock:
    """A :class:`MultiLock` over ``locks`` (at least one), taken in this order."""
    return MultiLock(locks)


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


def spin_lock(name: str) -> Lock:
    """The spin lock ``name`` on the default client, made on first use (see :func:`configure`)."""
    return _default_client().spin_lock(name)


def non_reentrant_lock(name: str) -> Lock:
    """The non-reentrant lock ``name`` on the default client, made on first use (see
    :func:`configure`)."""
    return _default_client().non_reentrant_lock(name)


def non_reentrant_fair_lock(name: str) -> Lock:
    """The non-reentrant fair lock ``name`` on the default client, made on first use (see
    :func:`configure`)."""
    return _default_client().non_reentrant_fair_lock(name)


def _after_fork_in_child() -> None:
    # The default client belongs to the parent; the child makes its own on first use.
    global _default
    if _default is not None:
        _inherited.append(_default)
        _default = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

# Shown as rlock.Lock, rlock.NotHeldError: where users import them from.
for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", None) in (
        "rlock._errors", "rlock._client", "rlock._locks", "rlock._lost", "rlock._red_lock", "rlock._semaphores"
    ):
        _obj.__module__ = "rlock"
