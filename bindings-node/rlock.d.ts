import { RLockError, codes } from './lib/common.js';
import { Lock, HeldLock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock } from './lib/locks.js';
import { Semaphore, PermitExpirableSemaphore, CountDownLatch } from './lib/semaphores.js';
import { Client } from './lib/client.js';
export type { ClientOptions, RLockErrorCode, Codes, Kind, ClientInfo, AcquireOptions, SemaphoreAcquireOptions, PermitAcquireOptions, LostEvent, PermitLostEvent, MultiLockAcquireOptions, ClientRecord, Holder, QueuedWaiter, HeldPermit, Channel, Description, Listed, StatsSummary, Stats } from './lib/types.js';
/** The rlock version, "MAJOR.MINOR.PATCH" (the workspace version the addon was built from). */
declare const version: string;
export { version, Client, Lock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock, Semaphore, PermitExpirableSemaphore, CountDownLatch, HeldLock, RLockError, codes };
