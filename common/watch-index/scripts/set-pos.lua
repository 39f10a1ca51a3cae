-- ARGV: base, forcedGen (ignored), pos. Raises the shard's position without a change (a replay that found the
-- shard's last changes already covered, e.g. by a rebuild that took no rows). Returns 0 when the shard has no
-- generation.
local gs = gens('')
bump(ARGV[3], gs)
return #gs
