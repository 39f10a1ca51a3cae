-- Shared by the writers (prepended to them by scripts.ts): the generations a writer must touch (cur and next),
-- or a forced one; a subscription's handle; removing and adding a handle in an address field; the tallies the
-- verifier checks; the shard's position.
local function gens(forced)
  if forced ~= '' then return {forced} end
  local st = redis.call('HMGET', KEYS[1], 'cur', 'next')
  local out = {}
  if st[1] then out[#out+1] = st[1] end
  if st[2] and st[2] ~= st[1] then out[#out+1] = st[2] end
  return out
end
-- What a generation g should hold, counted by the scripts that change it (state fields ns:g subscriptions, nk:g key
-- states, nb:g non-empty buckets; hash g:inv bucket -> its field count): the verifier (verifyShards) compares them
-- with what Redis really holds, so a key lost outside these scripts is found without reading the addresses.
local function tally(g, what, d) redis.call('HINCRBY', KEYS[1], what..':'..g, d) end
local function inventory(gb, g, b)
  local n = redis.call('HLEN', gb..'b:'..b)
  if n == 0 then
    if redis.call('HDEL', gb..'inv', b) == 1 then tally(g, 'nb', -1) end
  elseif redis.call('HSET', gb..'inv', b, n) == 1 then tally(g, 'nb', 1) end
end
local function putKey(gb, g, keyId, v, only)
  local n = only and redis.call('HSETNX', gb..'keys', keyId, v) or redis.call('HSET', gb..'keys', keyId, v)
  if n == 1 then tally(g, 'nk', 1) end
end
local function handle(gb, g, sub, create)
  local h = redis.call('HGET', gb..'sub', sub)
  if (not h) and create then
    h = tostring(redis.call('INCR', gb..'seq'))
    redis.call('HSET', gb..'sub', sub, h)
    tally(g, 'ns', 1)
  end
  return h
end
local function strip(v, h, gb)
  local out = {}
  for x in string.gmatch(v, '[^,]+') do
    if x ~= h and redis.call('HEXISTS', gb..'meta', x) == 1 then out[#out+1] = x end
  end
  return table.concat(out, ',')
end
-- Adds handle h to address field f of bucket bk. Most additions are new addresses: one call sets them; only a
-- shared address is read and appended to.
local function addWatcher(bk, f, h)
  if redis.call('HSETNX', bk, f, h) == 0 then
    local v = redis.call('HGET', bk, f)
    if not string.find(','..v..',', ','..h..',', 1, true) then redis.call('HSET', bk, f, v..','..h) end
  end
end
-- Records that the change at position p is in this shard (only where the shard has a generation): the same script
-- writes the change, so a replica has the position exactly when it has the change. Never moves back.
local function bump(p, gs)
  if p ~= '' and #gs > 0 and tonumber(redis.call('HGET', KEYS[1], 'pos') or '0') < tonumber(p) then
    redis.call('HSET', KEYS[1], 'pos', p)
  end
end
