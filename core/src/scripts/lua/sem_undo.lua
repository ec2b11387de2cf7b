-- Semaphore give-back after a lost answer: when the acquire step whose latch is KEYS[3] took
-- its permits (the latch exists), gives them back, publishes the new count and deletes the
-- latch. Run again, it gives back nothing.
-- KEYS[1] semaphore; KEYS[2] channel; KEYS[3] latch of the acquire step.
-- ARGV[1] permits (>= 1); ARGV[2] PUBLISH or SPUBLISH.
-- Returns 1 when permits were given back, else 0.
if redis.call('del', KEYS[3]) == 0 then
    return 0
end
local value = redis.call('incrby', KEYS[1], ARGV[1])
publish(ARGV[2], KEYS[2], value)
return 1
