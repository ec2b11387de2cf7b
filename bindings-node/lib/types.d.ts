/** Client settings; durations in milliseconds. */
export interface ClientOptions {
    /** Lease of a watchdog-renewed hold; the watchdog renews every third of it. Default 30 s (Redisson's `lockWatchdogTimeout`). At least 30 ms. */
    watchdogTimeoutMs?: number;
    /** Most holds renewed by one script call (1 to 10000). Default 100. */
    renewalBatchSize?: number;
    /** How long one Redis command may take before it fails with a timeout error. None waits forever. Default 3 s. */
    commandTimeoutMs?: number | null;
    /** How long connecting (or reconnecting) may take. Default 10 s. */
    connectTimeoutMs?: number;
    /** How often a failed command (connection error or timeout) is retried before the error is returned (at most 1000). Default 3. */
    retryAttempts?: number;
    /** Pause between those retries. Default 1.5 s (Redisson's `retryInterval`). */
    retryDelayMs?: number;
    /** How long a waiter waits for its SUBSCRIBE to be confirmed before it falls back to polling; also, while anyone waits, how long the pub/sub connection may leave a PING (sent every third of it) unanswered before it is replaced (one server). Default 7.5 s (Redisson's `subscriptionTimeout`). */
    subscriptionTimeoutMs?: number;
    /** With pub/sub unavailable, the longest pause of a waiter between tries: pauses back off from a sixteenth of it up to it, with jitter (and never past the holder's lease), so a release is taken over within it plus a round trip. Default 100 ms. */
    pollIntervalMs?: number;
    /** When set, the watchdog stops renewing a hold this long after it was acquired, so the lease runs out at most one watchdog timeout later. None (the default) renews until release. */
    maxHoldMs?: number | null;
    /** Lease doubt: a hold whose lease is not proven to run longer than this (at most a quarter of its lease) is lost at once, with reason `lease_doubt` when renewals could not be confirmed in time (Redis unreachable or slow) and `lease_ending` for a lease nobody renews. A lease counts from the send of the command that set it, so the holder hears this before the lease can end on the server and another owner take the lock; the margin is the time it has to stop. Default 1 s. */
    leaseDoubtMarginMs?: number;
    /** PEM file of the CA that signed the servers' certificates, for `rediss://` URLs (and the `rediss+cluster://` / `rediss+sentinel://` variants). None trusts the system's roots. */
    tlsCaFile?: string | null;
    /** Sharded pub/sub (SSUBSCRIBE / SPUBLISH) on a Redis Cluster. None (the default) decides as Redisson does: on when the cluster answers `PUBSUB SHARDNUMSUB` (Redis 7+), else off. Forced on where the cluster does not answer it, connect fails `InvalidArgument`. Every client sharing locks must make the same choice. Ignored off a cluster. */
    shardedPubsub?: boolean | null;
    /** After each acquire, `WAIT` until at least one replica has the hold, and undo and retry the acquire when none acknowledged within `replica_sync_timeout`. None (the default) decides as Redisson does: on for Cluster and Sentinel URLs, off for a single server. Masters without connected replicas are never waited on. This narrows, but does not close, the window in which a failover loses a fresh hold. */
    replicaSync?: boolean | null;
    /** How long one acquire waits for a replica's acknowledgement. Default 1 s (Redisson's). */
    replicaSyncTimeoutMs?: number;
    /** With replica sync, acquires wait with `WAITAOF` instead of `WAIT`: until the hold is fsynced to the append-only file of one replica, and of its master too when the master has `appendonly yes` (a master with neither is not waited on). Needs a server that has `WAITAOF` (Redis 7.2 and Valkey 7.2 on): where it has none, connect fails `InvalidArgument`. The replicas need `appendonly yes`, or no acquire is acknowledged. On, it turns replica sync on; with `replica_sync` set off it is refused (`InvalidArgument`). Default off. */
    replicaSyncAof?: boolean;
    /** Connections for commands to a single server, used in turn (1 to 8). Default 1: one multiplexed connection already pipelines concurrent requests; 2 raises throughput with tens of concurrent owners. Ignored for Cluster and Sentinel URLs. */
    commandConnections?: number;
    /** Connections of their own for the threads that make blocking calls (C, Python's sync API) to a single server over plain TCP or a Unix socket: a thread's commands are then written and their replies read on the thread itself, with no hand-off to the runtime's worker. At most this many threads of a client have one at a time, each from its second blocking call on, and they use them only while at most this many threads of the process are inside blocking calls at once: past that, every command goes on the shared connection, pipelined with the others (cheaper for Redis with many threads). Other threads, and async calls, use the shared connection. 0 turns them off (0 to 1024). Default 32. Ignored with `command_connections` > 1, TLS, Cluster and Sentinel. */
    threadConnections?: number;
    /** How long a fair-lock waiter may go without re-trying before the other waiters drop it from the queue (so a crashed waiter holds up those behind it at most this long), when its acquire has no wait time of its own. Default 300 s (Redisson's `fairLockWaitTimeout`); every client sharing fair locks should use the same. */
    fairLockWaitTimeoutMs?: number;
    /** Publish a holder record while this client holds anything: a small JSON value under the key `rlock:client:<client uuid>` with the host name, process id, `app_name` and library version (never a URL or password), expiring one watchdog timeout after its last refresh. `rlock status` and `describe` use it to say who holds a lock. Redisson ignores the key. Default on. */
    holderRecord?: boolean;
    /** A name for this application, shown with its holds (holder records, `rlock status`). At most 128 characters, none of them control characters. Default none. */
    appName?: string | null;
    /** Keep the client's counters and histograms (`stats()`, Prometheus text). Default on; off leaves every figure at zero. */
    metrics?: boolean;
}
/** The `.code` of every error rlock rejects with. */
export type RLockErrorCode = 'RLOCK_NOT_ACQUIRED' | 'RLOCK_NOT_HELD' | 'RLOCK_LOST' | 'RLOCK_INVALID_ARGUMENT' | 'RLOCK_CONNECTION' | 'RLOCK_TIMEOUT' | 'RLOCK_REDIS' | 'RLOCK_CLOSED' | 'RLOCK_FORKED' | 'RLOCK_WOULD_DEADLOCK';
/** The type of `codes`, the codes by short name: `codes.NOT_HELD === 'RLOCK_NOT_HELD'`. */
export type Codes = Readonly<{
    NOT_ACQUIRED: 'RLOCK_NOT_ACQUIRED';
    NOT_HELD: 'RLOCK_NOT_HELD';
    LOST: 'RLOCK_LOST';
    INVALID_ARGUMENT: 'RLOCK_INVALID_ARGUMENT';
    CONNECTION: 'RLOCK_CONNECTION';
    TIMEOUT: 'RLOCK_TIMEOUT';
    REDIS: 'RLOCK_REDIS';
    CLOSED: 'RLOCK_CLOSED';
    FORKED: 'RLOCK_FORKED';
    WOULD_DEADLOCK: 'RLOCK_WOULD_DEADLOCK';
}>;
/** The kind of primitive `describe` and `list` find under a name (core's `rlock::Kind`). */
export type Kind = 
/** A reentrant lock (Redisson RLock); a fair lock nobody waits for looks the same. */
'lock'
/** A fenced lock (Redisson RFencedLock): its token counter exists. */
 | 'fenced_lock'
