import { RLockError, codes } from './lib/common.js';
import { Lock, HeldLock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock } from './lib/locks.js';
import { Semaphore, PermitExpirableSemaphore, CountDownLatch } from './lib/semaphores.js';
import { Client } from './lib/client.js';
export type { ClientOptions, RLockErrorCode, Codes, Kind, ClientInfo, AcquireOptions, SemaphoreAcquireOptions, PermitAcquireOptions, LostEvent, PermitLostEvent, MultiLockAcquireOptions, ClientRecord, Holder, QueuedWaiter, HeldPermit, Channel, Description, Listed, StatsSummary, Stats } from './lib/types.js';
/** The rlock version, "MAJOR.MINOR.PATCH" (the workspace version the addon was built from). */
declare const version: string;
export { version, Client, Lock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock, Semaphore, PermitExpirableSemaphore, CountDownLatch, HeldLock, RLockError, codes };
/**
 * The whole API as one object: the default export of `rlock` (`import rlock from 'rlock'`).
 * tsc marks this module `__esModule`, so compiled CommonJS (TypeScript's esModuleInterop, Babel,
 * swc) and Bun take a default import from here, not from the module object; it holds every name.
 */
declare const rlock: {
    version: string;
    Client: typeof Client;
    Lock: typeof Lock;
    FencedLock: typeof FencedLock;
    ReadWriteLock: typeof ReadWriteLock;
    MultiLock: typeof MultiLock;
    RedLock: typeof RedLock;
    FencedRedLock: typeof FencedRedLock;
    redLock: typeof redLock;
    fencedRedLock: typeof fencedRedLock;
    Semaphore: typeof Semaphore;
    PermitExpirableSemaphore: typeof PermitExpirableSemaphore;
    CountDownLatch: typeof CountDownLatch;
    HeldLock: typeof HeldLock;
    RLockError: typeof RLockError;
    codes: Readonly<{
        NOT_ACQUIRED: "RLOCK_NOT_ACQUIRED";
        NOT_HELD: "RLOCK_NOT_HELD";
        LOST: "RLOCK_LOST";
        INVALID_ARGUMENT: "RLOCK_INVALID_ARGUMENT";
        CONNECTION: "RLOCK_CONNECTION";
        TIMEOUT: "RLOCK_TIMEOUT";
        REDIS: "RLOCK_REDIS";
        CLOSED: "RLOCK_CLOSED";
        FORKED: "RLOCK_FORKED";
        WOULD_DEADLOCK: "RLOCK_WOULD_DEADLOCK";
    }>;
};
export default rlock;
