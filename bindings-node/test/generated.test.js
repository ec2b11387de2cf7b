'use strict'
// Generated inputs (issue 45, item 1): fast-check draws names, durations, permit counts and
// option values of every type, and each call either works end to end or rejects
// RLOCK_INVALID_ARGUMENT, leaving Redis as it was. A fixed seed: the same inputs every run, so
// a failure is a failure and not luck (fast-check prints the input it shrank to).

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fc = require('fast-check')
const { startRedis } = require('./redis-server.js')
const { Client, RLockError, codes } = require('../rlock.js')
const { native } = require('../lib/common.js')

const RUNS = { seed: 45, numRuns: 150 }
let redis
let client
let uniq = 0
const fresh = () => `gen:${++uniq}`

before(async () => {
  redis = await startRedis()
  client = new Client(redis.url)
  await client.ready()
})

after(async () => {
  await client.close()
  await redis.stop()
})

// Every key but the holder records and release latches, which expire or go on their own.
const keys = async () =>
  (await redis.data.keys('*'))
    .filter((k) => !k.startsWith('rlock:client:') && !k.startsWith('redisson_unlock_latch:'))
    .sort()

// Resolves what `call` resolves, or `refused` when it rejects RLOCK_INVALID_ARGUMENT; any other
// rejection fails the property.
const refused = Symbol('refused')
async function orRefused(call) {
  try {
    return await call()
  } catch (e) {
    assert.ok(e instanceof RLockError, `not an RLockError: ${e}`)
    assert.equal(e.code, codes.INVALID_ARGUMENT, e.message)
    return refused
  }
}

// Everything a caller may pass where a number is asked for.
const anyValue = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
  fc.constantFrom(undefined, null, true, false, NaN, Infinity, -Infinity, -0, 2 ** 53, Number.MAX_VALUE),
  fc.string({ maxLength: 4 }),
  fc.array(fc.integer(), { maxLength: 2 }),
)

test('any name locks and unlocks, or is refused', async () => {
  await fc.assert(
    fc.asyncProperty(fc.string({ maxLength: 70, unit: 'grapheme' }), async (name) => {
      const before = await keys()
      const lock = client.lock(name)
      const got = await orRefused(() => lock.tryAcquire())
      if (got === refused) {
        assert.equal(name, '', `${JSON.stringify(name)} refused`)
      } else {
        assert.equal(got, true, `${JSON.stringify(name)} not acquired`)
        assert.equal(await redis.data.exists(name), 1, `${JSON.stringify(name)}: no key`)
        await lock.release()
      }
      assert.deepEqual(await keys(), before)
    }),
    RUNS,
  )
})

test('any lease and wait acquires a free lock, or is refused with nothing taken', async () => {
  const seen = { refused: 0, acquired: 0 }
  await fc.assert(
    fc.asyncProperty(anyValue, anyValue, async (leaseMs, waitMs) => {
      const name = fresh()
      const lock = client.lock(name)
      const got = await orRefused(() => lock.tryAcquire({ leaseMs, waitMs }))
      if (got === refused) {
        seen.refused++
        assert.equal(await redis.data.exists(name), 0, 'refused, but the lock is taken')
        assert.equal(await client.trackedHolds(), 0)
        return
      }
      seen.acquired++
      assert.equal(got, true, 'a free lock not acquired')
      await orRefused(() => lock.release()) // a short lease may have ended already
      await redis.data.del(name)
    }),
    RUNS,
  )
  // Both outcomes were drawn (a generator that only draws bad values would prove little).
  assert.ok(seen.refused > 0 && seen.acquired > 0, JSON.stringify(seen))
})

test('any permit count is taken and given back exactly, or is refused', async () => {
  const count = fc.oneof(fc.integer(), fc.double(), fc.constantFrom(0, -1, 2 ** 53, 2 ** 63, NaN))
  const seen = { refused: 0, taken: 0, notTaken: 0 }
  await fc.assert(
    fc.asyncProperty(count, count, async (setTo, take) => {
      const name = fresh()
      const sem = client.semaphore(name)
      try {
        const set = await orRefused(() => sem.trySetPermits(setTo))
        if (set === refused) {
          seen.refused++
          assert.equal(await redis.data.exists(name), 0, `trySetPermits(${setTo}) refused, but set`)
          return
        }
        assert.equal(set, true)
        const start = await sem.availablePermits()
        assert.equal(start, setTo)
        const got = await orRefused(() => sem.tryAcquire({ permits: take }))
        if (got === true) {
          seen.taken++
          assert.ok(take >= 0 && take <= setTo, `tryAcquire(${take}) of ${setTo} succeeded`)
          assert.equal(await sem.availablePermits(), setTo - take)
          await sem.release(take)
        } else if (got === false) {
          seen.notTaken++
          assert.ok(take > setTo, `tryAcquire(${take}) of ${setTo} failed`)
        }
        assert.equal(await sem.availablePermits(), setTo)
      } finally {
        await redis.data.del(name)
      }
    }),
    RUNS,
  )
  assert.ok(seen.refused > 0 && seen.taken > 0 && seen.notTaken > 0, JSON.stringify(seen))
})

test('any option value connects, or is refused', async () => {
  const option = fc.constantFrom(...native.optionNames(), 'noSuchOption')
  await fc.assert(
    fc.asyncProperty(option, fc.oneof(anyValue, fc.string({ maxLength: 12 })), async (name, value) => {
      const c = new Client(redis.url, { [name]: value })
      try {
        await c.ready()
      } catch (e) {
        // Refused, or a valid value that still stops the connect (a 1 ms connect timeout).
        assert.ok(e instanceof RLockError, `not an RLockError: ${e}`)
      } finally {
        await c.close()
      }
    }),
    RUNS,
  )
})
