-- ARGV: base, forcedGen, pos, keyId, state ("1"/"0").
local gs = gens(ARGV[2])
for _, g in ipairs(gs) do putKey(ARGV[1]..g..':', g, ARGV[4], ARGV[5], false) end
bump(ARGV[3], gs)
return #gs
