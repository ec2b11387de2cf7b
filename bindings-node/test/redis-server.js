'use strict'
// A private redis-server for one test file: a free loopback port, a temporary directory, stopped
// (and the directory removed) by stop().

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')
const { createClient } = require('redis')

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer()
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address()
      srv.close(() => resolve(port))
    })
  })
}

async function pingable(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1')
    s.once('error', () => resolve(false))
    s.once('connect', () => s.write('PING\r\n'))
    s.once('data', () => {
      s.destroy()
      resolve(true)
    })
  })
}

async function startRedis() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rlock-node-test-'))
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await freePort()
    const child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      { stdio: 'ignore' },
    )
    let exited = false
    // A test process that dies (timeout, crash) must not leave its server behind.
    const reap = () => child.kill('SIGKILL')
    process.once('exit', reap)
    child.once('exit', () => {
      exited = true
      process.removeListener('exit', reap)
    })
    const deadline = Date.now() + 10_000
    while (!exited && Date.now() < deadline) {
      if (await pingable(port)) {
        const url = `redis://127.0.0.1:${port}`
        const data = createClient({ url })
        data.on('error', () => {})
        await data.connect()
        return {
          port,
          url,
          data,
          async stop() {
            await data.quit().catch(() => {})
            // 'exit' fires once: waiting for it from a server that already exited would hang.
            if (!exited) {
              const gone = new Promise((r) => child.once('exit', r))
              child.kill('SIGTERM')
              await gone
            }
            fs.rmSync(dir, { recursive: true, force: true })
          },
        }
      }
      await new Promise((r) => setTimeout(r, 20))
    }
    if (!exited) child.kill('SIGKILL')
  }
  throw new Error('could not start redis-server')
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
    async stop() {
      await data.quit().catch(() => {})
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

module.exports = { startRedis, privateCluster, eventually }
