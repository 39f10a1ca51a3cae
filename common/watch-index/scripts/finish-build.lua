-- ARGV: gen, pos. Swaps only if this build is still the pending one; returns the previous cur ('' if none, -1 if
-- lost). The new generation holds every change up to the rebuild's position: the shard's position moves up to it.
if redis.call('HGET', KEYS[1], 'next') ~= ARGV[1] then return '-1' end
local old = redis.call('HGET', KEYS[1], 'cur')
redis.call('HSET', KEYS[1], 'cur', ARGV[1])
redis.call('HDEL', KEYS[1], 'next')
if ARGV[2] ~= '' and tonumber(redis.call('HGET', KEYS[1], 'pos') or '0') < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], 'pos', ARGV[2]) end
-- A failure marked after this build began is not covered by it: stay stale so the registry builds again.
local st = redis.call('HGET', KEYS[1], 'stale')
if st == 'build:'..ARGV[1] then redis.call('HDEL', KEYS[1], 'stale') end
return old or ''
