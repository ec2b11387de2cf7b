"""The exception tree of rlock.

Every error the library raises is an :class:`RLockError`; most also subclass the builtin that
code written for the standard library already catches (``RuntimeError`` for releasing a lock
one does not hold, like ``threading.RLock``; ``ValueError`` for bad arguments; the builtin
``ConnectionError`` and ``TimeoutError``). The native module raises these classes by name.

Each class has ``code``, the error's code as C and Node spell it (``"RLOCK_NOT_HELD"``), so code
that handles errors from several surfaces can compare one string.
"""

from __future__ import annotations

import builtins

__all__ = [
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


class RLockError(Exception):
    """Base class of every rlock error."""

    #: The error's code as C and Node spell it (``"RLOCK_NOT_HELD"``); ``"RLOCK_ERROR"`` here,
    #: for an error of no more specific kind.
    code: str = "RLOCK_ERROR"


class NotHeldError(RLockError, RuntimeError):
    """Release by an owner that does not hold the lock (never acquired, or its lease ran out)."""

    code = "RLOCK_NOT_HELD"


class LockLostError(NotHeldError):
    """Release of a hold the watchdog had lost (expired, force-unlocked, or Redis unreachable)."""

    code = "RLOCK_LOST"


class ConnectionError(RLockError, builtins.ConnectionError):  # noqa: A001 - mirrors the builtin
    """Redis could not be reached, or the connection broke."""

    code = "RLOCK_CONNECTION"


class TimeoutError(RLockError, builtins.TimeoutError):  # noqa: A001 - mirrors the builtin
    """Redis did not answer within the command timeout (not an acquire running out of wait:
    that returns False, as in ``threading``)."""

    code = "RLOCK_TIMEOUT"


class InvalidArgumentError(RLockError, ValueError):
    """An unusable argument (empty name, negative lease, bad URL); nothing was sent to Redis."""

    code = "RLOCK_INVALID_ARGUMENT"


class RedisError(RLockError):
    """Redis answered with an error, e.g. WRONGTYPE when the lock name holds another kind of key."""

    code = "RLOCK_REDIS"


class ClosedError(RLockError):
    """The client was closed."""

    code = "RLOCK_CLOSED"


class NotAcquiredError(RLockError, builtins.TimeoutError):
    """The wait for a lock ran out while another owner held it (raised where an acquire cannot
    return False, e.g. a context manager given a timeout)."""

    code = "RLOCK_NOT_ACQUIRED"


class ForkedError(RLockError):
    """The client was created in another process and cannot be used after ``os.fork()``;
    create a new client in the child."""

    code = "RLOCK_FORKED"


class WouldDeadlockError(RLockError, RuntimeError):
    """The acquire would wait forever on a hold of the same owner: a reader of a read-write
    lock asked for its write lock (an upgrade), or the holder of a non-reentrant lock acquired it
    again. Nothing changed; release the read holds (the lock) first."""

    code = "RLOCK_WOULD_DEADLOCK"
