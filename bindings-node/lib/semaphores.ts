// The semaphores (counted permits; permits with ids and leases) and the count-down latch.
// The source is lib/semaphores.ts; lib/semaphores.js is tsc's output of it (`make node-ts`).

import type { NativeCountDownLatch, NativePermitSemaphore, NativeSemaphore } from '../index.js'
import {
  invalid, optionalMs, optionsObject, callNative, checkSignal, cancellable, orNone, acquiring, listenLost,
  permitsArg
} from './common.js'
import type { PermitAcquireOptions, PermitLostEvent, SemaphoreAcquireOptions } from './types.js'

/**
 * What the semaphore and the permit-expirable semaphore share: the count of free permits in the
 * key `name` (set, read, added to). `_native` is the native handle (a promise), `_call` calls it.
 */
class Permits<N extends NativeSemaphore | NativePermitSemaphore> {
  protected readonly _native: Promise<N>
  /** The semaphore name (the Redis key of its count of free permits). */
  readonly name: string

  protected constructor(nativePromise: Promise<N>, name: string) {
    this._native = nativePromise
    this.name = name
  }

  protected _call(method: string, ...args: unknown[]) {
    return callNative(this._native, method, ...args)
  }

  /** Sets the permits when the semaphore does not exist (`ttlMs`: it expires); resolves whether set. */
  async trySetPermits(permits: number, options?: { ttlMs?: number }): Promise<boolean> {
    const { ttlMs } = optionsObject(options)
    if (typeof permits !== 'number') throw invalid(`permits must be a number (got ${typeof permits})`)
    return this._call('trySetPermits', permits, optionalMs('ttlMs', ttlMs))
  }

  /** The free permits (0 when the semaphore does not exist). */
  async availablePermits(): Promise<number> {
    return this._call('availablePermits')
  }

  /** Adds `n` permits (negative removes them); resolves the new count of free ones. */
  async addPermits(n: number): Promise<number> {
    if (typeof n !== 'number') throw invalid(`n must be a number (got ${typeof n})`)
    return this._call('addPermits', n)
  }
}

/**
 * Redisson's semaphore: permits in the key `name` (a missing key is 0 permits, so set them
 * first with `trySetPermits`). Permits are not owned and do not come back when a holder dies.
 * Made by `client.semaphore(name)`.
 */
class Semaphore extends Permits<NativeSemaphore> {
  /** @internal The semaphore `name` on the native handle `nativePromise` resolves to. */
  static _new(nativePromise: Promise<NativeSemaphore>, name: string): Semaphore {
    return new Semaphore(nativePromise, name)
  }

  async #acquireWith(options: unknown, tryOnce: boolean): Promise<boolean> {
    const { permits, waitMs, signal } = optionsObject(options)
    const p = permitsArg(permits)
    const wait = optionalMs('waitMs', waitMs)
    checkSignal(signal)
    const n = await this._native
    const call = cancellable(signal, (token) => n.acquire(p, tryOnce && wait === undefined ? 0 : wait, token))
    return tryOnce ? orNone(call, false) : call
  }

  /**
   * Takes `permits` (default 1). Options: `permits`, `waitMs` (reject RLOCK_NOT_ACQUIRED after
   * it, nothing taken), `signal` (reject with its AbortError; nothing taken).
   */
  async acquire(options?: SemaphoreAcquireOptions): Promise<void> {
    await this.#acquireWith(options, false)
  }

  /** Like `acquire`, resolving `false` instead of waiting past `waitMs` (default 0: try once). */
  async tryAcquire(options?: SemaphoreAcquireOptions): Promise<boolean> {
    return this.#acquireWith(options, true)
  }

  /** Gives back `permits` (default 1); resolves the new count. */
  async release(permits?: number): Promise<number> {
    return this._call('release', permitsArg(permits))
  }

  /** Takes every available permit; resolves how many there were. */
  async drainPermits(): Promise<number> {
    return this._call('drainPermits')
  }
}

/**
 * Redisson's permit-expirable semaphore: each permit has an id (32 hex characters) that any
 * client, Java's included, may release, and a lease. Without `leaseMs` the watchdog renews the
 * permit while this client lives, so a crashed holder's permit comes back within the watchdog
 * timeout. Made by `client.permitExpirableSemaphore(name)`.
 */
class PermitExpirableSemaphore extends Permits<NativePermitSemaphore> {
  /** @internal The semaphore `name` on the native handle `nativePromise` resolves to. */
  static _new(nativePromise: Promise<NativePermitSemaphore>, name: string): PermitExpirableSemaphore {
    return new PermitExpirableSemaphore(nativePromise, name)
  }