/** A fair lock (Redisson RFairLock): its queue or deadline keys exist. */
 | 'fair_lock'
/** A read-write lock (Redisson RReadWriteLock). */
 | 'read_write_lock'
/** A semaphore (Redisson RSemaphore) that someone waits on. */
 | 'semaphore'
/** A permit-expirable semaphore (Redisson RPermitExpirableSemaphore) with permits held. */
 | 'permit_expirable_semaphore'
/** A count-down latch (Redisson RCountDownLatch) that someone waits on. */
 | 'count_down_latch'
/** An integer string nobody waits on: a semaphore and a latch look the same. */
 | 'semaphore_or_latch'
/** A key of another shape: another Redis type, or a hash or string that is none of these. */
 | 'other'
/** Nothing under the name. */
 | 'none';
/** What a client connected to, and what it decided there. */
export interface ClientInfo {
    /** What the URL named: one server, a Redis Cluster, or a master found through Sentinels. */
    topology: 'single' | 'cluster' | 'sentinel';
    /** Waiters use sharded pub/sub (SSUBSCRIBE / SPUBLISH). */
    shardedPubsub: boolean;
    /** Acquires wait for a replica. */
    replicaSync: boolean;
}
/** Options of `acquire` / `tryAcquire`. */
export interface AcquireOptions {
    /** Longest wait: `acquire` rejects RLOCK_NOT_ACQUIRED after it, `tryAcquire` resolves false. */
    waitMs?: number;
    /** Fixed lease; without it the watchdog renews the hold until release. */
    leaseMs?: number;
    /** Aborting it rejects the pending acquire with the signal's reason (an AbortError). */
    signal?: AbortSignal;
}
/** Options of a semaphore acquire. */
export interface SemaphoreAcquireOptions {
    /** Permits to take (a whole number >= 1; default 1). */
    permits?: number;
    /** Longest wait in ms (`acquire`: then rejects RLOCK_NOT_ACQUIRED; `tryAcquire`: default 0, then resolves false). */
    waitMs?: number;
    /** Aborting it rejects with its AbortError; nothing is taken. */
    signal?: AbortSignal;
}
/** Options of a permit-expirable semaphore's `acquire` / `tryAcquire` / `withPermit`. */
export interface PermitAcquireOptions {
    /** Longest wait in ms (`acquire`: then rejects RLOCK_NOT_ACQUIRED; `tryAcquire`: default 0, then resolves null). */
    waitMs?: number;
    /** The permit expires this many ms after it was taken; absent: the watchdog renews it until released. */
    leaseMs?: number;
    /** Aborting it rejects with its AbortError; nothing is taken. */
    signal?: AbortSignal;
}
/** A hold the watchdog lost: the same fields on every surface. */
export interface LostEvent {
    /** The lock (or semaphore) name. */
    name: string;
    /** The kind of hold: `"lock"` (reentrant, fenced, fair, spin and non-reentrant locks), `"read"`, `"write"`, `"permit"` (a permit of a permit-expirable semaphore), or `"red_lock"` (a RedLock left with fewer than a majority of its servers). */
    kind: 'lock' | 'read' | 'write' | 'permit' | 'red_lock';
    /** The owner whose hold was lost, as stored in Redis (`<client uuid>:<id>`; for a permit, the client's owner 0, since permits have no owner). */
    owner: string;
    /** What happened. One of: `"gone"` (confirmed: a renewal found the lock no longer held by this owner (expired, force-unlocked, deleted)); `"lease_doubt"` (not confirmed: no renewal was confirmed in time (Redis unreachable, slow or erroring), so the lease may end on the server within the lease-doubt margin); `"lease_ending"` (a lease nobody renews (an explicit lease, or one past `max_hold`) ends within the lease-doubt margin). */
    reason: 'gone' | 'lease_doubt' | 'lease_ending';
    /** The permit id (32 hex characters) for a permit of a permit-expirable semaphore; `null` for other holds. */
    permitId: string | null;
}
/** A permit the watchdog lost (a `LostEvent` of kind `'permit'`). */
export type PermitLostEvent = LostEvent;
/** Options of a multi-lock's `acquire` / `tryAcquire` / `withLock`. */
export interface MultiLockAcquireOptions {
    /** Longest wait in ms (`acquire`: then rejects RLOCK_NOT_ACQUIRED; `tryAcquire`: default 0, then resolves false). */
    waitMs?: number;
    /** Each member's lease in ms; absent: the watchdog renews them until released. */
    leaseMs?: number;
    /** Aborting it rejects with its AbortError; nothing is held. */
    signal?: AbortSignal;
}
/** Who a client is, from its holder record (`rlock:client:<uuid>`). */
export interface ClientRecord {
    /** The client's UUID. */
    clientId: string;
    /** The host it runs on. */
    host: string;
    /** Its process id. */
    pid: number;
    /** The application name its client was given (the `app_name` option, as each surface spells it); `null` when unset. */
    app: string | null;
    /** Its rlock version. */
    version: string;
    /** When the record was last written (the client's clock). */
    writtenMs: number;
}
/** One owner holding a lock. */
export interface Holder {
    /** The owner as stored in Redis: `<client uuid>:<id>`. */
    owner: string;
    /** Its client's UUID (the owner up to the last `:`). */
    clientId: string;
    /** `"read"` or `"write"` for a read-write lock; `null` for the other locks. */
    mode: 'read' | 'write' | null;
    /** The hold count (re-entries included). */
    count: number;
    /** How long the hold lasts unless renewed: the lock's TTL, or for read holds the longest of the owner's read-hold keys; `null` when unknown or never expiring. */
    ttlMs: number | null;
    /** Since when it is held (from the client's holder record). */
    sinceMs: number | null;
    /** How long it has been held (`now - since`). */
    heldForMs: number | null;
    /** The holder record of its client; `null` when there is none (not an rlock client, e.g. Redisson; records switched off; or written within a second of the acquire). */
    record: ClientRecord | null;
}
/** A waiter in a fair lock's queue. */
export interface QueuedWaiter {
    /** The waiting owner: `<client uuid>:<id>`. */
    owner: string;
    /** Its client's UUID. */
    clientId: string;
    /** Its deadline (the waiter is dropped from the queue after it, unless it tries again); `null` when it has none. */
    deadlineMs: number | null;
    /** Time left until that deadline (zero once it passed). */
    deadlineInMs: number | null;
    /** The holder record of its client, when there is one (a client that only waits and holds nothing has none: records exist while a client holds something). */
    record: ClientRecord | null;
}
/** A held permit of a permit-expirable semaphore. */
export interface HeldPermit {
    /** The permit id: 32 lowercase hex characters. */
    id: string;
    /** When it expires; `null` for a permit without a lease (Redisson's 922337203685477). */
    expiresMs: number | null;
    /** Time left until it expires (zero: expired, given back at the next call). */
    expiresInMs: number | null;
    /** The owner its client lists it under (`<client uuid>:0`); `null` when no record lists it (Redisson's permits; rlock permits with a lease, which the watchdog does not track). */
    owner: string | null;
    /** Since when it is held (from the client's record). */
    sinceMs: number | null;
    /** How long it has been held. */
    heldForMs: number | null;
    /** The holder record of its client: the one listing it, or for a permit with a lease the client whose UUID begins its id (rlock ids start with 8 bytes of their client's UUID); `null` when there is none (Redisson's permits have random ids). */
    record: ClientRecord | null;
}
/** A channel of the name and its subscribers. */
export interface Channel {
    /** The channel name, e.g. `redisson_lock__channel:{orders}`. */
    channel: string;
    /** Its subscribers (classic and sharded pub/sub together; summed over a cluster's nodes). */
    subscribers: number;
}
/** What lives under one name: a snapshot, read without changing anything. In Node's spelling: camelCase keys, every key present (`null` where it does not apply), times in Unix ms and durations in ms under keys ending `Ms`. */
export interface Description {
    /** The name (the Redis key of the primitive). */
    name: string;
    /** The kind found, or the one the caller asked for (Rust's `Client.describe_as`). */
    kind: Kind;
    /** The Redis type of the key `name`: `"hash"`, `"string"`, ..., `"none"` when missing. */
    redisType: string;
    /** The key's remaining time to live; `null` when it does not exist or never expires. */
    ttlMs: number | null;
    /** The Redis server's clock when the keys were read. */
    nowMs: number;
    /** The owners holding a lock, with their hold counts (empty for other kinds). */
    holders: Holder[];
    /** Subscribers of all the name's channels together: waiting connections (one per waiting client and name, not per waiting thread or task). */
    waiters: number;
    /** Every channel of the name, with its subscribers (classic and sharded pub/sub together). */
    channels: Channel[];
    /** The fair lock's queue in order, with deadlines (at most 1000 listed). */
    queue: QueuedWaiter[];
    /** The queue's full length; `null` when there is no queue. */
    queueLength: number | null;
    /** The fenced lock's counter: the last token given out; `null` for other kinds. */
    token: number | null;
    /** Free permits of a semaphore (missing key: 0); `null` for other kinds. */
    availablePermits: number | null;
    /** A count-down latch's count (0: open); `null` for other kinds. */
    count: number | null;
    /** The held permits of a permit-expirable semaphore (at most 1000 listed). */
    permits: HeldPermit[];
    /** How many permits are held; `null` for other kinds (a plain semaphore does not track its holders). */
    permitsHeld: number | null;
    /** Remarks in plain words: what could not be told apart, what was left out. */
    notes: string[];
}
/** A name found by `Client.list`, with the kind found under it. */
export interface Listed {
    /** The name (the primitive's Redis key). */
    name: string;
    /** What it is. */
    kind: Kind;
}
/** A summary of one histogram of durations. */
export interface StatsSummary {
    /** How many durations were recorded. */
    count: number;
    /** Their sum. */
    sumMs: number;
    /** The median: the upper bound of its bucket (at most 25% over), never above the maximum. */
    p50Ms: number;
    /** The 99th percentile, as the median. */
    p99Ms: number;
    /** The largest. */
    maxMs: number;
}
/** A client's figures since it connected (all zero with the `metrics` option off): what `stats()` returns on every surface. In Node's spelling: camelCase keys, every key present (`null` where it does not apply), times in Unix ms and durations in ms under keys ending `Ms`. */
export interface Stats {
    /** Acquires that succeeded (locks of every kind, semaphore and permit acquires; each re-entry counts). */
    acquires: number;
    /** Of those, the ones that found the lock (or permits) taken at first and waited. */
    contendedAcquires: number;
    /** Acquires whose wait ran out. */
    acquireTimeouts: number;
    /** Final releases of locks and permits, and semaphore releases. */
    releases: number;
    /** Holds the watchdog renewed (one per hold per renewal). */
    renewals: number;
    /** Holds whose renewal failed (Redis erroring or unreachable; retried while the lease lasts). */
    renewalFailures: number;
    /** Holds the watchdog lost (found gone, or not renewed within the lease). */
    lostHolds: number;
    /** Waiters woken by a pub/sub message (not by a timeout). */
    wakeups: number;
    /** Times the connection to Redis dropped, or was replaced (a Sentinel failover, a rebuilt cluster connection). */
    reconnects: number;
    /** How long successful acquires waited (uncontended ones included). */
    wait: StatsSummary;
    /** How long holds lasted, from acquire to final release. */
    hold: StatsSummary;
    /** Errors returned by acquires, releases and other calls that reached Redis, by kind (`"timeout"`, `"not_held"`, ...); every kind is present. */
    errors: Record<string, number>;
    /** The server's `maxmemory-policy` when it may evict keys under memory pressure (anything but `noeviction`: a held lock's key can then be evicted, and another owner takes the lock), as read with `CONFIG GET` at connect (on a cluster, slot 0's master's); `null` for `noeviction`, or where `CONFIG` is refused. Set whether or not `metrics` is on. */
    evictionPolicy: string | null;
}
