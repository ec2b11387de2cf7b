import { Lock, HeldLock, FencedLock, ReadWriteLock } from './locks.js';
import { Semaphore, PermitExpirableSemaphore, CountDownLatch } from './semaphores.js';
import type { AcquireOptions, ClientInfo, ClientOptions, Description, Listed, LostEvent, Stats } from './types.js';
/** A connection to Redis that makes locks. Call `await client.close()` when done. */
declare class Client {
    #private;
    /**
     * `url` defaults to `process.env.REDIS_URL`, else `redis://127.0.0.1:6379`; also
     * `redis+cluster://h1:p1,h2:p2/`, `redis+sentinel://h1:p1,h2:p2/service[/db]` and `rediss...`.
     * Connecting happens in the background; a bad URL or an unreachable server rejects the first
     * call.
     */
    constructor(url?: string | null, options?: ClientOptions);
    /** Resolves once connected; rejects with the connect error (e.g. RLOCK_CONNECTION). */
    ready(): Promise<void>;
    /** A new `Lock` handle (a fresh owner) on lock `name`. Bad names reject its calls. */
    lock(name: string): Lock;
    /**
     * A new handle on the fenced lock `name`: a `Lock` whose `acquire()` resolves a fencing token,
     * strictly larger than any before for that name (Redisson's RFencedLock).
     */
    fencedLock(name: string): FencedLock;
    /**
     * A new handle on the fair lock `name` (Redisson's RFairLock): granted in arrival order across
     * every client, Java's included. An acquire that stops waiting (waitMs ran out, its signal
     * aborted, the client closed) leaves the queue.
     */
    fairLock(name: string): Lock;
    /**
     * A new handle on the spin lock `name` (Redisson's RSpinLock): the reentrant lock's hash, but
     * a release publishes nothing and a waiter polls with exponential back-off up to
     * `pollIntervalMs` (with jitter), so it gets a released lock at most `pollIntervalMs` plus a
     * round trip later. For endpoints without pub/sub, and clients that should hold no
     * subscription.
     */
    spinLock(name: string): Lock;
    /**
     * A new handle on the non-reentrant lock `name` (Redisson 4.4's getNonReentrantLock): the
     * reentrant lock's hash, but acquiring it again through the handle that holds it rejects at
     * once with code RLOCK_WOULD_DEADLOCK (nothing changes in Redis).
     */
    nonReentrantLock(name: string): Lock;
    /**
     * A new handle on the non-reentrant fair lock `name` (Redisson 4.4's getNonReentrantFairLock):
     * granted in arrival order as `fairLock`'s, with a re-entry rejected as `nonReentrantLock`'s.
     */
    nonReentrantFairLock(name: string): Lock;
    /**
     * A new handle on the read-write lock `name` (Redisson's RReadWriteLock). Its `readLock()` and
     * `writeLock()` share one owner, so the writer may also take read holds (a downgrade).
     */
    readWriteLock(name: string): ReadWriteLock;
    /** A new handle on the semaphore `name` (Redisson's RSemaphore). */
    semaphore(name: string): Semaphore;
    /** A new handle on the permit-expirable semaphore `name` (Redisson's RPermitExpirableSemaphore). */
    permitExpirableSemaphore(name: string): PermitExpirableSemaphore;
    /** A new handle on the count-down latch `name` (Redisson's RCountDownLatch). */
    countDownLatch(name: string): CountDownLatch;
    /** Acquires `name` on a new handle; the result releases with `release()` or `await using`. */
    acquire(name: string, options?: AcquireOptions): Promise<HeldLock>;
    /**
     * Runs `fn(lostSignal)` holding `name` and releases afterwards, also when `fn` throws (its
     * error wins over a failed release). Resolves what `fn` resolves.
     */
    withLock<T>(name: string, fn: (signal: AbortSignal) => T | Promise<T>, options?: AcquireOptions): Promise<T>;
    /**
     * Stops renewals and pub/sub; pending and later calls reject RLOCK_CLOSED. Holds are not
     * released (their leases run out). Afterwards nothing of this client keeps Node running.
     */
    close(): Promise<void>;
    /**
     * Calls `callback({ name, kind, owner, reason, permitId })` whenever this client's watchdog
     * loses any of its holds (locks of every kind, permits); resolves a function that removes the
     * listener. Rejects like every call when the client could not connect.
     */
    onLost(callback: (event: LostEvent) => void): Promise<() => void>;
    /**
     * The client's figures since it connected (times in milliseconds): acquires (contended, timed
     * out), releases, renewals and their failures, lost holds, pub/sub wake-ups, reconnects, wait
     * and hold times and errors by kind. All zero with `metrics: false`. Sends nothing to Redis.
     */
    stats(): Promise<Stats>;
    /**
     * `stats()` in the Prometheus text exposition format, for a service that already serves
     * `/metrics`: counters `rlock_*_total`, histograms `rlock_wait_seconds` and
     * `rlock_hold_seconds`, labelled `app="<appName>"` when that option is set.
     */
    prometheusText(): Promise<string>;
    /** Holds this client tracks (held, or lost and not yet released); 0 before connecting. */
    trackedHolds(): Promise<number>;
    /** Lock channels this client is subscribed to for waiters. */
    waitedChannels(): Promise<number>;
    /**
     * What lives under `name`, read without changing anything: core's description (see
     * rlock.d.ts `Description`; snake_case keys as in every surface's JSON). Rejects
     * RLOCK_INVALID_ARGUMENT for a bad name (nothing sent); a key of another type is kind 'other'.
     */
    describe(name: string): Promise<Description>;
    /**
     * Names of locks and synchronizers whose key or helper keys match the Redis glob `pattern`
     * (default: all), found with SCAN on every master, sorted; at most `limit` of them.
     */
    list(pattern?: string | null, options?: {
        limit?: number;
    }): Promise<Listed[]>;
    /** What the URL named (`'single'`, `'cluster'`, `'sentinel'`) and what was decided at connect. */
    info(): Promise<ClientInfo>;
}
export { Client };
