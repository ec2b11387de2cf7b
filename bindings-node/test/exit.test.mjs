// Loading (ESM and CommonJS) and process lifetime: a closed client, or one that holds and
// waits on nothing, never keeps Node running; a pending acquire does.

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { readFileSync } from 'node:fs'
import rlockDefault, { Client, RLockError, codes, version } from 'rlock'
import * as esm from 'rlock'

const require = createRequire(import.meta.url)
const { startRedis, eventually } = require('./redis-server.js')
const pkgDir = fileURLToPath(new URL('..', import.meta.url))

let redis
before(async () => {
  redis = await startRedis()
})
after(async () => {
  await redis.stop()
})

test('ESM and CommonJS load the same API', () => {
  const cjs = require('rlock')
  assert.equal(typeof Client, 'function')
  assert.equal(cjs.Client, Client)
  assert.equal(rlockDefault.Client, Client)
  assert.equal(cjs.RLockError, RLockError)
  assert.equal(codes.TIMEOUT, 'RLOCK_TIMEOUT')
  // The default export holds every name, from ESM and as compiled CommonJS reads it (rlock.js is
  // marked __esModule, so TypeScript's esModuleInterop, Babel and swc take `.default`).
  const names = Object.keys(cjs).filter((k) => k !== 'default').sort()
  assert.deepEqual(Object.keys(rlockDefault).sort(), names)
  // rlock.mjs names each export by hand: one the CommonJS entry gained must be named there too.
  assert.deepEqual(Object.keys(esm).filter((k) => k !== 'default').sort(), names)
  for (const k of names) assert.equal(esm[k], cjs[k], k)
  assert.equal(cjs.__esModule, true)
  assert.deepEqual(Object.keys(cjs.default).sort(), names)
  for (const k of names) assert.equal(cjs.default[k], cjs[k], k)
})

test('version is the workspace version and the package version', () => {
  const cargo = readFileSync(new URL('../../Cargo.toml', import.meta.url), 'utf8')
  const workspace = /^version = "([^"]+)"/m.exec(cargo)[1]
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  assert.equal(version, workspace)
  assert.equal(require('rlock').version, version)
  assert.equal(rlockDefault.version, version)
  assert.equal(pkg.version, version)
})

// Runs `body` (CommonJS, `rlock` and `url` in scope) in a child node; resolves its exit code and
// output. The child never calls process.exit: it must end because nothing keeps it alive.
function child(body, onStdout) {
  return childSource(
    `const rlock = require('rlock'); const url = process.env.REDIS_URL;
    (async () => { ${body} })().catch((e) => { console.error(e); process.exitCode = 3 })`,
    onStdout,
  )
}

// Runs the CommonJS program `src` in a child of this runtime (Node, Bun or Deno).
function childSource(src, onStdout) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['-e', src], {
      cwd: pkgDir,
      env: { ...process.env, REDIS_URL: redis.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    const killer = setTimeout(() => p.kill('SIGKILL'), 30_000)
    p.stdout.on('data', (d) => {
      out += d
      if (onStdout) onStdout(out)
    })
    p.stderr.on('data', (d) => (err += d))
    p.once('error', reject)
    p.once('exit', (code, signal) => {
      clearTimeout(killer)
      resolve({ code, signal, out, err })
    })
  })
}

test('a process whose client is closed exits by itself (also while holding)', async () => {
  const r = await child(`
    const c = new rlock.Client(url, { watchdogTimeoutMs: 60000 })
    const a = c.lock('exit:closed')
    await a.acquire()
    await a.acquire({ waitMs: 1000, leaseMs: 60000 })
    const b = c.lock('exit:other')
    await b.acquire()
    await b.release()
    await c.close()
    console.log('closed')`)
  assert.equal(r.signal, null, `killed: ${r.err}`)
  assert.equal(r.code, 0, r.err)
  assert.match(r.out, /closed/)
  // The unreleased hold stays until its lease runs out (close does not release).
  assert.equal(await redis.data.exists('exit:closed'), 1)
  await redis.data.del('exit:closed')
})

test('a process that forgot close() exits once nothing is pending', async () => {
  const r = await child(`
    const c = new rlock.Client(url)
    const a = c.lock('exit:forgot')
    await a.acquire()
    await a.release()
    console.log('released')`)
  assert.equal(r.signal, null, `killed: ${r.err}`)
  assert.equal(r.code, 0, r.err)
  assert.equal(await redis.data.exists('exit:forgot'), 0)
})

test('a pending acquire keeps the process alive until it resolves', async () => {
  const holder = new Client(redis.url)
  const lock = holder.lock('exit:waiting')
  await lock.acquire()
  let started = false
  const run = child(
    `const c = new rlock.Client(url)
     const a = c.lock('exit:waiting')
     await c.ready()
     console.log('waiting')
     await a.acquire()
     console.log('got')
     await a.release()`,
    (out) => {
      started = out.includes('waiting')
    },
  )
  await eventually(() => started, 20_000, 'child started')
  await eventually(
    async () => (await redis.data.sendCommand(['PUBSUB', 'CHANNELS'])).includes('redisson_lock__channel:{exit:waiting}'),
    20_000,
    'child subscribed',
  )
  await lock.release()
  const r = await run
  assert.equal(r.code, 0, r.err)
  assert.match(r.out, /got/)
  await holder.close()
})

test('workers that load rlock one after another, never the main thread, each have a working runtime', async () => {
  // napi shuts its tokio runtime down when the last environment that loaded the addon ends, and
  // makes a new one for the next. The second worker's calls must run on the new one: a handle
  // kept from the first panicked at the first timer (Deno runs every test file in such a worker).
  const worker = `
    const { parentPort, workerData } = require('node:worker_threads')
    const { Client } = require(workerData.module)
    ;(async () => {
      const c = new Client(workerData.url)
      const a = c.lock('exit:workers')
      await a.acquire()
      // Another handle waits 50 ms on a timer of the runtime, then gives up.
      const got = await c.lock('exit:workers').tryAcquire({ waitMs: 50 })
      await a.release()
      await c.close()
      parentPort.postMessage(got)
    })().catch((e) => parentPort.postMessage(String(e)))`
  const r = await childSource(`
    const { Worker } = require('node:worker_threads')
    const { once } = require('node:events')
    ;(async () => {
      for (let i = 0; i < 2; i++) {
        const w = new Worker(${JSON.stringify(worker)}, {
          eval: true,
          workerData: { module: ${JSON.stringify(require.resolve('rlock'))}, url: process.env.REDIS_URL },
        })
        // Both listeners before either wait: Node emits a worker's last messages and its 'exit'
        // in one go, so an 'exit' listener added once the message came can be too late (then
        // this child waited for nothing, printed one line and exited 0).
        const exited = once(w, 'exit')
        const [got] = await once(w, 'message')
        console.log(got)
        await exited
      }
    })().catch((e) => { console.error(e); process.exitCode = 3 })`)
  assert.equal(r.code, 0, r.err)
  assert.equal(r.out, 'false\nfalse\n', r.err)
})
