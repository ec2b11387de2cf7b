const assert = require('node:assert/strict')
const { Client, version } = require('rlock')

;(async () => {
  const client = new Client()
  const lock = client.lock('orders')
  await lock.acquire() // waits; the watchdog keeps the lease alive
  assert.equal(await lock.isHeld(), true)
  assert.equal(await lock.release(), true)
  await client.close()
  console.log(version)
})()
