"use strict";
// The client: one connection to Redis (a server, a Cluster or a Sentinel-managed master) that
// makes every primitive.
// The source is lib/client.ts; lib/client.js is tsc's output of it (`make node-ts`).
Object.defineProperty(exports, "__esModule", { value: true });
exports.Client = void 0;
const common_js_1 = require("./common.js");
const locks_js_1 = require("./locks.js");
const semaphores_js_1 = require("./semaphores.js");
/** A connection to Redis that makes locks. Call `await client.close()` when done. */
class Client {
    #ready;
    #closed = false;
    /**
     * `url` defaults to `process.env.REDIS_URL`, else `redis://127.0.0.1:6379`; also
     * `redis+cluster://h1:p1,h2:p2/`, `redis+sentinel://h1:p1,h2:p2/service[/db]` and `rediss...`.
     * Connecting happens in the background; a bad URL or an unreachable server rejects the first
     * call.
     */
    constructor(url, options) {
        if (url !== undefined && url !== null && typeof url !== 'string') {
            this.#ready = (0, common_js_1.quietReject)((0, common_js_1.invalid)(`url must be a string (got ${typeof url})`));
            common_js_1.nativeOfClient.set(this, this.#ready);
            return;
        }
        let opts;
        try {
            opts = (0, common_js_1.optionsObject)(options);
        }
        catch (e) {
            this.#ready = (0, common_js_1.quietReject)(e);
            common_js_1.nativeOfClient.set(this, this.#ready);
            return;
        }
        let connecting;
        try {
            connecting = common_js_1.native.connect(url ?? undefined, opts, process.env.REDIS_URL);
        }
        catch (e) {
            // napi rejects a wrongly typed option (e.g. a string for a number) synchronously.
            const m = (0, common_js_1.mapError)(e);
            connecting = Promise.reject(m instanceof common_js_1.RLockError ? m : (0, common_js_1.invalid)(`bad client option: ${m.message}`));
        }
        this.#ready = connecting.then((c) => {
            if (this.#closed)
                c.close();
            return c;
        }, (e) => {
            throw (0, common_js_1.mapError)(e);
        });
        this.#ready.catch(() => { });
        common_js_1.nativeOfClient.set(this, this.#ready);
    }
    /** Resolves once connected; rejects with the connect error (e.g. RLOCK_CONNECTION). */
    async ready() {
        await this.#ready;
    }
    /** A new `Lock` handle (a fresh owner) on lock `name`. Bad names reject its calls. */
    lock(name) {
        return this.#handle(name, 'lock');
    }
    /**
     * A new handle on the fenced lock `name`: a `Lock` whose `acquire()` resolves a fencing token,
     * strictly larger than any before for that name (Redisson's RFencedLock).
     */
    fencedLock(name) {
        return this.#handle(name, 'fenced');
    }
    /**
     * A new handle on the fair lock `name` (Redisson's RFairLock): granted in arrival order across
     * every client, Java's included. An acquire that stops waiting (waitMs ran out, its signal
     * aborted, the client closed) leaves the queue.
     */
    fairLock(name) {
        return this.#handle(name, 'fair');
    }
    /**
     * A new handle on the spin lock `name` (Redisson's RSpinLock): the reentrant lock's hash, but
     * a release publishes nothing and a waiter polls with exponential back-off up to
     * `pollIntervalMs` (with jitter), so it gets a released lock at most `pollIntervalMs` plus a
     * round trip later. For endpoints without pub/sub, and clients that should hold no
     * subscription.
     */
    spinLock(name) {
        return this.#handle(name, 'spin');
    }
    /**
     * A new handle on the non-reentrant lock `name` (Redisson 4.4's getNonReentrantLock): the
     * reentrant lock's hash, but acquiring it again through the handle that holds it rejects at
     * once with code RLOCK_WOULD_DEADLOCK (nothing changes in Redis).
     */
    nonReentrantLock(name) {
        return this.#handle(name, 'non_reentrant');
    }
    /**
     * A new handle on the non-reentrant fair lock `name` (Redisson 4.4's getNonReentrantFairLock):
     * granted in arrival order as `fairLock`'s, with a re-entry rejected as `nonReentrantLock`'s.
     */
    nonReentrantFairLock(name) {
        return this.#handle(name, 'non_reentrant_fair');
    }
    /**
     * A new handle on the read-write lock `name` (Redisson's RReadWriteLock). Its `readLock()` and
     * `writeLock()` share one owner, so the writer may also take read holds (a downgrade).
     */
    readWriteLock(name) {
        const sides = this.#native(name, (c) => c.readWriteLock(name));
        return locks_js_1.ReadWriteLock._new(name, sides);
    }
    #native(name, make) {
        let p;
        if (typeof name !== 'string') {
            p = (0, common_js_1.quietReject)((0, common_js_1.invalid)(`lock name must be a string (got ${typeof name})`));
        }
        else {
            p = this.#ready.then((c) => {
                try {
                    return make(c);
                }
                catch (e) {
                    throw (0, common_js_1.mapError)(e);
                }
            });
            p.catch(() => { });
        }
        return p;
    }
    /** A new handle on the semaphore `name` (Redisson's RSemaphore). */
    semaphore(name) {
        return semaphores_js_1.Semaphore._new(this.#native(name, (c) => c.semaphore(name)), name);
    }
    /** A new handle on the permit-expirable semaphore `name` (Redisson's RPermitExpirableSemaphore). */
    permitExpirableSemaphore(name) {
        return semaphores_js_1.PermitExpirableSemaphore._new(this.#native(name, (c) => c.permitExpirableSemaphore(name)), name);
    }
    /** A new handle on the count-down latch `name` (Redisson's RCountDownLatch). */
    countDownLatch(name) {
        return semaphores_js_1.CountDownLatch._new(this.#native(name, (c) => c.countDownLatch(name)), name);
    }
    #handle(name, kind) {
        const make = kind === 'fenced' ? locks_js_1.FencedLock : locks_js_1.Lock;
        return make._new(this.#native(name, (c) => c.lock(name, kind)), name, kind);
    }
    /** Acquires `name` on a new handle; the result releases with `release()` or `await using`. */
    async acquire(name, options) {
        const lock = this.lock(name);
        await lock.acquire(options);
        return locks_js_1.HeldLock._new(lock);
    }
    /**
     * Runs `fn(lostSignal)` holding `name` and releases afterwards, also when `fn` throws (its
     * error wins over a failed release). Resolves what `fn` resolves.
     */
    async withLock(name, fn, options) {
        if (typeof fn !== 'function')
            throw (0, common_js_1.invalid)('withLock needs a function');
        const lock = this.lock(name);
        return (0, common_js_1.holding)(lock, () => fn(lock.lostSignal), options);
    }
    /**
     * Stops renewals and pub/sub; pending and later calls reject RLOCK_CLOSED. Holds are not
     * released (their leases run out). Afterwards nothing of this client keeps Node running.
     */
    async close() {
        this.#closed = true;
        const c = await this.#ready.catch(() => null);
        if (c)
            c.close();
    }
    /**
     * Calls `callback({ name, kind, owner, reason, permitId })` whenever this client's watchdog
     * loses any of its holds (locks of every kind, permits); resolves a function that removes the
     * listener. Rejects like every call when the client could not connect.
     */
    async onLost(callback) {
        return (0, common_js_1.listenLost)(this.#ready, callback);
    }
    /**
     * The client's figures since it connected (times in milliseconds): acquires (contended, timed
     * out), releases, renewals and their failures, lost holds, pub/sub wake-ups, reconnects, wait
     * and hold times and errors by kind. All zero with `metrics: false`. Sends nothing to Redis.
     */
    async stats() {
        const c = await this.#ready;
        return JSON.parse(c.statsJson());
    }
    /**
     * `stats()` in the Prometheus text exposition format, for a service that already serves
     * `/metrics`: counters `rlock_*_total`, histograms `rlock_wait_seconds` and
     * `rlock_hold_seconds`, labelled `app="<appName>"` when that option is set.
     */
    async prometheusText() {
        const c = await this.#ready;
        return c.prometheusText();
    }
    /** Holds this client tracks (held, or lost and not yet released); 0 before connecting. */
    async trackedHolds() {
        const c = await this.#ready;
        return c.trackedHolds();
    }
    /** Lock channels this client is subscribed to for waiters. */
    async waitedChannels() {
        const c = await this.#ready;
        return c.waitedChannels();
    }
    /**
     * What lives under `name`, read without changing anything: core's description (see
     * rlock.d.ts `Description`; snake_case keys as in every surface's JSON). Rejects
     * RLOCK_INVALID_ARGUMENT for a bad name (nothing sent); a key of another type is kind 'other'.
     */
    async describe(name) {
        if (typeof name !== 'string')
            throw (0, common_js_1.invalid)(`name must be a string (got ${typeof name})`);
        return JSON.parse(await (0, common_js_1.callNative)(this.#ready, 'describe', name));
    }
    /**
     * Names of locks and synchronizers whose key or helper keys match the Redis glob `pattern`
     * (default: all), found with SCAN on every master, sorted; at most `limit` of them.
     */
    async list(pattern, options) {
        const limit = options?.limit;
        if (pattern !== undefined && pattern !== null && typeof pattern !== 'string') {
            throw (0, common_js_1.invalid)(`pattern must be a string (got ${typeof pattern})`);
        }
        if (limit !== undefined && limit !== null && typeof limit !== 'number') {
            throw (0, common_js_1.invalid)(`limit must be a number (got ${typeof limit})`);
        }
        return JSON.parse(await (0, common_js_1.callNative)(this.#ready, 'list', pattern ?? undefined, limit ?? undefined));
    }
    /** What the URL named (`'single'`, `'cluster'`, `'sentinel'`) and what was decided at connect. */
    async info() {
        const c = await this.#ready;
        return { topology: c.topology, shardedPubsub: c.shardedPubsub, replicaSync: c.replicaSync };
    }
}
exports.Client = Client;
