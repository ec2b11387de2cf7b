// What every part of the API shares: the native addon (index.js), RLockError and its codes,
// argument checks, cancellation by AbortSignal, and lost-hold listeners.
// The source is lib/common.ts; lib/common.js is tsc's output of it (`make node-ts`),
// committed and checked for drift by `make test-node`.

import native = require('../index.js')
import { isMainThread } from 'node:worker_threads'
import type { Codes, LostEvent, RLockErrorCode } from './types.js'

/** Which runtime loaded us: off Node (Bun, Deno), the addon keeps calls off libuv's poll handles. */
const runtime = process.versions.bun ? 'bun' : process.versions.deno ? 'deno' : 'node'
native.setRuntime(runtime)

// Core's warnings (a give-back that could not reach Redis, a server that may evict a held
// lock's key) as process warnings: printed by Node unless the process handles 'warning'. The
// callback is one per process, so the main thread's: a worker thread's would be gone with it.
if (isMainThread) {
  native.setLogCallback((level, target, message) => {
    if (level === 'info') return
    process.emitWarning(message.replace(/^rlock: /, ''), {
      type: 'RLockWarning',
      code: level === 'error' ? 'RLOCK_LOG_ERROR' : 'RLOCK_LOG_WARN',
      detail: `from ${target}`,
    })
  })
}

/** An rlock failure. */
class RLockError extends Error {
  /** Always `'RLockError'`. */
  declare readonly name: 'RLockError'
  /** What failed, one of `codes` (e.g. `'RLOCK_NOT_HELD'`); compare with `codes.NOT_HELD`. */
  readonly code: RLockErrorCode

  /** @internal Made by rlock, not by users. */
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options)
    ;(this as { name: string }).name = 'RLockError'
    this.code = code as RLockErrorCode
  }
}

// The codes by short name (`codes.NOT_HELD === 'RLOCK_NOT_HELD'`), from core's one list.
/** The codes by short name: `codes.NOT_HELD === 'RLOCK_NOT_HELD'`. */
const codes: Codes = Object.freeze(
  Object.fromEntries(native.errorCodes().map((c) => [c.slice('RLOCK_'.length), c])),
) as Codes

/** An error of the native layer: core's carry `code` (`RLOCK_...`). */
type CodedError = Error & { code?: unknown }

/**
 * The native layer rejects and throws errors whose `code` is core's code (`RLOCK_...`); they
 * become RLockErrors by that code alone. Anything else (napi's own argument errors) passes.
 */
function mapError(e: unknown): unknown {
  return e instanceof Error && !(e instanceof RLockError) && typeof (e as CodedError).code === 'string' &&
    ((e as CodedError).code as string).startsWith('RLOCK_')
    ? new RLockError((e as CodedError).code as string, e.message)
    : e
}

/** An RLOCK_INVALID_ARGUMENT error with `message`. */
function invalid(message: string): RLockError {
  return new RLockError(codes.INVALID_ARGUMENT, message)
}

/**
 * A rejected promise that is only reported when someone awaits it (a Client whose URL is bad
 * must not crash the process with an unhandled rejection before it is used).
 */
function quietReject(err: unknown): Promise<never> {
  const p = Promise.reject(err)
  p.catch(() => {})
  return p
}

/** A duration in ms given as option `what`: undefined when absent, else it must be a number. */
function optionalMs(what: string, v: unknown): number | undefined {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number') throw invalid(`${what} must be a number of milliseconds (got ${typeof v})`)
  return v
}

/** An options argument: `{}` when absent, else it must be an object. */
function optionsObject(options: unknown): Record<string, unknown> {
  if (options === undefined || options === null) return {}
  if (typeof options !== 'object') throw invalid(`options must be an object (got ${typeof options})`)
  return options as Record<string, unknown>
}

function abortReason(signal: AbortSignal | undefined | null): unknown {
  return signal && signal.aborted && signal.reason !== undefined
    ? signal.reason
    : new DOMException('the acquire was aborted', 'AbortError')
}

/** The cancel token of every acquire made without an AbortSignal; `cancel()` is never called on it. */
const NEVER_CANCELLED = new native.CancelToken()

/**
 * A native handle, as the wrappers call it: methods looked up by name.
 * eslint-disable-next-line @typescript-eslint/no-explicit-any
 */
type NativeObject = any

/** Calls `method` of the native object `nativePromise` resolves to, with its errors as RLockErrors. */
async function callNative(nativePromise: Promise<NativeObject>, method: string, ...args: unknown[]): Promise<NativeObject> {
  const n = await nativePromise
  try {
    return await n[method](...args)
  } catch (e) {
    throw mapError(e)
  }
}

/** Refuses a `signal` option that is not an AbortSignal. */
function checkSignal(signal: unknown): asserts signal is AbortSignal | undefined | null {
  if (signal !== undefined && signal !== null && !(signal instanceof AbortSignal)) {
    throw invalid('signal must be an AbortSignal')
  }
}

