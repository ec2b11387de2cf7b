'use strict'
// The public API of the `rlock` package: a thin layer over the generated napi binding
// (index.js). It turns option objects into arguments, AbortSignals into cancel tokens and
// native errors into `RLockError`s with a `.code`. Every lock decision is made by the Rust core.

const native = require('./index.js')

// Which runtime loaded us: off Node (Bun, Deno), the addon keeps calls off libuv's poll handles.
const runtime = process.versions.bun ? 'bun' : process.versions.deno ? 'deno' : 'node'
native.setRuntime(runtime)

/** An rlock failure; `code` is one of the `RLOCK_*` strings listed in `codes`. */
class RLockError extends Error {
  constructor(code, message, options) {
    super(message, options)
    this.name = 'RLockError'
    this.code = code
  }
}

// The codes by short name (`codes.NOT_HELD === 'RLOCK_NOT_HELD'`), from core's one list.
const codes = Object.freeze(Object.fromEntries(native.errorCodes().map((c) => [c.slice('RLOCK_'.length), c])))


// The native layer rejects and throws errors whose `code` is core's code (`RLOCK_...`); they
// become RLockErrors by that code alone. Anything else (napi's own argument errors) passes.
function mapError(e) {
  return e instanceof Error && !(e instanceof RLockError) && typeof e.code === 'string' && e.code.startsWith('RLOCK_')
    ? new RLockError(e.code, e.message)
    : e
}

function invalid(message) {
  return new RLockError(codes.INVALID_ARGUMENT, message)
}

// A rejected promise that is only reported when someone awaits it (a Client whose URL is bad
// must not crash the process with an unhandled rejection before it is used).
function quietReject(err) {
  const p = Promise.reject(err)
  p.catch(() => {})
  return p
}

function optionalMs(what, v) {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number') throw invalid(`${what} must be a number of milliseconds (got ${typeof v})`)
  return v
}

function optionsObject(options) {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object') throw invalid(`options must be an object (got ${typeof options})`)
  return options
}

function abortReason(signal) {
  return signal && signal.aborted && signal.reason !== undefined
    ? signal.reason
    : new DOMException('the acquire was aborted', 'AbortError')
}

// The cancel token of every acquire made without an AbortSignal; `cancel()` is never called on it.
const NEVER_CANCELLED = new native.CancelToken()

// Calls `method` of the native object `nativePromise` resolves to, with its errors as RLockErrors.
async function callNative(nativePromise, method, ...args) {
  const n = await nativePromise
  try {
    return await n[method](...args)
  } catch (e) {
    throw mapError(e)
  }
}

function checkSignal(signal) {
  if (signal !== undefined && signal !== null && !(signal instanceof AbortSignal)) {
    throw invalid('signal must be an AbortSignal')
  }
}

// Runs the native call `run(token)` with a cancel token that `signal` cancels; an aborted call
// rejects with the signal's reason, other errors with their RLockError.
async function cancellable(signal, run) {
  if (signal && signal.aborted) throw abortReason(signal)
  // Without a signal nothing can cancel the call: share one token that is never cancelled
  // (a native object per call cost measurable CPU per acquire).
  const token = signal ? new native.CancelToken() : NEVER_CANCELLED
  const onAbort = () => token.cancel()
  if (signal) signal.addEventListener('abort', onAbort, { once: true })
  try {
    return await run(token)
  } catch (e) {
    if (e instanceof Error && e.code === 'RLOCK_ABORTED') throw abortReason(signal)
    throw mapError(e)
  } finally {
    if (signal) signal.removeEventListener('abort', onAbort)
  }
}

