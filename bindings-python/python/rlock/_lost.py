"""Lost holds: the event every surface reports when the watchdog loses a hold, and the
registration of a Python callback with a native handle that reports them."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Optional, Protocol

_log = logging.getLogger("rlock")


@dataclass(frozen=True)
class LostEvent:
    """A hold the watchdog lost: passed to callbacks registered with :meth:`Lock.on_lost`,
    :meth:`PermitExpirableSemaphore.on_lost` and :meth:`Client.on_lost`. The same fields as on
    every surface."""

    #: The lock (or semaphore) name.
    name: str
    #: The kind of hold: ``"lock"`` (reentrant, fenced, fair, spin and non-reentrant locks),
    #: ``"read"``, ``"write"``, ``"permit"`` (a permit of a permit-expirable semaphore), or
    #: ``"red_lock"`` (a :class:`RedLock` left with fewer than a majority of its servers).
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


class _LostListeners(Protocol):
    def on_lost(self, callback: Callable[[str, str, str, str, Optional[str]], object]) -> int: ...
    def remove_lost_listener(self, id: int) -> bool: ...


def _listen(native: _LostListeners, callback: LostCallback, what: str) -> Callable[[], None]:
    """Registers ``callback`` with ``native`` and returns the function that unregisters it. The
    native listener builds the event; an exception in the callback is logged, never propagated."""

    def call(name: str, kind: str, owner: str, reason: str, permit_id: Optional[str]) -> None:
        try:
            callback(LostEvent(name=name, kind=kind, owner=owner, reason=reason, permit_id=permit_id))
        except Exception:
            _log.exception("rlock: on_lost callback for %s %r raised", what, name)

    listener = native.on_lost(call)

    def remove() -> None:
        native.remove_lost_listener(listener)

    return remove
