-- Permit-expirable semaphore counts (Redisson availablePermits / acquiredPermits): reclaims
-- expired permits, then reports the count and the number of held permits.
-- KEYS[1] semaphore; KEYS[2] held permits; KEYS[3] channel. ARGV[1] PUBLISH or SPUBLISH.
-- Returns {available, acquired}.
reclaim(KEYS[1], KEYS[2], KEYS[3], ARGV[1], now_ms())
local value = redis.call('get', KEYS[1])
return {value == false and 0 or tonumber(value), redis.call('zcard', KEYS[2])}