  /**
   * Takes a permit and resolves its id. Options: `waitMs` (reject RLOCK_NOT_ACQUIRED after it),
   * `leaseMs` (the permit expires then; absent: the watchdog renews it), `signal` (reject with
   * its AbortError; nothing taken).
   */
  async acquire(options?: PermitAcquireOptions): Promise<string> {
    return acquiring(this._native, options, false)
  }

  /** Like `acquire`, resolving `null` instead of waiting past `waitMs` (default 0: try once). */
  async tryAcquire(options?: PermitAcquireOptions): Promise<string | null> {
    return acquiring(this._native, options, true)
  }

  /** Releases permit `permitId`; rejects RLOCK_NOT_HELD when it is not held, RLOCK_LOST when the watchdog lost it. */
  async release(permitId: string): Promise<void> {
    if (typeof permitId !== 'string') throw invalid(`permitId must be a string (got ${typeof permitId})`)
    return this._call('release', permitId)
  }

  /** Makes the held permit expire `leaseMs` from now (absent or null: the watchdog renews it). */
  async updateLease(permitId: string, leaseMs?: number | null): Promise<void> {
    if (typeof permitId !== 'string') throw invalid(`permitId must be a string (got ${typeof permitId})`)
    return this._call('updateLease', permitId, optionalMs('leaseMs', leaseMs))
  }

  /** The held permits (neither released nor expired). */
  async acquiredPermits(): Promise<number> {
    return this._call('acquiredPermits')
  }

  /** Whether this client's watchdog lost the permit (until it is released). */
  async isLost(permitId: string): Promise<boolean> {
    return (await this._native).isLost(String(permitId))
  }

  /** How long, in whole ms, local time still proves the permit (0: not held by this client, lost, or in doubt). Sends nothing. */
  async validForMs(permitId: string): Promise<number> {
    return (await this._native).validForMs(String(permitId))
  }

  /**
   * Calls `callback({ name, kind, owner, reason, permitId })` (`kind` 'permit') when this
   * client's watchdog loses a permit of this semaphore. Resolves a function that removes the
   * listener.
   */
  async onLost(callback: (event: PermitLostEvent) => void): Promise<() => void> {
    return listenLost(this._native, callback)
  }

  /**
   * Runs `fn(permitId)` holding a permit (options as `acquire`) and releases it afterwards, also
   * when `fn` throws (its error wins over a failed release). Resolves what `fn` resolves.
   */
  async withPermit<T>(fn: (permitId: string) => T | Promise<T>, options?: PermitAcquireOptions): Promise<T> {
    if (typeof fn !== 'function') throw invalid('withPermit needs a function')
    const permitId = await this.acquire(options)
    let result: T
    try {
      result = await fn(permitId)
    } catch (e) {
      await this.release(permitId).catch(() => {})
      throw e
    }
    await this.release(permitId)
    return result
  }
}

/**
 * Redisson's count-down latch: a count in the key `name`, open at 0 (also while the key is
 * missing). Anyone counts down; every waiter, Java's included, wakes at 0. Made by
 * `client.countDownLatch(name)`.
 */
class CountDownLatch {
  #native: Promise<NativeCountDownLatch>
  /** The latch name (its Redis key). */
  readonly name: string

  private constructor(nativePromise: Promise<NativeCountDownLatch>, name: string) {
    this.#native = nativePromise
    this.name = name
  }

  /** @internal The latch `name` on the native handle `nativePromise` resolves to. */
  static _new(nativePromise: Promise<NativeCountDownLatch>, name: string): CountDownLatch {
    return new CountDownLatch(nativePromise, name)
  }

  /** Sets the count (a whole number >= 0) when the latch does not exist; resolves whether set. */
  async trySetCount(count: number): Promise<boolean> {
    if (typeof count !== 'number') throw invalid(`count must be a number (got ${typeof count})`)
    return callNative(this.#native, 'trySetCount', count)
  }

  /** Counts down by one; at 0 the latch opens and every waiter wakes. */
  async countDown(): Promise<void> {
    return callNative(this.#native, 'countDown')
  }

  /** The current count (0 when open). */
  async count(): Promise<number> {
    return callNative(this.#native, 'count')
  }

  /**
   * Resolves `true` once the latch is open, `false` when `waitMs` ran out first (default: no
   * limit). `signal` rejects with its AbortError.
   */
  async wait(options?: { waitMs?: number; signal?: AbortSignal }): Promise<boolean> {
    const { waitMs, signal } = optionsObject(options)
    const wait = optionalMs('waitMs', waitMs)
    checkSignal(signal)
    const n = await this.#native
    return cancellable(signal, (token) => n.wait(wait, token))
  }

  /** Deletes the latch whatever its count; resolves whether it existed. */
  async delete(): Promise<boolean> {
    return callNative(this.#native, 'delete')
  }
}

export { Semaphore, PermitExpirableSemaphore, CountDownLatch }
