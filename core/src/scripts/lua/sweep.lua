-- rlock sweep (issue 45, item 7): counts what nothing can use any more under one key and, with
-- ARGV[2] '1', removes it, re-checking the key in the same atomic step (a key found by SCAN may
-- have changed since). ARGV[1] says what KEYS[1] is:
--   'waiters': KEYS[1] a fair lock's deadlines (ZSET, absolute ms of the waiters' clocks),
--     KEYS[2] its queue (LIST), KEYS[3] its channel prefix (a waiter's channel is it + ':' +
--     owner). Stale: a waiter whose deadline passed ARGV[4] (the sweeper's clock, ms) minus
--     ARGV[3] (the grace for the clocks' skew), and a queued owner with no deadline at all
--     (Redisson's scripts stop at one). When the head of the queue changes it is woken, as a
--     release wakes it (if the lock is held it waits again).
--   'permits': KEYS[1] a permit-expirable semaphore's permits (ZSET of 16-byte ids, expiry
--     in ms), KEYS[2] its count of available permits, KEYS[3] its channel. Stale: a permit
--     whose expiry passed the server's clock (the one the semaphore's own scripts read) minus
--     ARGV[3]. Removed as the semaphore's next script would: back to the count, announced.
--   'latch': KEYS[1] a request latch (a string key a release or count-down writes with a TTL).
--     Stale: one without an expiry.
-- ARGV[5] PUBLISH or SPUBLISH. Returns {stale, removed}; {-1, 0} when KEYS[1] (or its partner)
-- is not what ARGV[1] says: then nothing was changed.
local remove = ARGV[2] == '1'
local grace = tonumber(ARGV[3])
local function type_of(key)
    return redis.call('type', key)['ok']
end
if ARGV[1] == 'waiters' then
    local queue_type = type_of(KEYS[2])
    if type_of(KEYS[1]) ~= 'zset' or (queue_type ~= 'list' and queue_type ~= 'none') then
        return {-1, 0}
    end
    local stale = redis.call('zrangebyscore', KEYS[1], '-inf', tonumber(ARGV[4]) - grace)
    local queued = redis.call('lrange', KEYS[2], 0, -1)
    local orphans = {}
    for i = 1, #queued do
        if redis.call('zscore', KEYS[1], queued[i]) == false then
            orphans[#orphans + 1] = queued[i]
        end
    end
    local found = #stale + #orphans
    if not remove or found == 0 then
        return {found, 0}
    end
    local head = redis.call('lindex', KEYS[2], 0)
    for i = 1, #stale do
        redis.call('zrem', KEYS[1], stale[i])
        redis.call('lrem', KEYS[2], 0, stale[i])
    end
    for i = 1, #orphans do
        redis.call('lrem', KEYS[2], 0, orphans[i])
    end
    if redis.call('lindex', KEYS[2], 0) ~= head then
        wake_first(KEYS[2], KEYS[3], ARGV[5], '0')
    end
    return {found, found}
end
if ARGV[1] == 'permits' then
    local count_type = type_of(KEYS[2])
    if type_of(KEYS[1]) ~= 'zset' or (count_type ~= 'string' and count_type ~= 'none') then
        return {-1, 0}
    end
    if count_type == 'string' and tonumber(redis.call('get', KEYS[2])) == nil then
        return {-1, 0}
    end
    local cutoff = now_ms() - grace
    local stale = redis.call('zrangebyscore', KEYS[1], 0, cutoff)
    for i = 1, #stale do
        if string.len(stale[i]) ~= 16 then
            return {-1, 0}
        end
    end
    if not remove or #stale == 0 then
        return {#stale, 0}
    end
    reclaim(KEYS[2], KEYS[1], KEYS[3], ARGV[5], cutoff)
    return {#stale, #stale}
end
if ARGV[1] == 'latch' then
    if type_of(KEYS[1]) ~= 'string' then
        return {-1, 0}
    end
    if redis.call('pttl', KEYS[1]) ~= -1 then
        return {0, 0}
    end
    if remove then
        redis.call('del', KEYS[1])
        return {1, 1}
    end
    return {1, 0}
end
return {-1, 0}
