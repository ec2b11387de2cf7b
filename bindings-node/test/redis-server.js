'use strict'
// Private redis-servers for the Node tests, from rlock-testbed (testbed/ in this repository), the
// launcher every suite uses: ports outside the kernel's ephemeral range, servers started once they
// answer PING, the server's log printed on stderr when one does not come up. The binary prints one
// JSON line describing what it started and stays as its supervisor until its stdin closes, so a
// test process that dies takes its servers with it.

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const readline = require('node:readline')
const { createClient } = require('redis')

// Exported by make; `make testbed` builds it here.
const TESTBED = process.env.RLOCK_TESTBED || path.join(__dirname, '..', '..', 'target', 'release', 'rlock-testbed')

/**
 * Starts `rlock-testbed <topology> ...args`. Resolves with `info` (its JSON description),
 * `command(line)` (kill/restart/stop/cont/log NODE; resolves the JSON answer, rejects when it
 * says ok: false) and `stop()` (closes its stdin: every server stops, the directories go).
 */
async function startTestbed(topology = 'single', ...args) {
  if (!fs.existsSync(TESTBED)) throw new Error(`missing ${TESTBED}: run 'make testbed'`)
  // stderr inherited: when a server does not come up, its log shows in the test output.
  const child = spawn(TESTBED, [topology, ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
  // Writing to one that already exited is answered by next() rejecting, not by a crash.
  child.stdin.on('error', () => {})
  // 'exit' fires once: keep it, so stop() after the process is gone does not wait forever.
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
  const lines = []
  const waiters = []
  let closed = false
  const rl = readline.createInterface({ input: child.stdout })
  rl.on('line', (line) => {
    const w = waiters.shift()
    if (w) w.resolve(line)
    else lines.push(line)
  })
  rl.on('close', () => {
    closed = true
    for (const w of waiters.splice(0)) w.reject(new Error('rlock-testbed exited'))
  })
  const next = () => {
    if (lines.length) return Promise.resolve(lines.shift())
    if (closed) return Promise.reject(new Error('rlock-testbed exited'))
    return new Promise((resolve, reject) => waiters.push({ resolve, reject }))
  }
  let info
  try {
    info = JSON.parse(await next())
  } catch {
    const code = await exited
    throw new Error(`rlock-testbed ${topology} did not start (exit ${code}): its reason and the server's log are on stderr above`)
  }
  return {
    info,
    async command(line) {
      child.stdin.write(`${line}\n`)
      const reply = JSON.parse(await next())
      if (!reply.ok) throw new Error(`rlock-testbed ${line}: ${reply.error}`)
      return reply
    },
    async stop() {
      child.stdin.end()
      await exited
    },
  }
}

/** A private redis-server with a plain node-redis connection (`data`) for inspection. */
async function startRedis(...args) {
  const testbed = await startTestbed('single', ...args)
  const { port, url } = testbed.info
  const data = createClient({ url })
  data.on('error', () => {})
  await data.connect()
  return {
    port,
    url,
    data,
    testbed,
    async stop() {
      await data.disconnect().catch(() => {})
      await testbed.stop()
    },
  }
}

/**
 * The private 3-master cluster `make test-node` starts (examples/redis.sh,
 * `start_private_cluster`) and names in RLOCK_CLUSTER_URL.
 */
async function privateCluster() {
  const url = process.env.RLOCK_CLUSTER_URL
  if (!url) throw new Error('RLOCK_CLUSTER_URL is not set: run the tests with `make test-node`, which starts a private cluster (examples/redis.sh)')
  const seed = url.split('://')[1].split(',')[0].replace(/\/$/, '')
  const data = createClient({ url: `redis://${seed}` })
  data.on('error', () => {})
  await data.connect()
  return {
    url,
    /** A plain connection to the master of `key`'s slot (caller quits it). */
    async ownerOf(key) {
      const slot = await data.sendCommand(['CLUSTER', 'KEYSLOT', key])
      for (const [first, last, master] of await data.sendCommand(['CLUSTER', 'SLOTS'])) {
        if (first <= slot && slot <= last) {
          const c = createClient({ url: `redis://127.0.0.1:${master[1]}` })
          c.on('error', () => {})
          await c.connect()
          return { port: master[1], conn: c }
        }
      }
      throw new Error(`no master for slot ${slot}`)
    },
    /** Whether the cluster has sharded pub/sub (Redis 7 and later answer PUBSUB SHARDNUMSUB, 6.2 does not). */
    async answersShardNumSub() {
      try {
        await data.sendCommand(['PUBSUB', 'SHARDNUMSUB'])
        return true
      } catch {
        return false
      }
    },
    /** Subscribers of `channel`: sharded on the master of its slot, classic on any master. */
    async subscribers(channel, sharded, key) {
      if (sharded) {
        const { conn } = await this.ownerOf(key)
        try {
          return (await conn.sendCommand(['PUBSUB', 'SHARDNUMSUB', channel]))[1]
        } finally {
          await conn.quit()
        }
      }
      let n = 0
      for (const [, , master] of await data.sendCommand(['CLUSTER', 'SLOTS'])) {
        const c = createClient({ url: `redis://127.0.0.1:${master[1]}` })
        c.on('error', () => {})
        await c.connect()
        n += (await c.sendCommand(['PUBSUB', 'NUMSUB', channel]))[1]
        await c.quit()
      }
      return n
    },
    async stop() {
      await data.disconnect().catch(() => {})
    },
  }
}

/** Polls `cond` until it is true or `ms` pass (for states that have no event to wait on). */
async function eventually(cond, ms = 10_000, what = 'condition') {
  const deadline = Date.now() + ms
  for (;;) {
    if (await cond()) return
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

module.exports = { startTestbed, startRedis, privateCluster, eventually }
