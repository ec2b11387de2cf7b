// The public API of the `rlock` package: a thin layer over the generated napi binding
// (index.js). It turns option objects into arguments, AbortSignals into cancel tokens and
// native errors into `RLockError`s with a `.code`. Every lock decision is made by the Rust core.
// One file a subject under lib/: common.ts, locks.ts, semaphores.ts, client.ts.
// The source is rlock.ts; rlock.js is tsc's output of it (`make node-ts`).

import { native, RLockError, codes } from './lib/common.js'
import {
  Lock, HeldLock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock
} from './lib/locks.js'
import { Semaphore, PermitExpirableSemaphore, CountDownLatch } from './lib/semaphores.js'
import { Client } from './lib/client.js'

export type {
  ClientOptions, RLockErrorCode, Codes, Kind, ClientInfo, AcquireOptions, SemaphoreAcquireOptions, PermitAcquireOptions,
  LostEvent, PermitLostEvent, MultiLockAcquireOptions, ClientRecord, Holder, QueuedWaiter, HeldPermit, Channel,
  Description, Listed, StatsSummary, Stats
} from './lib/types.js'

/** The rlock version, "MAJOR.MINOR.PATCH" (the workspace version the addon was built from). */
const version: string = native.version()

export {
  version, Client, Lock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock,
  Semaphore, PermitExpirableSemaphore, CountDownLatch, HeldLock, RLockError, codes
}

/**
 * The whole API as one object: the default export of `rlock` (`import rlock from 'rlock'`).
 * tsc marks this module `__esModule`, so compiled CommonJS (TypeScript's esModuleInterop, Babel,
 * swc) and Bun take a default import from here, not from the module object; it holds every name.
 */
const rlock = {
  version, Client, Lock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock,
  Semaphore, PermitExpirableSemaphore, CountDownLatch, HeldLock, RLockError, codes
}
export default rlock
