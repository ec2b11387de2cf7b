'use strict'
// RedLock through the Node API over three private servers: the shape of every lock (acquire,
// tryAcquire, release, isHeld, withLock), Redisson's layout on each server, a waiter woken by
// the release, a server down, a majority down (typed error), fenced tokens whose order holds
// when the servers' counters start far apart, and the lost-hold signal.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { startRedis, eventually } = require('./redis-server.js')
const { Client, RedLock, FencedRedLock, redLock, fencedRedLock, RLockError, codes } = require('../rlock.js')

let uniq = 0
const name = (what) => `red:${what}:${++uniq}`

let servers = []
before(async () => {
  servers = await Promise.all([startRedis(), startRedis(), startRedis()])
})

after(async () => {
  await Promise.all(servers.map((s) => s.stop()))
})

/** Fresh clients on the three servers (restarted servers included); closed by `done()`. */
async function clients(options = {}) {
  const cs = servers.map((s) => new Client(s.url, { commandTimeoutMs: 2000, retryAttempts: 0, ...options }))
  await Promise.all(cs.map((c) => c.ready()))
  return cs
}

const done = (cs) => Promise.all(cs.map((c) => c.close()))

async function rejectsWith(promise, ...wanted) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof RLockError, `${e}`)
    assert.ok(wanted.includes(e.code), `${e.code}: ${e.message}`)
    return true
  })
}

test('the shape of every lock, in Redisson layout on a majority', async () => {
  const cs = await clients()
  const n = name('shape')
  const lock = redLock(n, cs)
  assert.equal(lock.quorum, 2, 'two of three servers make a majority')
  assert.ok(lock instanceof RedLock)
  await lock.acquire()
  assert.equal(await lock.isHeld(), true)
  const held = await Promise.all(servers.map((s) => s.data.hGetAll(n)))
  assert.ok(held.filter((h) => Object.keys(h).length === 1).length >= 2)
  for (const h of held) for (const v of Object.values(h)) assert.equal(v, '1')
  const other = new RedLock(n, cs) // another handle is another owner
  assert.equal(await other.tryAcquire({ waitMs: 100 }), false)
  await rejectsWith(other.acquire({ waitMs: 100 }), codes.NOT_ACQUIRED)
  assert.equal(await lock.release(), true)
  await rejectsWith(lock.release(), codes.NOT_HELD)
  assert.equal(await other.withLock(async () => other.isHeld()), true)
  await done(cs)
})

test('a waiter is woken by the release on every server', async () => {
  const cs = await clients()
  const n = name('wake')
  const [a, b] = [redLock(n, cs), redLock(n, cs)]
  await a.acquire()
  const waiting = b.acquire({ waitMs: 20000 })
  const channel = `redisson_lock__channel:{${n}}`
  await eventually(async () => {
    const counts = await Promise.all(servers.map((s) => s.data.pubSubNumSub(channel)))
    return counts.every((c) => c[channel] >= 1)
  })
  await a.release()
  await waiting
  assert.equal(await b.isHeld(), true)
  await b.release()
  await done(cs)
})

test('bad client lists are refused', async () => {
  const cs = await clients()
  for (const list of [[], cs.slice(0, 1), cs.slice(0, 2), [cs[0], cs[0], cs[1]]]) {
    await rejectsWith(redLock('red:bad', list).acquire(), codes.INVALID_ARGUMENT)
  }
  assert.throws(() => redLock('red:bad', 'no'), (e) => e.code === codes.INVALID_ARGUMENT)
  await done(cs)
})

test('fenced tokens increase whatever the majority (counters 1, 1 and 100)', async () => {
  const cs = await clients()
  const n = name('fenced')
  await Promise.all(servers.map((s, i) => s.data.set(`redisson_lock_token:{${n}}`, String([1, 1, 100][i]))))
  const lock = fencedRedLock(n, cs)
  assert.ok(lock instanceof FencedRedLock)
  await servers[1].testbed.command('stop')
  const a = await lock.acquire()
  assert.equal(await lock.token(), a)
  await lock.release()
  await servers[1].testbed.command('cont')
  await servers[2].testbed.command('stop')
  const b = await lock.tryAcquire({ waitMs: 5000 })
  await lock.release()
  await servers[2].testbed.command('cont')
  assert.ok(a > 100, `A read server 3's counter: ${a}`)
  assert.ok(b > a, `B (${b}) after A (${a})`)
  assert.equal(await lock.token(), null)
  await done(cs)
})

test('a minority down still locks; a majority down rejects typed; the holder hears the loss', async () => {
  const cs = await clients({ watchdogTimeoutMs: 1500, leaseDoubtMarginMs: 300 })
  const n = name('down')
  const lock = redLock(n, cs)
  const heard = []
  await lock.onLost((e) => heard.push(e))
  await servers[0].testbed.command('kill')
  await lock.acquire()
  await servers[1].testbed.command('kill')
  await eventually(() => heard.length > 0)
  assert.equal(await lock.isLost(), true)
  assert.deepEqual([heard[0].name, heard[0].kind, heard[0].permitId], [n, 'red_lock', null])
  await rejectsWith(lock.release(), codes.LOST)
  await rejectsWith(redLock(n, cs).acquire({ waitMs: 1000 }), codes.CONNECTION, codes.TIMEOUT)
  await done(cs)
  await Promise.all([servers[0].testbed.command('restart'), servers[1].testbed.command('restart')])
})
