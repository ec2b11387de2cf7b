-- Reentrant release (Redisson RLock unlockInnerAsync), idempotent under retries.
-- KEYS[1] lock name; KEYS[2] channel; KEYS[3] latch (per release call).
-- ARGV[1] unlock message; ARGV[2] lease (ms); ARGV[3] owner; ARGV[4] PUBLISH or SPUBLISH;
-- ARGV[5] latch ttl (ms).
-- Returns nil: not held by owner; 0: still held (reentrant); 1: released.
local done = redis.call('get', KEYS[3])
if done ~= false then
    return tonumber(done)
end
local held = redis.call('hget', KEYS[1], ARGV[3])
if held == false then
    return nil
end
-- The last hold (the usual case: HINCRBY wrote exactly '1') deletes the lock without
-- Redisson's HINCRBY to 0 first: the same outcome for one command less. Any other value, '1.0'
-- or ' 1' included, goes through HINCRBY as in Redisson, so what is not an integer fails the
-- same way.
if held ~= '1' then
    local count = redis.call('hincrby', KEYS[1], ARGV[3], -1)
    if count > 0 then
        redis.call('pexpire', KEYS[1], ARGV[2])
        redis.call('set', KEYS[3], 0, 'px', ARGV[5])
        return 0
    end
end
redis.call('del', KEYS[1])
publish(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
