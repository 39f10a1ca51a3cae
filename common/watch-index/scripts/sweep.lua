-- ARGV: base, gen, fromBucket, toBucket (exclusive). Drops handles without meta from every field in the range.
local gb = ARGV[1]..ARGV[2]..':'
local live = {}
local changed = 0
for b = tonumber(ARGV[3]), tonumber(ARGV[4]) - 1 do
  local bk = gb..'b:'..b
  local all = redis.call('HGETALL', bk)
  for i = 1, #all, 2 do
    local v = all[i+1]
    local out = {}
    for x in string.gmatch(v, '[^,]+') do
      local ok = live[x]
      if ok == nil then ok = redis.call('HEXISTS', gb..'meta', x) == 1; live[x] = ok end
      if ok then out[#out+1] = x end
    end
    local nv = table.concat(out, ',')
    if nv == '' then redis.call('HDEL', bk, all[i]); changed = changed + 1
    elseif nv ~= v then redis.call('HSET', bk, all[i], nv); changed = changed + 1 end
  end
  if #all > 0 then inventory(gb, ARGV[2], b) end
end
return changed
