-- Fenced RedLock token write (rlock's own: Redisson's RedLock has no token): raises the
-- counter to the token a quorum read chose, never lowering it, so a write that lands late
-- cannot undo a newer one. The counter is the fenced lock's (redisson_lock_token:{name}).
-- KEYS[1] token counter; ARGV[1] token.
-- Returns the counter's value before.
local before = tonumber(redis.call('get', KEYS[1]) or '0')
if before < tonumber(ARGV[1]) then
    redis.call('set', KEYS[1], ARGV[1])
end
return before
