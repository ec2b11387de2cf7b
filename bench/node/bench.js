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
// BENCH_SECONDS (default 3) per pairs run. BENCH_SHORT=1 (make bench-short): 0.5 s pairs runs
// when BENCH_SECONDS is not given, and each hand-off stops after 50 acquisitions or 3 s (instead
// of 300 or 30 s).

const path = require('node:path')
const { performance } = require('node:perf_hooks')
const { setTimeout: sleep } = require('node:timers/promises')

const { Client } = require(path.join(__dirname, '..', '..', 'bindings-node'))
const Redis = require('ioredis')
const { Mutex } = require('redis-semaphore')
const Redlock = require('redlock')

const URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379'
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
    // [surface, owner i on its own name, owner i on the shared hand-off name]
    ['node', (i) => rlockOn(`bench:node:pairs:${i}`), () => rlockOn('bench:node:handoff')],
    ['peer redis-semaphore Mutex', (i) => semOn(`bench:node:sem:${i}`), () => semOn('bench:node:sem:handoff')],
    ['peer redlock', (i) => redlockOn(`bench:node:redlock:${i}`), () => redlockOn('bench:node:redlock:handoff')],
  ]
  for (const [surface, pairMake, handoffMake] of surfaces) {
    for (const owners of OWNERS) {
      const rate = await pairs(pairMake, owners)
      emit({ bench: 'pairs', surface, vs: 'node', owners, pairs_per_s: Math.round(rate) })
    }
    const h = await handoff(handoffMake)
    emit({
      bench: 'handoff',
      surface,
      vs: 'node',
      waiters: 16,
      p50_us: Math.round(h.p50),
      p99_us: Math.round(h.p99),
      samples: h.n,
      rounds: h.rounds,
    })
  }
  await client.close()
  redis.disconnect()
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
