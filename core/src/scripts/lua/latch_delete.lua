-- Count-down latch delete (Redisson RCountDownLatch deleteAsync): deletes the latch and, when
-- it existed, publishes Redisson's new-count message (Java waiters ignore it; rlock waiters
-- look at the count again and find the latch open).
-- KEYS[1] latch; KEYS[2] channel. ARGV[1] new-count message (1); ARGV[2] PUBLISH or SPUBLISH.
-- Returns 1 when the latch existed, else 0.
if redis.call('del', KEYS[1]) == 1 then
    publish(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