// A native acquire taking (wait, lease, orNone, token) (multi-lock, RedLock, permit-expirable
// semaphore): core rejects RLOCK_NOT_ACQUIRED when the wait runs out, or resolves its "none"
// with `orNone`, whose default wait is 0 (one round).
async function acquiring(nativePromise, options, orNone) {
  const { waitMs, leaseMs, signal } = optionsObject(options)
  const wait = optionalMs('waitMs', waitMs)
  const lease = optionalMs('leaseMs', leaseMs)
  checkSignal(signal)
  const n = await nativePromise
  return cancellable(signal, (token) => n.acquire(orNone && wait === undefined ? 0 : wait, lease, orNone, token))
}

// withLock: runs `fn()` while `holder` holds and releases afterwards, also when `fn` throws
// (then `fn`'s error wins over a failed release).
async function holding(holder, fn, options) {
  if (typeof fn !== 'function') throw invalid('withLock needs a function')
  await holder.acquire(options)
  let result
  try {
    result = await fn()
  } catch (e) {
    await holder.release().catch(() => {})
    throw e
  }
  await holder.release()
  return result
}

// A collected handle's lost-hold listener is removed from core (dropping its threadsafe function).
const lostListeners = new FinalizationRegistry(({ n, id }) => n.removeLostListener(id))

// Adds `callback` as a lost-hold listener of native handle `n` (a lock, a permit semaphore or
// a client): it gets one event object with the fields every surface has. Returns the function
// that removes it.
function listenLost(n, callback) {
  if (typeof callback !== 'function') throw invalid('onLost needs a function')
  const id = n.onLost((name, kind, owner, reason, permitId) => callback({ name, kind, owner, reason, permitId }))
  return () => n.removeLostListener(id)
}

/**
 * A handle on one lock; each handle is its own owner. Made by `client.lock(name)`,
 * `client.fencedLock(name)`, `client.fairLock(name)` or a `ReadWriteLock`'s sides.
 */
// Each Lock's native handle (a promise), for the multi-locks made over it.
const nativeOfLock = new WeakMap()
// Each Client's native client (a promise), for the RedLocks made over several.
const nativeOfClient = new WeakMap()

class Lock {
  #native
  #lost = null
  #listening = false

  constructor(nativePromise, name, kind = 'lock') {
    this.#native = nativePromise
    nativeOfLock.set(this, nativePromise)
    /** The lock name (its Redis key). */
    this.name = name
    /** Which lock of the family: 'lock', 'fenced', 'read', 'write' or 'fair'. */
    this.kind = kind
    /** Whether acquires take fencing tokens (a `client.fencedLock`). */
    this.fenced = kind === 'fenced'
  }

  /**
   * Aborts when the watchdog loses this handle's hold; a new hold after a loss gets a fresh
   * signal. Core routes the loss to this handle; it listens from the first time this is read.
   */
  get lostSignal() {
    if (this.#lost === null) this.#lost = new AbortController()
    if (!this.#listening) this.#listen()
    return this.#lost.signal
  }

  #listen() {
    this.#listening = true
    this.#native.then((n) => {
      const id = n.onLost(() => this.#abort())
      lostListeners.register(this, { n, id })
      if (n.isLost()) this.#abort()
    }, () => {})
  }

