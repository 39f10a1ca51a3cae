-- ARGV: base, forcedGen, pos, subId. The handle's meta goes at once; its address fields are swept later.
local gs = gens(ARGV[2])
local dropped = 0
for _, g in ipairs(gs) do
  local gb = ARGV[1]..g..':'
  local h = handle(gb, g, ARGV[4], false)
  if h then
    redis.call('HDEL', gb..'sub', ARGV[4])
    redis.call('HDEL', gb..'meta', h)
    tally(g, 'ns', -1)
    dropped = dropped + 1
  end
end
if dropped > 0 then redis.call('HINCRBY', KEYS[1], 'dead', 1) end
bump(ARGV[3], gs)
return #gs
