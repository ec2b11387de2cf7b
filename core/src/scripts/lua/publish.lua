-- Shared by every script that publishes (prepended to each of them when they are loaded).

-- Publishes `message` on `channel` with PUBLISH, or with SPUBLISH when `command` says so (the
-- client's choice of classic or sharded pub/sub). Both are named literally: cluster proxies
-- refuse a script whose command name is not a string literal (redisson#5596).
local function publish(command, channel, message)
    if command == 'SPUBLISH' then
        return redis.call('spublish', channel, message)
    end
    return redis.call('publish', channel, message)
end

