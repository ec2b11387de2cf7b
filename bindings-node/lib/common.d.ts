import native = require('../index.js');
import type { Codes, LostEvent, RLockErrorCode } from './types.js';
/** An rlock failure. */
declare class RLockError extends Error {
    /** Always `'RLockError'`. */
    readonly name: 'RLockError';
    /** What failed, one of `codes` (e.g. `'RLOCK_NOT_HELD'`); compare with `codes.NOT_HELD`. */
    readonly code: RLockErrorCode;
}
/** The codes by short name: `codes.NOT_HELD === 'RLOCK_NOT_HELD'`. */
declare const codes: Codes;
/**
 * The native layer rejects and throws errors whose `code` is core's code (`RLOCK_...`); they
 * become RLockErrors by that code alone. Anything else (napi's own argument errors) passes.
 */
declare function mapError(e: unknown): unknown;
/** An RLOCK_INVALID_ARGUMENT error with `message`. */
declare function invalid(message: string): RLockError;
/**
 * A rejected promise that is only reported when someone awaits it (a Client whose URL is bad
 * must not crash the process with an unhandled rejection before it is used).
 */
declare function quietReject(err: unknown): Promise<never>;
/** A duration in ms given as option `what`: undefined when absent, else it must be a number. */
declare function optionalMs(what: string, v: unknown): number | undefined;
/** An options argument: `{}` when absent, else it must be an object. */
declare function optionsObject(options: unknown): Record<string, unknown>;
/**
 * A native handle, as the wrappers call it: methods looked up by name.
 * eslint-disable-next-line @typescript-eslint/no-explicit-any
 */
type NativeObject = any;
/** Calls `method` of the native object `nativePromise` resolves to, with its errors as RLockErrors. */
declare function callNative(nativePromise: Promise<NativeObject>, method: string, ...args: unknown[]): Promise<NativeObject>;
/** Refuses a `signal` option that is not an AbortSignal. */
declare function checkSignal(signal: unknown): asserts signal is AbortSignal | undefined | null;
/**
 * Runs the native call `run(token)` with a cancel token that `signal` cancels; an aborted call
 * rejects with the signal's reason, other errors with their RLockError.
 */
declare function cancellable<T>(signal: AbortSignal | undefined | null, run: (token: native.CancelToken) => Promise<T>): Promise<T>;
/**
 * A try-shaped call: `none` where core rejected RLOCK_NOT_ACQUIRED (the wait ran out, nothing
 * taken). Every native acquire rejects it with core's message; only the wrappers' tryAcquire
 * turn it into a value.
 */
declare function orNone<T, N>(promise: Promise<T>, none: N): Promise<T | N>;
/**
 * A native acquire taking (wait, lease, token) (lock, multi-lock, RedLock, permit-expirable
 * semaphore). With `tryOnce` the wait defaults to 0 (one round) and a run-out wait resolves
 * `none` instead of rejecting.
 */
declare function acquiring(nativePromise: Promise<NativeObject>, options: unknown, tryOnce: boolean, none?: unknown): Promise<NativeObject>;
/** Anything with an acquire and a release: what `holding` runs a function under. */
interface Holder {
    /** Takes the hold (options as the holder's acquire). */
    acquire(options?: unknown): Promise<unknown>;
    /** Gives it back. */
    release(): Promise<unknown>;
}
/**
 * withLock: runs `fn()` while `holder` holds and releases afterwards, also when `fn` throws
 * (then `fn`'s error wins over a failed release).
 */
declare function holding<T>(holder: Holder, fn: () => T | Promise<T>, options?: unknown): Promise<T>;
/** A collected handle's lost-hold listener is removed from core (dropping its threadsafe function). */
declare const lostListeners: FinalizationRegistry<{
    n: NativeObject;
    id: number;
}>;
/**
 * Adds `callback` as a lost-hold listener of the native handle `native` resolves to (a lock, a
 * permit semaphore or a client): it gets one event object with the fields every surface has.
 * Resolves the function that removes it. A callback that is not a function rejects at once,
 * before the handle is waited for.
 */
declare function listenLost(native: Promise<NativeObject>, callback: (event: LostEvent) => void): Promise<() => void>;
/** Each Lock's native handle (a promise), for the multi-locks made over it. */
declare const nativeOfLock: WeakMap<object, Promise<any>>;
/** Each Client's native client (a promise), for the RedLocks made over several. */
declare const nativeOfClient: WeakMap<object, Promise<any>>;
/** A `permits` option: 1 when absent, else it must be a number (core checks the range). */
declare function permitsArg(permits: unknown): number;
export { native, RLockError, codes, mapError, invalid, quietReject, optionalMs, optionsObject, callNative, checkSignal, cancellable, orNone, acquiring, holding, lostListeners, listenLost, nativeOfLock, nativeOfClient, permitsArg };
