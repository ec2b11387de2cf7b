'use strict'
// The read-write and fair locks through the Node API: both sides of a read-write lock share one
// owner; a fair lock grants in arrival order and a waiter that stops waiting leaves the queue.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { startRedis, eventually } = require('./redis-server.js')
const { Client, MultiLock, RLockError, codes } = require('../rlock.js')

let redis
let client
let other
let uniq = 0
const name = (what) => `family:${what}:${++uniq}`

before(async () => {
  redis = await startRedis()
  client = new Client(redis.url)
  other = new Client(redis.url)
  await Promise.all([client.ready(), other.ready()])
})

after(async () => {
  await client.close()
  await other.close()
  await redis.stop()
})

async function rejectsWith(promise, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof RLockError, 'an RLockError')
    assert.equal(e.code, code, e.message)
    return true
  })
}

test('readers share, a writer excludes, the writer downgrades, an upgrade is refused', async () => {
  const n = name('rw')
  const a = client.readWriteLock(n)
  const b = other.readWriteLock(n)
  assert.equal(a.readLock().kind, 'read')
  assert.equal(a.writeLock().kind, 'write')
  assert.equal(a.readLock(), a.readLock(), 'one handle per side')

  await a.readLock().acquire()
  assert.equal(await b.readLock().tryAcquire(), true, 'readers share')
  assert.equal(await redis.data.hGet(n, 'mode'), 'read')
  const c = other.readWriteLock(n) // another owner
  assert.equal(await c.writeLock().tryAcquire({ waitMs: 50 }), false, 'a writer waits for readers')
  assert.equal(await a.readLock().release(), false, 'b still reads')
  assert.equal(await b.readLock().release(), true)

  await a.writeLock().acquire()
  assert.equal(await b.readLock().tryAcquire({ waitMs: 50 }), false)
  await a.readLock().acquire() // downgrade: the same owner
  assert.equal(await a.writeLock().release(), false, 'its read hold remains')
  assert.equal(await redis.data.hGet(n, 'mode'), 'read')

  const before = await redis.data.hGetAll(n)
  await rejectsWith(a.writeLock().acquire(), codes.WOULD_DEADLOCK)
  await rejectsWith(a.writeLock().tryAcquire({ waitMs: 1000 }), codes.WOULD_DEADLOCK)
  assert.deepEqual(await redis.data.hGetAll(n), before, 'nothing changed')
  await rejectsWith(a.writeLock().release(), codes.NOT_HELD)
  assert.equal(await a.readLock().release(), true)
  assert.equal(await redis.data.exists(n), 0)
})

test('a write release wakes every waiting reader', async () => {
  const n = name('wake')
  const w = client.readWriteLock(n)
  await w.writeLock().acquire()
  const readers = [0, 1, 2].map(() => other.readWriteLock(n).readLock())
  const waiting = readers.map((r) => r.acquire())
  await eventually(async () => (await redis.data.sendCommand(['PUBSUB', 'NUMSUB', `redisson_rwlock:{${n}}`]))[1] === 1, 10_000, 'readers subscribed')
  assert.equal(await w.writeLock().release(), true)
  await Promise.all(waiting)
  for (const r of readers) assert.equal(await r.release(), readers.indexOf(r) === 2)
})

test('a spin lock is the reentrant lock\'s hash; its waiter polls without a subscription', async () => {
  const n = name('spin')
  const holder = client.spinLock(n)
  assert.equal(holder.kind, 'spin')
  await holder.acquire()
  assert.deepEqual(await redis.data.hVals(n), ['1'])
  assert.equal(await other.lock(n).tryAcquire(), false, 'the same lock as client.lock(name)')
  const evalsha = async () => Number(((await redis.data.info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/) || [])[1] || 0)
  const tries = await evalsha()
  const waiter = other.spinLock(n)
  let got = false
  const waiting = waiter.acquire().then(() => { got = true })
  // It tries again and again, never subscribed to the lock's channel.
  await eventually(async () => (await evalsha()) >= tries + 3, 10_000, 'the waiter polled')
  const channel = `redisson_lock__channel:{${n}}`
  assert.equal((await redis.data.sendCommand(['PUBSUB', 'NUMSUB', channel]))[1], 0)
  assert.equal(got, false)
  assert.equal(await holder.release(), true)
  await waiting
  assert.equal(await waiter.release(), true)
})

