-- A fair-lock waiter gives up (Redisson RFairLock acquireFailedAsync): it leaves the queue and
-- everyone behind it moves up one place (their deadlines come down by one wait).
-- KEYS[1] queue; KEYS[2] deadlines; KEYS[3] lock name; KEYS[4] channel prefix.
-- ARGV[1] owner; ARGV[2] wait (ms) it queued with; ARGV[3] unlock message; ARGV[4] PUBLISH or
-- SPUBLISH.
-- Returns 1 when the owner was in the queue, else 0.
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do
    i = i + 1
end
local found = i <= #queue
local head = i == 1
i = i + 1
while i <= #queue do
    redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i])
    i = i + 1
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
-- Beyond Redisson: a head that gives up while the lock is free (it was woken, then cancelled)
-- wakes the next in line, who would otherwise sleep until its next re-try.
if found and head and redis.call('exists', KEYS[3]) == 0 then
    wake_first(KEYS[1], KEYS[4], ARGV[4], ARGV[3])
end
if found then
    return 1
end
return 0
