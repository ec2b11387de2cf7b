// ESM entry of `rlock`: the same objects as the CommonJS entry (rlock.js).
import rlock from './rlock.js'

export const { version, Client, Lock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock, Semaphore, PermitExpirableSemaphore, CountDownLatch, HeldLock, RLockError, codes } = rlock
export default rlock
