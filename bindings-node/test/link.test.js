'use strict'
// The event loop's own command connection (core's local link): a client's calls made on this
// thread go out and come back on a connection whose socket this event loop watches, and they
// go on when that connection is killed, also with calls in flight.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { startRedis, eventually } = require('./redis-server.js')
const { Client } = require('../rlock.js')

let redis
before(async () => {
  redis = await startRedis()
})
after(async () => {
  await redis.stop()
})

/** The server's clients as `{ id, cmd }`. */
async function clients() {
  const text = await redis.data.sendCommand(['CLIENT', 'LIST'])
  return text
    .trim()
    .split('\n')
    .map((line) => Object.fromEntries(line.split(' ').map((kv) => kv.split('=', 2))))
}

/** The one connection whose last command was a lock script: the event loop's link. */
async function link() {
  const scripts = (await clients()).filter((c) => c.cmd === 'evalsha')
  assert.equal(scripts.length, 1, `one connection ran the scripts: ${JSON.stringify(scripts)}`)
  return scripts[0].id
}

test('calls go over the event loop’s own connection, which comes back after it is killed', async () => {
  const client = new Client(redis.url)
  try {
    await client.ready()
    const before = (await clients()).length
    const lock = client.lock('link:a')
    // The link connects in the background; until it is up the calls take the shared one.
    await eventually(async () => (await clients()).length === before + 1, 10_000, 'the link connected')
    for (let i = 0; i < 5; i++) {
      await lock.acquire()
      assert.equal(await lock.release(), true)
    }
    const first = await link()

    await redis.data.sendCommand(['CLIENT', 'KILL', 'ID', first])
    // Calls right after go on (on the shared connection, or retried there).
    for (let i = 0; i < 5; i++) {
      await lock.acquire()
      assert.equal(await lock.release(), true)
    }
    // A new link replaces the killed one and carries the calls again.
    await eventually(
      async () => {
        await lock.acquire()
        await lock.release()
        const id = await link().catch(() => null)
        return id !== null && id !== first
      },
      10_000,
      'a new link',
    )
  } finally {
    await client.close()
  }
})

test('a counter stays exact while the link is killed under load', async () => {
  const client = new Client(redis.url)
  try {
    await client.ready()
    const counter = 'link:counter'
    await redis.data.set(counter, '0')
    const handles = Array.from({ length: 16 }, () => client.lock('link:b'))
    let done = 0
    const work = handles.map(async (h) => {
      for (let i = 0; i < 40; i++) {
        await h.acquire()
        // Non-atomic read-modify-write: exact only if the lock holds.
        const n = Number(await redis.data.get(counter))
        await redis.data.set(counter, String(n + 1))
        assert.equal(await h.release(), true)
        done++
      }
    })
    // Kill the link twice while the owners queue on the lock.
    for (const at of [100, 400]) {
      await eventually(async () => done >= at, 60_000, `${at} increments`)
      const id = (await clients()).find((c) => c.cmd === 'evalsha')?.id
      assert.ok(id, 'a connection runs the scripts')
      await redis.data.sendCommand(['CLIENT', 'KILL', 'ID', id])
    }
    await Promise.all(work)
    assert.equal(Number(await redis.data.get(counter)), 16 * 40)
  } finally {
    await client.close()
  }
})
