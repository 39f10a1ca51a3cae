-- ARGV: base, stale ("1"/"0"), generation. Starts generation `next` in this shard (every shard of a chain gets the
-- same number, chosen by beginBuild); returns an unfinished earlier build's generation ('' if none) to drop.
local g = ARGV[3]
if tonumber(redis.call('HGET', KEYS[1], 'gens') or '0') < tonumber(g) then redis.call('HSET', KEYS[1], 'gens', g) end
local old = redis.call('HGET', KEYS[1], 'next')
redis.call('HSET', KEYS[1], 'next', g)
if ARGV[2] == '1' or redis.call('HEXISTS', KEYS[1], 'stale') == 1 then redis.call('HSET', KEYS[1], 'stale', 'build:'..g) end
if old == g then old = nil end
return old or ''
