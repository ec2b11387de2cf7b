'use strict'
// Least privilege and secrets on the Node surface (issue 45, items 3 and 4).
// - A user with exactly docs/operations/security.md's rule, read from the page, runs every
//   primitive (renewals, a pub/sub hand-off, a latch opening, describe and list); a user missing
//   one command gets RLOCK_REDIS with the server's words, and nothing is left in Redis.
// - A password in the URL and in REDIS_URL, driven through every error path Node reaches, is in
//   no error, inspection, describe or list answer, stats, Prometheus text, holder record or
//   process warning. core/tests/acl.rs and bindings-python/tests/test_acl.py, test_secrets.py
//   do the same for core and Python.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const util = require('node:util')
const { startRedis, eventually } = require('./redis-server.js')
const { Client, RLockError, codes } = require('../rlock.js')

const PAGE = path.join(__dirname, '..', '..', 'docs', 'operations', 'security.md')

let redis
before(async () => {
  redis = await startRedis()
})
after(async () => {
  await redis.stop()
})

/** The tokens of the page's ```acl no-run NAME block. */
function rule(name) {
  const doc = fs.readFileSync(PAGE, 'utf8')
  const start = '```acl no-run ' + name + '\n'
  const at = doc.indexOf(start)
  assert.ok(at >= 0, `security.md has no ${name} block`)
  const body = doc.slice(at + start.length, doc.indexOf('```', at + start.length))
  return body.split(/\s+/).filter(Boolean)
}

/** Whether the server knows `command` (Redis 6.2 has no sharded pub/sub). */
async function serverHas(command) {
  const reply = await redis.data.sendCommand(['COMMAND', 'INFO', command])
  return Array.isArray(reply) && reply.length > 0 && reply[0] !== null
}

/** User `app` with exactly the rules of `blocks` and the `keys` block, less `without`. */
async function makeUser(blocks, without) {
  const args = ['ACL', 'SETUSER', 'app', 'reset', 'resetchannels', 'on', '>app-pass', '-@all']
  for (const block of [...blocks, 'keys']) {
    for (const token of rule(block)) {
      if (token.startsWith('+')) {
        const command = token.slice(1)
        if (command === without || !(await serverHas(command.split('|')[0]))) continue
      }
      args.push(token)
    }
  }
  await redis.data.sendCommand(args)
}

const appUrl = () => `redis://app:app-pass@127.0.0.1:${redis.port}/`
const evalshaCalls = async () =>
  Number(((await redis.data.info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/) || [])[1] || 0)

test('the documented rule is enough for every primitive', async () => {
  await makeUser(['family', 'describe'])
  const c = new Client(appUrl(), { watchdogTimeoutMs: 1000 })
  const other = new Client(appUrl())
  try {
    // A lock renewed past its lease, then handed to a waiter by the release's message.
    const lock = c.lock('app:lock')
    await lock.acquire()
    const renewed = await evalshaCalls()
    await eventually(async () => (await evalshaCalls()) >= renewed + 3, 10_000, 'renewals')
    assert.equal(await lock.isHeld(), true)
    const waiter = other.lock('app:lock')
    const tries = await evalshaCalls()
    const waiting = waiter.tryAcquire({ waitMs: 10_000 })
    await eventually(async () => (await evalshaCalls()) > tries, 10_000, 'the waiter tried')
    assert.equal(await lock.release(), true)
    assert.equal(await waiting, true, 'the waiter got the lock')
    assert.equal(await waiter.release(), true)

    const fair = c.fairLock('app:fair')
    await fair.acquire()
    assert.equal(await fair.release(), true)
    const rw = c.readWriteLock('app:rw')
    await rw.readLock().acquire()
    assert.equal(await rw.readLock().release(), true)
    await rw.writeLock().acquire()
    assert.equal(await redis.data.hGet('app:rw', 'mode'), 'write')
    assert.equal(await rw.writeLock().release(), true)
    const fenced = c.fencedLock('app:fenced')
    const first = await fenced.acquire()
    await fenced.release()
    assert.ok((await fenced.acquire()) > first, 'tokens grow')
    await fenced.release()

    const sem = c.semaphore('app:sem')
    assert.equal(await sem.trySetPermits(1), true)
    await sem.acquire()
    await sem.release()
    const pes = c.permitExpirableSemaphore('app:pes')
    assert.equal(await pes.trySetPermits(1), true)
    await pes.release(await pes.acquire())

    const latch = c.countDownLatch('app:latch')
    assert.equal(await latch.trySetCount(1), true)
    const opened = other.countDownLatch('app:latch').wait({ waitMs: 10_000 })
    await latch.countDown()
    assert.equal(await opened, true)

    const held = c.lock('app:held')
    await held.acquire()
    assert.equal((await c.describe('app:held')).kind, 'lock')
    assert.ok((await c.list('app:*')).some((l) => l.name === 'app:held'))
    await held.release()
  } finally {
    await c.close()
    await other.close()
  }
})

for (const missing of ['evalsha', 'exists']) {
  test(`a user without ${missing} gets RLOCK_REDIS naming it, and nothing is left`, async () => {
    await makeUser(['family'], missing)
    const c = new Client(appUrl())
    try {
      await assert.rejects(c.lock('app:denied').acquire(), (e) => {
        assert.ok(e instanceof RLockError)
        assert.equal(e.code, codes.REDIS, e.message)
        assert.match(e.message, /app:denied/)
        // The server's words: the command (Redis 8, Valkey), or on Redis 7.0 the script's line.
        assert.ok(e.message.toLowerCase().includes(missing) || e.message.includes('@user_script'), e.message)
        return true
      })
      assert.equal(await redis.data.exists('app:denied'), 0)
    } finally {
      await c.close()
    }
  })
}

