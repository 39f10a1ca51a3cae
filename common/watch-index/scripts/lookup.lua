-- The reader. ARGV: base, then (bucket, address) pairs. Returns {-1} when not ready, else {1, values, handles,
-- metas, keyStates, position}: the position of the last change applied to the shard, read in the same script as the
-- answer.
local st = redis.call('HMGET', KEYS[1], 'cur', 'stale', 'pos')
if (not st[1]) or st[2] then return {-1} end
local gb = ARGV[1]..st[1]..':'
local vals, seen, hs = {}, {}, {}
local n = 0
for i = 2, #ARGV, 2 do
  n = n + 1
  local v = redis.call('HGET', gb..'b:'..ARGV[i], ARGV[i+1])
  if v then
    vals[n] = v
    for h in string.gmatch(v, '[^,]+') do
      if not seen[h] then seen[h] = true; hs[#hs+1] = h end
    end
  else
    vals[n] = ''
  end
end
local metas, keys = {}, {}
for j, h in ipairs(hs) do
  local m = redis.call('HGET', gb..'meta', h)
  if m then
    metas[j] = m
    local kid = string.match(m, '^[^|]*|([^|]*)|')
    keys[j] = redis.call('HGET', gb..'keys', kid) or '0'
  else
    metas[j] = ''
    keys[j] = '0'
  end
end
return {1, vals, hs, metas, keys, st[3] or '0'}
