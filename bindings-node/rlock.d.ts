// Types of the public API of `rlock` (rlock.js / rlock.mjs). The native layer's generated
// types are in index.d.ts.

/** The `.code` of every error rlock rejects with. */
export type RLockErrorCode =
  | 'RLOCK_TIMEOUT'
  | 'RLOCK_NOT_HELD'
  | 'RLOCK_LOST'
  | 'RLOCK_CONNECTION'
  | 'RLOCK_INVALID_ARGUMENT'
  | 'RLOCK_REDIS'
  | 'RLOCK_CLOSED'

/** The codes by short name: `codes.TIMEOUT === 'RLOCK_TIMEOUT'`. */
export declare const codes: Readonly<{
  TIMEOUT: 'RLOCK_TIMEOUT'
  NOT_HELD: 'RLOCK_NOT_HELD'
  LOST: 'RLOCK_LOST'
  CONNECTION: 'RLOCK_CONNECTION'
  INVALID_ARGUMENT: 'RLOCK_INVALID_ARGUMENT'
  REDIS: 'RLOCK_REDIS'
  CLOSED: 'RLOCK_CLOSED'
}>

/** An rlock failure. */
export declare class RLockError extends Error {
  readonly name: 'RLockError'
  readonly code: RLockErrorCode
}

/** Client settings; durations in milliseconds. */
export interface ClientOptions {
  /** Lease of a watchdog-renewed hold; renewed every third of it. Default 30000. */
  watchdogTimeoutMs?: number
  /** Most locks renewed by one script call. Default 100. */
  renewalBatchSize?: number
  /** How long one Redis command may take. Default 3000. */
  commandTimeoutMs?: number
  /** How long connecting may take. Default 10000. */
  connectTimeoutMs?: number
  /** Retries of a command after a connection error or timeout. Default 3. */
  retryAttempts?: number
  /** Pause between those retries. Default 1500. */
  retryDelayMs?: number
  /** How long a waiter waits for its SUBSCRIBE before it falls back to polling. Default 7500. */
  subscriptionTimeoutMs?: number
  /** Polling interval when pub/sub is unavailable. Default 100. */
  pollIntervalMs?: number
  /** Stop renewing a hold this long after it was acquired. Default: renew until release. */
  maxHoldMs?: number
  /** PEM file of the CA for `rediss://` URLs (and their cluster/sentinel variants). Default: system roots. */
  tlsCaFile?: string
  /** Sharded pub/sub on a Redis Cluster. Default: decided as Redisson does. Ignored off a cluster. */
  shardedPubsub?: boolean
  /** Wait after each acquire until a replica has the lock. Default: on for Cluster/Sentinel, off for one server. */
  replicaSync?: boolean
  /** How long one acquire waits for a replica's acknowledgement. Default 1000. */
  replicaSyncTimeoutMs?: number
  /** Connections for lock commands to a single server, used in turn (1 to 8). Default 1. */
  commandConnections?: number
}

/** What a client connected to, and what it decided there. */
export interface ClientInfo {
  topology: 'single' | 'cluster' | 'sentinel'
  /** Waiters use sharded pub/sub (SSUBSCRIBE / SPUBLISH). */
  shardedPubsub: boolean
  /** Acquires wait for a replica. */
  replicaSync: boolean
}

/** Options of `acquire` / `tryAcquire`. */
export interface AcquireOptions {
  /** Longest wait: `acquire` rejects RLOCK_TIMEOUT after it, `tryAcquire` resolves false. */
  waitMs?: number
  /** Fixed lease; without it the watchdog renews the hold until release. */
  leaseMs?: number
  /** Aborting it rejects the pending acquire with the signal's reason (an AbortError). */
  signal?: AbortSignal
}

/** A handle on one lock. Each handle is its own owner: it re-enters, other handles contend. */
export declare class Lock {
  private constructor()
  /** The lock name (its Redis key). */
  readonly name: string
  /** Aborts (reason: an RLockError with code RLOCK_LOST) when the watchdog loses the hold. */
  readonly lostSignal: AbortSignal
  /** Resolves once this handle holds the lock. */
  acquire(options?: AcquireOptions): Promise<void>
  /** Resolves whether it got the lock within `waitMs` (default 0: try once). */
  tryAcquire(options?: AcquireOptions): Promise<boolean>
  /** Releases one hold level; true when the lock is now free, false when still re-entered. */
  release(): Promise<boolean>
  /** Whether anyone holds the lock. */
  isLocked(): Promise<boolean>
  /** Whether this handle holds the lock. */
  isHeld(): Promise<boolean>
  /** How many times this handle holds the lock (0 when it does not). */
  holdCount(): Promise<number>
  /** Remaining lease in ms; null when the lock is free, -1 when the key has no expiry. */
  remainingTtl(): Promise<number | null>
  /** Deletes the lock whoever holds it and wakes a waiter; resolves whether it existed. */
  forceUnlock(): Promise<boolean>
}

/** A hold made by `client.acquire`; `await using` releases it at the end of the block. */
export declare class HeldLock implements AsyncDisposable {
  private constructor()
  /** The handle that holds. */
  readonly lock: Lock
  /** The handle's `lostSignal`. */
  readonly signal: AbortSignal
  /** Releases the hold. */
  release(): Promise<boolean>
  [Symbol.asyncDispose](): Promise<void>
}

/** A connection to Redis that makes locks. */
export declare class Client {
  /**
   * `url` defaults to `process.env.REDIS_URL`, else `redis://127.0.0.1:6379`; also
   * `redis+cluster://h1:p1,h2:p2/`, `redis+sentinel://h1:p1,h2:p2/service[/db]`, `rediss...`.
   */
  constructor(url?: string, options?: ClientOptions)
  /** Resolves once connected; rejects with the connect error. */
  ready(): Promise<void>
  /** A new handle (a new owner) on lock `name`. */
  lock(name: string): Lock
  /** Acquires `name` on a new handle. */
  acquire(name: string, options?: AcquireOptions): Promise<HeldLock>
  /** Runs `fn` holding `name`, releasing afterwards; `signal` is the hold's `lostSignal`. */
  withLock<T>(name: string, fn: (signal: AbortSignal) => T | Promise<T>, options?: AcquireOptions): Promise<T>
  /** Stops renewals and pub/sub; later calls reject RLOCK_CLOSED. Holds are not released. */
  close(): Promise<void>
  /** Holds this client tracks (held, or lost and not yet released). */
  trackedHolds(): Promise<number>
  /** Lock channels this client is subscribed to for waiters. */
  waitedChannels(): Promise<number>
  /** What the URL named and what was decided at connect. */
  info(): Promise<ClientInfo>
}

declare const rlock: {
  Client: typeof Client
  Lock: typeof Lock
  HeldLock: typeof HeldLock
  RLockError: typeof RLockError
  codes: typeof codes
}
export default rlock
