"""Lost holds: the event every surface reports when the watchdog loses a hold, and the
registration of a Python callback with a native handle that reports them."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional, Protocol, cast

_log = logging.getLogger("rlock")


@dataclass(frozen=True)
class LostEvent:
    """A hold the watchdog lost: passed to callbacks registered with :meth:`Lock.on_lost`,
    :meth:`PermitExpirableSemaphore.on_lost` and :meth:`Client.on_lost`. The same fields as on
    every surface."""

    # BEGIN GENERATED fields (make generated)
    #: The lock (or semaphore) name.
    name: str
    #: The kind of hold: ``"lock"`` (reentrant, fenced, fair, spin and non-reentrant locks),
    #: ``"read"``, ``"write"``, ``"permit"`` (a permit of a permit-expirable semaphore), or
    #: ``"red_lock"`` (a RedLock left with fewer than a majority of its servers).
    kind: Literal["lock", "read", "write", "permit", "red_lock"]
    #: The owner whose hold was lost, as stored in Redis (``<client uuid>:<id>``; for a permit, the
    #: client's owner 0, since permits have no owner).
    owner: str
    #: What happened. One of: ``"gone"`` (confirmed: a renewal found the lock no longer held by this
    #: owner (expired, force-unlocked, deleted)); ``"lease_doubt"`` (not confirmed: no renewal was
    #: confirmed in time (Redis unreachable, slow or erroring), so the lease may end on the server
    #: within the lease-doubt margin); ``"lease_ending"`` (a lease nobody renews (an explicit lease,
    #: or one past ``max_hold``) ends within the lease-doubt margin).
    reason: Literal["gone", "lease_doubt", "lease_ending"]
    #: The permit id (32 hex characters) for a permit of a permit-expirable semaphore; ``None`` for
    #: other holds.
    permit_id: Optional[str] = None
    # END GENERATED


LostCallback = Callable[[LostEvent], object]


class _LostListeners(Protocol):
    def on_lost(self, callback: Callable[[str, str, str, str, Optional[str]], object]) -> int: ...
    def remove_lost_listener(self, id: int) -> bool: ...


def _listen(native: _LostListeners, callback: LostCallback, what: str) -> Callable[[], None]:
    """Registers ``callback`` with ``native`` and returns the function that unregisters it. The
    native listener builds the event; an exception in the callback is logged, never propagated."""

    def call(name: str, kind: str, owner: str, reason: str, permit_id: Optional[str]) -> None:
        try:
            # The native listener passes core's kinds and reasons, the values LostEvent names.
            kind_, reason_ = cast(Any, kind), cast(Any, reason)
            event = LostEvent(name, kind_, owner, reason_, permit_id)
            callback(event)
        except Exception:
            _log.exception("rlock: on_lost callback for %s %r raised", what, name)

    listener = native.on_lost(call)

    def remove() -> None:
        native.remove_lost_listener(listener)

    return remove
