import assert from 'node:assert/strict'
import { Client, version } from 'rlock'

const client = new Client()
const lock = client.lock('orders')
await lock.acquire()
assert.equal(await lock.isHeld(), true)
assert.equal(await lock.release(), true)
assert.equal(await client.withLock('orders', async () => 42), 42)
await client.close()
console.log(version)
