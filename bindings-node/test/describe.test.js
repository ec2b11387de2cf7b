'use strict'
// client.describe and client.list: core's JSON shape, parsed (kinds, holders with their
// records, waiters, list with a pattern, bad input).

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { startRedis, eventually } = require('./redis-server.js')
const { Client, RLockError, codes } = require('../rlock.js')

let redis
let client

before(async () => {
  redis = await startRedis()
  client = new Client(redis.url, { appName: 'checkout' })
  await client.ready()
})

after(async () => {
  await client.close()
  await redis.stop()
})

async function rejectsWith(promise, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof RLockError, 'an RLockError')
    assert.equal(e.code, code, e.message)
    return true
  })
}

test('describe names the holder, its count and its client', async () => {
  const lock = client.lock('d:orders')
  await lock.acquire()
  await lock.acquire()
  await eventually(async () => (await client.describe('d:orders')).holders[0]?.record !== null)
  const d = await client.describe('d:orders')
  assert.equal(d.kind, 'lock')
  assert.equal(d.redisType, 'hash')
  assert.equal(d.holders.length, 1)
  assert.equal(d.holders[0].count, 2)
  assert.equal(d.holders[0].record.app, 'checkout')
  assert.equal(d.holders[0].record.pid, process.pid)
  assert.ok(d.ttlMs > 0 && d.ttlMs <= 30000)
  assert.ok(d.holders[0].heldForMs >= 0)
  assert.ok(Math.abs(d.holders[0].sinceMs - Date.now()) < 60000, 'a Unix time in ms')
  assert.equal(d.holders[0].clientId, d.holders[0].owner.slice(0, d.holders[0].owner.lastIndexOf(':')))
  assert.equal(Object.keys(d).filter((k) => k.includes('_')).length, 0, 'camelCase keys')
  await lock.release()
  await lock.release()
  assert.equal((await client.describe('d:orders')).kind, 'none')
})

test('waiters tell a latch from a semaphore; foreign keys are other', async () => {
  const latch = client.countDownLatch('d:latch')
  await latch.trySetCount(1)
  assert.equal((await client.describe('d:latch')).kind, 'semaphore_or_latch')
  const waiting = latch.wait()
  await eventually(async () => (await client.describe('d:latch')).waiters === 1)
  const d = await client.describe('d:latch')
  assert.equal(d.kind, 'count_down_latch')
  assert.equal(d.count, 1)
  await latch.countDown()
  assert.equal(await waiting, true)

  await redis.data.rPush('d:list', 'x')
  const other = await client.describe('d:list')
  assert.deepEqual([other.kind, other.redisType, other.holders], ['other', 'list', []])
})

test('list finds names by pattern, with kinds', async () => {
  const fenced = client.fencedLock('l:a')
  await fenced.acquire()
  await client.semaphore('l:b').trySetPermits(2)
  assert.deepEqual(await client.list('l:*'), [
    { name: 'l:a', kind: 'fenced_lock' },
    { name: 'l:b', kind: 'semaphore_or_latch' },
  ])
  assert.deepEqual(await client.list('l:*', { limit: 1 }), [{ name: 'l:a', kind: 'fenced_lock' }])
  assert.deepEqual(await client.list('nothing:*'), [])
  await fenced.release()
})

test('bad input rejects RLOCK_INVALID_ARGUMENT', async () => {
  await rejectsWith(client.describe(''), codes.INVALID_ARGUMENT)
  await rejectsWith(client.describe(42), codes.INVALID_ARGUMENT)
  await rejectsWith(client.list('x', { limit: 0 }), codes.INVALID_ARGUMENT)
  await rejectsWith(client.list(7), codes.INVALID_ARGUMENT)
})
