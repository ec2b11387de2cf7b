-- Shared by the permit-expirable semaphore's scripts (RPermitExpirableSemaphore): the server's
-- clock, and reclaiming expired permits as Redisson does.
-- Expiry scores are absolute milliseconds. rlock takes them from the Redis server's clock
-- (TIME), so rlock clients on hosts with skewed clocks still agree; Redisson uses its
-- client's clock, so Java and rlock agree as long as the clocks are in sync.
local function now_ms()
    local t = redis.call('time')
    return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Returns the expired permits in ZSET `timeouts` to the count `sem` and announces the new count
-- on `channel` (Java and rlock waiters wake up to that many).
local function reclaim(sem, timeouts, channel, publish_command, now)
    local expired = redis.call('zrangebyscore', timeouts, 0, now)
    if #expired > 0 then
        redis.call('zrem', timeouts, unpack(expired))
        local value = redis.call('incrby', sem, #expired)
        if value > 0 then
            publish(publish_command, channel, value)
        end
    end
end