for (const fair of [false, true]) {
  test(`a non-reentrant${fair ? ' fair' : ''} lock rejects a re-entry at once and changes nothing`, async () => {
    const n = name(fair ? 'nrf' : 'nr')
    const lock = fair ? client.nonReentrantFairLock(n) : client.nonReentrantLock(n)
    assert.equal(lock.kind, fair ? 'non_reentrant_fair' : 'non_reentrant')
    await lock.acquire({ leaseMs: 60_000 })
    const before = [await redis.data.hGetAll(n), (await redis.data.keys(`*${n}*`)).sort()]
    await rejectsWith(lock.acquire(), codes.WOULD_DEADLOCK)
    await rejectsWith(lock.tryAcquire(), codes.WOULD_DEADLOCK)
    await rejectsWith(lock.tryAcquire({ waitMs: 2000, leaseMs: 90_000 }), codes.WOULD_DEADLOCK)
    await assert.rejects(lock.acquire(), /not reentrant/)
    assert.deepEqual([await redis.data.hGetAll(n), (await redis.data.keys(`*${n}*`)).sort()], before)
    assert.equal(await lock.holdCount(), 1)
    const ttl = await redis.data.pTTL(n)
    assert.ok(ttl > 0 && ttl <= 60_000, `lease ${ttl}`)
    // Another handle is another owner: it contends, as a reentrant handle does.
    const again = fair ? other.nonReentrantFairLock(n) : other.nonReentrantLock(n)
    assert.equal(await again.tryAcquire(), false)
    assert.equal(await other.lock(n).tryAcquire(), false)
    assert.equal(await lock.release(), true)
    await rejectsWith(lock.release(), codes.NOT_HELD)
    assert.equal(await again.tryAcquire(), true)
    assert.equal(await again.release(), true)
  })
}

test('a fair lock grants in arrival order; aborted and timed-out waiters leave the queue', async () => {
  const n = name('fair')
  const queue = `redisson_lock_queue:{${n}}`
  const holder = client.fairLock(n)
  assert.equal(holder.kind, 'fair')
  await holder.acquire()

  assert.equal(await other.fairLock(n).tryAcquire(), false)
  assert.equal(await redis.data.exists(queue), 0, 'a try without a wait does not queue')
  await rejectsWith(other.fairLock(n).acquire({ waitMs: 200 }), codes.NOT_ACQUIRED)
  assert.equal(await redis.data.exists(queue), 0, 'out of the queue when the wait ran out')

  const ac = new AbortController()
  const aborted = other.fairLock(n).acquire({ signal: ac.signal })
  await eventually(async () => (await redis.data.lLen(queue)) === 1, 10_000, 'queued')
  ac.abort()
  await assert.rejects(aborted, { name: 'AbortError' })
  await eventually(async () => (await redis.data.exists(queue)) === 0, 10_000, 'the aborted waiter left')

  const order = []
  const waiters = []
  for (let i = 0; i < 4; i++) {
    const l = (i % 2 ? client : other).fairLock(n)
    waiters.push(l.acquire().then(async () => {
      order.push(i)
      await l.release()
    }))
    await eventually(async () => (await redis.data.lLen(queue)) === i + 1, 10_000, `waiter ${i} queued`)
  }
  await holder.release()
  await Promise.all(waiters)
  assert.deepEqual(order, [0, 1, 2, 3])
  assert.equal(await redis.data.exists(queue), 0)
  assert.equal(await redis.data.exists(`redisson_lock_timeout:{${n}}`), 0)
})

test('a semaphore: Redisson layout, waiting on released permits, aborts take nothing, bad input', async () => {
  const n = name('sem')
  const a = client.semaphore(n)
  const b = other.semaphore(n)
  assert.equal(await a.availablePermits(), 0)
  assert.equal(await a.tryAcquire(), false)
  assert.equal(await a.trySetPermits(2), true)
  assert.equal(await b.trySetPermits(5), false)
  assert.equal(await redis.data.get(n), '2')
  await a.acquire({ permits: 2 })
  await rejectsWith(b.acquire({ waitMs: 50 }), codes.NOT_ACQUIRED)
  const waiting = b.acquire()
  await eventually(async () => (await redis.data.sendCommand(['PUBSUB', 'NUMSUB', `redisson_sc:{${n}}`]))[1] === 1, 10_000, 'waiter subscribed')
  assert.equal(await a.release(), 1)
  await waiting
  assert.equal(await a.availablePermits(), 0)

  const ac = new AbortController()
  const aborted = b.acquire({ signal: ac.signal })
  ac.abort()
  await assert.rejects(aborted, { name: 'AbortError' })
  assert.equal(await b.release(2), 2)
  assert.equal(await a.addPermits(-1), 1)
  assert.equal(await a.drainPermits(), 1)
  for (const bad of [0, -1, 1.5]) {
    await rejectsWith(a.acquire({ permits: bad }), codes.INVALID_ARGUMENT)
    await rejectsWith(a.release(bad), codes.INVALID_ARGUMENT)
  }
  await rejectsWith(a.acquire({ permits: '1' }), codes.INVALID_ARGUMENT)
  await rejectsWith(client.semaphore('').availablePermits(), codes.INVALID_ARGUMENT)
  assert.equal(await a.availablePermits(), 0, 'nothing changed')
})

