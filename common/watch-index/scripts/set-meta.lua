-- ARGV: base, forcedGen, pos, subId, meta. Refreshes status, kinds and match where the subscription has a handle.
local gs = gens(ARGV[2])
for _, g in ipairs(gs) do
  local gb = ARGV[1]..g..':'
  local h = handle(gb, g, ARGV[4], false)
  if h then redis.call('HSET', gb..'meta', h, ARGV[5]) end
end
bump(ARGV[3], gs)
return #gs
