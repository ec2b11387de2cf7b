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
local now = tonumber(ARGV[4])
while true do
    local first = redis.call('lindex', KEYS[2], 0)
    if first == false then
        break
    end
    local deadline = redis.call('zscore', KEYS[3], first)
    if deadline ~= false and tonumber(deadline) <= now then
        redis.call('zrem', KEYS[3], first)
        redis.call('lpop', KEYS[2])
    else
        break
    end
end
local count = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if count > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[5], 0, 'px', ARGV[6])
    return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
local next = redis.call('lindex', KEYS[2], 0)
if next ~= false then
    redis.call(ARGV[5], KEYS[4] .. ':' .. next, ARGV[1])
end
return 1
