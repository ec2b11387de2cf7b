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


# BEGIN GENERATED records (make generated)
class ClientRecord(TypedDict):
    """Who a client is, from its holder record (``rlock:client:<uuid>``)."""

    client_id: str
    """The client's UUID."""
    host: str
    """The host it runs on."""
    pid: int
    """Its process id."""
    app: Optional[str]
    """The application name its client was given (the ``app_name`` option, as each surface spells
    it); ``None`` when unset."""
    version: str
    """Its rlock version."""
    written: float
    """When the record was last written (the client's clock)."""


class Holder(TypedDict):
    """One owner holding a lock."""

    owner: str
    """The owner as stored in Redis: ``<client uuid>:<id>``."""
    client_id: str
    """Its client's UUID (the owner up to the last ``:``)."""
    mode: Optional[Literal["read", "write"]]
    """``"read"`` or ``"write"`` for a read-write lock; ``None`` for the other locks."""
    count: int
    """The hold count (re-entries included)."""
    ttl: Optional[float]
    """How long the hold lasts unless renewed: the lock's TTL, or for read holds the longest of
    the owner's read-hold keys; ``None`` when unknown or never expiring."""
    since: Optional[float]
    """Since when it is held (from the client's holder record)."""
    held_for: Optional[float]
    """How long it has been held (``now - since``)."""
    record: Optional[ClientRecord]
    """The holder record of its client; ``None`` when there is none (not an rlock client, e.g.
    Redisson; records switched off; or written within a second of the acquire)."""


class QueuedWaiter(TypedDict):
    """A waiter in a fair lock's queue."""

    owner: str
    """The waiting owner: ``<client uuid>:<id>``."""
    client_id: str
    """Its client's UUID."""
    deadline: Optional[float]
    """Its deadline (the waiter is dropped from the queue after it, unless it tries again);
    ``None`` when it has none."""
    deadline_in: Optional[float]
    """Time left until that deadline (zero once it passed)."""
    record: Optional[ClientRecord]
    """The holder record of its client, when there is one (a client that only waits and holds
    nothing has none: records exist while a client holds something)."""


class HeldPermit(TypedDict):
    """A held permit of a permit-expirable semaphore."""

    id: str
    """The permit id: 32 lowercase hex characters."""
    expires: Optional[float]
    """When it expires; ``None`` for a permit without a lease (Redisson's 922337203685477)."""
    expires_in: Optional[float]
    """Time left until it expires (zero: expired, given back at the next call)."""
    owner: Optional[str]
    """The owner its client lists it under (``<client uuid>:0``); ``None`` when no record lists
    it (Redisson's permits; rlock permits with a lease, which the watchdog does not track)."""
    since: Optional[float]
    """Since when it is held (from the client's record)."""
    held_for: Optional[float]
    """How long it has been held."""
    record: Optional[ClientRecord]
    """The holder record of its client: the one listing it, or for a permit with a lease the
    client whose UUID begins its id (rlock ids start with 8 bytes of their client's UUID);
    ``None`` when there is none (Redisson's permits have random ids)."""


class Channel(TypedDict):
    """A channel of the name and its subscribers."""

    channel: str
    """The channel name, e.g. ``redisson_lock__channel:{orders}``."""
    subscribers: int
    """Its subscribers (classic and sharded pub/sub together; summed over a cluster's nodes)."""


class Description(TypedDict):
    """What lives under one name: a snapshot, read without changing anything."""

    name: str
    """The name (the Redis key of the primitive)."""
    kind: Kind
    """The kind found, or the one the caller asked for (Rust's ``Client.describe_as``)."""
    redis_type: str
    """The Redis type of the key ``name``: ``"hash"``, ``"string"``, ..., ``"none"`` when
    missing."""
    ttl: Optional[float]
    """The key's remaining time to live; ``None`` when it does not exist or never expires."""
    now: float
    """The Redis server's clock when the keys were read."""
    holders: List[Holder]
    """The owners holding a lock, with their hold counts (empty for other kinds)."""
    waiters: int
    """Subscribers of all the name's channels together: waiting connections (one per waiting
    client and name, not per waiting thread or task)."""
    channels: List[Channel]
    """Every channel of the name, with its subscribers (classic and sharded pub/sub together)."""
    queue: List[QueuedWaiter]
    """The fair lock's queue in order, with deadlines (at most 1000 listed)."""
    queue_length: Optional[int]
    """The queue's full length; ``None`` when there is no queue."""
    token: Optional[int]
    """The fenced lock's counter: the last token given out; ``None`` for other kinds."""
    available_permits: Optional[int]
    """Free permits of a semaphore (missing key: 0); ``None`` for other kinds."""
    count: Optional[int]
    """A count-down latch's count (0: open); ``None`` for other kinds."""
    permits: List[HeldPermit]
    """The held permits of a permit-expirable semaphore (at most 1000 listed)."""
    permits_held: Optional[int]
    """How many permits are held; ``None`` for other kinds (a plain semaphore does not track its
    holders)."""
    notes: List[str]
    """Remarks in plain words: what could not be told apart, what was left out."""


class Listed(TypedDict):
    """A name found by ``Client.list``, with the kind found under it."""

    name: str
    """The name (the primitive's Redis key)."""
    kind: Kind
    """What it is."""
# END GENERATED