test('a permit-expirable semaphore: ids, leases, waiting, aborts, lost permits, bad input', async () => {
  const n = name('pes')
  const a = client.permitExpirableSemaphore(n)
  const b = other.permitExpirableSemaphore(n)
  assert.equal(await a.tryAcquire(), null, 'a missing key is 0 permits')
  assert.equal(await a.trySetPermits(2), true)
  const first = await a.acquire({ leaseMs: 60_000 })
  assert.match(first, /^[0-9a-f]{32}$/)
  const score = Number(await redis.data.sendCommand(['ZSCORE', `{${n}}:timeout`, Buffer.from(first, 'hex')]))
  assert.ok(score > Date.now() + 50_000, `expiry ${score}`)
  const second = await b.acquire()
  assert.equal(await a.acquiredPermits(), 2)
  await rejectsWith(b.acquire({ waitMs: 50 }), codes.NOT_ACQUIRED)
  // A waiter wakes on another client's release.
  const waiting = b.acquire()
  await eventually(async () => (await redis.data.sendCommand(['PUBSUB', 'NUMSUB', `redisson_sc:{${n}}`]))[1] === 1, 10_000, 'waiter subscribed')
  await a.release(second)
  const third = await waiting
  await rejectsWith(a.release(second), codes.NOT_HELD)
  const ac = new AbortController()
  const aborted = b.acquire({ signal: ac.signal })
  ac.abort()
  await assert.rejects(aborted, { name: 'AbortError' })
  await b.release(third)
  await a.updateLease(first, null)
  assert.equal(await a.withPermit(async (id) => {
    assert.match(id, /^[0-9a-f]{32}$/)
    return (await a.acquiredPermits())
  }), 2)
  await a.release(first)
  assert.equal(await a.availablePermits(), 2)

  for (const bad of ['', 'xyz', first.slice(1), `${first.slice(1)}g`]) {
    await rejectsWith(a.release(bad), codes.INVALID_ARGUMENT)
    await rejectsWith(a.updateLease(bad, 1000), codes.INVALID_ARGUMENT)
  }
  await rejectsWith(a.release(7), codes.INVALID_ARGUMENT)
  await rejectsWith(a.acquire({ leaseMs: 0 }), codes.INVALID_ARGUMENT)
  await rejectsWith(a.acquire({ leaseMs: -5 }), codes.INVALID_ARGUMENT)
  await rejectsWith(client.permitExpirableSemaphore('').availablePermits(), codes.INVALID_ARGUMENT)
  assert.equal(await a.availablePermits(), 2, 'nothing changed')
  assert.equal(await a.acquiredPermits(), 0)
})

test('a permit removed under the watchdog is reported lost', async () => {
  const n = name('pes-lost')
  // Renewed every second; a shorter lease could be in doubt (not 'gone') after a stall.
  const c = new Client(redis.url, { watchdogTimeoutMs: 3000 })
  try {
    const sem = c.permitExpirableSemaphore(n)
    await sem.trySetPermits(1)
    const events = []
    const remove = await sem.onLost((e) => events.push(e))
    const id = await sem.acquire()
    assert.equal(await redis.data.sendCommand(['ZREM', `{${n}}:timeout`, Buffer.from(id, 'hex')]), 1)
    await eventually(async () => events.length === 1, 10_000, 'the loss reported')
    assert.match(events[0].owner, /^[0-9a-f-]{36}:0$/, 'a permit has no owner: the client owner 0')
    assert.deepEqual(events, [{ name: n, kind: 'permit', owner: events[0].owner, reason: 'gone', permitId: id }])
    assert.equal(await sem.isLost(id), true)
    await rejectsWith(sem.release(id), codes.LOST)
    remove()
  } finally {
    await c.close()
  }
})

