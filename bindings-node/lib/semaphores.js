"use strict";
// The semaphores (counted permits; permits with ids and leases) and the count-down latch.
// The source is lib/semaphores.ts; lib/semaphores.js is tsc's output of it (`make node-ts`).
Object.defineProperty(exports, "__esModule", { value: true });
exports.CountDownLatch = exports.PermitExpirableSemaphore = exports.Semaphore = void 0;
const common_js_1 = require("./common.js");
/**
 * What the semaphore and the permit-expirable semaphore share: the count of free permits in the
 * key `name` (set, read, added to). `_native` is the native handle (a promise), `_call` calls it.
 */
class Permits {
    _native;
    /** The semaphore name (the Redis key of its count of free permits). */
    name;
    constructor(nativePromise, name) {
        this._native = nativePromise;
        this.name = name;
    }
    _call(method, ...args) {
        return (0, common_js_1.callNative)(this._native, method, ...args);
    }
    /** Sets the permits when the semaphore does not exist (`ttlMs`: it expires); resolves whether set. */
    async trySetPermits(permits, options) {
        const { ttlMs } = (0, common_js_1.optionsObject)(options);
        if (typeof permits !== 'number')
            throw (0, common_js_1.invalid)(`permits must be a number (got ${typeof permits})`);
        return this._call('trySetPermits', permits, (0, common_js_1.optionalMs)('ttlMs', ttlMs));
    }
    /** The free permits (0 when the semaphore does not exist). */
    async availablePermits() {
        return this._call('availablePermits');
    }
    /** Adds `n` permits (negative removes them); resolves the new count of free ones. */
    async addPermits(n) {
        if (typeof n !== 'number')
            throw (0, common_js_1.invalid)(`n must be a number (got ${typeof n})`);
        return this._call('addPermits', n);
    }
}
/**
 * Redisson's semaphore: permits in the key `name` (a missing key is 0 permits, so set them
 * first with `trySetPermits`). Permits are not owned and do not come back when a holder dies.
 * Made by `client.semaphore(name)`.
 */
class Semaphore extends Permits {
    /** @internal The semaphore `name` on the native handle `nativePromise` resolves to. */
    static _new(nativePromise, name) {
        return new Semaphore(nativePromise, name);
    }
    async #acquireWith(options, tryOnce) {
        const { permits, waitMs, signal } = (0, common_js_1.optionsObject)(options);
        const p = (0, common_js_1.permitsArg)(permits);
        const wait = (0, common_js_1.optionalMs)('waitMs', waitMs);
        (0, common_js_1.checkSignal)(signal);
        const n = await this._native;
        const call = (0, common_js_1.cancellable)(signal, (token) => n.acquire(p, tryOnce && wait === undefined ? 0 : wait, token));
        return tryOnce ? (0, common_js_1.orNone)(call, false) : call;
    }
    /**
     * Takes `permits` (default 1). Options: `permits`, `waitMs` (reject RLOCK_NOT_ACQUIRED after
     * it, nothing taken), `signal` (reject with its AbortError; nothing taken).
     */
    async acquire(options) {
        await this.#acquireWith(options, false);
    }
    /** Like `acquire`, resolving `false` instead of waiting past `waitMs` (default 0: try once). */
    async tryAcquire(options) {
        return this.#acquireWith(options, true);
    }
    /** Gives back `permits` (default 1); resolves the new count. */
    async release(permits) {
        return this._call('release', (0, common_js_1.permitsArg)(permits));
    }
    /** Takes every available permit; resolves how many there were. */
    async drainPermits() {
        return this._call('drainPermits');
    }
}
exports.Semaphore = Semaphore;
/**
 * Redisson's permit-expirable semaphore: each permit has an id (32 hex characters) that any
 * client, Java's included, may release, and a lease. Without `leaseMs` the watchdog renews the
 * permit while this client lives, so a crashed holder's permit comes back within the watchdog
 * timeout. Made by `client.permitExpirableSemaphore(name)`.
 */
