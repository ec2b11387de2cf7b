-- Count-down latch trySetCount (Redisson RCountDownLatch): sets the count only when the latch
-- does not exist, and publishes Redisson's new-count message. Idempotent under retries of one
-- call through its request latch (a retry after a lost reply reads back "set").
-- KEYS[1] latch (a STRING count); KEYS[2] channel; KEYS[3] request latch of this call.
-- ARGV[1] count (>= 0); ARGV[2] new-count message (1); ARGV[3] PUBLISH or SPUBLISH;
-- ARGV[4] request latch ttl (ms).
-- Returns 1 when set, 0 when the latch already existed (nothing changed).
if redis.call('exists', KEYS[3]) == 1 then
    return 1
end
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
redis.call('set', KEYS[1], ARGV[1])
publish(ARGV[3], KEYS[2], ARGV[2])
redis.call('set', KEYS[3], 1, 'px', ARGV[4])
return 1
