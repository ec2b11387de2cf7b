-- Permit-expirable semaphore lease update (Redisson updateLeaseTime), batched: the watchdog's
-- renewal of the permits it keeps, and a user's update of one. Permit i is ARGV[i + 1] in the
-- held-permits ZSET KEYS[i]; while it has not expired its expiry becomes now + ARGV[1] ms.
-- Returns one flag per permit: 1 when updated, 0 when unknown or expired.
local now = now_ms()
local flags = {}
for i = 1, #KEYS do
    local expiry = redis.call('zscore', KEYS[i], ARGV[i + 1])
    if expiry ~= false and tonumber(expiry) > now then
        redis.call('zadd', KEYS[i], now + tonumber(ARGV[1]), ARGV[i + 1])
        flags[i] = 1
    else
        flags[i] = 0
    end
end
return flags
