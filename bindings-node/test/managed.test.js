'use strict'
// Behind rlock-testbed's managed-endpoint stand-ins (docs/operations/managed-services.md): a proxy
// in front of a sharded cluster (CROSSSLOT on anything spanning slots), twemproxy (no pub/sub,
// no HELLO, no CLIENT; scripts routed by their first key), a server without WAIT, WAITAOF, CONFIG
// and CLIENT, and one that evicts (maxmemory, volatile-lru). Holds of many names stay held across
// three watchdog periods, a released lock passes to a waiter of another client, and 4 owners x 25
// critical sections keep a counter exact.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { createClient } = require('redis')
const { startTestbed, eventually } = require('./redis-server.js')
const { Client } = require('../rlock.js')

for (const kind of ['proxy-endpoint', 'twemproxy', 'restricted', 'evicting']) {
  test(`${kind}: holds of many names stay held, hand off and exclude`, async () => {
    const testbed = await startTestbed(kind)
    // The data lives on the servers behind the endpoint; plain clients talk to them directly.
    const shards = await Promise.all(testbed.info.nodes.map((n) => createClient({ url: `redis://127.0.0.1:${n.port}` }).connect()))
    const client = new Client(testbed.info.url, { watchdogTimeoutMs: 1500 })
    const other = new Client(testbed.info.url)
    try {
      const lost = []
      // Only the evicting stand-in is known to evict (elsewhere: noeviction, or CONFIG refused).
      assert.equal((await client.stats()).evictionPolicy, kind === 'evicting' ? 'volatile-lru' : null)
      await client.onLost((e) => lost.push(e))
      const locks = Array.from({ length: 6 }, (_, i) => client.lock(`node:managed:${i}`))
      const fenced = client.fencedLock('node:managed:fenced')
      const read = client.readWriteLock('node:managed:rw').readLock()
      const spin = client.spinLock('node:managed:spin')
      for (const l of locks) await l.acquire()
      assert.ok((await fenced.acquire()) >= 1)
      await read.acquire()
      await spin.acquire()
      const holds = 9
      const before = (await client.stats()).renewals
      // Three watchdog periods (0.5 s each): every hold renewed three times over.
      await eventually(async () => lost.length > 0 || (await client.stats()).renewals >= before + 3 * holds, 10_000, 'renewals')
      assert.deepEqual(lost, [])
      assert.equal((await client.stats()).renewalFailures, 0)
      for (const l of locks) assert.equal(await other.lock(l.name).tryAcquire(), false)
      assert.equal(await other.spinLock(spin.name).tryAcquire(), false)
      for (const l of locks) assert.equal(await l.release(), true)
      assert.equal(await spin.release(), true)
      assert.equal(await fenced.release(), true)
      assert.equal(await read.release(), true)
      assert.deepEqual(lost, [])

      // A waiter of another client gets a released lock (woken, or polling where there is no pub/sub).
      const holder = client.lock('node:managed:handoff')
      await holder.acquire()
      const scripts = async () => {
        let n = 0
        for (const s of shards) {
          const stats = await s.info('commandstats')
          for (const m of stats.matchAll(/cmdstat_eval(?:sha)?:calls=(\d+)/g)) n += Number(m[1])
        }
        return n
      }
      const tries = await scripts()
      const theirs = other.lock('node:managed:handoff')
      const waiting = theirs.acquire()
      // The waiter is waiting: its first try, and the one after it subscribed (or its polls).
      await eventually(async () => (await scripts()) >= tries + 2, 10_000, 'the waiter tried')
      assert.equal(await holder.release(), true)
      await waiting
      assert.equal(await theirs.release(), true)

      // 4 owners x 25 critical sections on a counter; two through the spin lock of the same name.
      const store = shards[0]
      await store.set('node:managed:counter', '0')
      const owners = [client, other, client, other]
      await Promise.all(owners.map(async (c, i) => {
        const lock = i < 2 ? c.lock('node:managed:counter-lock') : c.spinLock('node:managed:counter-lock')
        for (let i = 0; i < 25; i++) {
          await lock.acquire()
          const n = Number(await store.get('node:managed:counter'))
          await new Promise((resolve) => setImmediate(resolve))
          await store.set('node:managed:counter', String(n + 1))
          assert.equal(await lock.release(), true)
        }
      }))
      assert.equal(await store.get('node:managed:counter'), '100')
    } finally {
      await client.close()
      await other.close()
      for (const s of shards) await s.quit()
      await testbed.stop()
    }
  })
}
