-- Semaphore addPermits (Redisson RSemaphore): adds ARGV[1] (may be negative) and publishes the
-- new count. KEYS[1] semaphore; KEYS[2] channel. ARGV[1] delta; ARGV[2] PUBLISH or SPUBLISH.
-- Returns the new count.
local value = redis.call('get', KEYS[1])
if value == false then
    value = 0
end
local new = tonumber(value) + tonumber(ARGV[1])
redis.call('set', KEYS[1], new)
publish(ARGV[2], KEYS[2], new)
return new