test('a waiter without SUBSCRIBE polls and gets the lock', async () => {
  await makeUser(['family'], 'subscribe')
  const c = new Client(appUrl())
  const other = new Client(appUrl())
  try {
    const lock = c.lock('app:waited')
    await lock.acquire()
    const tries = await evalshaCalls()
    let got = false
    const waiter = other.lock('app:waited')
    const waiting = waiter.tryAcquire({ waitMs: 20_000 }).then((r) => { got = r })
    // It polls: its first try and one more reach the server (the event, not a sleep).
    await eventually(async () => (await evalshaCalls()) >= tries + 2, 10_000, 'the waiter polled')
    assert.equal(got, false, 'the waiter waited for the holder')
    assert.equal(await lock.release(), true)
    await waiting
    assert.equal(got, true, 'the waiter without SUBSCRIBE got the lock')
    await waiter.release()
  } finally {
    await c.close()
    await other.close()
  }
})

test('a password is in no error, inspection, answer, figure, record or warning', async () => {
  const SECRET = 'Sekr3t-p@ss:word/9'
  const WRONG = 'Wr0ng-guess-7'
  const ESCAPED = encodeURIComponent(SECRET)
  await redis.data.sendCommand(['ACL', 'SETUSER', 'keeper', 'reset', 'on', `>${SECRET}`, '+@all', '~*', '&*'])
  const warnings = []
  const onWarning = (w) => warnings.push(`${w.name} ${w.code} ${w.message} ${w.detail}`)
  process.on('warning', onWarning)
  const clean = (text, where) => {
    for (const s of [SECRET, ESCAPED, WRONG]) assert.ok(!String(text).includes(s), `${where} carries a password: ${text}`)
  }
  const cleanError = (e, where) => {
    clean(`${e.message} ${e.stack} ${util.inspect(e)}`, where)
    if (e.cause) cleanError(e.cause, `${where} (its cause)`)
  }
  const port = redis.port
  const paths = {
    'a wrong password': `redis://keeper:${WRONG}@127.0.0.1:${port}/`,
    'an unreachable server': `redis://keeper:${ESCAPED}@127.0.0.1:1/`,
    'a port that is not a number': `redis://keeper:${ESCAPED}@127.0.0.1:notaport/`,
    'an unknown scheme': `bogus://keeper:${ESCAPED}@127.0.0.1:${port}/`,
    'a cluster seed that is not a number': `redis+cluster://keeper:${ESCAPED}@127.0.0.1:x/`,
    'a sentinel set with no service': `redis+sentinel://keeper:${ESCAPED}@127.0.0.1:${port}/`,
  }
  const saved = process.env.REDIS_URL
  try {
    for (const [what, url] of Object.entries(paths)) {
      for (const viaEnv of [false, true]) {
        let e
        try {
          if (viaEnv) process.env.REDIS_URL = url
          const c = viaEnv ? new Client(undefined, { connectTimeoutMs: 1000 }) : new Client(url, { connectTimeoutMs: 1000 })
          await c.ready().finally(() => c.close().catch(() => {}))
        } catch (err) {
          e = err
        }
        assert.ok(e instanceof RLockError, `${what}: an RLockError`)
        cleanError(e, `${what}${viaEnv ? ' (REDIS_URL)' : ''}`)
      }
    }
    process.env.REDIS_URL = `redis://keeper:${ESCAPED}@127.0.0.1:${port}/`
    const c = new Client(undefined, { commandTimeoutMs: 300, retryAttempts: 0, watchdogTimeoutMs: 1000, appName: 'secrets' })
    try {
      await c.ready()
      // A command the user may not run.
      await redis.data.sendCommand(['ACL', 'SETUSER', 'keeper', '-evalsha'])
      await assert.rejects(c.lock('s:refused').acquire(), (e) => { cleanError(e, 'a refused command'); return true })
      await redis.data.sendCommand(['ACL', 'SETUSER', 'keeper', '+evalsha'])
      // A command timeout: the server paused past it.
      await redis.data.sendCommand(['CLIENT', 'PAUSE', '1000', 'ALL'])
      await assert.rejects(c.lock('s:paused').isLocked(), (e) => {
        assert.equal(e.code, codes.TIMEOUT, e.message)
        cleanError(e, 'a command timeout')
        return true
      })
      await redis.data.sendCommand(['CLIENT', 'UNPAUSE'])
      // A held lock, and its connections killed: the client rebuilds them.
      const lock = c.lock('s:held')
      await lock.acquire()
      await redis.data.sendCommand(['CLIENT', 'KILL', 'USER', 'keeper'])
      await eventually(async () => {
        try {
          return await lock.isHeld()
        } catch (e) {
          cleanError(e, 'a killed connection')
          return false
        }
      }, 10_000, 'the connections rebuilt')
      for (const shown of [util.inspect(c), util.inspect(lock), JSON.stringify(await c.describe('s:held')),
        JSON.stringify(await c.list('s:*')), JSON.stringify(await c.stats()), await c.prometheusText(),
        JSON.stringify(await c.info())]) {
        clean(shown, 'what the client shows')
      }
      for (const key of await redis.data.keys('rlock:client:*')) clean(await redis.data.get(key), `holder record ${key}`)
      await lock.release()
    } finally {
      await c.close()
    }
    for (const w of warnings) clean(w, 'a process warning')
  } finally {
    if (saved === undefined) delete process.env.REDIS_URL
    else process.env.REDIS_URL = saved
    process.off('warning', onWarning)
    await redis.data.sendCommand(['ACL', 'DELUSER', 'keeper'])
  }
})
