-- Semaphore trySetPermits (Redisson RSemaphore): sets the count only when the key is missing,
-- with an optional TTL, and publishes it.
-- KEYS[1] semaphore; KEYS[2] channel. ARGV[1] permits; ARGV[2] PUBLISH or SPUBLISH;
-- ARGV[3] ttl (ms; 0: none).
-- Returns 1 when set, 0 when the semaphore already existed.
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
if tonumber(ARGV[3]) > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
else
    redis.call('set', KEYS[1], ARGV[1])
end
publish(ARGV[2], KEYS[2], ARGV[1])
return 1
