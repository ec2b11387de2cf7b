-- Batched renewal of read holds (the watchdog). KEYS[1..k] lock names (one hash slot);
-- ARGV[1] lease (ms); ARGV[2i] the owner of KEYS[i]; ARGV[2i+1] that owner's timeout prefix.
-- Renews the lock and only this owner's read-hold keys (Redisson 4.4+; never other readers').
-- Returns an array: 1 when owner i still holds read holds on KEYS[i], else 0. A key of the
-- wrong type counts as not held instead of failing the whole batch.
local out = {}
local lease = tonumber(ARGV[1])
for i = 1, #KEYS do
    local n = redis.pcall('hget', KEYS[i], ARGV[2 * i])
    if type(n) == 'string' then
        local ttl = redis.call('pttl', KEYS[i])
        redis.call('pexpire', KEYS[i], math.max(ttl, lease))
        for j = tonumber(n), 1, -1 do
            redis.call('pexpire', ARGV[2 * i + 1] .. ':' .. j, lease)
        end
        out[i] = 1
    else
        out[i] = 0
    end
end
return out
