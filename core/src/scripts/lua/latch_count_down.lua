-- Count-down latch countDown (Redisson RCountDownLatch): decrements the count, deletes the
-- latch at zero or below, and publishes Redisson's zero message when it reaches zero (every
-- waiter wakes). A missing latch stays missing (DECR makes -1, deleted at once), as in
-- Redisson. Idempotent under retries of one call through its request latch, so a retry after
-- a lost reply never counts down twice.
-- KEYS[1] latch; KEYS[2] channel; KEYS[3] request latch of this call.
-- ARGV[1] zero message (0); ARGV[2] PUBLISH or SPUBLISH; ARGV[3] request latch ttl (ms).
-- Returns the new count (below 0 when the latch was missing or already open).
local done = redis.call('get', KEYS[3])
if done ~= false then
    return tonumber(done)
end
local v = redis.call('decr', KEYS[1])
if v <= 0 then
    redis.call('del', KEYS[1])
end
if v == 0 then
    publish(ARGV[2], KEYS[2], ARGV[1])
end
redis.call('set', KEYS[3], v, 'px', ARGV[3])
return v
