-- Lock acquire (Redisson RLock tryLockInnerAsync; with ARGV[3] '0', Redisson 4.4's
-- RedissonNonReentrantLock).
-- KEYS[1] lock name; ARGV[1] lease (ms); ARGV[2] owner; ARGV[3] '1' when the owner may re-enter
-- (its hold count goes up), '0' when it may not.
-- Returns nil when acquired (or re-entered); -3 when the owner holds the non-reentrant lock
-- already (nothing changed: Redisson answers NON_REENTRANT_REACQUIRE there); else the PTTL of
-- the lock key (-1: no expiry).
local mine = redis.call('hexists', KEYS[1], ARGV[2]) == 1
if mine and ARGV[3] == '0' then
    return -3
end
if mine or (redis.call('exists', KEYS[1]) == 0) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
return redis.call('pttl', KEYS[1])
