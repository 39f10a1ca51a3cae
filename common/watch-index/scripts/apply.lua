-- One subscription's address change on one shard, refreshing its meta and (if unknown) its key's state.
-- KEYS[1]: the shard's state key. ARGV: base, forcedGen, pos ('' for none), subId, meta, keyId, keyState, nRemove,
-- then (bucket, address) pairs: the removals, then the additions. Returns how many generations it wrote.
local base, sub, meta, keyId, keyState = ARGV[1], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local nrem = tonumber(ARGV[8])
local gs = gens(ARGV[2])
for _, g in ipairs(gs) do
  local gb = base..g..':'
  local h = handle(gb, g, sub, true)
  redis.call('HSET', gb..'meta', h, meta)
  if keyState ~= '' then putKey(gb, g, keyId, keyState, true) end
  local i = 9
  for r = 1, nrem do
    local bk, f = gb..'b:'..ARGV[i], ARGV[i+1]
    local v = redis.call('HGET', bk, f)
    if v then
      local nv = strip(v, h, gb)
      if nv == '' then redis.call('HDEL', bk, f); inventory(gb, g, ARGV[i]) elseif nv ~= v then redis.call('HSET', bk, f, nv) end
    end
    i = i + 2
  end
  while i < #ARGV do
    addWatcher(gb..'b:'..ARGV[i], ARGV[i+1], h)
    inventory(gb, g, ARGV[i])
    i = i + 2
  end
end
bump(ARGV[3], gs)
return #gs