/**
 * Runs the native call `run(token)` with a cancel token that `signal` cancels; an aborted call
 * rejects with the signal's reason, other errors with their RLockError.
 */
async function cancellable<T>(signal: AbortSignal | undefined | null, run: (token: native.CancelToken) => Promise<T>): Promise<T> {
  if (signal && signal.aborted) throw abortReason(signal)
  // Without a signal nothing can cancel the call: share one token that is never cancelled
  // (a native object per call cost measurable CPU per acquire).
  const token = signal ? new native.CancelToken() : NEVER_CANCELLED
  const onAbort = () => token.cancel()
  if (signal) signal.addEventListener('abort', onAbort, { once: true })
  try {
    return await run(token)
  } catch (e) {
    if (e instanceof Error && (e as CodedError).code === 'RLOCK_ABORTED') throw abortReason(signal)
    throw mapError(e)
  } finally {
    if (signal) signal.removeEventListener('abort', onAbort)
  }
}

/**
 * A try-shaped call: `none` where core rejected RLOCK_NOT_ACQUIRED (the wait ran out, nothing
 * taken). Every native acquire rejects it with core's message; only the wrappers' tryAcquire
 * turn it into a value.
 */
async function orNone<T, N>(promise: Promise<T>, none: N): Promise<T | N> {
  try {
    return await promise
  } catch (e) {
    if (e instanceof Error && (e as CodedError).code === 'RLOCK_NOT_ACQUIRED') return none
    throw e
  }
}

/**
 * A native acquire taking (wait, lease, token) (lock, multi-lock, RedLock, permit-expirable
 * semaphore). With `tryOnce` the wait defaults to 0 (one round) and a run-out wait resolves
 * `none` instead of rejecting.
 */
async function acquiring(nativePromise: Promise<NativeObject>, options: unknown, tryOnce: boolean, none: unknown = null): Promise<NativeObject> {
  const { waitMs, leaseMs, signal } = optionsObject(options)
  const wait = optionalMs('waitMs', waitMs)
  const lease = optionalMs('leaseMs', leaseMs)
  checkSignal(signal)
  const n = await nativePromise
  const call = cancellable(signal, (token) => n.acquire(tryOnce && wait === undefined ? 0 : wait, lease, token))
  return tryOnce ? orNone(call, none) : call
}

/** Anything with an acquire and a release: what `holding` runs a function under. */
interface Holder {
  /** Takes the hold (options as the holder's acquire). */
  acquire(options?: unknown): Promise<unknown>
  /** Gives it back. */
  release(): Promise<unknown>
}

/**
 * withLock: runs `fn()` while `holder` holds and releases afterwards, also when `fn` throws
 * (then `fn`'s error wins over a failed release).
 */
async function holding<T>(holder: Holder, fn: () => T | Promise<T>, options?: unknown): Promise<T> {
  if (typeof fn !== 'function') throw invalid('withLock needs a function')
  await holder.acquire(options)
  let result: T
  try {
    result = await fn()
  } catch (e) {
    await holder.release().catch(() => {})
    throw e
  }
  await holder.release()
  return result
}

/** A collected handle's lost-hold listener is removed from core (dropping its threadsafe function). */
const lostListeners = new FinalizationRegistry(({ n, id }: { n: NativeObject, id: number }) => n.removeLostListener(id))

/**
 * Adds `callback` as a lost-hold listener of the native handle `native` resolves to (a lock, a
 * permit semaphore or a client): it gets one event object with the fields every surface has.
 * Resolves the function that removes it. A callback that is not a function rejects at once,
 * before the handle is waited for.
 */
async function listenLost(native: Promise<NativeObject>, callback: (event: LostEvent) => void): Promise<() => void> {
  if (typeof callback !== 'function') throw invalid('onLost needs a function')
  const n = await native
  const id: number = n.onLost((name: string, kind: string, owner: string, reason: string, permitId: string | null) =>
    callback({ name, kind, owner, reason, permitId } as LostEvent))
  return () => n.removeLostListener(id)
}

/** Each Lock's native handle (a promise), for the multi-locks made over it. */
const nativeOfLock = new WeakMap<object, Promise<NativeObject>>()
/** Each Client's native client (a promise), for the RedLocks made over several. */
const nativeOfClient = new WeakMap<object, Promise<NativeObject>>()

/** A `permits` option: 1 when absent, else it must be a number (core checks the range). */
function permitsArg(permits: unknown): number {
  if (permits === undefined || permits === null) return 1
  if (typeof permits !== 'number') throw invalid(`permits must be a number (got ${typeof permits})`)
  return permits
}

export {
  native, RLockError, codes, mapError, invalid, quietReject, optionalMs, optionsObject, callNative,
  checkSignal, cancellable, orNone, acquiring, holding, lostListeners, listenLost, nativeOfLock, nativeOfClient,
  permitsArg
}