test('a multi-lock: all-or-nothing over kinds and clients, opposite orders, aborts, every failure reported', async () => {
  const [a, b, c] = [name('ma'), name('mb'), name('mc')]
  const multi = new MultiLock([client.lock(a), other.fairLock(b), client.readWriteLock(c).writeLock()])
  const blocker = other.fairLock(b)
  await blocker.acquire()
  assert.equal(await multi.tryAcquire({ waitMs: 100 }), false)
  assert.equal(await client.lock(a).isLocked(), false, 'nothing left held')
  // Core's one message, as C says it (core/src/bindings.rs).
  await assert.rejects(multi.acquire({ waitMs: 50 }),
    { code: codes.NOT_ACQUIRED, message: 'the multi-lock of 3 members was not acquired within 50 ms' })
  const ac = new AbortController()
  const aborted = multi.acquire({ signal: ac.signal })
  ac.abort()
  await assert.rejects(aborted, { name: 'AbortError' })
  await blocker.release()
  assert.equal(await multi.withLock(async () => multi.isHeld()), true)

  // Opposite orders on two clients: no deadlock, mutual exclusion.
  const orders = [0, 1, 2, 3].map((i) =>
    i % 2 === 0 ? new MultiLock([client.lock(a), client.lock(b)]) : new MultiLock([other.lock(b), other.lock(a)]))
  let inside = 0
  let total = 0
  await Promise.all(orders.map(async (m) => {
    for (let k = 0; k < 30; k++) {
      await m.acquire()
      assert.equal(++inside, 1, 'one owner inside')
      await new Promise((r) => setImmediate(r))
      inside--
      total++
      await m.release()
    }
  }))
  assert.equal(total, 120)

  // Release frees every member and names each failure.
  const locks = [client.lock(name('r')), client.lock(name('r')), client.lock(name('r'))]
  const m = new MultiLock(locks)
  await m.acquire()
  await locks[0].forceUnlock()
  await locks[2].forceUnlock()
  await assert.rejects(m.release(), (e) => {
    assert.ok(e instanceof RLockError)
    assert.match(e.message, /2 of 3/)
    assert.ok(e.message.includes(`'${locks[0].name}'`) && e.message.includes(`'${locks[2].name}'`))
    return true
  })
  assert.equal(await locks[1].isLocked(), false)
  assert.throws(() => new MultiLock([]), (e) => e.code === codes.INVALID_ARGUMENT)
})

test('a count-down latch: Redisson layout, every waiter wakes at zero, timed waits, aborts, bad input', async () => {
  const n = name('latch')
  const channel = `redisson_countdownlatch__channel__{${n}}`
  const a = client.countDownLatch(n)
  const b = other.countDownLatch(n)
  assert.equal(await a.count(), 0, 'a missing key is an open latch')
  assert.equal(await a.wait({ waitMs: 0 }), true)
  assert.equal(await a.trySetCount(2), true)
  assert.equal(await b.trySetCount(5), false)
  assert.equal(await redis.data.get(n), '2', 'the losing trySetCount changed nothing')

  const waiters = [b.wait(), b.wait(), b.wait({ waitMs: 30_000 })]
  let opened = 0
  for (const w of waiters) w.then(() => opened++)
  await eventually(async () => (await redis.data.sendCommand(['PUBSUB', 'NUMSUB', channel]))[1] === 1, 10_000, 'waiters subscribed')
  await a.countDown()
  assert.equal(await b.count(), 1)
  assert.equal(opened, 0, 'one count-down of two opened nothing')
  const zero = Date.now()
  await a.countDown()
  assert.deepEqual(await Promise.all(waiters), [true, true, true])
  assert.ok(Date.now() - zero < 500, `woke ${Date.now() - zero} ms after the count-down (the re-read is 1 s apart)`)
  assert.equal(await redis.data.exists(n), 0, 'the key goes at zero')

  assert.equal(await a.trySetCount(1), true)
  const start = Date.now()
  assert.equal(await b.wait({ waitMs: 150 }), false)
  assert.ok(Date.now() - start >= 140)
  const ac = new AbortController()
  const aborted = b.wait({ signal: ac.signal })
  ac.abort()
  await assert.rejects(aborted, { name: 'AbortError' })
  for (const bad of [-1, 1.5]) await rejectsWith(a.trySetCount(bad), codes.INVALID_ARGUMENT)
  await rejectsWith(a.trySetCount('1'), codes.INVALID_ARGUMENT)
  await rejectsWith(b.wait({ waitMs: -5 }), codes.INVALID_ARGUMENT)
  await rejectsWith(client.countDownLatch('').countDown(), codes.INVALID_ARGUMENT)
  await redis.data.hSet(`${n}:hash`, 'f', '1')
  await rejectsWith(client.countDownLatch(`${n}:hash`).countDown(), codes.REDIS)
  assert.equal(await redis.data.get(n), '1', 'nothing changed')
  assert.equal(await a.delete(), true)
  assert.equal(await a.delete(), false)
  await eventually(async () => (await other.waitedChannels()) === 0, 10_000, 'no subscription left')
})
