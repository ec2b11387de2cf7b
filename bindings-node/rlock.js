'use strict'
// The public API of the `rlock` package: a thin layer over the generated napi binding
// (index.js). It turns option objects into arguments, AbortSignals into cancel tokens and
// native errors into `RLockError`s with a `.code`. Every lock decision is made by the Rust core.
// One file a subject under lib/: common.js, locks.js, semaphores.js, client.js.

const { native, RLockError, codes } = require('./lib/common.js')
const {
  Lock, HeldLock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock
} = require('./lib/locks.js')
const { Semaphore, PermitExpirableSemaphore, CountDownLatch } = require('./lib/semaphores.js')
const { Client } = require('./lib/client.js')

/** The rlock version, "MAJOR.MINOR.PATCH" (the addon's; the package's own version is the same). */
const version = native.version()

module.exports = {
  version, Client, Lock, FencedLock, ReadWriteLock, MultiLock, RedLock, FencedRedLock, redLock, fencedRedLock,
  Semaphore, PermitExpirableSemaphore, CountDownLatch, HeldLock, RLockError, codes
}
