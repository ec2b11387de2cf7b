-- Force release of a read-write lock's read or write side (Redisson RReadLock / RWriteLock
-- forceUnlockAsync): deletes the lock when its mode is ARGV[3].
-- KEYS[1] lock name; KEYS[2] channel; ARGV[1] message; ARGV[2] PUBLISH or SPUBLISH;
-- ARGV[3] 'read' or 'write'.
-- Returns 1 when deleted, 0 when the lock was free or in the other mode. WRONGTYPE (nothing
-- deleted) when the key is not a hash.
if redis.call('hget', KEYS[1], 'mode') == ARGV[3] then
    redis.call('del', KEYS[1])
    publish(ARGV[2], KEYS[2], ARGV[1])
    if ARGV[1] == '1' then
        -- As in write_release.lua: '0' too, for a Redisson waiter not parked yet.
        publish(ARGV[2], KEYS[2], '0')
    end
    return 1
end
return 0
