-- Write acquire (Redisson RWriteLock tryLockInnerAsync): one writer, no other owner's readers.
-- KEYS[1] lock name; ARGV[1] lease (ms); ARGV[2] <owner>:write; ARGV[3] owner (its read field).
-- Returns nil when acquired (or re-entered); -3 when the owner holds only read holds (an
-- upgrade, which would wait forever in Redisson: refused, nothing changed); else the PTTL of
-- the lock key (-1: no expiry).
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    -- Never shorten the lease other holds of this hash (the owner's read holds) rely on.
    local ttl = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[1])))
    return nil
end
if mode == 'read' and redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
    return -3
end
return redis.call('pttl', KEYS[1])
