'use strict'
// Redis Cluster through the Node surface, and the topology options and URLs.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { startRedis, privateCluster, eventually } = require('./redis-server.js')
const { Client, RLockError } = require('../rlock.js')

let cluster
let single

before(async () => {
  ;[cluster, single] = await Promise.all([privateCluster(), startRedis()])
})

after(async () => {
  await cluster.stop()
  await single.stop()
})

test('a redis+cluster URL locks on every master, with sharded pub/sub where the cluster has it', async () => {
  const a = new Client(cluster.url)
  const b = new Client(cluster.url)
  try {
    const shardedPubsub = await cluster.answersShardNumSub() // as Redisson
    assert.deepEqual(await a.info(), { topology: 'cluster', shardedPubsub, replicaSync: true })
    const masters = new Set()
    for (let i = 0; i < 30; i++) {
      const name = `node-cluster-${i}`
      const lock = a.lock(name)
      await lock.acquire()
      await lock.acquire()
      assert.equal(await lock.holdCount(), 2)
      assert.equal(await b.lock(name).tryAcquire(), false)
      const { port, conn } = await cluster.ownerOf(name)
      masters.add(port)
      assert.equal(Object.values(await conn.hGetAll(name))[0], '2')
      await conn.quit()
      assert.equal(await lock.release(), false)
      assert.equal(await lock.release(), true)
    }
    assert.equal(masters.size, 3)
  } finally {
    await a.close()
    await b.close()
  }
})

test('a waiter on a cluster wakes by pub/sub', async () => {
  const a = new Client(cluster.url)
  const b = new Client(cluster.url)
  try {
    const holder = a.lock('node-cluster-handoff')
    await holder.acquire() // 30 s lease: waking by expiry would take 30 s
    const waiter = b.lock('node-cluster-handoff')
    let got = 0
    const waiting = waiter.acquire().then(() => (got = Date.now()))
    const channel = 'redisson_lock__channel:{node-cluster-handoff}'
    const { shardedPubsub } = await b.info()
    await eventually(async () => (await cluster.subscribers(channel, shardedPubsub, 'node-cluster-handoff')) === 1, 10_000, 'subscribed')
    const released = Date.now()
    await holder.release()
    await waiting
    assert.ok(got - released < 2000, `woke ${got - released} ms after the release`)
    await waiter.release()
  } finally {
    await a.close()
    await b.close()
  }
})

test('a count-down latch on a cluster opens by pub/sub; a tagged name is refused', async () => {
  const a = new Client(cluster.url)
  const b = new Client(cluster.url)
  try {
    const n = 'node-cluster-latch'
    assert.equal(await a.countDownLatch(n).trySetCount(1), true)
    const waiting = b.countDownLatch(n).wait()
    const channel = `redisson_countdownlatch__channel__{${n}}`
    const { shardedPubsub } = await b.info()
    await eventually(async () => (await cluster.subscribers(channel, shardedPubsub, n)) === 1, 10_000, 'subscribed')
    await a.countDownLatch(n).countDown()
    assert.equal(await waiting, true)
    await assert.rejects(a.countDownLatch('jobs{7}').count(), { code: 'RLOCK_INVALID_ARGUMENT' })
  } finally {
    await a.close()
    await b.close()
  }
})

test('one server: topology single, replica sync off unless forced', async () => {
  const c = new Client(single.url)
  const forced = new Client(single.url, { replicaSync: true, replicaSyncTimeoutMs: 200 })
  try {
    assert.deepEqual(await c.info(), { topology: 'single', shardedPubsub: false, replicaSync: false })
    assert.equal((await forced.info()).replicaSync, true)
    // No replicas: nothing is waited on.
    const lock = forced.lock('node-forced-sync')
    await lock.acquire()
    assert.equal(await lock.release(), true)
  } finally {
    await c.close()
    await forced.close()
  }
})

test('bad topology options and URLs reject RLOCK_INVALID_ARGUMENT', async () => {
  const bad = [
    [single.url, { replicaSyncTimeoutMs: 0 }],
    [single.url, { replicaSyncTimeoutMs: -5 }],
    [single.url, { shardedPubsub: 'yes' }],
    [single.url, { replicaSync: 1 }],
    [single.url, { tlsCaFile: 42 }],
    [single.url, { commandConnections: 0 }],
    [single.url, { commandConnections: 9 }],
    ['rediss://127.0.0.1:1/', { tlsCaFile: '/nonexistent/ca.pem' }],
    ['redis+cluster://127.0.0.1:notaport/', {}],
    ['redis+cluster://127.0.0.1:7000/3', {}],
    ['redis+sentinel://127.0.0.1:26379/', {}],
    ['redis+sentinel://u:hunter2@127.0.0.1:26379/a/b/c', {}],
  ]
  for (const [url, options] of bad) {
    const c = new Client(url, options)
    await assert.rejects(c.ready(), (e) => {
      assert.ok(e instanceof RLockError, `${url} ${JSON.stringify(options)}: ${e}`)
      assert.equal(e.code, 'RLOCK_INVALID_ARGUMENT', e.message)
      assert.ok(!e.message.includes('hunter2'))
      return true
    })
  }
})

test('two command connections to one server lock the same way', async () => {
  // Connections the server accepted after client id `after` (ids only grow).
  const newer = async (after) =>
    [...(await single.data.sendCommand(['CLIENT', 'LIST'])).matchAll(/^id=(\d+)/gm)].map((m) => Number(m[1])).filter((id) => id > after)
  const start = Math.max(...(await newer(0)))
  const b = new Client(single.url)
  await b.ready()
  const one = await newer(start) // commands + pub/sub
  const a = new Client(single.url, { commandConnections: 2 })
  await a.ready()
  try {
    assert.equal((await newer(Math.max(...one))).length, one.length + 1, 'one more connection for commands')
    const lock = a.lock('node-two-conns')
    await lock.acquire()
    await lock.acquire()
    assert.equal(await b.lock('node-two-conns').tryAcquire(), false)
    assert.equal(await lock.release(), false)
    assert.equal(await lock.release(), true)
  } finally {
    await a.close()
    await b.close()
  }
})
