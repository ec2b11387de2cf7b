'use strict'
// The public API against a private redis-server: ownership, waiting, timeouts, aborts, lost
// holds, disposal, bad input, and a non-atomic counter kept exact by the lock.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { once } = require('node:events')
const { startRedis, eventually } = require('./redis-server.js')
const { Client, FencedLock, Lock, RLockError, codes } = require('../rlock.js')

let redis
let client
let other
let uniq = 0
const name = (what) => `test:${what}:${++uniq}`

before(async () => {
  redis = await startRedis()
  client = new Client(redis.url)
  other = new Client(redis.url)
  await Promise.all([client.ready(), other.ready()])
})

after(async () => {
  await client.close()
  await other.close()
  await redis.stop()
})

const channels = () => redis.data.sendCommand(['PUBSUB', 'CHANNELS'])
const owners = async (key) => Object.keys(await redis.data.hGetAll(key))
const subscribed = (n) =>
  eventually(async () => (await channels()).includes(`redisson_lock__channel:{${n}}`), 10_000, `waiter subscribed to ${n}`)
const noChannels = () => eventually(async () => (await channels()).length === 0, 10_000, 'no subscribed channel')

async function rejectsWith(promise, code) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof Error, 'an Error')
    assert.ok(e instanceof RLockError, 'an RLockError')
    assert.equal(e.code, code, e.message)
    return true
  })
}

test('url defaults to REDIS_URL', async () => {
  const saved = process.env.REDIS_URL
  process.env.REDIS_URL = redis.url
  try {
    const c = new Client()
    const l = c.lock(name('env'))
    assert.equal(await l.tryAcquire(), true)
    assert.equal(await l.isLocked(), true)
    assert.equal(await l.release(), true)
    await c.close()
  } finally {
    if (saved === undefined) delete process.env.REDIS_URL
    else process.env.REDIS_URL = saved
  }
})

test('a handle re-enters; two handles contend; state queries', async () => {
  const n = name('reenter')
  const a = client.lock(n)
  const b = client.lock(n)
  assert.equal(a.name, n)
  assert.equal(await a.isLocked(), false)
  assert.equal(await a.remainingTtl(), null)
  await a.acquire()
  await a.acquire()
  assert.equal(await a.holdCount(), 2)
  assert.equal(await a.isHeld(), true)
  assert.equal(await b.isHeld(), false)
  assert.equal(await b.holdCount(), 0)
  assert.equal(await b.isLocked(), true)
  assert.equal(await b.tryAcquire(), false)
  const ttl = await a.remainingTtl()
  assert.ok(ttl > 20_000 && ttl <= 30_000, `watchdog lease, got ${ttl}`)
  assert.deepEqual((await owners(n)).length, 1)
  assert.equal(await a.release(), false, 'still held once')
  assert.equal(await a.holdCount(), 1)
  assert.equal(await a.release(), true, 'now free')
  assert.equal(await redis.data.exists(n), 0)
  await rejectsWith(a.release(), codes.NOT_HELD)
  await rejectsWith(b.release(), 'RLOCK_NOT_HELD')
})

test('acquire waits for the holder to release (pub/sub hand-off)', async () => {
  const n = name('handoff')
  const a = client.lock(n)
  const b = other.lock(n)
  await a.acquire()
  let got = false
  const waiting = b.acquire().then(() => {
    got = true
  })
  await subscribed(n)
  assert.equal(got, false)
  await a.release()
  await waiting
  assert.equal(await b.isHeld(), true)
  await b.release()
  await noChannels()
})

