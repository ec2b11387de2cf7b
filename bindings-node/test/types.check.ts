// Type-checked by `make test-node` (tsc --noEmit): the shapes users get from the package's types (rlock.d.ts, emitted by tsc). Not run.
import { Client, FencedLock, Lock, fencedRedLock, redLock, RLockError, codes } from 'rlock'

async function shapes(client: Client, others: Client[]): Promise<void> {
  const lock: Lock = client.lock('orders')
  const plain: void | number = await lock.acquire({ waitMs: 100, leaseMs: 5000 })
  const got: boolean | number = await lock.tryAcquire()
  const fenced: FencedLock = client.fencedLock('ledger')
  const token: number = await fenced.acquire()
  const maybe: number | false = await fenced.tryAcquire({ waitMs: 10 })
  const kind: 'fenced' = fenced.kind
  const once: Lock = client.nonReentrantLock('orders')
  const onceFair: Lock = client.nonReentrantFairLock('orders')
  const onceKind: Lock['kind'] = once.kind
  const red = redLock('orders', [client, ...others])
  const majority: number = red.quorum
  const redToken: number = await fencedRedLock('ledger', [client, ...others]).acquire()
  const freed: boolean = await red.release()
  try {
    await lock.release()
  } catch (e) {
    if (e instanceof RLockError && e.code === codes.NOT_HELD) return
  }
  void [plain, got, token, maybe, kind, once, onceFair, onceKind, majority, redToken, freed]
}
void shapes
