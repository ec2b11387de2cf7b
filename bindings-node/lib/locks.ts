// The locks: the reentrant lock and its family (fenced, fair, read-write sides), the hold
// `client.acquire` returns, the multi-lock and RedLock.
// The source is lib/locks.ts; lib/locks.js is tsc's output of it (`make node-ts`).

import type { NativeClient, NativeLock, NativeMultiLock, NativeRedLock } from '../index.js'
import {
  native, RLockError, codes, mapError, invalid, callNative, acquiring, holding, lostListeners, listenLost,
  nativeOfLock, nativeOfClient
} from './common.js'
import type { AcquireOptions, LostEvent, MultiLockAcquireOptions } from './types.js'
import type { Client } from './client.js'

/** Which lock of the family a `Lock` handle is. */
type LockKind = NativeLock['kind']

/**
 * A handle on one lock; each handle is its own owner. Made by `client.lock(name)`,
 * `client.fencedLock(name)`, `client.fairLock(name)` or a `ReadWriteLock`'s sides.
 */
class Lock {
  #native: Promise<NativeLock>
  #lost: AbortController | null = null
  #listening = false
  /** The lock name (its Redis key). */
  readonly name: string
  /**
   * Which lock of the family: 'lock', 'fenced', 'read', 'write', 'fair', 'spin',
   * 'non_reentrant' or 'non_reentrant_fair'.
   */
  readonly kind: LockKind
  /** Whether acquires take fencing tokens (a `client.fencedLock`). */
  readonly fenced: boolean

  /** Made by a `Client` (`lock`, `fencedLock`, `fairLock`, `spinLock`, `nonReentrantLock`, `nonReentrantFairLock`) or a `ReadWriteLock`, not directly. */
  protected constructor(nativePromise: Promise<NativeLock>, name: string, kind: LockKind = 'lock') {
    this.#native = nativePromise
    nativeOfLock.set(this, nativePromise)
    this.name = name
    this.kind = kind
    this.fenced = kind === 'fenced'
  }

  /** @internal A handle of this class (a `FencedLock` when called on it) on `nativePromise`. */
  static _new(nativePromise: Promise<NativeLock>, name: string, kind: LockKind = 'lock'): Lock {
    return new this(nativePromise, name, kind)
  }

  /**
   * Aborts when the watchdog loses this handle's hold; a new hold after a loss gets a fresh
   * signal. Core routes the loss to this handle; it listens from the first time this is read.
   */
  get lostSignal(): AbortSignal {
    if (this.#lost === null) this.#lost = new AbortController()
    if (!this.#listening) this.#listen()
    return this.#lost.signal
  }

  #listen(): void {
    this.#listening = true
    this.#native.then((n) => {
      const id = n.onLost(() => this.#abort())
      lostListeners.register(this, { n, id })
      if (n.isLost()) this.#abort()
    }, () => {})
  }

