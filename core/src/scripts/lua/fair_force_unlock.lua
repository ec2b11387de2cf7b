-- Fair force release (Redisson RFairLock forceUnlockAsync): deletes the lock whoever holds it
-- and wakes the first waiter in line on its own channel.
-- KEYS[1] lock name; KEYS[2] queue; KEYS[3] deadlines; KEYS[4] channel prefix.
-- ARGV[1] unlock message; ARGV[2] now (ms); ARGV[3] PUBLISH or SPUBLISH.
-- Returns 1 when a lock was deleted, 0 when there was none. Refuses (WRONGTYPE, nothing
-- deleted) a key that is not a hash, like the reentrant force unlock.
local kind = redis.call('type', KEYS[1])['ok']
if kind ~= 'none' and kind ~= 'hash' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
local now = tonumber(ARGV[2])
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
if redis.call('del', KEYS[1]) == 1 then
    local next = redis.call('lindex', KEYS[2], 0)
    if next ~= false then
        redis.call(ARGV[3], KEYS[4] .. ':' .. next, ARGV[1])
    end
    return 1
end
return 0
