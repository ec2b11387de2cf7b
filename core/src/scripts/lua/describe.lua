-- Describe (rlock status, rlock list): reads everything that could live under one name and
-- changes nothing.
-- KEYS[1] the name; KEYS[2] the fenced lock's token counter; KEYS[3] the fair lock's queue;
-- KEYS[4] the fair lock's deadlines; KEYS[5] the permit-expirable semaphore's permits ZSET.
-- ARGV[1] the key prefix of read-hold lease keys ({name}); ARGV[2] the most items of one
-- collection to return.
-- Returns { type of KEYS[1], its PTTL, server seconds, server microseconds, hash fields and
-- values (false when not a hash or over the limit), hash length, hash field 'mode', string
-- value (false when not a string or over 32 bytes), read-hold PTTLs { reader, { hold 1, ... },
-- ... }, token, queue, queue length, deadlines, permits, permit count }; a collection is false
-- when its key is missing or of another type.
local limit = tonumber(ARGV[2])
local function type_of(key)
    return redis.call('type', key)['ok']
end
local t = type_of(KEYS[1])
local time = redis.call('time')
local fields, length, mode, value = false, 0, false, false
local reads = {}
if t == 'hash' then
    length = redis.call('hlen', KEYS[1])
    mode = redis.call('hget', KEYS[1], 'mode')
    if length <= limit then
        fields = redis.call('hgetall', KEYS[1])
        if mode then
            for i = 1, #fields, 2 do
                local field, count = fields[i], tonumber(fields[i + 1])
                if field ~= 'mode' and string.sub(field, -6) ~= ':write' and count and count >= 1 then
                    local ttls = {}
                    for j = 1, math.min(count, limit) do
                        ttls[j] = redis.call('pttl', ARGV[1] .. ':' .. field .. ':rwlock_timeout:' .. j)
                    end
                    reads[#reads + 1] = field
                    reads[#reads + 1] = ttls
                end
            end
        end
    end
elseif t == 'string' and redis.call('strlen', KEYS[1]) <= 32 then
    value = redis.call('get', KEYS[1])
end
local token = false
if type_of(KEYS[2]) == 'string' and redis.call('strlen', KEYS[2]) <= 32 then
    token = redis.call('get', KEYS[2])
end
local queue, queued = false, 0
if type_of(KEYS[3]) == 'list' then
    queue = redis.call('lrange', KEYS[3], 0, limit - 1)
    queued = redis.call('llen', KEYS[3])
end
local deadlines = false
if type_of(KEYS[4]) == 'zset' then
    deadlines = redis.call('zrange', KEYS[4], 0, limit - 1, 'withscores')
end
local permits, held = false, 0
if type_of(KEYS[5]) == 'zset' then
    permits = redis.call('zrange', KEYS[5], 0, limit - 1, 'withscores')
    held = redis.call('zcard', KEYS[5])
end
return { t, redis.call('pttl', KEYS[1]), time[1], time[2], fields, length, mode, value, reads, token,
    queue, queued, deadlines, permits, held }
