"""The shape of :meth:`rlock.Client.stats`: core's ``Stats`` as a dict (times in float seconds).
A test checks these keys against what core returns."""

from __future__ import annotations

from typing import Dict, Optional

from ._typing import TypedDict

__all__ = ["Stats", "StatsSummary"]


# BEGIN GENERATED records (make generated)
class StatsSummary(TypedDict):
    """A summary of one histogram of durations."""

    count: int
    """How many durations were recorded."""
    sum: float
    """Their sum."""
    p50: float
    """The median: the upper bound of its bucket (at most 25% over), never above the maximum."""
    p99: float
    """The 99th percentile, as the median."""
    max: float
    """The largest."""


class Stats(TypedDict):
    """A client's figures since it connected (all zero with the ``metrics`` option off): what
    ``stats()`` returns on every surface."""

    acquires: int
    """Acquires that succeeded (locks of every kind, semaphore and permit acquires; each re-entry
    counts)."""
    contended_acquires: int
    """Of those, the ones that found the lock (or permits) taken at first and waited."""
    acquire_timeouts: int
    """Acquires whose wait ran out."""
    releases: int
    """Final releases of locks and permits, and semaphore releases."""
    renewals: int
    """Holds the watchdog renewed (one per hold per renewal)."""
    renewal_failures: int
    """Holds whose renewal failed (Redis erroring or unreachable; retried while the lease lasts)."""
    lost_holds: int
    """Holds the watchdog lost (found gone, or not renewed within the lease)."""
    wakeups: int
    """Waiters woken by a pub/sub message (not by a timeout)."""
    reconnects: int
    """Times the connection to Redis dropped, or was replaced (a Sentinel failover, a rebuilt
    cluster connection)."""
    wait: StatsSummary
    """How long successful acquires waited (uncontended ones included)."""
    hold: StatsSummary
    """How long holds lasted, from acquire to final release."""
    errors: Dict[str, int]
    """Errors returned by acquires, releases and other calls that reached Redis, by kind
    (``"timeout"``, ``"not_held"``, ...); every kind is present."""
    eviction_policy: Optional[str]
    """The server's ``maxmemory-policy`` when it may evict keys under memory pressure (anything
    but ``noeviction``: a held lock's key can then be evicted, and another owner takes the lock),
    as read with ``CONFIG GET`` at connect (on a cluster, slot 0's master's); ``None`` for
    ``noeviction``, or where ``CONFIG`` is refused. Set whether or not ``metrics`` is on."""
# END GENERATED
