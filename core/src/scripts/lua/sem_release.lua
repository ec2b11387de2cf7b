-- Semaphore release (Redisson RSemaphore release): adds ARGV[1] permits and publishes the new
-- count (Java wakes up to that many waiters; so does rlock). Idempotent under retries of one
-- release call through its latch.
-- KEYS[1] semaphore; KEYS[2] channel; KEYS[3] latch of this release call.
-- ARGV[1] permits (>= 1); ARGV[2] PUBLISH or SPUBLISH; ARGV[3] latch ttl (ms).
-- Returns the new count.
local done = redis.call('get', KEYS[3])
if done ~= false then
    return tonumber(done)
end
local value = redis.call('incrby', KEYS[1], ARGV[1])
publish(ARGV[2], KEYS[2], value)
redis.call('set', KEYS[3], value, 'px', ARGV[3])
return value
