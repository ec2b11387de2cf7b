"use strict";
// The public API of the `rlock` package: a thin layer over the generated napi binding
// (index.js). It turns option objects into arguments, AbortSignals into cancel tokens and
// native errors into `RLockError`s with a `.code`. Every lock decision is made by the Rust core.
// One file a subject under lib/: common.ts, locks.ts, semaphores.ts, client.ts.
// The source is rlock.ts; rlock.js is tsc's output of it (`make node-ts`).
Object.defineProperty(exports, "__esModule", { value: true });
exports.codes = exports.RLockError = exports.HeldLock = exports.CountDownLatch = exports.PermitExpirableSemaphore = exports.Semaphore = exports.fencedRedLock = exports.redLock = exports.FencedRedLock = exports.RedLock = exports.MultiLock = exports.ReadWriteLock = exports.FencedLock = exports.Lock = exports.Client = exports.version = void 0;
const common_js_1 = require("./lib/common.js");
Object.defineProperty(exports, "RLockError", { enumerable: true, get: function () { return common_js_1.RLockError; } });
Object.defineProperty(exports, "codes", { enumerable: true, get: function () { return common_js_1.codes; } });
const locks_js_1 = require("./lib/locks.js");
Object.defineProperty(exports, "Lock", { enumerable: true, get: function () { return locks_js_1.Lock; } });
Object.defineProperty(exports, "HeldLock", { enumerable: true, get: function () { return locks_js_1.HeldLock; } });
Object.defineProperty(exports, "FencedLock", { enumerable: true, get: function () { return locks_js_1.FencedLock; } });
Object.defineProperty(exports, "ReadWriteLock", { enumerable: true, get: function () { return locks_js_1.ReadWriteLock; } });
Object.defineProperty(exports, "MultiLock", { enumerable: true, get: function () { return locks_js_1.MultiLock; } });
Object.defineProperty(exports, "RedLock", { enumerable: true, get: function () { return locks_js_1.RedLock; } });
Object.defineProperty(exports, "FencedRedLock", { enumerable: true, get: function () { return locks_js_1.FencedRedLock; } });
Object.defineProperty(exports, "redLock", { enumerable: true, get: function () { return locks_js_1.redLock; } });
Object.defineProperty(exports, "fencedRedLock", { enumerable: true, get: function () { return locks_js_1.fencedRedLock; } });
const semaphores_js_1 = require("./lib/semaphores.js");
Object.defineProperty(exports, "Semaphore", { enumerable: true, get: function () { return semaphores_js_1.Semaphore; } });
Object.defineProperty(exports, "PermitExpirableSemaphore", { enumerable: true, get: function () { return semaphores_js_1.PermitExpirableSemaphore; } });
Object.defineProperty(exports, "CountDownLatch", { enumerable: true, get: function () { return semaphores_js_1.CountDownLatch; } });
const client_js_1 = require("./lib/client.js");
Object.defineProperty(exports, "Client", { enumerable: true, get: function () { return client_js_1.Client; } });
/** The rlock version, "MAJOR.MINOR.PATCH" (the workspace version the addon was built from). */
const version = common_js_1.native.version();
exports.version = version;
/**
 * The whole API as one object: the default export of `rlock` (`import rlock from 'rlock'`).
 * tsc marks this module `__esModule`, so compiled CommonJS (TypeScript's esModuleInterop, Babel,
 * swc) and Bun take a default import from here, not from the module object; it holds every name.
 */
const rlock = {
    version, Client: client_js_1.Client, Lock: locks_js_1.Lock, FencedLock: locks_js_1.FencedLock, ReadWriteLock: locks_js_1.ReadWriteLock, MultiLock: locks_js_1.MultiLock, RedLock: locks_js_1.RedLock, FencedRedLock: locks_js_1.FencedRedLock, redLock: locks_js_1.redLock, fencedRedLock: locks_js_1.fencedRedLock,
    Semaphore: semaphores_js_1.Semaphore, PermitExpirableSemaphore: semaphores_js_1.PermitExpirableSemaphore, CountDownLatch: semaphores_js_1.CountDownLatch, HeldLock: locks_js_1.HeldLock, RLockError: common_js_1.RLockError, codes: common_js_1.codes
};
exports.default = rlock;
