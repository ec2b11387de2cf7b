-- Permit-expirable semaphore release (Redisson tryRelease): removes permit ARGV[1], gives it
-- back to the count and publishes the new count. An expired permit is given back too but
-- reported as not held. Idempotent under retries of one release call through its latch.
-- KEYS[1] semaphore; KEYS[2] held permits; KEYS[3] channel; KEYS[4] latch of this call.
-- ARGV[1] permit id (16 raw bytes); ARGV[2] PUBLISH or SPUBLISH; ARGV[3] latch ttl (ms).
-- Returns 1 when released, 0 when the permit was unknown or expired.
if redis.call('exists', KEYS[4]) == 1 then
    return 1
end
local expiry = redis.call('zscore', KEYS[2], ARGV[1])
if expiry == false then
    return 0
end
redis.call('zrem', KEYS[2], ARGV[1])
local value = redis.call('incrby', KEYS[1], 1)
publish(ARGV[2], KEYS[3], value)
if tonumber(expiry) <= now_ms() then
    return 0
end
redis.call('set', KEYS[4], 1, 'px', ARGV[3])
return 1
