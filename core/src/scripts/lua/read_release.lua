-- Read release (Redisson RReadLock unlockInnerAsync), idempotent under retries.
-- KEYS[1] lock name; KEYS[2] channel; KEYS[3] the owner's timeout prefix; KEYS[4] the key prefix
-- of every reader's timeout keys ({name}); KEYS[5] latch (per release call).
-- ARGV[1] unlock message ('0': wakes one waiter); ARGV[2] owner; ARGV[3] PUBLISH or SPUBLISH;
-- ARGV[4] latch ttl (ms).
-- Returns nil: the owner holds no read hold; 0: it still holds read holds; 1: the lock is free
-- now (a waiter was woken); 2: its last read hold ended, but other holds remain.
local done = redis.call('get', KEYS[5])
if done ~= false then
    return tonumber(done)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false or redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
local mine = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if mine == 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (mine + 1))
local code = 2
if mine > 0 then
    code = 0
end
if redis.call('hlen', KEYS[1]) > 1 then
    -- The lock lives as long as the longest read hold left.
    local longest = -3
    for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
        local n = tonumber(redis.call('hget', KEYS[1], field))
        if type(n) == 'number' then
            for i = n, 1, -1 do
                longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i))
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', KEYS[1], longest)
        redis.call('set', KEYS[5], code, 'px', ARGV[4])
        return code
    end
    if mode == 'write' then
        redis.call('set', KEYS[5], code, 'px', ARGV[4])
        return code
    end
end
redis.call('del', KEYS[1])
publish(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1
