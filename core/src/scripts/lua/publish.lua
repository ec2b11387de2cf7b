-- Shared by every script that publishes (prepended to each of them when they are loaded).

-- Publishes `message` on `channel` with PUBLISH or SPUBLISH, as `command` says (the client's
-- choice of classic or sharded pub/sub), or not at all for 'NONE' (a spin lock's release: its
-- waiters poll, as Redisson's RSpinLock's do). Both commands are named literally: cluster
-- proxies refuse a script whose command name is not a string literal (redisson#5596).
local function publish(command, channel, message)
    if command == 'SPUBLISH' then
        return redis.call('spublish', channel, message)
    end
    if command == 'NONE' then
        return 0
    end
    return redis.call('publish', channel, message)
end