  #abort(): void {
    if (this.#lost && !this.#lost.signal.aborted) {
      this.#lost.abort(new RLockError(codes.LOST, `the hold of lock '${this.name}' was lost (lease expired or the lock was deleted)`))
    }
  }

  // The native acquire's token (null: not fenced); `false` when `tryOnce` and the wait (0 by
  // default) ran out.
  async #acquireWith(tryOnce: boolean, options: unknown): Promise<number | null | false> {
    const r = await acquiring(this.#native, options, tryOnce, false)
    // A new hold after a lost one gets a fresh signal: an aborted signal cannot be reset.
    if (r !== false && this.#lost?.signal.aborted) this.#lost = new AbortController()
    return r
  }

  /**
   * Resolves once this handle holds the lock (re-entering when it already does). Options:
   * `waitMs` (reject with RLOCK_NOT_ACQUIRED after it), `leaseMs` (fixed lease; default: the
   * watchdog renews until release), `signal` (reject with its AbortError when it aborts).
   */
  async acquire(options?: AcquireOptions): Promise<void | number> {
    // A fenced lock's token comes in the acquire's own reply (never a second read).
    const token = await this.#acquireWith(false, options)
    if (this.fenced) return token as number
  }

  /**
   * Like `acquire`, but resolves `false` instead of waiting past `waitMs` (default 0); `true`
   * when held (a fenced lock: the new fencing token).
   */
  async tryAcquire(options?: AcquireOptions): Promise<boolean | number> {
    const token = await this.#acquireWith(true, options)
    if (token === false) return false
    return this.fenced ? token as number : true
  }

  /** A fenced lock's latest token while this handle holds it; null otherwise. */
  async token(): Promise<number | null> {
    return (await this.#native).token()
  }

  /** Whether the watchdog lost this handle's hold (until its next release). */
  async isLost(): Promise<boolean> {
    return (await this.#native).isLost()
  }

  /**
   * How long, in whole ms, local time still proves this handle's hold: until the send of its
   * last confirmed renewal (or its acquire), plus the lease, minus the lease-doubt margin. 0
   * when it does not hold the lock, or the hold is lost or in doubt (which marks it lost at
   * once). Check it before each write when the storage takes no fencing token. Sends nothing.
   */
  async validForMs(): Promise<number> {
    return (await this.#native).validForMs()
  }

  /**
   * Calls `callback({ name, kind, owner, reason, permitId })` (`permitId` null) when the
   * watchdog loses this handle's hold; resolves a function that removes the listener. Reasons:
   * 'gone', 'lease_doubt', 'lease_ending'.
   */
  async onLost(callback: (event: LostEvent) => void): Promise<() => void> {
    return listenLost(this.#native, callback)
  }

  #call(method: string) {
    return callNative(this.#native, method)
  }

  /**
   * Releases one hold level; resolves `true` when the lock is now free, `false` when this
   * handle still holds it (it had re-entered), or when only levels of acquires whose reply was
   * lost are left (nobody holds those: they are not renewed and end with their lease). Rejects
   * RLOCK_NOT_HELD or RLOCK_LOST.
   */
  async release(): Promise<boolean> {
    return this.#call('release')
  }

  /** Whether anyone holds the lock. */
  async isLocked(): Promise<boolean> {
    return this.#call('isLocked')
  }

  /** Whether this handle holds the lock. */
  async isHeld(): Promise<boolean> {
    return this.#call('isHeld')
  }

  /** How many times this handle holds the lock (0 when it does not). */
  async holdCount(): Promise<number> {
    return this.#call('holdCount')
  }

  /** Remaining lease in ms; null when the lock is free, -1 when the key has no expiry. */
  async remainingTtl(): Promise<number | null> {
    return this.#call('remainingTtl')
  }

  /** Deletes the lock whoever holds it and wakes a waiter; resolves whether it existed. */
  async forceUnlock(): Promise<boolean> {
    return this.#call('forceUnlock')
  }
}

/** A hold returned by `client.acquire`; `await using` releases it at the end of the block. */
class HeldLock implements AsyncDisposable {
  /** The `Lock` handle that holds. */
  readonly lock: Lock

  private constructor(lock: Lock) {
    this.lock = lock
  }

  /** @internal The hold of `lock`, which holds. */
  static _new(lock: Lock): HeldLock {
    return new HeldLock(lock)
  }

  /** Aborts when the watchdog loses the hold. */
  get signal(): AbortSignal {
    return this.lock.lostSignal
  }

  /** Releases the hold (see `Lock.release`). */
  async release(): Promise<boolean> {
    return this.lock.release()
  }

  /** Releases the hold at the end of an `await using` block (a lost hold rejects RLOCK_LOST). */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.lock.release()
  }
}

/**
 * Several locks taken all-or-nothing (Redisson's RedissonMultiLock): any mix of kinds, from one
 * client or several (other servers included), under one wait, by one owner of its own. Owners
 * taking the same locks in different orders never deadlock. `release` frees every member and
 * its error names each one that failed.
 */
class MultiLock {
  #native: Promise<NativeMultiLock>
  /** The member locks, in the order they are taken. */
  readonly locks: readonly Lock[]

  /** A multi-lock over `locks` (an array of at least one `Lock`), taken in this order. */
  constructor(locks: Lock[]) {
    if (!Array.isArray(locks) || locks.length === 0 || !locks.every((l) => nativeOfLock.has(l))) {
      throw invalid('a multi-lock needs an array of at least one Lock')
    }
    this.locks = Object.freeze([...locks])
    this.#native = Promise.all(locks.map((l) => nativeOfLock.get(l) as Promise<NativeLock>)).then((ns) => {
      try {
        return native.multiLock(ns)
      } catch (e) {
        throw mapError(e)
      }
    })
    this.#native.catch(() => {})
  }

  /**
   * Takes every member. Options: `waitMs` (reject RLOCK_NOT_ACQUIRED after it, nothing held),
   * `leaseMs` (each member's lease; default: the watchdog), `signal` (reject with its
   * AbortError; nothing held).
   */
  async acquire(options?: MultiLockAcquireOptions): Promise<void> {
    await acquiring(this.#native, options, false)
  }

  /** Like `acquire`, resolving `false` instead of waiting past `waitMs` (default 0: one round). */
  async tryAcquire(options?: MultiLockAcquireOptions): Promise<boolean> {
    return (await acquiring(this.#native, options, true)) ?? false
  }

  /** Releases every member (all of them, also when some fail; the error names each failure). */
  async release(): Promise<void> {
    return callNative(this.#native, 'release')
  }

  /** Whether this multi-lock's owner holds every member. */
  async isHeld(): Promise<boolean> {
    return callNative(this.#native, 'isHeld')
  }

  /** Runs `fn()` holding every member and releases afterwards; resolves what `fn` resolves. */
  async withLock<T>(fn: () => T | Promise<T>, options?: MultiLockAcquireOptions): Promise<T> {
    return holding(this, fn, options)
  }
}

/**
 * A fenced lock (Redisson's RFencedLock), made by `client.fencedLock(name)`: a `Lock` whose
 * `acquire()` resolves a fencing token, strictly larger than any before for that name, and
 * whose `tryAcquire()` resolves the token or `false`.
 */
class FencedLock extends Lock {
  /** Always `'fenced'`. */
  declare readonly kind: 'fenced'
  /** Always `true`. */
  declare readonly fenced: true

  /** Resolves the new fencing token once this handle holds the lock (re-entries take one too). */
  override acquire(options?: AcquireOptions): Promise<number> {
    return super.acquire(options) as Promise<number>
  }

  /** Resolves the new token, or false when `waitMs` (default 0: try once) ran out. */
  override tryAcquire(options?: AcquireOptions): Promise<number | false> {
    return super.tryAcquire(options) as Promise<number | false>
  }
}

/**
 * Redisson's read-write lock: many readers, or one writer. Both sides are `Lock`s sharing one
 * owner. A reader asking for the write lock rejects RLOCK_WOULD_DEADLOCK at once (Redisson's
 * waits forever); nothing changes in Redis.
 */
class ReadWriteLock {
  #read: Lock
  #write: Lock
  /** The lock name (its Redis key). */
  readonly name: string

  private constructor(name: string, sides: Promise<NativeLock[]>) {
    this.name = name
    this.#read = Lock._new(sides.then((s) => s[0]), name, 'read')
    this.#write = Lock._new(sides.then((s) => s[1]), name, 'write')
  }

  /** @internal The read-write lock `name` whose two sides `sides` resolves to. */
  static _new(name: string, sides: Promise<NativeLock[]>): ReadWriteLock {
    return new ReadWriteLock(name, sides)
  }

  /** The read side: shared with other readers, excluded by another owner's write hold. */
  readLock(): Lock {
    return this.#read
  }

  /** The write side: excludes every other owner's reads and writes. */
  writeLock(): Lock {
    return this.#write
  }
}

/**
 * One lock name held by a majority of N independent servers (Redisson's RedissonRedLock;
 * antirez's algorithm), so it survives the loss of a minority of them: `new RedLock(name,
 * clients)` or `redLock(name, clients)` with an odd number (at least 3) of `Client`s, one per
 * server. Each server stores an ordinary lock in Redisson's layout. Each handle is its own
 * owner. Holds taken without `leaseMs` are renewed by each server's watchdog; `onLost` hears
 * when fewer than a majority are left.
 */
class RedLock {
  #native: Promise<NativeRedLock>
  #fenced: boolean
  /** The lock name (the key on every server). */
  readonly name: string
  /** The clients, one per server. */
  readonly clients: readonly Client[]
  /** How many servers make a majority. */
  readonly quorum: number

  /** A RedLock on `name` over `clients` (an odd number, at least 3, one per server). */
  constructor(name: string, clients: Client[])
  /** @internal A `FencedRedLock` when `fenced`. */
  constructor(name: string, clients: Client[], fenced: boolean)
  constructor(name: string, clients: Client[], fenced = false) {
    if (!Array.isArray(clients) || !clients.every((c) => nativeOfClient.has(c))) {
      throw invalid('a RedLock needs an array of Clients (an odd number, at least 3)')
    }
    if (typeof name !== 'string') throw invalid(`lock name must be a string (got ${typeof name})`)
    this.name = name
    this.clients = Object.freeze([...clients])
    this.quorum = native.redLockQuorum(clients.length)
    this.#fenced = fenced
    this.#native = Promise.all(clients.map((c) => nativeOfClient.get(c) as Promise<NativeClient>)).then((ns) => {
      try {
        return native.redLock(name, ns, fenced)
      } catch (e) {
        throw mapError(e)
      }
    })
    this.#native.catch(() => {})
  }

  /**
   * Takes the lock on a majority. Options: `waitMs` (reject RLOCK_NOT_ACQUIRED after it,
   * nothing held), `leaseMs` (each member's lease; default: the watchdogs), `signal` (reject
   * with its AbortError; nothing held). Rejects RLOCK_CONNECTION or RLOCK_TIMEOUT when more
   * than a minority of the servers failed. A `FencedRedLock` resolves the new token.
   */
  async acquire(options?: MultiLockAcquireOptions): Promise<void | number> {
    const token = await acquiring(this.#native, options, false)
    if (this.#fenced) return token
  }

  /**
   * Like `acquire`, resolving `false` instead of waiting past `waitMs` (default 0: one round);
   * `true` when held (a `FencedRedLock`: the new token).
   */
  async tryAcquire(options?: MultiLockAcquireOptions): Promise<boolean | number> {
    const token = await acquiring(this.#native, options, true)
    if (token === null) return false
    return this.#fenced ? token : true
  }

  /**
   * Releases this handle's holds on every server; resolves `true` when the lock is now free.
   * Rejects RLOCK_LOST when fewer than a majority were still held, RLOCK_NOT_HELD when none.
   */
  async release(): Promise<boolean> {
    return callNative(this.#native, 'release')
  }

  /** Whether this handle holds the lock on a majority of the servers. */
  async isHeld(): Promise<boolean> {
    return callNative(this.#native, 'isHeld')
  }

  /** Whether this handle's hold was lost (fewer than a majority left), until its release. */
  async isLost(): Promise<boolean> {
    return (await this.#native).isLost()
  }

  /** How long, in whole ms, local time still proves this handle's holds on a majority of the servers (0: fewer than a majority are proven). Sends nothing. */
  async validForMs(): Promise<number> {
    return (await this.#native).validForMs()
  }

  /** A `FencedRedLock`'s latest token while this handle holds it; null otherwise. */
  async token(): Promise<number | null> {
    return (await this.#native).token()
  }

  /**
   * Calls `callback({ name, kind: 'red_lock', owner, reason, permitId: null })` when this
   * handle's hold is left with fewer than a majority; resolves a function that removes it.
   */
  async onLost(callback: (event: LostEvent) => void): Promise<() => void> {
    return listenLost(this.#native, callback)
  }

  /** Runs `fn()` holding the lock and releases afterwards; resolves what `fn` resolves. */
  async withLock<T>(fn: () => T | Promise<T>, options?: MultiLockAcquireOptions): Promise<T> {
    return holding(this, fn, options)
  }
}

/**
 * A `RedLock` whose every acquire resolves a fencing token that strictly increases across
 * successful acquires, whichever majority granted them (a quorum register on each server's
 * `redisson_lock_token:{name}`). Tokens are numbers, exact up to 2^53.
 */
class FencedRedLock extends RedLock {
  /** A fenced RedLock on `name` over `clients` (an odd number, at least 3, one per server). */
  constructor(name: string, clients: Client[]) {
    super(name, clients, true)
  }

  /** Takes the lock on a majority; resolves the new token. */
  override acquire(options?: MultiLockAcquireOptions): Promise<number> {
    return super.acquire(options) as Promise<number>
  }

  /** Resolves the new token, or false when `waitMs` (default 0) ran out. */
  override tryAcquire(options?: MultiLockAcquireOptions): Promise<number | false> {
    return super.tryAcquire(options) as Promise<number | false>
  }
}

/** A `RedLock` on `name` over `clients` (an odd number, at least 3, one per server). */
function redLock(name: string, clients: Client[]): RedLock {
  return new RedLock(name, clients)
}

/** A `FencedRedLock` on `name` over `clients`. */
function fencedRedLock(name: string, clients: Client[]): FencedRedLock {
  return new FencedRedLock(name, clients)
}

export {
  Lock, HeldLock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock
}
