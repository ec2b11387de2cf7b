-- Write release (Redisson RWriteLock unlockInnerAsync), idempotent under retries.
-- KEYS[1] lock name; KEYS[2] channel; KEYS[3] latch (per release call).
-- ARGV[1] message ('1': wakes every waiter); ARGV[2] lease (ms); ARGV[3] <owner>:write;
-- ARGV[4] PUBLISH or SPUBLISH; ARGV[5] latch ttl (ms).
-- Each wake-up is '1' followed by '0'. Redisson's waiters take '1' as "release as many permits
-- as threads are parked right now", so a Java waiter that has subscribed but not parked yet
-- misses it and sleeps until the lease it last saw runs out (Redisson's own write unlock has
-- that race; `make interop` hit it about once in 60 runs). '0' leaves one permit for it; any
-- other waiter just tries once more.
-- Returns nil: the owner holds no write hold; 0: still held (re-entered); 1: the lock is free
-- now (waiters were woken); 2: the write hold ended but the owner's read holds remain (a
-- downgrade: the mode is 'read' now).
local done = redis.call('get', KEYS[3])
if done ~= false then
    return tonumber(done)
end
if redis.call('hget', KEYS[1], 'mode') ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local count = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if count > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1])
    publish(ARGV[4], KEYS[2], ARGV[1])
    publish(ARGV[4], KEYS[2], '0')
    redis.call('set', KEYS[3], 1, 'px', ARGV[5])
    return 1
end
redis.call('hset', KEYS[1], 'mode', 'read')
-- Redisson publishes nothing here; waiting readers may join now, so wake them (a waiting
-- writer, Java's included, just tries again).
publish(ARGV[4], KEYS[2], ARGV[1])
publish(ARGV[4], KEYS[2], '0')
redis.call('set', KEYS[3], 2, 'px', ARGV[5])
return 2
