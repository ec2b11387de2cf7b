"""The shapes of :meth:`rlock.Client.describe` and :meth:`rlock.Client.list`: core's
``rlock::Description`` in Python's spelling. Every key is always present (``None`` where it
does not apply); times are Unix times in float seconds (as :func:`time.time`), durations float
seconds."""

from typing import List, Literal, Optional

from ._typing import TypedDict

# BEGIN GENERATED kinds (make generated)
#: The kind of primitive describe and list find under a name (core's ``rlock::Kind``).
Kind = Literal[
    # A reentrant lock (Redisson RLock); a fair lock nobody waits for looks the same.
    "lock",
    # A fenced lock (Redisson RFencedLock): its token counter exists.
    "fenced_lock",
    # A fair lock (Redisson RFairLock): its queue or deadline keys exist.
    "fair_lock",
    # A read-write lock (Redisson RReadWriteLock).
    "read_write_lock",
    # A semaphore (Redisson RSemaphore) that someone waits on.
    "semaphore",
    # A permit-expirable semaphore (Redisson RPermitExpirableSemaphore) with permits held.
    "permit_expirable_semaphore",
    # A count-down latch (Redisson RCountDownLatch) that someone waits on.
    "count_down_latch",
    # An integer string nobody waits on: a semaphore and a latch look the same.
    "semaphore_or_latch",
    # A key of another shape: another Redis type, or a hash or string that is none of these.
    "other",
    # Nothing under the name.
    "none",
]
# END GENERATED


class ClientRecord(TypedDict):
    """Who a client is, from its holder record (written while it holds something)."""

    client_id: str
    host: str
    pid: int
    app: Optional[str]
    version: str
    written: float


class Holder(TypedDict):
    """An owner holding a lock; ``record`` is None for a client without a record (Redisson)."""

    owner: str
    client_id: str
    mode: Optional[Literal["read", "write"]]
    count: int
    ttl: Optional[float]
    since: Optional[float]
    held_for: Optional[float]
    record: Optional[ClientRecord]


class QueuedWaiter(TypedDict):
    """A waiter in a fair lock's queue (``deadline_in`` 0 once its deadline passed)."""

    owner: str
    client_id: str
    deadline: Optional[float]
    deadline_in: Optional[float]
    record: Optional[ClientRecord]


class HeldPermit(TypedDict):
    """A held permit of a permit-expirable semaphore (``expires`` None: no lease; ``expires_in`` 0 once expired)."""

    id: str
    expires: Optional[float]
    expires_in: Optional[float]
    owner: Optional[str]
    since: Optional[float]
    held_for: Optional[float]
    record: Optional[ClientRecord]


class Channel(TypedDict):
    """A channel of the name and its subscribers (waiting connections)."""

    channel: str
    subscribers: int


class Description(TypedDict):
    """What lives under a name (see the README's ``rlock status``)."""

    name: str
    kind: Kind
    redis_type: str
    ttl: Optional[float]
    now: float
    holders: List[Holder]
    waiters: int
    channels: List[Channel]
    queue: List[QueuedWaiter]
    queue_length: Optional[int]
    token: Optional[int]
    available_permits: Optional[int]
    count: Optional[int]
    permits: List[HeldPermit]
    permits_held: Optional[int]
    notes: List[str]


class Listed(TypedDict):
    """A name found by :meth:`rlock.Client.list`."""

    name: str
    kind: Kind
