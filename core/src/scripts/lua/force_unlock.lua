-- Force release (Redisson RLock forceUnlockAsync).
-- KEYS[1] lock name; KEYS[2] channel; ARGV[1] unlock message; ARGV[2] PUBLISH or SPUBLISH.
-- Returns 1 when a lock was deleted, 0 when there was none. Unlike Redisson it refuses to
-- delete a key that is not a hash (not a lock), so a typo cannot destroy unrelated data.
local kind = redis.call('type', KEYS[1])['ok']
if kind == 'none' then
    return 0
end
if kind ~= 'hash' then
    return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value')
end
redis.call('del', KEYS[1])
publish(ARGV[2], KEYS[2], ARGV[1])
return 1
