// The Node worker of `make demo`: takes the lock `demo:lock` N times and, inside each critical
// section, increments the non-atomic counter `demo:counter` (GET, then SET).
//
// Usage: `node examples/node/worker.mjs <label> <iterations>`; Redis URL from `REDIS_URL`.

import { createRequire } from 'node:module'
import { Client } from '../../bindings-node/rlock.mjs'

// The plain Redis client for the data commands is the package's dev dependency `redis`.
const require = createRequire(new URL('../../bindings-node/package.json', import.meta.url))
const { createClient } = require('redis')

const label = process.argv[2] ?? 'node'
const iterations = process.argv[3] === undefined ? 100 : Number.parseInt(process.argv[3], 10)
if (!Number.isInteger(iterations) || iterations < 0) throw new Error(`bad iteration count: ${process.argv[3]}`)
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

const client = new Client(url)
const data = createClient({ url })
await data.connect()
const lock = client.lock('demo:lock')
let handoffs = 0
for (let i = 0; i < iterations; i++) {
  await lock.acquire()
  const n = Number((await data.get('demo:counter')) ?? 0) + 1
  const last = await data.get('demo:last')
  await data.set('demo:counter', String(n))
  await data.set('demo:last', label)
  await lock.release()
  if (last !== null && last !== label) {
    handoffs += 1
    if (handoffs <= 3) console.log(`[${label}] got the lock from ${last}, counter = ${n}`)
  }
}
console.log(`[${label}] done: ${iterations} critical sections, ${handoffs} hand-offs from other workers`)
await client.close()
await data.quit()
