-- Batched lease renewal (the watchdog). KEYS[1..k] lock names (one hash slot);
-- ARGV[1] lease (ms); ARGV[i+1] the owner of KEYS[i].
-- Returns an array: 1 when owner i still holds KEYS[i] (its lease was reset), else 0.
-- A key of the wrong type counts as not held instead of failing the whole batch.
local out = {}
for i = 1, #KEYS do
    local held = redis.pcall('hexists', KEYS[i], ARGV[i + 1])
    if held == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        out[i] = 1
    else
        out[i] = 0
    end
end
return out
