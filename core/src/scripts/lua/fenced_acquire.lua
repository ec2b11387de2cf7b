-- Fenced acquire (Redisson RFencedLock tryLockInnerAsync): the reentrant acquire, plus a new
-- fencing token from the name's counter on every acquire, re-entries included.
-- KEYS[1] lock name; KEYS[2] token counter (redisson_lock_token:{name}, never expires).
-- ARGV[1] lease (ms); ARGV[2] owner.
-- Returns {-1, token} when acquired (or re-entered), else {PTTL of the lock key, -1}.
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    local token = redis.call('incr', KEYS[2])
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}