  #abort() {
    if (this.#lost && !this.#lost.signal.aborted) {
      this.#lost.abort(new RLockError(codes.LOST, `the hold of lock '${this.name}' was lost (lease expired or the lock was deleted)`))
    }
  }

  async #acquireWith(method, options) {
    const { waitMs, leaseMs, signal } = optionsObject(options)
    const wait = optionalMs('waitMs', waitMs)
    const lease = optionalMs('leaseMs', leaseMs)
    checkSignal(signal)
    const n = await this.#native
    const r = await cancellable(signal, (token) => n[method](wait, lease, token))
    // A new hold after a lost one gets a fresh signal: an aborted signal cannot be reset.
    if ((method === 'acquire' || r !== null) && this.#lost?.signal.aborted) this.#lost = new AbortController()
    return r
  }

  /**
   * Resolves once this handle holds the lock (re-entering when it already does). Options:
   * `waitMs` (reject with RLOCK_NOT_ACQUIRED after it), `leaseMs` (fixed lease; default: the
   * watchdog renews until release), `signal` (reject with its AbortError when it aborts).
   */
  async acquire(options) {
    // A fenced lock's token comes in the acquire's own reply (never a second read).
    const token = await this.#acquireWith('acquire', options)
    if (this.fenced) return token
  }

  /**
   * Like `acquire`, but resolves `false` instead of waiting past `waitMs` (default 0); `true`
   * when held (a fenced lock: the new fencing token).
   */
  async tryAcquire(options) {
    const token = await this.#acquireWith('tryAcquire', options)
    if (token === null) return false
    return this.fenced ? token : true
  }

  /** A fenced lock's latest token while this handle holds it; null otherwise. */
  async token() {
    return (await this.#native).token()
  }

  /** Whether the watchdog lost this handle's hold (until its next release). */
  async isLost() {
    return (await this.#native).isLost()
  }

  /**
   * Calls `callback({ name, kind, owner, reason, permitId })` (`permitId` null) when the
   * watchdog loses this handle's hold; resolves a function that removes the listener. Reasons:
   * 'gone', 'lease_doubt', 'lease_ending'.
   */
  async onLost(callback) {
    if (typeof callback !== 'function') throw invalid('onLost needs a function')
    return listenLost(await this.#native, callback)
  }

  #call(method) {
    return callNative(this.#native, method)
  }

  /**
   * Releases one hold level; resolves `true` when the lock is now free, `false` when this
   * handle still holds it (it had re-entered). Rejects RLOCK_NOT_HELD or RLOCK_LOST.
   */
  async release() {
    return this.#call('release')
  }

  /** Whether anyone holds the lock. */
  async isLocked() {
    return this.#call('isLocked')
  }

  /** Whether this handle holds the lock. */
  async isHeld() {
    return this.#call('isHeld')
  }

  /** How many times this handle holds the lock (0 when it does not). */
  async holdCount() {
    return this.#call('holdCount')
  }

  /** Remaining lease in ms; null when the lock is free, -1 when the key has no expiry. */
  async remainingTtl() {
    return this.#call('remainingTtl')
  }

  /** Deletes the lock whoever holds it and wakes a waiter; resolves whether it existed. */
  async forceUnlock() {
    return this.#call('forceUnlock')
  }
}

/** A hold returned by `client.acquire`; `await using` releases it at the end of the block. */
class HeldLock {
  constructor(lock) {
    /** The `Lock` handle that holds. */
    this.lock = lock
  }

  /** Aborts when the watchdog loses the hold. */
  get signal() {
    return this.lock.lostSignal
  }

  /** Releases the hold (see `Lock.release`). */
  async release() {
    return this.lock.release()
  }

  async [Symbol.asyncDispose]() {
    await this.lock.release()
  }
}

function permitsArg(permits) {
  if (permits === undefined || permits === null) return 1
  if (typeof permits !== 'number') throw invalid(`permits must be a number (got ${typeof permits})`)
  return permits
}

// What the semaphore and the permit-expirable semaphore share: the count of free permits in the
// key `name` (set, read, added to). `_native` is the native handle (a promise), `_call` calls it.
class Permits {
  constructor(nativePromise, name) {
    this._native = nativePromise
    /** The semaphore name (the Redis key of its count of free permits). */
    this.name = name
  }

  _call(method, ...args) {
    return callNative(this._native, method, ...args)
  }

  /** Sets the permits when the semaphore does not exist (`ttlMs`: it expires); resolves whether set. */
  async trySetPermits(permits, options) {
    const { ttlMs } = optionsObject(options)
    if (typeof permits !== 'number') throw invalid(`permits must be a number (got ${typeof permits})`)
    return this._call('trySetPermits', permits, optionalMs('ttlMs', ttlMs))
  }

  /** The free permits (0 when the semaphore does not exist). */
  async availablePermits() {
    return this._call('availablePermits')
  }

  /** Adds `n` permits (negative removes them); resolves the new count of free ones. */
  async addPermits(n) {
    if (typeof n !== 'number') throw invalid(`n must be a number (got ${typeof n})`)
    return this._call('addPermits', n)
  }
}

/**
 * Redisson's semaphore: permits in the key `name` (a missing key is 0 permits, so set them
 * first with `trySetPermits`). Permits are not owned and do not come back when a holder dies.
 * Made by `client.semaphore(name)`.
 */
class Semaphore extends Permits {
  async #acquireWith(options, orFalse) {
    const { permits, waitMs, signal } = optionsObject(options)
    const p = permitsArg(permits)
    const wait = optionalMs('waitMs', waitMs)
    checkSignal(signal)
    const n = await this._native
    return cancellable(signal, (token) => n.acquire(p, orFalse && wait === undefined ? 0 : wait, orFalse, token))
  }

  /**
   * Takes `permits` (default 1). Options: `permits`, `waitMs` (reject RLOCK_NOT_ACQUIRED after
   * it, nothing taken), `signal` (reject with its AbortError; nothing taken).
   */
  async acquire(options) {
    await this.#acquireWith(options, false)
  }

  /** Like `acquire`, resolving `false` instead of waiting past `waitMs` (default 0: try once). */
  async tryAcquire(options) {
    return this.#acquireWith(options, true)
  }

  /** Gives back `permits` (default 1); resolves the new count. */
  async release(permits) {
    return this._call('release', permitsArg(permits))
  }

  /** Takes every available permit; resolves how many there were. */
  async drainPermits() {
    return this._call('drainPermits')
  }
}

/**
 * Redisson's permit-expirable semaphore: each permit has an id (32 hex characters) that any
 * client, Java's included, may release, and a lease. Without `leaseMs` the watchdog renews the
 * permit while this client lives, so a crashed holder's permit comes back within the watchdog
 * timeout. Made by `client.permitExpirableSemaphore(name)`.
 */
class PermitExpirableSemaphore extends Permits {
  /**
   * Takes a permit and resolves its id. Options: `waitMs` (reject RLOCK_NOT_ACQUIRED after it),
   * `leaseMs` (the permit expires then; absent: the watchdog renews it), `signal` (reject with
   * its AbortError; nothing taken).
   */
  async acquire(options) {
    return acquiring(this._native, options, false)
  }

  /** Like `acquire`, resolving `null` instead of waiting past `waitMs` (default 0: try once). */
  async tryAcquire(options) {
    return acquiring(this._native, options, true)
  }

  /** Releases permit `permitId`; rejects RLOCK_NOT_HELD when it is not held, RLOCK_LOST when the watchdog lost it. */
  async release(permitId) {
    if (typeof permitId !== 'string') throw invalid(`permitId must be a string (got ${typeof permitId})`)
    return this._call('release', permitId)
  }

  /** Makes the held permit expire `leaseMs` from now (absent or null: the watchdog renews it). */
  async updateLease(permitId, leaseMs) {
    if (typeof permitId !== 'string') throw invalid(`permitId must be a string (got ${typeof permitId})`)
    return this._call('updateLease', permitId, optionalMs('leaseMs', leaseMs))
  }

  /** The held permits (neither released nor expired). */
  async acquiredPermits() {
    return this._call('acquiredPermits')
  }

  /** Whether this client's watchdog lost the permit (until it is released). */
  async isLost(permitId) {
    return (await this._native).isLost(String(permitId))
  }

  /**
   * Calls `callback({ name, kind, owner, reason, permitId })` (`kind` 'permit') when this
   * client's watchdog loses a permit of this semaphore. Resolves a function that removes the
   * listener.
   */
  async onLost(callback) {
    if (typeof callback !== 'function') throw invalid('onLost needs a function')
    return listenLost(await this._native, callback)
  }

  /**
   * Runs `fn(permitId)` holding a permit (options as `acquire`) and releases it afterwards, also
   * when `fn` throws (its error wins over a failed release). Resolves what `fn` resolves.
   */
  async withPermit(fn, options) {
    if (typeof fn !== 'function') throw invalid('withPermit needs a function')
    const permitId = await this.acquire(options)
    let result
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
 * Several locks taken all-or-nothing (Redisson's RedissonMultiLock): any mix of kinds, from one
 * client or several (other servers included), under one wait, by one owner of its own. Owners
 * taking the same locks in different orders never deadlock. `release` frees every member and
 * its error names each one that failed.
 */
class MultiLock {
  #native

  /** A multi-lock over `locks` (an array of at least one `Lock`), taken in this order. */
  constructor(locks) {
    if (!Array.isArray(locks) || locks.length === 0 || !locks.every((l) => nativeOfLock.has(l))) {
      throw invalid('a multi-lock needs an array of at least one Lock')
    }
    /** The member locks, in the order they are taken. */
    this.locks = Object.freeze([...locks])
    this.#native = Promise.all(locks.map((l) => nativeOfLock.get(l))).then((ns) => {
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
  async acquire(options) {
    await acquiring(this.#native, options, false)
  }

  /** Like `acquire`, resolving `false` instead of waiting past `waitMs` (default 0: one round). */
  async tryAcquire(options) {
    return acquiring(this.#native, options, true)
  }

  /** Releases every member (all of them, also when some fail; the error names each failure). */
  async release() {
    return callNative(this.#native, 'release')
  }

  /** Whether this multi-lock's owner holds every member. */
  async isHeld() {
    return callNative(this.#native, 'isHeld')
  }

  /** Runs `fn()` holding every member and releases afterwards; resolves what `fn` resolves. */
  async withLock(fn, options) {
    return holding(this, fn, options)
  }
}

/**
 * Redisson's count-down latch: a count in the key `name`, open at 0 (also while the key is
 * missing). Anyone counts down; every waiter, Java's included, wakes at 0. Made by
 * `client.countDownLatch(name)`.
 */
class CountDownLatch {
  #native

  constructor(nativePromise, name) {
    this.#native = nativePromise
    /** The latch name (its Redis key). */
    this.name = name
  }

  /** Sets the count (a whole number >= 0) when the latch does not exist; resolves whether set. */
  async trySetCount(count) {
    if (typeof count !== 'number') throw invalid(`count must be a number (got ${typeof count})`)
    return callNative(this.#native, 'trySetCount', count)
  }

  /** Counts down by one; at 0 the latch opens and every waiter wakes. */
  async countDown() {
    return callNative(this.#native, 'countDown')
  }

  /** The current count (0 when open). */
  async count() {
    return callNative(this.#native, 'count')
  }

  /**
   * Resolves `true` once the latch is open, `false` when `waitMs` ran out first (default: no
   * limit). `signal` rejects with its AbortError.
   */
  async wait(options) {
    const { waitMs, signal } = optionsObject(options)
    const wait = optionalMs('waitMs', waitMs)
    checkSignal(signal)
    const n = await this.#native
    return cancellable(signal, (token) => n.wait(wait, token))
  }

  /** Deletes the latch whatever its count; resolves whether it existed. */
  async delete() {
    return callNative(this.#native, 'delete')
  }
}

/**
 * A fenced lock (Redisson's RFencedLock), made by `client.fencedLock(name)`: a `Lock` whose
 * `acquire()` resolves a fencing token, strictly larger than any before for that name, and
 * whose `tryAcquire()` resolves the token or `false`.
 */
class FencedLock extends Lock {}

/**
 * Redisson's read-write lock: many readers, or one writer. Both sides are `Lock`s sharing one
 * owner. A reader asking for the write lock rejects RLOCK_WOULD_DEADLOCK at once (Redisson's
 * waits forever); nothing changes in Redis.
 */
class ReadWriteLock {
  #read
  #write

  constructor(name, sides) {
    /** The lock name (its Redis key). */
    this.name = name
    this.#read = new Lock(sides.then((s) => s[0]), name, 'read')
    this.#write = new Lock(sides.then((s) => s[1]), name, 'write')
  }

  /** The read side: shared with other readers, excluded by another owner's write hold. */
  readLock() {
    return this.#read
  }

  /** The write side: excludes every other owner's reads and writes. */
  writeLock() {
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
  #native
  #fenced

  constructor(name, clients, fenced = false) {
    if (!Array.isArray(clients) || !clients.every((c) => nativeOfClient.has(c))) {
      throw invalid('a RedLock needs an array of Clients (an odd number, at least 3)')
    }
    if (typeof name !== 'string') throw invalid(`lock name must be a string (got ${typeof name})`)
    /** The lock name (the key on every server). */
    this.name = name
    /** The clients, one per server. */
    this.clients = Object.freeze([...clients])
    /** How many servers make a majority. */
    this.quorum = native.redLockQuorum(clients.length)
    this.#fenced = fenced
    this.#native = Promise.all(clients.map((c) => nativeOfClient.get(c))).then((ns) => {
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
  async acquire(options) {
    const token = await acquiring(this.#native, options, false)
    if (this.#fenced) return token
  }

  /**
   * Like `acquire`, resolving `false` instead of waiting past `waitMs` (default 0: one round);
   * `true` when held (a `FencedRedLock`: the new token).
   */
  async tryAcquire(options) {
    const token = await acquiring(this.#native, options, true)
    if (token === null) return false
    return this.#fenced ? token : true
  }

  /**
   * Releases this handle's holds on every server; resolves `true` when the lock is now free.
   * Rejects RLOCK_LOST when fewer than a majority were still held, RLOCK_NOT_HELD when none.
   */
  async release() {
    return callNative(this.#native, 'release')
  }

  /** Whether this handle holds the lock on a majority of the servers. */
  async isHeld() {
    return callNative(this.#native, 'isHeld')
  }

  /** Whether this handle's hold was lost (fewer than a majority left), until its release. */
  async isLost() {
    return (await this.#native).isLost()
  }

  /** A `FencedRedLock`'s latest token while this handle holds it; null otherwise. */
  async token() {
    return (await this.#native).token()
  }

  /**
   * Calls `callback({ name, kind: 'red_lock', owner, reason, permitId: null })` when this
   * handle's hold is left with fewer than a majority; resolves a function that removes it.
   */
  async onLost(callback) {
    if (typeof callback !== 'function') throw invalid('onLost needs a function')
    return listenLost(await this.#native, callback)
  }

  /** Runs `fn()` holding the lock and releases afterwards; resolves what `fn` resolves. */
  async withLock(fn, options) {
    return holding(this, fn, options)
  }
}

/**
 * A `RedLock` whose every acquire resolves a fencing token that strictly increases across
 * successful acquires, whichever majority granted them (a quorum register on each server's
 * `redisson_lock_token:{name}`). Tokens are numbers, exact up to 2^53.
 */
class FencedRedLock extends RedLock {
  constructor(name, clients) {
    super(name, clients, true)
  }
}

/** A `RedLock` on `name` over `clients` (an odd number, at least 3, one per server). */
function redLock(name, clients) {
  return new RedLock(name, clients)
}

/** A `FencedRedLock` on `name` over `clients`. */
function fencedRedLock(name, clients) {
  return new FencedRedLock(name, clients)
}

/** A connection to Redis that makes locks. Call `await client.close()` when done. */
class Client {
  #ready
  #closed = false

  /**
   * `url` defaults to `process.env.REDIS_URL`, else `redis://127.0.0.1:6379`; also
   * `redis+cluster://h1:p1,h2:p2/`, `redis+sentinel://h1:p1,h2:p2/service[/db]` and `rediss...`.
   * Connecting happens in the background; a bad URL or an unreachable server rejects the first
   * call.
   */
  constructor(url, options) {
    if (url !== undefined && url !== null && typeof url !== 'string') {
      this.#ready = quietReject(invalid(`url must be a string (got ${typeof url})`))
      nativeOfClient.set(this, this.#ready)
      return
    }
    let opts
    try {
      opts = optionsObject(options)
    } catch (e) {
      this.#ready = quietReject(e)
      nativeOfClient.set(this, this.#ready)
      return
    }
    let connecting
    try {
      connecting = native.connect(url ?? undefined, opts, process.env.REDIS_URL)
    } catch (e) {
      // napi rejects a wrongly typed option (e.g. a string for a number) synchronously.
      const m = mapError(e)
      connecting = Promise.reject(m instanceof RLockError ? m : invalid(`bad client option: ${m.message}`))
    }
    this.#ready = connecting.then(
      (c) => {
        if (this.#closed) c.close()
        return c
      },
      (e) => {
        throw mapError(e)
      },
    )
    this.#ready.catch(() => {})
    nativeOfClient.set(this, this.#ready)
  }

  /** Resolves once connected; rejects with the connect error (e.g. RLOCK_CONNECTION). */
  async ready() {
    await this.#ready
  }

  /** A new `Lock` handle (a fresh owner) on lock `name`. Bad names reject its calls. */
  lock(name) {
    return this.#handle(name, 'lock')
  }

  /**
   * A new handle on the fenced lock `name`: a `Lock` whose `acquire()` resolves a fencing token,
   * strictly larger than any before for that name (Redisson's RFencedLock).
   */
  fencedLock(name) {
    return this.#handle(name, 'fenced')
  }

  /**
   * A new handle on the fair lock `name` (Redisson's RFairLock): granted in arrival order across
   * every client, Java's included. An acquire that stops waiting (waitMs ran out, its signal
   * aborted, the client closed) leaves the queue.
   */
  fairLock(name) {
    return this.#handle(name, 'fair')
  }

  /**
   * A new handle on the read-write lock `name` (Redisson's RReadWriteLock). Its `readLock()` and
   * `writeLock()` share one owner, so the writer may also take read holds (a downgrade).
   */
  readWriteLock(name) {
    const sides = this.#native(name, (c) => c.readWriteLock(name))
    return new ReadWriteLock(name, sides)
  }

  #native(name, make) {
    let p
    if (typeof name !== 'string') {
      p = quietReject(invalid(`lock name must be a string (got ${typeof name})`))
    } else {
      p = this.#ready.then((c) => {
        try {
          return make(c)
        } catch (e) {
          throw mapError(e)
        }
      })
      p.catch(() => {})
    }
    return p
  }

  /** A new handle on the semaphore `name` (Redisson's RSemaphore). */
  semaphore(name) {
    return new Semaphore(this.#native(name, (c) => c.semaphore(name)), name)
  }

  /** A new handle on the permit-expirable semaphore `name` (Redisson's RPermitExpirableSemaphore). */
  permitExpirableSemaphore(name) {
    return new PermitExpirableSemaphore(this.#native(name, (c) => c.permitExpirableSemaphore(name)), name)
  }

  /** A new handle on the count-down latch `name` (Redisson's RCountDownLatch). */
  countDownLatch(name) {
    return new CountDownLatch(this.#native(name, (c) => c.countDownLatch(name)), name)
  }

  #handle(name, kind) {
    const make = kind === 'fenced' ? FencedLock : Lock
    return new make(this.#native(name, (c) => c.lock(name, kind)), name, kind)
  }

  /** Acquires `name` on a new handle; the result releases with `release()` or `await using`. */
  async acquire(name, options) {
    const lock = this.lock(name)
    await lock.acquire(options)
    return new HeldLock(lock)
  }

  /**
   * Runs `fn(lostSignal)` holding `name` and releases afterwards, also when `fn` throws (its
   * error wins over a failed release). Resolves what `fn` resolves.
   */
  async withLock(name, fn, options) {
    if (typeof fn !== 'function') throw invalid('withLock needs a function')
    const lock = this.lock(name)
    return holding(lock, () => fn(lock.lostSignal), options)
  }

  /**
   * Stops renewals and pub/sub; pending and later calls reject RLOCK_CLOSED. Holds are not
   * released (their leases run out). Afterwards nothing of this client keeps Node running.
   */
  async close() {
    this.#closed = true
    const c = await this.#ready.catch(() => null)
    if (c) c.close()
  }

  /**
   * Calls `callback({ name, kind, owner, reason, permitId })` whenever this client's watchdog
   * loses any of its holds (locks of every kind, permits); resolves a function that removes the
   * listener. Rejects like every call when the client could not connect.
   */
  async onLost(callback) {
    if (typeof callback !== 'function') throw invalid('onLost needs a function')
    return listenLost(await this.#ready, callback)
  }

  /**
   * The client's figures since it connected (times in milliseconds): acquires (contended, timed
   * out), releases, renewals and their failures, lost holds, pub/sub wake-ups, reconnects, wait
   * and hold times and errors by kind. All zero with `metrics: false`. Sends nothing to Redis.
   */
  async stats() {
    const c = await this.#ready
    return JSON.parse(c.statsJson())
  }

  /**
   * `stats()` in the Prometheus text exposition format, for a service that already serves
   * `/metrics`: counters `rlock_*_total`, histograms `rlock_wait_seconds` and
   * `rlock_hold_seconds`, labelled `app="<appName>"` when that option is set.
   */
  async prometheusText() {
    const c = await this.#ready
    return c.prometheusText()
  }

  /** Holds this client tracks (held, or lost and not yet released); 0 before connecting. */
  async trackedHolds() {
    const c = await this.#ready
    return c.trackedHolds()
  }

  /** Lock channels this client is subscribed to for waiters. */
  async waitedChannels() {
    const c = await this.#ready
    return c.waitedChannels()
  }

  /**
   * What lives under `name`, read without changing anything: core's description (see
   * rlock.d.ts `Description`; snake_case keys as in every surface's JSON). Rejects
   * RLOCK_INVALID_ARGUMENT for a bad name (nothing sent); a key of another type is kind 'other'.
   */
  async describe(name) {
    if (typeof name !== 'string') throw invalid(`name must be a string (got ${typeof name})`)
    return JSON.parse(await callNative(this.#ready, 'describe', name))
  }

  /**
   * Names of locks and synchronizers whose key or helper keys match the Redis glob `pattern`
   * (default: all), found with SCAN on every master, sorted; at most `limit` of them.
   */
  async list(pattern, options) {
    const limit = options?.limit
    if (pattern !== undefined && pattern !== null && typeof pattern !== 'string') {
      throw invalid(`pattern must be a string (got ${typeof pattern})`)
    }
    if (limit !== undefined && limit !== null && typeof limit !== 'number') {
      throw invalid(`limit must be a number (got ${typeof limit})`)
    }
    return JSON.parse(await callNative(this.#ready, 'list', pattern ?? undefined, limit ?? undefined))
  }

  /** What the URL named (`'single'`, `'cluster'`, `'sentinel'`) and what was decided at connect. */
  async info() {
    const c = await this.#ready
    return { topology: c.topology, shardedPubsub: c.shardedPubsub, replicaSync: c.replicaSync }
  }
}


/** The rlock version, "MAJOR.MINOR.PATCH" (the addon's; the package's own version is the same). */
const version = native.version()

module.exports = { version, Client, Lock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock, Semaphore, PermitExpirableSemaphore, CountDownLatch, HeldLock, RLockError, codes }
