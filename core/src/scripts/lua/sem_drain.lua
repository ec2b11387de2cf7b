-- Semaphore drainPermits (Redisson RSemaphore): sets the count to 0 and returns what it was
-- (0 when missing); publishes nothing. KEYS[1] semaphore.
local value = redis.call('get', KEYS[1])
if value == false then
    return 0
end
redis.call('set', KEYS[1], 0)
return tonumber(value)
