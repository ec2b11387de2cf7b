import type { NativePermitSemaphore, NativeSemaphore } from '../index.js';
import type { PermitAcquireOptions, PermitLostEvent, SemaphoreAcquireOptions } from './types.js';
/**
 * What the semaphore and the permit-expirable semaphore share: the count of free permits in the
 * key `name` (set, read, added to). `_native` is the native handle (a promise), `_call` calls it.
 */
declare class Permits<N extends NativeSemaphore | NativePermitSemaphore> {
    protected readonly _native: Promise<N>;
    /** The semaphore name (the Redis key of its count of free permits). */
    readonly name: string;
    protected constructor(nativePromise: Promise<N>, name: string);
    protected _call(method: string, ...args: unknown[]): Promise<any>;
    /** Sets the permits when the semaphore does not exist (`ttlMs`: it expires); resolves whether set. */
    trySetPermits(permits: number, options?: {
        ttlMs?: number;
    }): Promise<boolean>;
    /** The free permits (0 when the semaphore does not exist). */
    availablePermits(): Promise<number>;
    /** Adds `n` permits (negative removes them); resolves the new count of free ones. */
    addPermits(n: number): Promise<number>;
}
/**
 * Redisson's semaphore: permits in the key `name` (a missing key is 0 permits, so set them
 * first with `trySetPermits`). Permits are not owned and do not come back when a holder dies.
 * Made by `client.semaphore(name)`.
 */
declare class Semaphore extends Permits<NativeSemaphore> {
    #private;
    /**
     * Takes `permits` (default 1). Options: `permits`, `waitMs` (reject RLOCK_NOT_ACQUIRED after
     * it, nothing taken), `signal` (reject with its AbortError; nothing taken).
     */
    acquire(options?: SemaphoreAcquireOptions): Promise<void>;
    /** Like `acquire`, resolving `false` instead of waiting past `waitMs` (default 0: try once). */
    tryAcquire(options?: SemaphoreAcquireOptions): Promise<boolean>;
    /** Gives back `permits` (default 1); resolves the new count. */
    release(permits?: number): Promise<number>;
    /** Takes every available permit; resolves how many there were. */
    drainPermits(): Promise<number>;
}
/**
 * Redisson's permit-expirable semaphore: each permit has an id (32 hex characters) that any
 * client, Java's included, may release, and a lease. Without `leaseMs` the watchdog renews the
 * permit while this client lives, so a crashed holder's permit comes back within the watchdog
 * timeout. Made by `client.permitExpirableSemaphore(name)`.
 */
declare class PermitExpirableSemaphore extends Permits<NativePermitSemaphore> {
    /**
     * Takes a permit and resolves its id. Options: `waitMs` (reject RLOCK_NOT_ACQUIRED after it),
     * `leaseMs` (the permit expires then; absent: the watchdog renews it), `signal` (reject with
     * its AbortError; nothing taken).
     */
    acquire(options?: PermitAcquireOptions): Promise<string>;
    /** Like `acquire`, resolving `null` instead of waiting past `waitMs` (default 0: try once). */
    tryAcquire(options?: PermitAcquireOptions): Promise<string | null>;
    /** Releases permit `permitId`; rejects RLOCK_NOT_HELD when it is not held, RLOCK_LOST when the watchdog lost it. */
    release(permitId: string): Promise<void>;
    /** Makes the held permit expire `leaseMs` from now (absent or null: the watchdog renews it). */
    updateLease(permitId: string, leaseMs?: number | null): Promise<void>;
    /** The held permits (neither released nor expired). */
    acquiredPermits(): Promise<number>;
    /** Whether this client's watchdog lost the permit (until it is released). */
    isLost(permitId: string): Promise<boolean>;
    /** How long, in whole ms, local time still proves the permit (0: not held by this client, lost, or in doubt). Sends nothing. */
    validForMs(permitId: string): Promise<number>;
    /**
     * Calls `callback({ name, kind, owner, reason, permitId })` (`kind` 'permit') when this
     * client's watchdog loses a permit of this semaphore. Resolves a function that removes the
     * listener.
     */
    onLost(callback: (event: PermitLostEvent) => void): Promise<() => void>;
    /**
     * Runs `fn(permitId)` holding a permit (options as `acquire`) and releases it afterwards, also
     * when `fn` throws (its error wins over a failed release). Resolves what `fn` resolves.
     */
    withPermit<T>(fn: (permitId: string) => T | Promise<T>, options?: PermitAcquireOptions): Promise<T>;
}
/**
 * Redisson's count-down latch: a count in the key `name`, open at 0 (also while the key is
 * missing). Anyone counts down; every waiter, Java's included, wakes at 0. Made by
 * `client.countDownLatch(name)`.
 */
declare class CountDownLatch {
    #private;
    /** The latch name (its Redis key). */
    readonly name: string;
    private constructor();
    /** Sets the count (a whole number >= 0) when the latch does not exist; resolves whether set. */
    trySetCount(count: number): Promise<boolean>;
    /** Counts down by one; at 0 the latch opens and every waiter wakes. */
    countDown(): Promise<void>;
    /** The current count (0 when open). */
    count(): Promise<number>;
    /**
     * Resolves `true` once the latch is open, `false` when `waitMs` ran out first (default: no
     * limit). `signal` rejects with its AbortError.
     */
    wait(options?: {
        waitMs?: number;
        signal?: AbortSignal;
    }): Promise<boolean>;
    /** Deletes the latch whatever its count; resolves whether it existed. */
    delete(): Promise<boolean>;
}
export { Semaphore, PermitExpirableSemaphore, CountDownLatch };
