-- Semaphore acquire (Redisson RSemaphore tryAcquire): takes ARGV[1] permits when that many are
-- available, and then sets its latch, which tells a give-back after a lost answer
-- (sem_undo.lua) that the permits were taken. Every acquire step has a latch of its own.
-- KEYS[1] semaphore (a STRING count; missing = 0 permits); KEYS[2] latch of this acquire step.
-- ARGV[1] permits (>= 1); ARGV[2] latch ttl (ms).
-- Returns 1 when taken, else 0.
local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= tonumber(ARGV[1]) then
    redis.call('decrby', KEYS[1], ARGV[1])
    redis.call('set', KEYS[2], 1, 'px', ARGV[2])
    return 1
end
return 0
