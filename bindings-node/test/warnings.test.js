'use strict'
// Core's warnings reach Node as process warnings (type RLockWarning, code RLOCK_LOG_WARN), from
// whichever of rlock's threads logged them: here, a server that may evict a held lock's key.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { createClient } = require('redis')
const { startTestbed, eventually } = require('./redis-server.js')
const { Client } = require('../rlock.js')

test('a core warning is a process warning', async () => {
  const testbed = await startTestbed('evicting')
  // A policy no other test file uses: Bun and Deno run every file in one process, and core
  // passes a message repeated within 30 s on once. The warning names the server, but a port
  // freed by an earlier file's evicting server (managed.test.js's, on volatile-lru) may be
  // this one's.
  const raw = createClient({ url: testbed.info.url })
  raw.on('error', () => {})
  await raw.connect()
  await raw.sendCommand(['CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lfu'])
  await raw.disconnect()
  const seen = []
  const onWarning = (w) => {
    if (w.name === 'RLockWarning') seen.push(w)
  }
  process.on('warning', onWarning)
  const client = new Client(testbed.info.url)
  try {
    assert.equal((await client.stats()).evictionPolicy, 'allkeys-lfu')
    const evicting = () => seen.find((w) => w.message.includes('maxmemory-policy allkeys-lfu'))
    await eventually(evicting, 10_000, 'the eviction warning')
    const w = evicting()
    assert.equal(w.code, 'RLOCK_LOG_WARN')
    assert.match(w.detail, /^from rlock/)
    assert.ok(!w.message.startsWith('rlock: '), w.message)
  } finally {
    process.off('warning', onWarning)
    await client.close()
    await testbed.stop()
  }
})
