'use strict'
// The Node holder of the pause test (run.py): see core/examples/pause_holder.rs for the
// protocol. Usage: node holder.js URL NAME.
const readline = require('node:readline')
const { once } = require('node:events')
const { Client, RLockError, codes } = require('../../bindings-node/rlock.js')

// A gap between two looks this long (ms) can only be the parent's pause.
const GAP = 1000
const now = () => Number(process.hrtime.bigint() / 1000n) / 1000

async function main () {
  const [url, name] = process.argv.slice(2)
  const client = new Client(url, { watchdogTimeoutMs: 1500 })
  const lock = client.lock(name)
  await lock.acquire()
  let heardAt = null
  let tell
  const heard = new Promise((resolve) => { tell = resolve })
  await lock.onLost(() => { heardAt = now(); tell() })
  const input = readline.createInterface({ input: process.stdin })
  process.stdout.write('held\n')
  await once(input, 'line')
  input.close()
  // Before "armed": the parent may stop this process as soon as it reads it.
  let prev = now()
  process.stdout.write('armed\n')

  let afterPause = false
  let first, looked
  for (;;) {
    const a = now()
    const lost = await lock.isLost()
    const b = now()
    if (afterPause || a - prev > GAP) {
      first = lost
      looked = a
      break
    }
    // Paused inside the look: it may have answered before the pause; the next one is first.
    afterPause = b - a > GAP
    prev = b
  }
  const validForMs = await lock.validForMs()
  let timer
  await Promise.race([heard, new Promise((resolve) => { timer = setTimeout(resolve, 5000) })])
  clearTimeout(timer)
  const callbackMs = heardAt === null ? -1 : Math.max(0, Math.round(heardAt - looked))
  let release
  try {
    await lock.release()
    release = 'released'
  } catch (e) {
    release = e instanceof RLockError && e.code === codes.LOST ? 'lost' : `error: ${e.message}`
  }
  process.stdout.write(JSON.stringify({ first, valid_for_ms: validForMs, callback_ms: callbackMs, release }) + '\n')
  await client.close()
}

main().catch((e) => { console.error(e); process.exit(1) })
