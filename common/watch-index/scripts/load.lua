-- The rebuild's bulk copy of whole subscriptions into the generation being built: what apply.lua does with a forced
-- generation, for many subscriptions in one call (one call per shard and batch instead of one per subscription).
-- ARGV: base, gen, count, then per subscription: subId, meta, keyId, keyState, n, then n (bucket, address) pairs.
local gb = ARGV[1]..ARGV[2]..':'
local i = 4
for _ = 1, tonumber(ARGV[3]) do
  local sub, meta, keyId, keyState, cnt = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3], tonumber(ARGV[i+4])
  i = i + 5
  local h = handle(gb, ARGV[2], sub, true)
  redis.call('HSET', gb..'meta', h, meta)
  if keyState ~= '' then putKey(gb, ARGV[2], keyId, keyState, true) end
  for _ = 1, cnt do
    addWatcher(gb..'b:'..ARGV[i], ARGV[i+1], h)
    inventory(gb, ARGV[2], ARGV[i])
    i = i + 2
  end
end
return 1
