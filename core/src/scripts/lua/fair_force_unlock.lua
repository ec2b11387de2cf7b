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
drop_stale_waiters(KEYS[2], KEYS[3], tonumber(ARGV[2]))
if redis.call('del', KEYS[1]) == 1 then
    wake_first(KEYS[2], KEYS[4], ARGV[3], ARGV[1])
    return 1
end
return 0
