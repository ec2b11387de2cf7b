import type { NativeLock } from '../index.js';
import type { AcquireOptions, LostEvent, MultiLockAcquireOptions } from './types.js';
import type { Client } from './client.js';
/** Which lock of the family a `Lock` handle is. */
type LockKind = NativeLock['kind'];
/**
 * A handle on one lock; each handle is its own owner. Made by `client.lock(name)`,
 * `client.fencedLock(name)`, `client.fairLock(name)` or a `ReadWriteLock`'s sides.
 */
declare class Lock {
    #private;
    /** The lock name (its Redis key). */
    readonly name: string;
    /**
     * Which lock of the family: 'lock', 'fenced', 'read', 'write', 'fair', 'spin',
     * 'non_reentrant' or 'non_reentrant_fair'.
     */
    readonly kind: LockKind;
    /** Whether acquires take fencing tokens (a `client.fencedLock`). */
    readonly fenced: boolean;
    /** Made by a `Client` (`lock`, `fencedLock`, `fairLock`, `spinLock`, `nonReentrantLock`, `nonReentrantFairLock`) or a `ReadWriteLock`, not directly. */
    protected constructor(nativePromise: Promise<NativeLock>, name: string, kind?: LockKind);
    /**
     * Aborts when the watchdog loses this handle's hold; a new hold after a loss gets a fresh
     * signal. Core routes the loss to this handle; it listens from the first time this is read.
     */
    get lostSignal(): AbortSignal;
    /**
     * Resolves once this handle holds the lock (re-entering when it already does). Options:
     * `waitMs` (reject with RLOCK_NOT_ACQUIRED after it), `leaseMs` (fixed lease; default: the
     * watchdog renews until release), `signal` (reject with its AbortError when it aborts).
     */
    acquire(options?: AcquireOptions): Promise<void | number>;
    /**
     * Like `acquire`, but resolves `false` instead of waiting past `waitMs` (default 0); `true`
     * when held (a fenced lock: the new fencing token).
     */
    tryAcquire(options?: AcquireOptions): Promise<boolean | number>;
    /** A fenced lock's latest token while this handle holds it; null otherwise. */
    token(): Promise<number | null>;
    /** Whether the watchdog lost this handle's hold (until its next release). */
    isLost(): Promise<boolean>;
    /**
     * How long, in whole ms, local time still proves this handle's hold: until the send of its
     * last confirmed renewal (or its acquire), plus the lease, minus the lease-doubt margin. 0
     * when it does not hold the lock, or the hold is lost or in doubt (which marks it lost at
     * once). Check it before each write when the storage takes no fencing token. Sends nothing.
     */
    validForMs(): Promise<number>;
    /**
     * Calls `callback({ name, kind, owner, reason, permitId })` (`permitId` null) when the
     * watchdog loses this handle's hold; resolves a function that removes the listener. Reasons:
     * 'gone', 'lease_doubt', 'lease_ending'.
     */
    onLost(callback: (event: LostEvent) => void): Promise<() => void>;
    /**
     * Releases one hold level; resolves `true` when the lock is now free, `false` when this
     * handle still holds it (it had re-entered), or when only levels of acquires whose reply was
     * lost are left (nobody holds those: they are not renewed and end with their lease). Rejects
     * RLOCK_NOT_HELD or RLOCK_LOST.
     */
    release(): Promise<boolean>;
    /** Whether anyone holds the lock. */
    isLocked(): Promise<boolean>;
    /** Whether this handle holds the lock. */
    isHeld(): Promise<boolean>;
    /** How many times this handle holds the lock (0 when it does not). */
    holdCount(): Promise<number>;
    /** Remaining lease in ms; null when the lock is free, -1 when the key has no expiry. */
    remainingTtl(): Promise<number | null>;
    /** Deletes the lock whoever holds it and wakes a waiter; resolves whether it existed. */
    forceUnlock(): Promise<boolean>;
}
/** A hold returned by `client.acquire`; `await using` releases it at the end of the block. */
declare class HeldLock implements AsyncDisposable {
    /** The `Lock` handle that holds. */
    readonly lock: Lock;
    private constructor();
    /** Aborts when the watchdog loses the hold. */
    get signal(): AbortSignal;
    /** Releases the hold (see `Lock.release`). */
    release(): Promise<boolean>;
    /** Releases the hold at the end of an `await using` block (a lost hold rejects RLOCK_LOST). */
    [Symbol.asyncDispose](): Promise<void>;
}
/**
 * Several locks taken all-or-nothing (Redisson's RedissonMultiLock): any mix of kinds, from one
 * client or several (other servers included), under one wait, by one owner of its own. Owners
 * taking the same locks in different orders never deadlock. `release` frees every member and
 * its error names each one that failed.
 */
declare class MultiLock {
    #private;
    /** The member locks, in the order they are taken. */
    readonly locks: readonly Lock[];
    /** A multi-lock over `locks` (an array of at least one `Lock`), taken in this order. */
    constructor(locks: Lock[]);
    /**
     * Takes every member. Options: `waitMs` (reject RLOCK_NOT_ACQUIRED after it, nothing held),
     * `leaseMs` (each member's lease; default: the watchdog), `signal` (reject with its
     * AbortError; nothing held).
     */
    acquire(options?: MultiLockAcquireOptions): Promise<void>;
    /** Like `acquire`, resolving `false` instead of waiting past `waitMs` (default 0: one round). */
    tryAcquire(options?: MultiLockAcquireOptions): Promise<boolean>;
    /** Releases every member (all of them, also when some fail; the error names each failure). */
    release(): Promise<void>;
    /** Whether this multi-lock's owner holds every member. */
    isHeld(): Promise<boolean>;
    /** Runs `fn()` holding every member and releases afterwards; resolves what `fn` resolves. */
    withLock<T>(fn: () => T | Promise<T>, options?: MultiLockAcquireOptions): Promise<T>;
}
/**
 * A fenced lock (Redisson's RFencedLock), made by `client.fencedLock(name)`: a `Lock` whose
 * `acquire()` resolves a fencing token, strictly larger than any before for that name, and
 * whose `tryAcquire()` resolves the token or `false`.
 */
