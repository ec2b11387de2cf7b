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

/** The newest connection that is not in `known` (ids), or undefined. */
async function newest(known) {
  const fresh = (await clients()).filter((c) => !known.has(c.id))
  return fresh.sort((a, b) => Number(b.id) - Number(a.id))[0]
}

/** Runs acquire/release pairs until connection `id` is the one that ran the last script. */
async function carriesScripts(lock, id, what) {
  await eventually(
    async () => {
      await lock.acquire()
      assert.equal(await lock.release(), true)
      return (await clients()).find((c) => c.id === id)?.cmd === 'evalsha'
    },
    10_000,
    what,
  )
}

test('calls go over the event loop’s own connection, which comes back after it is killed', async () => {
  const client = new Client(redis.url)
  try {
    await client.ready()
    const known = new Set((await clients()).map((c) => c.id))
    // The first handle starts the link; it connects in the background (until it is up the
    // calls take the shared connection).
    const lock = client.lock('link:a')
    await eventually(async () => (await newest(known)) !== undefined, 10_000, 'the link connected')
    const first = (await newest(known)).id
    await carriesScripts(lock, first, 'the link to carry the scripts')

    await redis.data.sendCommand(['CLIENT', 'KILL', 'ID', first])
    known.add(first)
    // Calls right after go on (on the shared connection, or retried there).
    for (let i = 0; i < 5; i++) {
      await lock.acquire()
      assert.equal(await lock.release(), true)
    }
    // A new link replaces the killed one and carries the calls again.
    await eventually(async () => (await newest(known)) !== undefined, 10_000, 'a new link')
    await carriesScripts(lock, (await newest(known)).id, 'the new link to carry the scripts')
  } finally {
    await client.close()
  }
})

test('a counter stays exact while the link is killed under load', async () => {
  const client = new Client(redis.url)
  try {
    await client.ready()
    const known = new Set((await clients()).map((c) => c.id))
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
      await eventually(async () => done >= at && (await newest(known)) !== undefined, 60_000, `${at} increments and a link`)
      const link = await newest(known)
      await redis.data.sendCommand(['CLIENT', 'KILL', 'ID', link.id])
      known.add(link.id)
    }
    await Promise.all(work)
    assert.equal(Number(await redis.data.get(counter)), 16 * 40)
  } finally {
    await client.close()
  }
})

test('a link that stops answering fails its calls RLOCK_TIMEOUT after the command timeout, then comes back', async () => {
  const client = new Client(redis.url, { commandTimeoutMs: 300, retryAttempts: 0 })
  try {
    await client.ready()
    const known = new Set((await clients()).map((c) => c.id))
    const lock = client.lock('link:stall')
    await eventually(async () => (await newest(known)) !== undefined, 10_000, 'the link connected')
    const first = (await newest(known)).id
    await carriesScripts(lock, first, 'the link to carry the scripts')

    // Redis holds every write (the scripts) back: the link gets no answer.
    await redis.data.sendCommand(['CLIENT', 'PAUSE', '5000', 'WRITE'])
    try {
      await assert.rejects(lock.acquire(), (e) => {
        assert.equal(e.code, 'RLOCK_TIMEOUT', e.message)
        return true
      })
    } finally {
      await redis.data.sendCommand(['CLIENT', 'UNPAUSE'])
    }
    // The stalled link was ended (a timeout on the shared connection leaves it open); a new
    // one carries the calls.
    known.add(first)
    await eventually(async () => !(await clients()).some((c) => c.id === first), 10_000, 'the stalled link closed')
    await eventually(async () => (await newest(known)) !== undefined, 10_000, 'a new link')
    await carriesScripts(lock, (await newest(known)).id, 'the new link to carry the scripts')
    assert.equal(await lock.isLocked(), false)
  } finally {
    await client.close()
  }
})