test('tryAcquire with waitMs waits, then resolves true; lease holds expire by themselves', async () => {
  const n = name('try')
  const a = client.lock(n)
  const b = other.lock(n)
  await a.acquire({ leaseMs: 300 })
  const ttl = await a.remainingTtl()
  assert.ok(ttl > 0 && ttl <= 300, `lease ttl ${ttl}`)
  const told = once(a.lostSignal, 'abort')
  // Nobody releases: the lease runs out and the waiter gets it within its wait.
  assert.equal(await b.tryAcquire({ waitMs: 10_000, leaseMs: 60_000 }), true)
  assert.equal(await b.isHeld(), true)
  assert.equal(await a.isHeld(), false)
  // The holder was told before its lease ended (lease_ending), and its late release is LOST.
  await told
  assert.equal(a.lostSignal.reason.code, codes.LOST)
  await rejectsWith(a.release(), codes.LOST)
  await b.release()
})

test('waitMs running out rejects RLOCK_NOT_ACQUIRED (not RLOCK_TIMEOUT) and leaves no hold and no subscription', async () => {
  const n = name('timeout')
  const a = client.lock(n)
  const b = other.lock(n)
  await a.acquire()
  const t0 = Date.now()
  // Core's one message, as every surface says it (core/src/bindings.rs).
  await assert.rejects(b.acquire({ waitMs: 200 }),
    { code: codes.NOT_ACQUIRED, message: `lock '${n}' was not acquired within 200 ms` })
  assert.ok(Date.now() - t0 >= 150, 'waited')
  assert.equal(await b.tryAcquire({ waitMs: 100 }), false)
  assert.deepEqual(await owners(n), [await ownerOf(a)])
  assert.equal(await other.waitedChannels(), 0)
  await noChannels()
  assert.equal(await other.trackedHolds(), 0)
  await a.release()
  assert.equal(await redis.data.exists(n), 0, 'no key left')
})

// The wire owner of a handle: the only field of the hash while it holds alone.
async function ownerOf(lock) {
  const f = await owners(lock.name)
  assert.equal(f.length, 1)
  return f[0]
}

test('abort rejects with AbortError and leaves no hold and no subscription', async () => {
  const n = name('abort')
  const a = client.lock(n)
  const b = other.lock(n)
  await a.acquire()
  const holder = await ownerOf(a)
  const ac = new AbortController()
  const waiting = b.acquire({ signal: ac.signal })
  await subscribed(n)
  ac.abort()
  await assert.rejects(waiting, (e) => e.name === 'AbortError')
  assert.equal(await other.waitedChannels(), 0)
  // The UNSUBSCRIBE goes out from core's pub/sub task after the waiter is gone; Redis shows no
  // event for it, so poll.
  await noChannels()
  assert.deepEqual(await owners(n), [holder])
  // A signal aborted before the call rejects at once with its reason.
  const pre = new AbortController()
  const reason = new Error('stop')
  pre.abort(reason)
  await assert.rejects(b.tryAcquire({ waitMs: 5000, signal: pre.signal }), (e) => e === reason)
  await a.release()
  assert.equal(await redis.data.exists(n), 0, 'no key left')
  assert.equal(await other.trackedHolds(), 0)
})

test('force-unlock by another client fires lostSignal and release rejects RLOCK_LOST', async () => {
  // Renewed every second; a shorter lease could be in doubt (not 'gone') after a stall.
  const fast = new Client(redis.url, { watchdogTimeoutMs: 3000 })
  try {
    const n = name('lost')
    const a = fast.lock(n)
    assert.equal(await a.validForMs(), 0) // not held yet
    await a.acquire()
    assert.equal(a.lostSignal.aborted, false)
    assert.equal(await a.isLost(), false)
    // The 3 s lease from its send, less the 0.75 s margin (a quarter of the lease).
    const proven = await a.validForMs()
    assert.ok(proven > 0 && proven <= 2250, `validForMs ${proven}`)
    const lost = once(a.lostSignal, 'abort')
    // The same event reaches the handle's listener and the client's.
    const heard = []
    let told
    const toldBoth = new Promise((resolve) => { told = resolve })
    const hear = (e) => { heard.push(e); if (heard.length === 2) told() }
    const removeHandle = await a.onLost(hear)
    const removeClient = await fast.onLost(hear)
    assert.equal(await other.lock(n).forceUnlock(), true)
    await lost
    await toldBoth
    const owner = heard[0].owner
    assert.match(owner, /^[0-9a-f-]{36}:[0-9]+$/)
    const event = { name: n, kind: 'lock', owner, reason: 'gone', permitId: null }
    assert.deepEqual(heard, [event, event])
    removeHandle()
    removeClient()
    assert.equal(await a.isLost(), true)
    assert.equal(await a.validForMs(), 0)
    assert.equal(a.lostSignal.aborted, true)
    assert.equal(a.lostSignal.reason.code, codes.LOST)
    await rejectsWith(a.release(), codes.LOST)
    assert.equal(await a.isLost(), false)
    // A new hold gets a fresh signal.
    await a.acquire()
    assert.equal(a.lostSignal.aborted, false)
    assert.equal(await a.release(), true)
    assert.equal(await other.lock(n).forceUnlock(), false)
  } finally {
    await fast.close()
  }
})

