-- Fair release (Redisson RFairLock unlockInnerAsync), idempotent under retries: the reentrant
-- release, which wakes only the first waiter in line, on its own channel.
-- KEYS[1] lock name; KEYS[2] queue; KEYS[3] deadlines; KEYS[4] channel prefix (each waiter
-- listens on <prefix>:<owner>); KEYS[5] latch (per release call).
-- ARGV[1] unlock message; ARGV[2] lease (ms); ARGV[3] owner; ARGV[4] now (ms);
-- ARGV[5] PUBLISH or SPUBLISH; ARGV[6] latch ttl (ms).
-- Returns nil: not held by owner; 0: still held (reentrant); 1: released.
local done = redis.call('get', KEYS[5])
if done ~= false then
    return tonumber(done)
end
-- Unlike Redisson, a release by an owner that does not hold the lock changes nothing (Redisson
-- wakes the first waiter and answers 'released' when the lock is gone).
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
drop_stale_waiters(KEYS[2], KEYS[3], tonumber(ARGV[4]))
local count = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if count > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[5], 0, 'px', ARGV[6])
    return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
wake_first(KEYS[2], KEYS[4], ARGV[5], ARGV[1])
return 1
