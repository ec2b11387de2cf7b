-- Reentrant acquire (Redisson RLock tryLockInnerAsync).
-- KEYS[1] lock name; ARGV[1] lease (ms); ARGV[2] owner.
-- Returns nil when acquired (or re-entered), else the PTTL of the lock key (-1: no expiry).
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