test('client.acquire returns a hold released by Symbol.asyncDispose', async () => {
  const n = name('dispose')
  const held = await client.acquire(n, { waitMs: 5000 })
  assert.equal(await held.lock.isHeld(), true)
  assert.ok(held.signal instanceof AbortSignal)
  assert.equal(typeof held[Symbol.asyncDispose], 'function')
  await held[Symbol.asyncDispose]()
  assert.equal(await redis.data.exists(n), 0)
  await rejectsWith(held[Symbol.asyncDispose](), codes.NOT_HELD)
})

test('withLock holds during fn, releases after it, also when fn throws', async () => {
  const n = name('with')
  const probe = other.lock(n)
  const r = await client.withLock(n, async (signal) => {
    assert.ok(signal instanceof AbortSignal)
    assert.equal(signal.aborted, false)
    assert.equal(await probe.isLocked(), true)
    assert.equal(await probe.tryAcquire(), false)
    return 42
  })
  assert.equal(r, 42)
  assert.equal(await probe.isLocked(), false)
  const boom = new Error('boom')
  await assert.rejects(
    client.withLock(n, async () => {
      throw boom
    }),
    (e) => e === boom,
  )
  assert.equal(await probe.isLocked(), false)
  await rejectsWith(client.withLock(n, 'not a function'), codes.INVALID_ARGUMENT)
})

test('20 handles x 200 increments of a non-atomic counter end exact', async () => {
  const n = name('counter')
  const key = `${n}:counter`
  const worker = async (i) => {
    const c = i % 2 ? client : other
    const lock = c.lock(n)
    for (let k = 0; k < 200; k++) {
      await lock.acquire()
      const v = Number((await redis.data.get(key)) ?? 0)
      await redis.data.set(key, String(v + 1))
      assert.equal(await lock.release(), true)
    }
  }
  await Promise.all(Array.from({ length: 20 }, (_, i) => worker(i)))
  assert.equal(await redis.data.get(key), '4000')
  assert.equal(await redis.data.exists(n), 0)
  await noChannels()
})

test('bad input rejects RLOCK_INVALID_ARGUMENT and changes nothing in Redis', async () => {
  // Every key but the holder records, which expire on their own, and the release latches of
  // earlier tests' releases, which the latch task deletes in the background (up to 10 ms after
  // a release, or later under load: a snapshot could see some that are gone a moment after;
  // bad input never releases, so it makes none).
  const lockKeys = async () =>
    (await redis.data.keys('*'))
      .filter((k) => !k.startsWith('rlock:client:') && !k.startsWith('redisson_unlock_latch:'))
      .sort()
  const before = await lockKeys()
  const held = client.lock(name('bad'))
  await rejectsWith(client.lock(42).acquire(), codes.INVALID_ARGUMENT)
  await rejectsWith(client.lock(undefined).isLocked(), codes.INVALID_ARGUMENT)
  await rejectsWith(client.lock('').acquire(), codes.INVALID_ARGUMENT)
  await rejectsWith(client.acquire(''), codes.INVALID_ARGUMENT)
  await rejectsWith(held.acquire({ waitMs: -1 }), codes.INVALID_ARGUMENT)
  await rejectsWith(held.tryAcquire({ waitMs: -5 }), codes.INVALID_ARGUMENT)
  await rejectsWith(held.acquire({ waitMs: '10' }), codes.INVALID_ARGUMENT)
  await rejectsWith(held.acquire({ leaseMs: 0 }), codes.INVALID_ARGUMENT)
  await rejectsWith(held.acquire({ leaseMs: NaN }), codes.INVALID_ARGUMENT)
  await rejectsWith(held.acquire({ waitMs: 10, leaseMs: 1e15 }), codes.INVALID_ARGUMENT)
  await rejectsWith(held.acquire({ signal: 'yes' }), codes.INVALID_ARGUMENT)
  await rejectsWith(held.acquire(7), codes.INVALID_ARGUMENT)
  const bad = new Client('nonsense://what')
  await rejectsWith(bad.lock('x').acquire(), codes.INVALID_ARGUMENT)
  await rejectsWith(bad.ready(), codes.INVALID_ARGUMENT)
  await bad.close()
  await rejectsWith(new Client(12).ready(), codes.INVALID_ARGUMENT)
  await rejectsWith(new Client(redis.url, { watchdogTimeoutMs: -1 }).ready(), codes.INVALID_ARGUMENT)
  await rejectsWith(new Client(redis.url, { watchdogTimeoutMs: 1 }).ready(), codes.INVALID_ARGUMENT)
  await rejectsWith(new Client(redis.url, { watchdogTimeoutMs: 'soon' }).ready(), codes.INVALID_ARGUMENT)
  await rejectsWith(new Client(redis.url, { retryAttempts: -1 }).ready(), codes.INVALID_ARGUMENT)
  await rejectsWith(new Client(redis.url, 'options').ready(), codes.INVALID_ARGUMENT)
  assert.deepEqual(await lockKeys(), before)
  assert.equal(await client.trackedHolds(), 0)
})

test('an unreachable server rejects RLOCK_CONNECTION', async () => {
  // Port of a redis-server we stop at once: nothing listens there any more.
  const gone = await startRedis()
  await gone.stop()
  const c = new Client(gone.url, { connectTimeoutMs: 2000 })
  await rejectsWith(c.ready(), codes.CONNECTION)
  await rejectsWith(c.lock('x').isLocked(), codes.CONNECTION)
  await c.close()
})

test('a closed client rejects pending and later calls with RLOCK_CLOSED', async () => {
  const n = name('closed')
  const c = new Client(redis.url)
  const a = client.lock(n)
  await a.acquire()
  const b = c.lock(n)
  const waiting = b.acquire()
  await subscribed(n)
  await c.close()
  await rejectsWith(waiting, codes.CLOSED)
  await rejectsWith(b.tryAcquire(), codes.CLOSED)
  await rejectsWith(c.lock(n).isLocked(), codes.CLOSED)
  await noChannels()
  await a.release()
})

test('a name holding a non-lock key: RLOCK_REDIS, and remainingTtl -1 without expiry', async () => {
  const n = name('string')
  await redis.data.set(n, 'not a lock')
  const l = client.lock(n)
  assert.equal(await l.remainingTtl(), -1)
  assert.equal(await l.isLocked(), true)
  await rejectsWith(l.acquire(), codes.REDIS)
  await rejectsWith(l.forceUnlock(), codes.REDIS)
  assert.equal(await redis.data.get(n), 'not a lock', 'left as it was')
  assert.equal(await client.trackedHolds(), 0)
  await redis.data.del(n)
})

