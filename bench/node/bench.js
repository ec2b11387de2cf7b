'use strict'
// make bench, Node part: rlock's Node surface against redis-semaphore's Mutex and redlock (both
// over one ioredis connection, single Redis instance), on the server in REDIS_URL. Uncontended
// pairs/s (each owner its own name, acquire+release in a loop) and hand-off latency (16 owners
// on one name). Prints one JSON object per line for bench/report.py.
//
// Peers run with their documented defaults: redis-semaphore Mutex (lockTimeout 10 s,
// acquireTimeout 10 s, retryInterval 10 ms, refresh every 8 s), redlock 4 (retryCount 10,
// retryDelay 200 ms, retryJitter 100 ms; an acquire that runs out of retries is retried by the
// bench loop, as a caller would). rlock: watchdog lease (30 s), no wait limit.
//
// With REDIS_URLS (three independent servers, comma-separated; bench/run.sh starts them), also
// rlock's RedLock (`redLock(name, clients)`, one Client per server, each handle its own owner)
// against redlock over the same three servers (one ioredis connection each, the same defaults):
// pairs at 1, 16, 64 owners and the hand-off among 16 waiters.
//
// BENCH_SECONDS (default 3) per pairs run. BENCH_SHORT=1 (make bench-short): 0.5 s pairs runs
// when BENCH_SECONDS is not given, and each hand-off stops after 50 acquisitions or 3 s (instead
// of 300 or 30 s).

const path = require('node:path')
const { performance } = require('node:perf_hooks')
const { setTimeout: sleep } = require('node:timers/promises')

const { Client, redLock } = require(path.join(__dirname, '..', '..', 'bindings-node'))
const Redis = require('ioredis')
const { Mutex } = require('redis-semaphore')
const Redlock = require('redlock')

const URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379'
const URLS = (process.env.REDIS_URLS || '').split(',').filter((u) => u !== '')
const SHORT = !['', '0'].includes(process.env.BENCH_SHORT || '')
const SECS = Number(process.env.BENCH_SECONDS || (SHORT ? 0.5 : 3))
const HANDOFF = SHORT ? { rounds: 50, limitMs: 3000 } : { rounds: 300, limitMs: 30000 }
const OWNERS = [1, 16, 64]

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n')
}

function percentile(sorted, p) {
  if (sorted.length === 0) return 0
  return sorted[Math.round((sorted.length - 1) * p)]
}

const turn = () => new Promise((resolve) => setImmediate(resolve))

// `make(i)` returns { acquire(), release() } for owner i on its own name.
async function pairs(make, owners) {
  const handles = await Promise.all(Array.from({ length: owners }, (_, i) => make(i)))
  let n = 0
  const start = performance.now()
  const stop = start + SECS * 1000
  await Promise.all(
    handles.map(async (h) => {
      while (performance.now() < stop) {
        await h.acquire()
        await h.release()
        n++
      }
    }),
  )
  return n / ((performance.now() - start) / 1000)
}

// 16 owners on one name. A hand-off is measured from the holder calling release to another
// owner's acquire returning (stamped before the call: the woken owner may hold the lock before
// the release's own reply is back). Each holder holds for one event-loop turn (Node timers
// cannot sleep 200 us as the Rust and Python benches do) and works 2 ms outside the lock.
// `acquire()` resolves false when a peer gave up waiting; the loop tries again.
async function handoff(make, { waiters = 16, rounds = HANDOFF.rounds, limitMs = HANDOFF.limitMs } = {}) {
  const handles = await Promise.all(Array.from({ length: waiters }, (_, i) => make(i)))
  const samples = []
  let released = null
  let by = -1
  let taken = 0
  let done = false
  const deadline = performance.now() + limitMs
  await Promise.all(
    handles.map(async (h, i) => {
      while (!done) {
        if (!(await h.acquire())) continue
        const now = performance.now()
        if (released !== null && by !== i) samples.push((now - released) * 1000)
        released = null
        taken++
        if (taken >= rounds || now > deadline) done = true
        await turn()
        released = performance.now()
        by = i
        await h.release()
        await sleep(2)
      }
    }),
  )
  samples.sort((a, b) => a - b)
  return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99), n: samples.length, rounds: taken }
}

