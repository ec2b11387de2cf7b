-- Read acquire (Redisson RReadLock tryLockInnerAsync). Readers share the lock while its mode
-- is 'read'; the writer may also take read holds (a downgrade). Each read hold n of an owner has
-- its own lease key <timeout prefix>:<n>.
-- KEYS[1] lock name; KEYS[2] the owner's timeout prefix ({name}:<owner>:rwlock_timeout).
-- ARGV[1] lease (ms); ARGV[2] owner (its read field); ARGV[3] <owner>:write (its write field).
-- Returns nil when acquired (or re-entered), else the PTTL of the lock key (-1: no expiry).
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':' .. n, 1, 'px', ARGV[1])
    local ttl = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[1])))
    return nil
end
return redis.call('pttl', KEYS[1])