test('HeldLock.release and a held handle that acquires again re-enter', async () => {
  const n = name('held')
  const held = await client.acquire(n)
  await held.lock.acquire({ waitMs: 0 })
  assert.equal(await held.lock.holdCount(), 2)
  assert.equal(await held.release(), false)
  assert.equal(await held.release(), true)
  assert.equal(await redis.data.exists(n), 0)
})

test('the option and error-code types follow core\'s lists', () => {
  const native = require('../index.js')
  const dts = require('node:fs').readFileSync(require('node:path').join(__dirname, '..', 'lib', 'types.ts'), 'utf8')
  const iface = dts.slice(dts.indexOf('export interface ClientOptions {'), dts.indexOf('}', dts.indexOf('export interface ClientOptions {')))
  const declared = [...iface.matchAll(/^  (\w+)\?:/gm)].map((m) => m[1])
  assert.deepEqual(declared, native.optionNames())
  assert.deepEqual(Object.values(codes), native.errorCodes())
  assert.ok(codes.NOT_ACQUIRED === 'RLOCK_NOT_ACQUIRED' && codes.TIMEOUT === 'RLOCK_TIMEOUT')
  for (const c of native.errorCodes()) assert.ok(dts.includes(`'${c}'`), `${c} in lib/types.ts`)
})

test('the native layer rejects and throws Errors coded by core, with the message as core wrote it', async () => {
  const native = require('../index.js')
  const coded = (e, code) => {
    assert.ok(e instanceof Error, 'an Error')
    assert.equal(e.code, code)
    assert.doesNotMatch(e.message, /^\[/, 'no code in the message')
    return true
  }
  // A rejection (a promise settled by the addon's executor) and a synchronous throw.
  await assert.rejects(native.connect(redis.url, { watchdogTimeout: 100 }), (e) => coded(e, codes.INVALID_ARGUMENT))
  const c = await native.connect(redis.url, {})
  try {
    assert.throws(() => c.lock(name('kind'), 'nope'), (e) => coded(e, codes.INVALID_ARGUMENT))
    await assert.rejects(c.lock(name('free'), 'lock').release(), (e) => coded(e, codes.NOT_HELD))
  } finally {
    c.close()
  }
})

test('an unknown option is a typed error that names it', async () => {
  const e = await new Client(redis.url, { watchdogTimeout: 100 }).ready().catch((e) => e)
  assert.equal(e.code, codes.INVALID_ARGUMENT)
  assert.match(e.message, /watchdogTimeout/)
})

test('a fenced lock resolves strictly larger tokens, re-entries included', async () => {
  const n = name('fenced')
  const a = client.fencedLock(n)
  const b = other.fencedLock(n)
  assert.ok(a instanceof FencedLock && a instanceof Lock, 'client.fencedLock makes a FencedLock')
  assert.equal(client.lock(n) instanceof FencedLock, false)
  assert.equal(a.kind, 'fenced')
  assert.equal(a.fenced, true)
  assert.equal(await a.token(), null)
  const t1 = await a.acquire()
  const t2 = await a.acquire()
  assert.ok(Number.isInteger(t1) && t1 >= 1 && t2 > t1, `${t1} ${t2}`)
  assert.equal(await a.token(), t2)
  assert.equal(await b.tryAcquire(), false)
  assert.equal(await a.release(), false)
  assert.equal(await a.release(), true)
  assert.equal(await a.token(), null)
  const t3 = await b.tryAcquire({ waitMs: 1000 })
  assert.ok(t3 > t2)
  assert.equal(Number(await redis.data.get(`redisson_lock_token:{${n}}`)), t3)
  assert.equal(await redis.data.pTTL(`redisson_lock_token:{${n}}`), -1, 'the counter never expires')
  assert.equal(await b.release(), true)
  // A plain handle on the same name excludes it and takes no token.
  const plain = client.lock(n)
  await plain.acquire()
  assert.equal(await a.tryAcquire(), false)
  assert.equal(await plain.release(), true)
  // The token comes with the acquire: a hold force-unlocked by this client right after still
  // resolved the token it took, though none is left to read back.
  const t4 = await a.acquire()
  assert.equal(await client.lock(n).forceUnlock(), true)
  assert.equal(await a.token(), null)
  assert.equal(Number(await redis.data.get(`redisson_lock_token:{${n}}`)), t4)
  assert.ok(t4 > t3)
  // A plain lock's acquire resolves nothing, its tryAcquire true.
  assert.equal(await plain.acquire(), undefined)
  assert.equal(await plain.release(), true)
  assert.equal(await plain.tryAcquire(), true)
  assert.equal(await plain.release(), true)
})

test('stats() and prometheusText() count what happened', async () => {
  const c = new Client(redis.url, { appName: 'node-stats' })
  try {
    const n = name('stats')
    assert.equal((await c.stats()).evictionPolicy, null, 'the test server does not evict')
    for (let i = 0; i < 3; i++) await c.withLock(n, () => {})
    const held = await c.acquire(n)
    const scripts = async () =>
      Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.data.sendCommand(['INFO', 'commandstats']))[1])
    const before = await scripts()
    const waiting = c.acquire(n)
    // Subscribed, and its retry after subscribing (a second acquire script) done: only the
    // release message can wake it from then on (released earlier, the retry takes the lock
    // and no wake-up is counted).
    await eventually(async () => (await c.waitedChannels()) === 1)
    await eventually(async () => (await scripts()) >= before + 2)
    await held.release()
    await (await waiting).release()
    await rejectsWith(c.lock(n).release(), codes.NOT_HELD)
    const s = await c.stats()
    assert.equal(s.acquires, 5)
    assert.equal(s.contendedAcquires, 1)
    assert.equal(s.releases, 5)
    assert.equal(s.wakeups, 1)
    assert.equal(s.errors.not_held, 1)
    assert.equal(s.wait.count, 5)
    assert.ok(s.wait.p50Ms > 0 && s.wait.p50Ms <= s.wait.maxMs)
    const text = await c.prometheusText()
    assert.match(text, /^rlock_acquires_total\{app="node-stats"\} 5$/m)
    assert.match(text, /^rlock_errors_total\{app="node-stats",kind="not_held"\} 1$/m)
  } finally {
    await c.close()
  }
  const off = new Client(redis.url, { metrics: false })
  try {
    await off.withLock(name('off'), () => {})
    assert.equal((await off.stats()).acquires, 0)
  } finally {
    await off.close()
  }
  await rejectsWith(new Client(redis.url, { metrics: 'yes' }).ready(), codes.INVALID_ARGUMENT)
})