declare class FencedLock extends Lock {
    /** Always `'fenced'`. */
    readonly kind: 'fenced';
    /** Always `true`. */
    readonly fenced: true;
    /** Resolves the new fencing token once this handle holds the lock (re-entries take one too). */
    acquire(options?: AcquireOptions): Promise<number>;
    /** Resolves the new token, or false when `waitMs` (default 0: try once) ran out. */
    tryAcquire(options?: AcquireOptions): Promise<number | false>;
}
/**
 * Redisson's read-write lock: many readers, or one writer. Both sides are `Lock`s sharing one
 * owner. A reader asking for the write lock rejects RLOCK_WOULD_DEADLOCK at once (Redisson's
 * waits forever); nothing changes in Redis.
 */
declare class ReadWriteLock {
    #private;
    /** The lock name (its Redis key). */
    readonly name: string;
    private constructor();
    /** The read side: shared with other readers, excluded by another owner's write hold. */
    readLock(): Lock;
    /** The write side: excludes every other owner's reads and writes. */
    writeLock(): Lock;
}
/**
 * One lock name held by a majority of N independent servers (Redisson's RedissonRedLock;
 * antirez's algorithm), so it survives the loss of a minority of them: `new RedLock(name,
 * clients)` or `redLock(name, clients)` with an odd number (at least 3) of `Client`s, one per
 * server. Each server stores an ordinary lock in Redisson's layout. Each handle is its own
 * owner. Holds taken without `leaseMs` are renewed by each server's watchdog; `onLost` hears
 * when fewer than a majority are left.
 */
declare class RedLock {
    #private;
    /** The lock name (the key on every server). */
    readonly name: string;
    /** The clients, one per server. */
    readonly clients: readonly Client[];
    /** How many servers make a majority. */
    readonly quorum: number;
    /** A RedLock on `name` over `clients` (an odd number, at least 3, one per server). */
    constructor(name: string, clients: Client[]);
    /**
     * Takes the lock on a majority. Options: `waitMs` (reject RLOCK_NOT_ACQUIRED after it,
     * nothing held), `leaseMs` (each member's lease; default: the watchdogs), `signal` (reject
     * with its AbortError; nothing held). Rejects RLOCK_CONNECTION or RLOCK_TIMEOUT when more
     * than a minority of the servers failed. A `FencedRedLock` resolves the new token.
     */
    acquire(options?: MultiLockAcquireOptions): Promise<void | number>;
    /**
     * Like `acquire`, resolving `false` instead of waiting past `waitMs` (default 0: one round);
     * `true` when held (a `FencedRedLock`: the new token).
     */
    tryAcquire(options?: MultiLockAcquireOptions): Promise<boolean | number>;
    /**
     * Releases this handle's holds on every server; resolves `true` when the lock is now free.
     * Rejects RLOCK_LOST when fewer than a majority were still held, RLOCK_NOT_HELD when none.
     */
    release(): Promise<boolean>;
    /** Whether this handle holds the lock on a majority of the servers. */
    isHeld(): Promise<boolean>;
    /** Whether this handle's hold was lost (fewer than a majority left), until its release. */
    isLost(): Promise<boolean>;
    /** How long, in whole ms, local time still proves this handle's holds on a majority of the servers (0: fewer than a majority are proven). Sends nothing. */
    validForMs(): Promise<number>;
    /** A `FencedRedLock`'s latest token while this handle holds it; null otherwise. */
    token(): Promise<number | null>;
    /**
     * Calls `callback({ name, kind: 'red_lock', owner, reason, permitId: null })` when this
     * handle's hold is left with fewer than a majority; resolves a function that removes it.
     */
    onLost(callback: (event: LostEvent) => void): Promise<() => void>;
    /** Runs `fn()` holding the lock and releases afterwards; resolves what `fn` resolves. */
    withLock<T>(fn: () => T | Promise<T>, options?: MultiLockAcquireOptions): Promise<T>;
}
/**
 * A `RedLock` whose every acquire resolves a fencing token that strictly increases across
 * successful acquires, whichever majority granted them (a quorum register on each server's
 * `redisson_lock_token:{name}`). Tokens are numbers, exact up to 2^53.
 */
declare class FencedRedLock extends RedLock {
    /** A fenced RedLock on `name` over `clients` (an odd number, at least 3, one per server). */
    constructor(name: string, clients: Client[]);
    /** Takes the lock on a majority; resolves the new token. */
    acquire(options?: MultiLockAcquireOptions): Promise<number>;
    /** Resolves the new token, or false when `waitMs` (default 0) ran out. */
    tryAcquire(options?: MultiLockAcquireOptions): Promise<number | false>;
}
/** A `RedLock` on `name` over `clients` (an odd number, at least 3, one per server). */
declare function redLock(name: string, clients: Client[]): RedLock;
/** A `FencedRedLock` on `name` over `clients`. */
declare function fencedRedLock(name: string, clients: Client[]): FencedRedLock;
export { Lock, HeldLock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock };
