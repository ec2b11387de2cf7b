// The Node worker of the fault suite (`make chaos`, driver tests/chaos/run.py).
//
// Usage: `node worker.mjs <redis-url> [watchdog_ms=N] [command_timeout_ms=N] [retry_attempts=N]
// [retry_delay_ms=N] [label=S]`. Connects, prints {"event":"ready",...}, then answers one command
// per stdin line with one JSON line (see tests/chaos/README.md). Holds belong to one `Lock` handle
// per name; `cancel` aborts acquires through AbortSignals at random moments.

import { createRequire } from 'node:module'
import net from 'node:net'
import readline from 'node:readline'

// The package under test and the plain Redis client (its dev dependency `redis`) for the
// critical sections' marker and counter.
const require = createRequire(new URL('../../bindings-node/package.json', import.meta.url))
const { Client, MultiLock, RLockError, codes, redLock } = require('./rlock.js')
const { createClient } = require('redis')

const emit = (event) => process.stdout.write(JSON.stringify(event) + '\n')
const code = (e) => (e instanceof RLockError ? e.code.replace(/^RLOCK_/, '') : e?.name ?? String(e))

const [url, ...args] = process.argv.slice(2)
const options = {}
let label = 'node'
let redUrls = []
for (const a of args) {
  const [k, v] = a.split('=')
  if (k === 'watchdog_ms') options.watchdogTimeoutMs = Number(v)
  else if (k === 'command_timeout_ms') options.commandTimeoutMs = Number(v)
  else if (k === 'retry_attempts') options.retryAttempts = Number(v)
  else if (k === 'retry_delay_ms') options.retryDelayMs = Number(v)
  else if (k === 'fair_wait_ms') options.fairLockWaitTimeoutMs = Number(v)
  else if (k === 'subscription_timeout_ms') options.subscriptionTimeoutMs = Number(v)
  else if (k === 'replica_sync') options.replicaSync = v === '1'
  else if (k === 'label') label = v
  else if (k === 'red_urls') redUrls = v.split(',')
  else throw new Error(`unknown option ${k}`)
}

const client = new Client(url, options)
// The other servers' clients of a RedLock (red@NAME).
const redClients = redUrls.map((u) => new Client(u, options))
try {
  await Promise.all([client, ...redClients].map((c) => c.ready()))
} catch (e) {
  emit({ event: 'fatal', message: `connect: ${code(e)} ${e.message}` })
  process.exit(1)
}

// sem@NAME, pes@NAME and multi@NAME behind the Lock methods the commands use: each acquire takes
// one permit (a permit-expirable one renewed by the watchdog unless given leaseMs) or every
// member, remembered (a permit's id) for the release that gives one back, which resolves
// whether this handle holds none any more.
function taking(name, target, byId) {
  const taken = []
  const took = (got) => got !== null && got !== false && taken.push(got) > 0
  return {
    name,
    acquire: async (options) => took((await target.acquire(options)) ?? true),
    tryAcquire: async (options) => took(await target.tryAcquire(options)),
    async release() {
      if (taken.length === 0) throw new RLockError(codes.NOT_HELD, `this worker holds none of ${name}`)
      const token = taken.pop()
      await (byId ? target.release(token) : target.release())
      return taken.length === 0
    },
    isLocked: notALock,
    isHeld: notALock,
    onLost: byId ? (callback) => target.onLost(callback) : undefined,
  }
}
async function notALock() {
  throw new RLockError(codes.INVALID_ARGUMENT, 'locked and held are for locks, not sem/pes/multi')
}

// A lock spec is NAME (the reentrant lock), KIND@NAME with KIND read, write, fair, nr or nrf (that
// lock of the family; nr and nrf the non-reentrant and non-reentrant fair locks), sem@NAME, pes@NAME (a semaphore's or a permit-expirable semaphore's permits) or
// multi@NAME (the multi-lock over NAME:x and NAME:y, taken x,y when the label ends in an even
// digit, else y,x) or red@NAME (the RedLock NAME over this server and those of red_urls).
function familyLock(spec) {
  const at = spec.indexOf('@')
  const [kind, name] = at < 0 ? ['lock', spec] : [spec.slice(0, at), spec.slice(at + 1)]
  if (kind === 'read') return client.readWriteLock(name).readLock()
  if (kind === 'write') return client.readWriteLock(name).writeLock()
  if (kind === 'fair') return client.fairLock(name)
  if (kind === 'nr') return client.nonReentrantLock(name)
  if (kind === 'nrf') return client.nonReentrantFairLock(name)
  if (kind === 'fenced') return client.fencedLock(name)
  if (kind === 'sem') return taking(name, client.semaphore(name), false)
  if (kind === 'pes') return taking(name, client.permitExpirableSemaphore(name), true)
  if (kind === 'multi') {
    const [x, y] = [client.lock(`${name}:x`), client.lock(`${name}:y`)]
    return taking(name, new MultiLock(/[02468]$/.test(label) ? [x, y] : [y, x]), false)
  }
  if (kind === 'red') return taking(name, redLock(name, [client, ...redClients]), false)
  return client.lock(spec)
}

const locks = new Map()
function lockOf(name) {
  let l = locks.get(name)
  if (!l) {
    l = familyLock(name)
    locks.set(name, l)
    // A lock reports through its lostSignal (watchLost), the permit semaphore through onLost.
    // A fenced lock reports through onLost too, with the reason (the netfaults suite needs it).
    if (!('lostSignal' in l) || l.fenced) l.onLost?.((e) => emit({ event: 'lost', name: e.name, reason: e.reason }))
  }
  return l
}
// The lost signal is renewed by each acquire after a loss, so listen after every acquire (a
// permit-expirable semaphore reports through onLost instead).
function watchLost(l) {
  if (l.fenced) return // reported through onLost
  const s = l.lostSignal
  if (s && !s.aborted && !s.chaosWatched) {
    s.chaosWatched = true
    s.addEventListener('abort', () => emit({ event: 'lost', name: l.name }), { once: true })
  }
}

let data = null
async function dataClient() {
  if (!data) {
    data = createClient({ url })
    data.on('error', () => {})
    await data.connect()
  }
  return data
}

// A random moment (ms) to abort an acquire at: mostly within a round trip or two, sometimes while
// it waits for another holder.
function cancelDelay() {
  const r = Math.random()
  if (r < 0.3) return 0
  if (r < 0.8) return Math.random() * 3
  return Math.random() * 30
}

async function mx(prefix, names, sections) {
  const d = await dataClient()
  const handles = Array.from({ length: names }, (_, k) => familyLock(`${prefix}:${k}`))
  const perName = new Array(names).fill(0)
  let violations = 0
  let crossings = 0
  const surface = label.split('-')[0] + '-'
  for (let i = 0; i < sections; i++) {
    const k = Math.floor(Math.random() * names)
    const name = `${prefix}:${k}`
    await handles[k].acquire()
    const set = await d.set(`${name}:marker`, label, { NX: true })
    if (set === null) violations++
    const n = Number((await d.get(`${name}:counter`)) ?? 0) + 1
    await d.set(`${name}:counter`, String(n))
    const last = await d.sendCommand(['SET', `${name}:last`, label, 'GET'])
    if (last !== null && !last.startsWith(surface)) crossings++
    if (set !== null) await d.del(`${name}:marker`)
    if ((await handles[k].release()) !== true) throw new Error('release left the lock held')
    perName[k]++
  }
  return { event: 'mx_done', sections, violations, crossings, per_name: perName }
}

// `count` acquires on `names` locks, `concurrency` at a time, each on a fresh handle (a fresh
// owner) with an AbortSignal aborted at a random moment; one that finished first is released.
async function cancel(prefix, names, count, concurrency) {
  let acquired = 0
  let cancelled = 0
  async function loop(n) {
    for (let i = 0; i < n; i++) {
      const l = familyLock(`${prefix}:${Math.floor(Math.random() * names)}`)
      const ac = new AbortController()
      const delay = cancelDelay()
      if (delay === 0) queueMicrotask(() => ac.abort())
      else setTimeout(() => ac.abort(), delay)
      try {
        await l.acquire({ signal: ac.signal })
      } catch (e) {
        if (e?.name !== 'AbortError') throw e
        cancelled++
        continue
      }
      acquired++
      ac.abort() // too late to matter: the hold is ours
      await l.release()
    }
  }
  await Promise.all(
    Array.from({ length: concurrency }, (_, t) => loop(Math.floor(count / concurrency) + (t < count % concurrency ? 1 : 0))),
  )
  return { event: 'cancel_done', acquired, cancelled }
}

const rl = readline.createInterface({ input: process.stdin })
const lines = rl[Symbol.asyncIterator]()
async function nextLine() {
  const r = await lines.next()
  return r.done ? null : r.value
}

// The Node rows of the bad-input table; after each row, waits for `next` on stdin.
async function bad(guard, wrongtype, wrongPwUrl, deadUrl) {
  const closed = new Client(url)
  await closed.ready()
  await closed.close()
  const g = () => client.lock(guard)
  const rows = [
    ['client.lock(42).acquire()', 'INVALID_ARGUMENT', () => client.lock(42).acquire()],
    ['client.lock(null).isLocked()', 'INVALID_ARGUMENT', () => client.lock(null).isLocked()],
    ["client.lock('').acquire()", 'INVALID_ARGUMENT', () => client.lock('').acquire()],
    ["client.lock('x'.repeat(70000)).acquire()", 'INVALID_ARGUMENT', () => client.lock('x'.repeat(70000)).acquire()],
    ['guard.acquire({ leaseMs: -1 })', 'INVALID_ARGUMENT', () => g().acquire({ leaseMs: -1 })],
    ['guard.acquire({ leaseMs: 0 })', 'INVALID_ARGUMENT', () => g().acquire({ leaseMs: 0 })],
    ['guard.acquire({ leaseMs: 1e15 })', 'INVALID_ARGUMENT', () => g().acquire({ leaseMs: 1e15 })],
    ["guard.acquire({ leaseMs: '10' })", 'INVALID_ARGUMENT', () => g().acquire({ leaseMs: '10' })],
    ['guard.acquire({ waitMs: -5 })', 'INVALID_ARGUMENT', () => g().acquire({ waitMs: -5 })],
    ['guard.acquire({ waitMs: NaN })', 'INVALID_ARGUMENT', () => g().acquire({ waitMs: NaN })],
    ["guard.acquire({ signal: 'x' })", 'INVALID_ARGUMENT', () => g().acquire({ signal: 'x' })],
    ["guard.acquire('fast')", 'INVALID_ARGUMENT', () => g().acquire('fast')],
    ['guard.acquire({ waitMs: 50 }) held by another', 'NOT_ACQUIRED', () => g().acquire({ waitMs: 50 })],
    ['guard.tryAcquire() held by another', 'false', () => g().tryAcquire()],
    ['guard.release() held by another', 'NOT_HELD', () => g().release()],
    ["new Client('nonsense').ready()", 'INVALID_ARGUMENT', () => new Client('nonsense').ready()],
    ['new Client(42).ready()', 'INVALID_ARGUMENT', () => new Client(42).ready()],
    ['new Client(url, { watchdogTimeoutMs: -1 }).ready()', 'INVALID_ARGUMENT',
      () => new Client(url, { watchdogTimeoutMs: -1 }).ready()],
    ["new Client(url, { retryAttempts: 'x' }).ready()", 'INVALID_ARGUMENT',
      () => new Client(url, { retryAttempts: 'x' }).ready()],
    ['new Client(wrong password).ready()', 'REDIS', () => new Client(wrongPwUrl).ready()],
    ['new Client(port nobody listens on).ready()', 'CONNECTION',
      () => new Client(deadUrl, { retryAttempts: 0, connectTimeoutMs: 2000 }).ready()],
    ['acquire() of a key of the wrong type', 'REDIS', () => client.lock(wrongtype).acquire()],
    ['forceUnlock() of a key of the wrong type', 'REDIS', () => client.lock(wrongtype).forceUnlock()],
    ['closed client: guard.acquire()', 'CLOSED', () => closed.lock(guard).acquire()],
  ]
  for (const [input, expected, call] of rows) {
    let got
    try {
      got = String(await call())
    } catch (e) {
      got = code(e)
    }
    emit({ event: 'row', surface: 'node', input, expected, got })
    if ((await nextLine()) === null) return
  }
  return { event: 'bad_done' }
}

// The token each fenced lock's last acquire returned, by spec: what `write` writes with.
const tokens = new Map()

// One write to the network-fault suite's fenced store (tests/netfaults/history.py) on
// 127.0.0.1:port: the lock's name (the spec without its kind), the token and this worker's
// label; whether the store accepted it (it refuses a token below the highest it has seen).
function storeWrite(port, spec, token) {
  const key = spec.includes('@') ? spec.slice(spec.indexOf('@') + 1) : spec
  return new Promise((resolve, reject) => {
    let answer = ''
    const conn = net.connect(port, '127.0.0.1', () => conn.write(`write ${key} ${token} ${label}\n`))
    conn.setEncoding('utf8')
    conn.on('data', (d) => {
      answer += d
      if (answer.includes('\n')) {
        conn.destroy()
        resolve(answer.trim() === 'accepted')
      }
    })
    conn.on('error', reject)
  })
}

async function command(words) {
  const [op, name] = words
  try {
    switch (op) {
      case 'acquire': {
        const l = lockOf(name)
        const leaseMs = words[3] === undefined ? undefined : Number(words[3])
        let got = true
        if (words[2] === undefined) await l.acquire({ leaseMs })
        else got = await l.tryAcquire({ waitMs: Number(words[2]), leaseMs })
        if (got) watchLost(l)
        const token = got && l.fenced ? await l.token() : null
        if (token !== null) tokens.set(name, token)
        return { event: got ? 'acquired' : 'not_acquired', name, token }
      }
      case 'release':
        return { event: 'released', free: await lockOf(name).release() }
      case 'locked':
        return { event: 'locked', value: await lockOf(name).isLocked() }
      case 'held':
        return { event: 'held', value: await lockOf(name).isHeld() }
      case 'write': {
        const token = tokens.get(name)
        if (token === undefined) {
          return { event: 'error', op, code: 'INVALID_ARGUMENT', message: `no fenced acquire of ${name} to write with` }
        }
        return { event: 'written', name, token, accepted: await storeWrite(Number(words[2]), name, token) }
      }
      case 'stats':
        return { event: 'stats', tracked: await client.trackedHolds(), channels: await client.waitedChannels() }
      case 'mx':
        return await mx(words[1], Number(words[2]), Number(words[3]))
      case 'cancel':
        return await cancel(words[1], Number(words[2]), Number(words[3]), Number(words[4]))
      case 'bad':
        return await bad(...words.slice(1, 5))
      default:
        return { event: 'error', op: 'parse', code: 'UNKNOWN_COMMAND', message: words.join(' ') }
    }
  } catch (e) {
    if (!(e instanceof RLockError)) throw e
    return { event: 'error', op, code: code(e), message: e.message }
  }
}

emit({ event: 'ready', surface: 'node', pid: process.pid })
for (;;) {
  const line = await nextLine()
  if (line === null) break
  const words = line.trim().split(/\s+/)
  if (words[0] === '') continue
  if (words[0] === 'exit') break
  const reply = await command(words)
  if (reply) emit(reply)
}
await Promise.all([client, ...redClients].map((c) => c.close()))
if (data) await data.quit().catch(() => {})
emit({ event: 'bye' })
rl.close()
