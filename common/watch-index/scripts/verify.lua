-- ARGV: base. Compares the served generation with what its writers counted (lib.lua tally): the sizes of sub, meta
-- and keys, seq present, and each non-empty bucket's field count (HLEN, never its fields). Returns {0} when the shard
-- is not ready or being rebuilt (the rebuild is the check), {1, what} at the first difference, {2, buckets} when whole.
local st = redis.call('HMGET', KEYS[1], 'cur', 'stale', 'next')
if (not st[1]) or st[2] or st[3] then return {0} end
local g = st[1]
local gb = ARGV[1]..g..':'
local function want(f) return tonumber(redis.call('HGET', KEYS[1], f..':'..g) or '0') end
local ns, nk, nb = want('ns'), want('nk'), want('nb')
if redis.call('HLEN', gb..'sub') ~= ns then return {1, 'sub'} end
if redis.call('HLEN', gb..'meta') ~= ns then return {1, 'meta'} end
if redis.call('HLEN', gb..'keys') ~= nk then return {1, 'keys'} end
if ns > 0 and redis.call('EXISTS', gb..'seq') == 0 then return {1, 'seq'} end
local inv = redis.call('HGETALL', gb..'inv')
if #inv / 2 ~= nb then return {1, 'inv'} end
for i = 1, #inv, 2 do
  if redis.call('HLEN', gb..'b:'..inv[i]) ~= tonumber(inv[i+1]) then return {1, 'b:'..inv[i]} end
end
return {2, tostring(nb)}
