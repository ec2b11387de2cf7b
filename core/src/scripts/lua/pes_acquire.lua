-- Permit-expirable semaphore acquire (Redisson RPermitExpirableSemaphore tryAcquire): takes
-- one permit per id in ARGV[3..] when that many are available, recording each id with its
-- expiry. Expired permits are reclaimed first. A retry of a try whose answer was lost finds
-- its first id already recorded and takes nothing more.
-- KEYS[1] semaphore (STRING count); KEYS[2] held permits (ZSET id -> expiry ms); KEYS[3] channel.
-- ARGV[1] lease (ms); ARGV[2] PUBLISH or SPUBLISH; ARGV[3..] permit ids (16 raw bytes each).
-- Returns -1 when taken; else the ms until the earliest permit expires (-2: none will).
local now = now_ms()
if redis.call('zscore', KEYS[2], ARGV[3]) ~= false then
    return -1
end
reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[2], now)
local n = #ARGV - 2
local value = redis.call('get', KEYS[1])
if value ~= false and tonumber(value) >= n then
    redis.call('decrby', KEYS[1], n)
    local expiry = now + tonumber(ARGV[1])
    for i = 3, #ARGV do
        redis.call('zadd', KEYS[2], expiry, ARGV[i])
    end
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl)
    end
    return -1
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
-- 922337203685477 is Redisson's "no lease": that permit never expires.
if first[1] ~= nil and first[2] ~= '922337203685477' then
    return math.max(tonumber(first[2]) - now, 0)
end
return -2
