"""The shape of :meth:`rlock.Client.stats`: core's ``Stats`` as a dict (times in float seconds).
A test checks these keys against what core returns."""

from __future__ import annotations

from typing import Dict, Optional

from ._typing import TypedDict

__all__ = ["Stats", "StatsSummary"]


class StatsSummary(TypedDict):
    """One histogram of durations, summarized; every time in float seconds."""

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
    """A client's figures since it connected (all zero with ``metrics=False``)."""

    acquires: int
    """Acquires that succeeded (every lock kind, semaphore and permit acquires; re-entries too)."""
    contended_acquires: int
    """Of those, the ones that found the lock or permits taken and waited."""
    acquire_timeouts: int
    """Acquires whose wait ran out."""
    releases: int
    """Final releases of locks and permits, and semaphore releases."""
    renewals: int
    """Holds the watchdog renewed (one per hold per renewal)."""
    renewal_failures: int
    """Hold renewals that failed (retried while the lease lasts)."""
    lost_holds: int
    """Holds the watchdog lost."""
    wakeups: int
    """Waiters woken by a pub/sub message."""
    reconnects: int
    """Times the connection to Redis dropped or was replaced (failover, cluster reconnect)."""
    wait: StatsSummary
    """How long successful acquires waited."""
    hold: StatsSummary
    """How long holds lasted, acquire to final release."""
    errors: Dict[str, int]
    """Errors returned by acquires and releases, by kind (``"timeout"``, ``"not_held"``, ...)."""
    eviction_policy: Optional[str]
    """The server's ``maxmemory-policy`` when it may evict a held lock's key (anything but
    ``noeviction``), as read at connect; ``None`` for ``noeviction`` or where ``CONFIG`` is
    refused."""
