-- Fair acquire (Redisson RFairLock tryLockInnerAsync; with ARGV[6] '0', Redisson 4.4's
-- RedissonNonReentrantFairLock): grants in arrival order across clients.
-- KEYS[1] lock name; KEYS[2] queue (LIST of waiting owners); KEYS[3] deadlines (ZSET, absolute
-- ms of the clients' clocks).
-- ARGV[1] lease (ms); ARGV[2] owner; ARGV[3] wait (ms: how long a waiter may go without
-- re-trying before the others drop it); ARGV[4] now (ms); ARGV[5] '1' to queue up when the lock
-- is taken, '0' to only try (Redisson's tryLock without a wait: nothing is queued); ARGV[6] '1'
-- when the owner may re-enter, '0' when it may not.
-- Returns nil when acquired (or re-entered); -3 when the owner holds the non-reentrant lock
-- already (nothing queued or changed but stale waiters dropped, as Redisson's); else how long
-- to wait at most (ms; may be <= 0 when the lock is free but an earlier waiter is first in line).
local now = tonumber(ARGV[4])
drop_stale_waiters(KEYS[2], KEYS[3], now)
if (redis.call('exists', KEYS[1]) == 0)
    and ((redis.call('exists', KEYS[2]) == 0) or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], ARGV[2])
    -- Everyone behind moves up one place: their deadlines come down by one wait.
    local waiters = redis.call('zrange', KEYS[3], 0, -1)
    for i = 1, #waiters do
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), waiters[i])
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    if ARGV[6] == '0' then
        return -3
    end
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if ARGV[5] ~= '1' then
    return redis.call('pttl', KEYS[1])
end
if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
    return math.max(0, redis.call('pttl', KEYS[1]))
end
-- Queue up at the tail: the deadline is the previous tail's (or the lock's lease) plus a wait.
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) ~= false then
    ttl = tonumber(redis.call('zscore', KEYS[3], last)) - now
else
    ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + now, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