test('a worker thread ended during its pending acquire leaves this thread\'s calls working', async () => {
  // Calls are polled and settled on their own JS thread (one ready list per thread): a worker
  // environment torn down while its acquire waits must not take this thread's calls with it.
  const { Worker } = require('node:worker_threads')
  const held = name('worker-held')
  const holder = client.lock(held)
  await holder.acquire()
  const code = `
    const { parentPort, workerData } = require('node:worker_threads')
    const { Client } = require(workerData.module)
    ;(async () => {
      const c = new Client(workerData.url)
      const mine = c.lock(workerData.mine)
      await mine.acquire()
      await mine.release()
      parentPort.postMessage('waiting')
      await c.lock(workerData.held).acquire() // held by the main thread: waits until terminated
    })()
  `
  const worker = new Worker(code, {
    eval: true,
    workerData: { module: require.resolve('../rlock.js'), url: redis.url, mine: name('worker-own'), held },
  })
  const [message] = await once(worker, 'message')
  assert.equal(message, 'waiting')
  await subscribed(held)
  await worker.terminate()
  const mine = client.lock(name('after-worker'))
  for (let i = 0; i < 20; i++) {
    await mine.acquire()
    assert.equal(await mine.release(), true)
  }
  assert.equal(await holder.release(), true)
  await noChannels()
})
