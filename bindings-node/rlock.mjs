// ESM entry of `rlock`: the same objects as the CommonJS entry (rlock.js). Its default export
// is the whole API: `module.exports.default` where the runtime gives the module object (Node),
// the module itself where the runtime already took `.default` (Bun, for an `__esModule` module).
import mod from './rlock.js'

const rlock = mod.default ?? mod
export const { version, Client, Lock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock, Semaphore, PermitExpirableSemaphore, CountDownLatch, HeldLock, RLockError, codes } = rlock
export default rlock