async function main() {
  const client = new Client(URL)
  await client.ready()
  const rlockOn = (name) => {
    const lock = client.lock(name)
    return {
      acquire: async () => {
        await lock.acquire()
        return true
      },
      release: () => lock.release(),
    }
  }

  const redis = new Redis(URL)
  const semOn = (name) => {
    const m = new Mutex(redis, name)
    return {
      acquire: async () => {
        await m.acquire()
        return true
      },
      release: () => m.release(),
    }
  }

  const redlock = new Redlock([redis])
  redlock.on('clientError', () => {})
  const redlockOn = (name) => {
    let held = null
    return {
      acquire: async () => {
        try {
          held = await redlock.lock(name, 10000)
          return true
        } catch (e) {
          if (e && e.name === 'LockError') return false
          throw e
        }
      },
      release: () => held.unlock(),
    }
  }
  const surfaces = [
    // [surface, owner i on its own name, owner i on the shared hand-off name, the rlock surface
    // a peer compares with (default: node)]
    ['node', (i) => rlockOn(`bench:node:pairs:${i}`), () => rlockOn('bench:node:handoff')],
    ['peer redis-semaphore Mutex', (i) => semOn(`bench:node:sem:${i}`), () => semOn('bench:node:sem:handoff')],
    ['peer redlock', (i) => redlockOn(`bench:node:redlock:${i}`), () => redlockOn('bench:node:redlock:handoff')],
  ]
  // RedLock over three independent servers: rlock's and redlock's.
  const many = []
  if (URLS.length > 0) {
    const clients = await Promise.all(
      URLS.map(async (u) => {
        const c = new Client(u)
        await c.ready()
        return c
      }),
    )
    const redises = URLS.map((u) => new Redis(u))
    many.push(...clients, ...redises)
    const redRlockOn = (name) => {
      const red = redLock(name, clients)
      return {
        acquire: async () => {
          await red.acquire()
          return true
        },
        release: () => red.release(),
      }
    }
    const redlock3 = new Redlock(redises)
    redlock3.on('clientError', () => {})
    const redlock3On = (name) => {
      let held = null
      return {
        acquire: async () => {
          try {
            held = await redlock3.lock(name, 10000)
            return true
          } catch (e) {
            if (e && e.name === 'LockError') return false
            throw e
          }
        },
        release: () => held.unlock(),
      }
    }
    const n = URLS.length
    surfaces.push(
      [`node (RedLock, ${n} servers)`, (i) => redRlockOn(`bench:node:red:${i}`), () => redRlockOn('bench:node:red:handoff')],
      [
        `peer redlock (${n} servers)`,
        (i) => redlock3On(`bench:node:redlock3:${i}`),
        () => redlock3On('bench:node:redlock3:handoff'),
        `node (RedLock, ${n} servers)`,
      ],
    )
  }
  for (const [surface, pairMake, handoffMake, vs = 'node'] of surfaces) {
    for (const owners of OWNERS) {
      const rate = await pairs(pairMake, owners)
      emit({ bench: 'pairs', surface, vs, owners, pairs_per_s: Math.round(rate) })
    }
    const h = await handoff(handoffMake)
    emit({
      bench: 'handoff',
      surface,
      vs,
      waiters: 16,
      p50_us: Math.round(h.p50),
      p99_us: Math.round(h.p99),
      samples: h.n,
      rounds: h.rounds,
    })
  }
  await client.close()
  redis.disconnect()
  for (const c of many) {
    if (c instanceof Client) await c.close()
    else c.disconnect()
  }
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