class PermitExpirableSemaphore extends Permits {
    /** @internal The semaphore `name` on the native handle `nativePromise` resolves to. */
    static _new(nativePromise, name) {
        return new PermitExpirableSemaphore(nativePromise, name);
    }
    /**
     * Takes a permit and resolves its id. Options: `waitMs` (reject RLOCK_NOT_ACQUIRED after it),
     * `leaseMs` (the permit expires then; absent: the watchdog renews it), `signal` (reject with
     * its AbortError; nothing taken).
     */
    async acquire(options) {
        return (0, common_js_1.acquiring)(this._native, options, false);
    }
    /** Like `acquire`, resolving `null` instead of waiting past `waitMs` (default 0: try once). */
    async tryAcquire(options) {
        return (0, common_js_1.acquiring)(this._native, options, true);
    }
    /** Releases permit `permitId`; rejects RLOCK_NOT_HELD when it is not held, RLOCK_LOST when the watchdog lost it. */
    async release(permitId) {
        if (typeof permitId !== 'string')
            throw (0, common_js_1.invalid)(`permitId must be a string (got ${typeof permitId})`);
        return this._call('release', permitId);
    }
    /** Makes the held permit expire `leaseMs` from now (absent or null: the watchdog renews it). */
    async updateLease(permitId, leaseMs) {
        if (typeof permitId !== 'string')
            throw (0, common_js_1.invalid)(`permitId must be a string (got ${typeof permitId})`);
        return this._call('updateLease', permitId, (0, common_js_1.optionalMs)('leaseMs', leaseMs));
    }
    /** The held permits (neither released nor expired). */
    async acquiredPermits() {
        return this._call('acquiredPermits');
    }
    /** Whether this client's watchdog lost the permit (until it is released). */
    async isLost(permitId) {
        return (await this._native).isLost(String(permitId));
    }
    /** How long, in whole ms, local time still proves the permit (0: not held by this client, lost, or in doubt). Sends nothing. */
    async validForMs(permitId) {
        return (await this._native).validForMs(String(permitId));
    }
    /**
     * Calls `callback({ name, kind, owner, reason, permitId })` (`kind` 'permit') when this
     * client's watchdog loses a permit of this semaphore. Resolves a function that removes the
     * listener.
     */
    async onLost(callback) {
        return (0, common_js_1.listenLost)(this._native, callback);
    }
    /**
     * Runs `fn(permitId)` holding a permit (options as `acquire`) and releases it afterwards, also
     * when `fn` throws (its error wins over a failed release). Resolves what `fn` resolves.
     */
    async withPermit(fn, options) {
        if (typeof fn !== 'function')
            throw (0, common_js_1.invalid)('withPermit needs a function');
        const permitId = await this.acquire(options);
        let result;
        try {
            result = await fn(permitId);
        }
        catch (e) {
            await this.release(permitId).catch(() => { });
            throw e;
        }
        await this.release(permitId);
        return result;
    }
}
exports.PermitExpirableSemaphore = PermitExpirableSemaphore;
/**
 * Redisson's count-down latch: a count in the key `name`, open at 0 (also while the key is
 * missing). Anyone counts down; every waiter, Java's included, wakes at 0. Made by
 * `client.countDownLatch(name)`.
 */
class CountDownLatch {
    #native;
    /** The latch name (its Redis key). */
    name;
    constructor(nativePromise, name) {
        this.#native = nativePromise;
        this.name = name;
    }
    /** @internal The latch `name` on the native handle `nativePromise` resolves to. */
    static _new(nativePromise, name) {
        return new CountDownLatch(nativePromise, name);
    }
    /** Sets the count (a whole number >= 0) when the latch does not exist; resolves whether set. */
    async trySetCount(count) {
        if (typeof count !== 'number')
            throw (0, common_js_1.invalid)(`count must be a number (got ${typeof count})`);
        return (0, common_js_1.callNative)(this.#native, 'trySetCount', count);
    }
    /** Counts down by one; at 0 the latch opens and every waiter wakes. */
    async countDown() {
        return (0, common_js_1.callNative)(this.#native, 'countDown');
    }
    /** The current count (0 when open). */
    async count() {
        return (0, common_js_1.callNative)(this.#native, 'count');
    }
    /**
     * Resolves `true` once the latch is open, `false` when `waitMs` ran out first (default: no
     * limit). `signal` rejects with its AbortError.
     */
    async wait(options) {
        const { waitMs, signal } = (0, common_js_1.optionsObject)(options);
        const wait = (0, common_js_1.optionalMs)('waitMs', waitMs);
        (0, common_js_1.checkSignal)(signal);
        const n = await this.#native;
        return (0, common_js_1.cancellable)(signal, (token) => n.wait(wait, token));
    }
    /** Deletes the latch whatever its count; resolves whether it existed. */
    async delete() {
        return (0, common_js_1.callNative)(this.#native, 'delete');
    }
}
exports.CountDownLatch = CountDownLatch;
