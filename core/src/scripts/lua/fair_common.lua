-- Shared by the fair lock's scripts (prepended to each of them when they are loaded).

-- Drops the waiters at the head of `queue` whose deadline in `timeouts` passed by `now` (they
-- stopped re-trying: crashed). Redisson's "remove stale threads": other deadlines stay.
local function drop_stale_waiters(queue, timeouts, now)
    while true do
        local first = redis.call('lindex', queue, 0)
        if first == false then
            return
        end
        local deadline = redis.call('zscore', timeouts, first)
        if deadline ~= false and tonumber(deadline) <= now then
            redis.call('zrem', timeouts, first)
            redis.call('lpop', queue)
        else
            return
        end
    end
end

-- Wakes the first waiter of `queue`, if any, on its own channel `<prefix>:<owner>`.
local function wake_first(queue, prefix, publish_command, message)
    local first = redis.call('lindex', queue, 0)
    if first ~= false then
        publish(publish_command, prefix .. ':' .. first, message)
    end
end

