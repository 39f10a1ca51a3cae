// The Redis watch index: "which of these addresses are watched on this chain, and by whom". The registry writes it
// (writer half below) from its transactional outbox, after each change committed (registry/watch-outbox.ts,
// registry/watch-applier.ts); the matcher reads it once per block (lookup). Both import this one module so the key
// layout has a single home.
//
// Layout. A chain C is split into N shards (WATCH_INDEX_SHARDS, default 16), each with its own hash tag {C:s/N},
// so on a Redis Cluster one chain spreads over up to N slots (and nodes) instead of being pinned to one. An address
// belongs to shard crc32(address) mod N and, within it, to one of TOTAL_BUCKETS/N buckets. Every shard is a complete
// small index of its own, with exactly the keys one chain had before sharding:
//   P wi:{C:s/N}:state        hash: cur (generation served), next (generation being built), stale, gens, dead,
//                             pos (position of the last outbox row applied to this shard: common/watch-positions.ts)
//   P wi:{C:s/N}:<g>:b:<n>    hash per bucket n: field = base58 address, value = "h1,h2" subscriber handles
//   P wi:{C:s/N}:<g>:sub      hash: subscription id -> handle (small integer, never reused within a generation)
//   P wi:{C:s/N}:<g>:meta     hash: handle -> "subId|keyId|e or d|event,event|match" (status, kinds and match
//                             conditions, so matching needs no PostgreSQL; match is "" for the default, else its
//                             JSON: common/match-conditions.ts)
//   P wi:{C:s/N}:<g>:keys     hash: key id -> "1" (key live and chain enabled on it) or "0" (revoked or chain off)
//   P wi:{C:s/N}:<g>:seq      handle counter
// Where subscription meta lives: replicated into every shard that holds any of the subscription's addresses (its
// handle, meta and key state are per shard). Each shard's lookup script then reads addresses, handles, meta and key
// states in its own slot, atomically, and a block's lookup is one script per shard, sent as one pipeline per node
// (common/redis.ts acrossSlots): one round trip, never a second one to fetch meta from a central slot. The price is
// on the rarer writes: a status, kinds or key change runs one small script per shard (again one round trip per
// node), and 10,000 subscriptions × 16 shards of meta is a few MB beside 10,000,000 addresses.
// Addresses are spread over 131,072 small hashes per chain so each stays in Redis' compact listpack encoding (~76
// entries per hash at 10,000,000 addresses, under the default 128-entry limit; bench/index.ts measures the bytes per
// address). A field holds the base58 string itself, so neither side decodes base58 on the hot path. Handles keep each
// value tiny (listpack stores "17" as an integer).
// Scripts get the shard's state key as KEYS[1] and derive the other names from ARGV[1] (the shard's base); all share
// the shard's tag, so they live in KEYS[1]'s slot and the same code runs on a Redis Cluster.
//
// Matching rules the reader applies: a watcher is active when its subscription is enabled and its key is live with
// this chain enabled. Deleting a subscription drops its handle's meta at once (so it stops matching immediately);
// the address fields that still name the dead handle are cleaned lazily (rewritten on the next write of that
// address, and by sweepDeadHandles in batches).
//
// Generations and rebuilds, per shard with one generation number for the whole chain: a rebuild builds generation
// g+1 (state.next in every shard) from PostgreSQL, then swaps cur := next shard by shard; a writer script reads its
// shard's state itself, atomically, and writes cur and next (the registry's outbox applier pauses a chain during its
// rebuild: registry/watch-index.ts). A shard is NOT READY when its state.cur is missing (never built, or Redis
// restarted empty / FLUSHDB, or that node lost its data) or state.stale is set (markStale marks every shard: the
// served generation is known to be wrong). Choice for lookups: WAIT. A lookup touching a not-ready shard polls it
// until the rebuild finishes (or throws WatchIndexNotReadyError after `waitMs`), so it never answers "not watched"
// for a watched address; the matcher treats the error as "retry this block later" and does not advance its
// checkpoint. An on-demand rebuild of a ready index keeps serving the current generation meanwhile.
//
// Positions. A shard that is ready may still lack changes PostgreSQL says were applied: Redis failed over to a replica
// that had not received them, or was restored from an older snapshot. Every writer script records the change's
// position (state.pos) in the same script as the change, so a replica holds a position exactly when it holds the
// changes up to it; LOOKUP returns it with the answer, and the matcher (LookupOptions.minPositions) waits, as for a
// shard not ready, while the shard is below the position PostgreSQL had applied before the lookup, until the registry
// replays the missing rows (registry/watch-applier.ts replay).
import { createHash } from "node:crypto";
import { DEFAULT_WATCH_INDEX_SHARDS } from "../config.ts";
import { acrossSlots, isCluster, type Redis } from "../redis.ts";
import { decodeMatch, encodeMatch, type MatchConditions } from "../match-conditions.ts";

export const DEFAULT_SHARDS = DEFAULT_WATCH_INDEX_SHARDS;
/**
 * Buckets of a chain over all its shards: sized so that at 10,000,000 addresses a bucket holds ~76 (under Redis'
 * default hash-max-listpack-entries of 128, so every hash keeps the compact encoding; bench/index.ts measures it).
 */
export const TOTAL_BUCKETS = 131_072;
export const ACTIVE_EVENTS_SEPARATOR = ",";

export interface Watcher {
  subscriptionId: string;
  keyId: string;
  /** Subscription enabled and key live with this chain enabled. */
  active: boolean;
  /** Event kinds the subscription listens to. */
  events: string[];
  /**
   * The subscription's match conditions (matcher/conditions.ts applies them). Watchers of one subscription share
   * one object, as do all subscriptions with the same conditions: read it, never change it.
   */
  match: MatchConditions;
}

export interface SubscriptionMeta {
  id: string;
  keyId: string;
  enabled: boolean;
  events: readonly string[];
  /** Absent: the default conditions. */
  match?: MatchConditions;
}

export interface AddressChange {
  add: readonly string[];
  remove: readonly string[];
}

export class WatchIndexNotReadyError extends Error {
  constructor(
    readonly chainId: string,
    /** Redis was behind PostgreSQL's applied changes (not a rebuild): they were not replayed in time. */
    readonly behind = false,
  ) {
    super(behind ? `the watch index of ${chainId} lacks changes PostgreSQL applied; waiting for their replay` : `the watch index of ${chainId} is being rebuilt`);
    this.name = "WatchIndexNotReadyError";
  }
}

/** Key names; `prefix` is config.redisPrefix. The shard count is part of the tag, so a changed count is a new,
 * unbuilt index (lookups wait, the registry rebuilds) rather than a layout read the wrong way. */
export function shardBase(prefix: string, chainId: string, shard: number, shards = DEFAULT_SHARDS): string {
  return `${prefix}wi:{${chainId}:${shard}/${shards}}:`;
}

export function bucketsPerShard(shards = DEFAULT_SHARDS): number {
  return Math.ceil(TOTAL_BUCKETS / shards);
}

/** Where an address lives: its shard (hash tag) and its bucket within the shard. */
export function slotOf(address: string, shards = DEFAULT_SHARDS): { shard: number; bucket: number } {
  const h = Bun.hash.crc32(address);
  return { shard: h % shards, bucket: Math.floor(h / shards) % bucketsPerShard(shards) };
}

export function encodeMeta(meta: SubscriptionMeta): string {
  return `${meta.id}|${meta.keyId}|${meta.enabled ? "e" : "d"}|${meta.events.join(ACTIVE_EVENTS_SEPARATOR)}|${meta.match ? encodeMatch(meta.match) : ""}`;
}

// A meta written before match conditions existed has four fields: its match is the default.
function decodeMeta(text: string): { subscriptionId: string; keyId: string; enabled: boolean; events: string[]; match: MatchConditions } {
  const [subscriptionId = "", keyId = "", status = "", events = "", match = ""] = text.split("|");
  return {
    subscriptionId,
    keyId,
    enabled: status === "e",
    events: events ? events.split(ACTIVE_EVENTS_SEPARATOR) : [],
    match: decodeMatch(match),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Scripts. Each runs on one shard: KEYS[1] = the shard's state key (so Cluster routes it), and it builds the
// generation keys from ARGV[1] = shardBase: all share the shard's hash tag, hence the same slot.

// Shared Lua: the generations a writer must touch (cur and next), or a forced one; a subscription's handle; removing
// and adding a handle in an address field.
const LUA_GENS = `
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
`;

// Every writer's ARGV starts with base, forcedGen, position ('' for none: a rebuild's writes, or a slice that is not
// the change's last in this shard).
// ARGV: base, forcedGen, pos, subId, meta, keyId, keyState, nRemove, then (bucket, address) pairs: removals, additions.
const APPLY = `${LUA_GENS}
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
`;

// ARGV: base, forcedGen, pos, subId, meta. Refreshes status, kinds and match where the subscription has a handle.
const SET_META = `${LUA_GENS}
local gs = gens(ARGV[2])
for _, g in ipairs(gs) do
  local gb = ARGV[1]..g..':'
  local h = handle(gb, g, ARGV[4], false)
  if h then redis.call('HSET', gb..'meta', h, ARGV[5]) end
end
bump(ARGV[3], gs)
return #gs
`;

// ARGV: base, forcedGen, pos, subId. The handle's meta goes at once; its address fields are swept later.
const DROP_SUB = `${LUA_GENS}
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
`;

// ARGV: base, forcedGen, pos, keyId, state ("1"/"0").
const SET_KEY = `${LUA_GENS}
local gs = gens(ARGV[2])
for _, g in ipairs(gs) do putKey(ARGV[1]..g..':', g, ARGV[4], ARGV[5], false) end
bump(ARGV[3], gs)
return #gs
`;

// ARGV: base, forcedGen (ignored), pos. Raises the shard's position without a change (a replay that found the
// shard's last changes already covered, e.g. by a rebuild that took no rows). Returns 0 when the shard has no
// generation.
const SET_POS = `${LUA_GENS}
local gs = gens('')
bump(ARGV[3], gs)
return #gs
`;

// ARGV: base, then (bucket, address) pairs. Returns {-1} when not ready, else {1, values, handles, metas, keyStates,
// position}: the position of the last change applied to the shard, read in the same script as the answer.
const LOOKUP = `
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
`;

// ARGV: base, gen, fromBucket, toBucket (exclusive). Drops handles without meta from every field in the range.
const SWEEP = `${LUA_GENS}
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
`;

// ARGV: base, gen, count, then per subscription: subId, meta, keyId, keyState, n, then n (bucket, address) pairs.
// The rebuild's bulk copy of whole subscriptions into the generation being built: what APPLY does with a forced
// generation, for many subscriptions in one call (one call per shard and batch instead of one per subscription).
const LOAD = `${LUA_GENS}
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
`;

// ARGV: base. Compares the served generation with what its writers counted (LUA_GENS tally): the sizes of sub, meta
// and keys, seq present, and each non-empty bucket's field count (HLEN, never its fields). Returns {0} when the shard
// is not ready or being rebuilt (the rebuild is the check), {1, what} at the first difference, {2, buckets} when whole.
const VERIFY = `
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
`;

// ARGV: base, stale ("1"/"0"), generation. Starts generation `next` in this shard (every shard of a chain gets the
// same number, chosen by beginBuild); returns an unfinished earlier build's generation ('' if none) to drop.
const BEGIN_BUILD = `
local g = ARGV[3]
if tonumber(redis.call('HGET', KEYS[1], 'gens') or '0') < tonumber(g) then redis.call('HSET', KEYS[1], 'gens', g) end
local old = redis.call('HGET', KEYS[1], 'next')
redis.call('HSET', KEYS[1], 'next', g)
if ARGV[2] == '1' or redis.call('HEXISTS', KEYS[1], 'stale') == 1 then redis.call('HSET', KEYS[1], 'stale', 'build:'..g) end
if old == g then old = nil end
return old or ''
`;

// ARGV: gen, pos. Swaps only if this build is still the pending one; returns the previous cur ('' if none, -1 if
// lost). The new generation holds every change up to the rebuild's position: the shard's position moves up to it.
const FINISH_BUILD = `
if redis.call('HGET', KEYS[1], 'next') ~= ARGV[1] then return '-1' end
local old = redis.call('HGET', KEYS[1], 'cur')
redis.call('HSET', KEYS[1], 'cur', ARGV[1])
redis.call('HDEL', KEYS[1], 'next')
if ARGV[2] ~= '' and tonumber(redis.call('HGET', KEYS[1], 'pos') or '0') < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], 'pos', ARGV[2]) end
-- A failure marked after this build began is not covered by it: stay stale so the registry builds again.
local st = redis.call('HGET', KEYS[1], 'stale')
if st == 'build:'..ARGV[1] then redis.call('HDEL', KEYS[1], 'stale') end
return old or ''
`;

const sha = (s: string) => createHash("sha1").update(s).digest("hex");
const SCRIPTS = { APPLY, LOAD, SET_META, DROP_SUB, SET_KEY, SET_POS, LOOKUP, SWEEP, VERIFY, BEGIN_BUILD, FINISH_BUILD } as const;
const SHAS = Object.fromEntries(Object.entries(SCRIPTS).map(([k, v]) => [k, sha(v)])) as Record<keyof typeof SCRIPTS, string>;

type Arg = string | number;

interface ScriptCall {
  name: keyof typeof SCRIPTS;
  key: string;
  args: Arg[];
}

async function run(redis: Redis, name: keyof typeof SCRIPTS, key: string, args: Arg[]): Promise<unknown> {
  try {
    return await redis.evalsha(SHAS[name], 1, key, ...args);
  } catch (err) {
    if (!String((err as Error)?.message ?? err).includes("NOSCRIPT")) throw err;
    return await redis.eval(SCRIPTS[name], 1, key, ...args);
  }
}

/**
 * Runs scripts on several shards in one round trip per Redis node (common/redis.ts acrossSlots); a node that has
 * not cached a script yet gets it once more with EVAL. Answers in order; the first error is thrown.
 */
async function runAll(redis: Redis, calls: readonly ScriptCall[]): Promise<unknown[]> {
  if (calls.length === 0) return [];
  if (calls.length === 1) return [await run(redis, calls[0]!.name, calls[0]!.key, calls[0]!.args)];
  const pipe = acrossSlots(redis);
  for (const c of calls) pipe.evalsha(SHAS[c.name], 1, c.key, ...c.args);
  const replies = (await pipe.exec()) ?? [];
  return Promise.all(
    replies.map(async ([err, value], i) => {
      if (!err) return value;
      if (!String(err.message ?? err).includes("NOSCRIPT")) throw err;
      const c = calls[i]!;
      return redis.eval(SCRIPTS[c.name], 1, c.key, ...c.args);
    }),
  );
}

/** The shards of a chain, each with its base and state key. */
function shardsOf(prefix: string, chainId: string, shards: number): { shard: number; base: string; state: string }[] {
  return Array.from({ length: shards }, (_, shard) => {
    const base = shardBase(prefix, chainId, shard, shards);
    return { shard, base, state: `${base}state` };
  });
}

// Large changes go in slices so one script never blocks Redis for long (each slice is still atomic).
const SLICE = 5_000;

// ---------------------------------------------------------------------------------------------------------------
// Writer half (the registry).

export interface WriteTarget {
  prefix: string;
  chainId: string;
  /** A generation to write into regardless of state (the rebuild); omitted: cur and next as state says. */
  generation?: string;
  /** WATCH_INDEX_SHARDS (config.watchIndexShards); omitted: DEFAULT_SHARDS. */
  shards?: number;
  /**
   * The change's position (registry/watch-applier.ts): each shard the change touches records it in its state key, in
   * the script that writes the change's last part there. Omitted: none (the rebuild's writes into a new generation).
   */
  position?: number;
  /** Write only these shards (a replay of the shards a Redis lost); omitted: every shard the change touches. */
  onlyShards?: ReadonlySet<number>;
}

/** The shards a change touches: those of its addresses, or every shard for one without addresses. */
export function shardsOfChange(change: AddressChange, shards = DEFAULT_SHARDS): number[] {
  if (change.add.length + change.remove.length === 0) return Array.from({ length: shards }, (_, i) => i);
  const out = new Set<number>();
  for (const a of change.add) out.add(slotOf(a, shards).shard);
  for (const a of change.remove) out.add(slotOf(a, shards).shard);
  return [...out].sort((a, b) => a - b);
}

const posArg = (target: WriteTarget): string => (target.position === undefined ? "" : String(target.position));

/** The shards of a chain a write goes to (all, or target.onlyShards). */
function targetShards(target: WriteTarget): { shard: number; base: string; state: string }[] {
  const all = shardsOf(target.prefix, target.chainId, target.shards ?? DEFAULT_SHARDS);
  return target.onlyShards ? all.filter((s) => target.onlyShards!.has(s.shard)) : all;
}

/**
 * Adds and removes one subscription's addresses on one chain, refreshing its meta and (if unknown) its key's state.
 * Returns false when the chain's index does not exist (never built or emptied): the rebuild will cover the change.
 * Each shard's part is one atomic script (per slice); the shards are written in parallel. A change with no
 * addresses registers the subscription's meta in every shard.
 */
export async function applyAddresses(
  redis: Redis,
  target: WriteTarget,
  meta: SubscriptionMeta,
  keyActive: boolean | undefined,
  change: AddressChange,
): Promise<boolean> {
  const shards = target.shards ?? DEFAULT_SHARDS;
  const all = targetShards(target);
  const gen = target.generation ?? "";
  const pos = posArg(target);
  const tail: Arg[] = [meta.id, encodeMeta(meta), meta.keyId, keyActive === undefined ? "" : keyActive ? "1" : "0"];
  const total = change.add.length + change.remove.length;
  if (total === 0) {
    const res = await runAll(redis, all.map((s) => ({ name: "APPLY" as const, key: s.state, args: [s.base, gen, pos, ...tail, 0] })));
    return res.every((n) => Number(n) > 0);
  }
  const removes = groupByShard(change.remove, shards);
  const adds = groupByShard(change.add, shards);
  // Within a shard: removals before additions, slice after slice (a removal and a re-addition of one address stay
  // in that order); the shards are independent of each other. Only the shard's last slice records the position.
  const perShard = all.map(async (s) => {
    let wrote = true;
    const rem = removes[s.shard]!;
    const add = adds[s.shard]!;
    const slices: { part: [number, string][]; removal: boolean }[] = [];
    for (let i = 0; i < rem.length; i += SLICE) slices.push({ part: rem.slice(i, i + SLICE), removal: true });
    for (let i = 0; i < add.length; i += SLICE) slices.push({ part: add.slice(i, i + SLICE), removal: false });
    for (const [k, { part, removal }] of slices.entries()) {
      const args: Arg[] = [s.base, gen, k === slices.length - 1 ? pos : "", ...tail, removal ? part.length : 0];
      for (const [bucket, a] of part) args.push(bucket, a);
      wrote = Number(await run(redis, "APPLY", s.state, args)) > 0 && wrote;
    }
    return wrote;
  });
  return (await Promise.all(perShard)).every(Boolean);
}

function groupByShard(addresses: readonly string[], shards: number): [number, string][][] {
  const out: [number, string][][] = Array.from({ length: shards }, () => []);
  for (const a of addresses) {
    const { shard, bucket } = slotOf(a, shards);
    out[shard]!.push([bucket, a]);
  }
  return out;
}

export interface LoadedSubscription {
  meta: SubscriptionMeta;
  /** The key's state on this chain; undefined leaves what the generation has. */
  keyActive: boolean | undefined;
  addresses: readonly string[];
}

/**
 * The rebuild's bulk write: whole subscriptions into the generation being built (`target.generation`), one script per
 * shard for the whole batch, sent as one round trip per node. Same effect as applyAddresses with that generation for
 * each subscription. Nothing else writes that generation meanwhile: the registry's rebuild holds the chain's applier
 * lock, and changes committed after its snapshot are applied once the new generation is served (registry/watch-index.ts).
 * Keep a batch to a few tens of thousands of addresses: each shard's part is one atomic script.
 */
export async function loadSubscriptions(redis: Redis, target: WriteTarget & { generation: string }, subs: readonly LoadedSubscription[]): Promise<void> {
  const shards = target.shards ?? DEFAULT_SHARDS;
  const all = shardsOf(target.prefix, target.chainId, shards);
  const args: Arg[][] = all.map((s) => [s.base, target.generation, 0]);
  for (const sub of subs) {
    const groups = groupByShard(sub.addresses, shards);
    const head = [sub.meta.id, encodeMeta(sub.meta), sub.meta.keyId, sub.keyActive === undefined ? "" : sub.keyActive ? "1" : "0"];
    groups.forEach((group, shard) => {
      if (group.length === 0) return;
      const a = args[shard]!;
      a[2] = Number(a[2]) + 1;
      a.push(...head, group.length);
      for (const [bucket, address] of group) a.push(bucket, address);
    });
  }
  const calls: ScriptCall[] = [];
  all.forEach((s, i) => {
    if (Number(args[i]![2]) > 0) calls.push({ name: "LOAD", key: s.state, args: args[i]! });
  });
  await runAll(redis, calls);
}

/** The same script on every shard of a chain; true when every shard has a generation to write to. */
async function everyShard(redis: Redis, target: WriteTarget, name: keyof typeof SCRIPTS, args: Arg[]): Promise<boolean> {
  const res = await runAll(redis, targetShards(target).map((s) => ({ name, key: s.state, args: [s.base, target.generation ?? "", posArg(target), ...args] })));
  return res.every((n) => Number(n) > 0);
}

/** Raises the position of these shards (those with a generation) to `target.position` without writing a change. */
export async function raisePositions(redis: Redis, target: WriteTarget & { position: number }): Promise<boolean> {
  return everyShard(redis, target, "SET_POS", []);
}

/** Each shard's position (the last change applied to it; 0 when none is recorded) and whether it has a generation. */
export async function readPositions(redis: Redis, prefix: string, chainId: string, shards = DEFAULT_SHARDS): Promise<{ position: number; served: boolean }[]> {
  const pipe = acrossSlots(redis);
  for (const s of shardsOf(prefix, chainId, shards)) pipe.hmget(s.state, "pos", "cur");
  const replies = (await pipe.exec()) ?? [];
  return replies.map(([err, v]) => {
    if (err) throw err;
    const [pos, cur] = v as (string | null)[];
    return { position: Number(pos ?? 0), served: cur !== null && cur !== undefined };
  });
}

/** A shard's verdict (verifyShards): not checked (not ready or being rebuilt), whole, or drifted (what differed). */
export type ShardCheck = { shard: number; status: "skipped" } | { shard: number; status: "whole"; buckets: number } | { shard: number; status: "drifted"; what: string };

/**
 * Checks each shard's served generation against the counts its writers keep (script VERIFY): one script per shard,
 * one round trip per node, reading sizes only (HLEN of the shard's non-empty buckets, never their fields). Finds keys
 * lost outside the writers (deleted by hand, a partial restore, a bug) that positions cannot see.
 */
export async function verifyShards(redis: Redis, prefix: string, chainId: string, shards = DEFAULT_SHARDS): Promise<ShardCheck[]> {
  const all = shardsOf(prefix, chainId, shards);
  const replies = (await runAll(redis, all.map((s) => ({ name: "VERIFY" as const, key: s.state, args: [s.base] })))) as [number, string?][];
  return replies.map(([code, detail], shard): ShardCheck => {
    if (Number(code) === 2) return { shard, status: "whole", buckets: Number(detail ?? 0) };
    if (Number(code) === 1) return { shard, status: "drifted", what: String(detail ?? "") };
    return { shard, status: "skipped" };
  });
}

/** Refreshes a subscription's status, kinds and match conditions on one chain (no-op where it watches nothing). */
export async function setSubscriptionMeta(redis: Redis, target: WriteTarget, meta: SubscriptionMeta): Promise<boolean> {
  return everyShard(redis, target, "SET_META", [meta.id, encodeMeta(meta)]);
}

/** Takes a subscription out of matching at once; its address fields are cleaned by sweepDeadHandles. */
export async function dropSubscription(redis: Redis, target: WriteTarget, subscriptionId: string): Promise<boolean> {
  return everyShard(redis, target, "DROP_SUB", [subscriptionId]);
}

/** A key's state on one chain: live and the chain enabled on it ("1"), or revoked / chain off ("0"). */
export async function setKeyState(redis: Redis, target: WriteTarget, keyId: string, active: boolean): Promise<boolean> {
  return everyShard(redis, target, "SET_KEY", [keyId, active ? "1" : "0"]);
}

export interface ChainState {
  /** The generation served by every shard; null when any shard has none (never built, or lost). */
  cur: string | null;
  /** A build under way (in any shard). */
  next: string | null;
  /** Any shard marked stale. */
  stale: boolean;
  /** Subscriptions dropped since the last sweep (the most any shard counts: one drop is counted by each shard). */
  dead: number;
}

async function readShardStates(redis: Redis, prefix: string, chainId: string, shards: number): Promise<(string | null)[][]> {
  const pipe = acrossSlots(redis);
  for (const s of shardsOf(prefix, chainId, shards)) pipe.hmget(s.state, "cur", "next", "stale", "dead", "gens");
  const replies = (await pipe.exec()) ?? [];
  return replies.map(([err, v]) => {
    if (err) throw err;
    return v as (string | null)[];
  });
}

/** The chain's state over its shards: one round trip per node. */
export async function readState(redis: Redis, prefix: string, chainId: string, shards = DEFAULT_SHARDS): Promise<ChainState> {
  const rows = await readShardStates(redis, prefix, chainId, shards);
  let cur: string | null = rows[0]?.[0] ?? null;
  let next: string | null = null;
  let stale = false;
  let dead = 0;
  for (const [c, n, st, d] of rows) {
    if (c === null || c === undefined) cur = null;
    if (n !== null && n !== undefined && next === null) next = n;
    if (st !== null && st !== undefined) stale = true;
    dead = Math.max(dead, Number(d ?? 0));
  }
  return { cur, next, stale, dead };
}

/** Marks a chain not ready (lookups wait) until the next rebuild finishes. */
export async function markStale(redis: Redis, prefix: string, chainId: string, shards = DEFAULT_SHARDS): Promise<void> {
  const pipe = acrossSlots(redis);
  const mark = `failed:${Date.now()}`;
  for (const s of shardsOf(prefix, chainId, shards)) pipe.hset(s.state, "stale", mark);
  for (const [err] of (await pipe.exec()) ?? []) if (err) throw err;
}

/**
 * Starts a build of a new generation in every shard (one number for all: one above the highest any shard has
 * used); `stale` also makes lookups wait until it is finished. Builds of one chain are serialized by the caller
 * (registry/watch-index.ts holds the chain's applier lock).
 */
export async function beginBuild(
  redis: Redis,
  prefix: string,
  chainId: string,
  stale: boolean,
  shards = DEFAULT_SHARDS,
): Promise<{ generation: string; abandoned: string | null }> {
  const rows = await readShardStates(redis, prefix, chainId, shards);
  const generation = String(1 + Math.max(0, ...rows.map((r) => Number(r[4] ?? 0))));
  const all = shardsOf(prefix, chainId, shards);
  const res = (await runAll(redis, all.map((s) => ({ name: "BEGIN_BUILD" as const, key: s.state, args: [s.base, stale ? "1" : "0", generation] })))) as string[];
  const abandoned = res.find((g) => g !== "") ?? null;
  return { generation, abandoned };
}

/**
 * Swaps a finished build in, shard by shard; returns the replaced generation (to drop), or throws if another build
 * superseded it. Shards swap one after the other while the registry's rebuild holds the chain's applier lock
 * (registry/watch-index.ts): a shard still on the old generation answers as of the last outbox row applied, one already
 * swapped as of the rebuild's snapshot. Both are states PostgreSQL committed, so a lookup spanning a swap is at worst
 * behind (as any lookup may be until the outbox rows are applied), never ahead.
 */
export async function finishBuild(
  redis: Redis,
  prefix: string,
  chainId: string,
  generation: string,
  shards = DEFAULT_SHARDS,
  position?: number,
): Promise<string | null> {
  const all = shardsOf(prefix, chainId, shards);
  const pos = position === undefined ? "" : String(position);
  const olds = (await runAll(redis, all.map((s) => ({ name: "FINISH_BUILD" as const, key: s.state, args: [generation, pos] })))).map(String);
  if (olds.includes("-1")) throw new Error(`watch index build ${chainId}#${generation} was superseded`);
  return olds.find((g) => g !== "") ?? null;
}

/** Deletes a generation's keys in every shard (an old one after a swap, or an abandoned build). */
export async function dropGeneration(redis: Redis, prefix: string, chainId: string, generation: string, shards = DEFAULT_SHARDS): Promise<void> {
  const per = bucketsPerShard(shards);
  await Promise.all(
    shardsOf(prefix, chainId, shards).map(async (s) => {
      const gb = `${s.base}${generation}:`;
      // One UNLINK per batch: all its keys share the shard's hash tag, hence one slot.
      for (let b = 0; b < per; b += 1_024) {
        const batch: string[] = [];
        for (let i = b; i < Math.min(b + 1_024, per); i++) batch.push(`${gb}b:${i}`);
        await redis.unlink(...batch);
      }
      await redis.unlink(...["sub", "meta", "keys", "seq", "inv"].map((n) => gb + n));
      await redis.hdel(s.state, ...["ns", "nk", "nb"].map((n) => `${n}:${generation}`));
    }),
  );
}

/** Removes handles of deleted subscriptions from the address fields of the served generation, in batches. */
export async function sweepDeadHandles(redis: Redis, prefix: string, chainId: string, shards = DEFAULT_SHARDS): Promise<number> {
  const rows = await readShardStates(redis, prefix, chainId, shards);
  const per = bucketsPerShard(shards);
  const changed = await Promise.all(
    shardsOf(prefix, chainId, shards).map(async (s, i) => {
      const [cur, next, , dead] = rows[i]!;
      let n = 0;
      for (const g of [cur, next]) {
        if (!g) continue;
        for (let b = 0; b < per; b += 512) n += Number(await run(redis, "SWEEP", s.state, [s.base, g, b, Math.min(b + 512, per)]));
      }
      if (Number(dead ?? 0) > 0) await redis.hincrby(s.state, "dead", -Number(dead));
      return n;
    }),
  );
  return changed.reduce((a, b) => a + b, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// Reader half (the matcher).

export interface LookupOptions {
  /** Also return watchers that must not match (disabled subscription, revoked key, chain off). */
  includeInactive?: boolean;
  /** How long to wait for a rebuild before throwing WatchIndexNotReadyError. */
  waitMs?: number;
  /** WATCH_INDEX_SHARDS (config.watchIndexShards); omitted: DEFAULT_SHARDS. */
  shards?: number;
  /**
   * Per shard, the position PostgreSQL says was applied (registry/watch-positions.ts), read before this lookup: a shard
   * whose Redis position is lower lost changes (a failover to a lagging replica) and is asked again, like a shard
   * not ready, until the registry has replayed them (or `waitMs`). Called once, just before the first Redis round
   * trip, whose answer it then waits for: the PostgreSQL read runs beside it, and a read that lands after the Redis
   * one only asks for more, never less.
   */
  minPositions?: () => Promise<readonly number[]>;
}

type LookupReply = [-1] | [1, string[], string[], string[], string[], string];

/**
 * The watched ones among `addresses` (base58) on `chainId`, each with its watchers: one script per shard that
 * holds any of them, sent as one round trip per Redis node. By default only active watchers are returned, and an
 * address with none is absent from the map. A shard that is not ready is asked again until it is (or `waitMs`).
 */
export async function lookup(
  redis: Redis,
  prefix: string,
  chainId: string,
  addresses: readonly string[],
  opts: LookupOptions = {},
): Promise<Map<string, Watcher[]>> {
  const out = new Map<string, Watcher[]>();
  const unique = [...new Set(addresses)];
  if (unique.length === 0) return out;
  const shards = opts.shards ?? DEFAULT_SHARDS;
  const groups = groupByShard(unique, shards);
  let pending: ScriptCall[] = [];
  const asked: string[][] = [];
  const askedShards: number[] = [];
  for (let s = 0; s < shards; s++) {
    const group = groups[s]!;
    if (group.length === 0) continue;
    const base = shardBase(prefix, chainId, s, shards);
    const args: Arg[] = [base];
    for (const [bucket, a] of group) args.push(bucket, a);
    pending.push({ name: "LOOKUP", key: `${base}state`, args });
    asked.push(group.map(([, a]) => a));
    askedShards.push(s);
  }
  let pendingAddresses = asked;
  let pendingShards = askedShards;
  let behind = false;
  const deadline = Date.now() + (opts.waitMs ?? 30_000);
  let pause = 25;
  // Watchers with the same meta and key state share one object (callers read them, never change them).
  const shared = new Map<string, Watcher>();
  const required = opts.minPositions?.();
  // Awaited below after the Redis answer; a failure then is thrown there, not reported as unhandled meanwhile.
  required?.catch(() => {});
  for (;;) {
    const replies = (await runAll(redis, pending)) as LookupReply[];
    const minimum = required ? await required : [];
    const retry: ScriptCall[] = [];
    const retryAddresses: string[][] = [];
    const retryShards: number[] = [];
    behind = false;
    replies.forEach((reply, i) => {
      const lagging = reply[0] === 1 && Number(reply[5] ?? 0) < (minimum[pendingShards[i]!] ?? 0);
      if (reply[0] !== 1 || lagging) {
        if (lagging) behind = true;
        retry.push(pending[i]!);
        retryAddresses.push(pendingAddresses[i]!);
        retryShards.push(pendingShards[i]!);
        return;
      }
      const [, values, handles, metas, keyStates] = reply;
      const watchers = new Map<string, Watcher | null>();
      handles.forEach((h, j) => {
        const m = metas[j];
        if (!m) return watchers.set(h, null);
        const id = `${m}\n${keyStates[j]}`;
        let w = shared.get(id);
        if (!w) {
          const meta = decodeMeta(m);
          const active = meta.enabled && keyStates[j] === "1";
          w = { subscriptionId: meta.subscriptionId, keyId: meta.keyId, active, events: meta.events, match: meta.match };
          shared.set(id, w);
        }
        watchers.set(h, w);
      });
      pendingAddresses[i]!.forEach((address, j) => {
        const v = values[j];
        if (!v) return;
        const list: Watcher[] = [];
        for (const h of v.split(",")) {
          const w = watchers.get(h);
          if (w && (w.active || opts.includeInactive)) list.push(w);
        }
        if (list.length > 0) out.set(address, list);
      });
    });
    if (retry.length === 0) return out;
    if (Date.now() >= deadline) throw new WatchIndexNotReadyError(chainId, behind);
    await Bun.sleep(pause);
    pause = Math.min(pause * 2, 250);
    pending = retry;
    pendingAddresses = retryAddresses;
    pendingShards = retryShards;
  }
}

/** The clients that together hold every key: each master of a cluster, or the one server. */
function keyHolders(redis: Redis): Redis[] {
  return isCluster(redis) ? redis.nodes("master") : [redis];
}

const globEscape = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/**
 * Every entry of the served generation of a chain (tests and diagnostics). SCANs each node for the chain's bucket
 * keys instead of asking for all TOTAL_BUCKETS of them, so a small index is dumped quickly.
 */
export async function dumpChain(redis: Redis, prefix: string, chainId: string, shards = DEFAULT_SHARDS): Promise<Map<string, Watcher[]> | null> {
  const rows = await readShardStates(redis, prefix, chainId, shards);
  if (rows.some(([cur, , stale]) => !cur || stale)) return null;
  const all = shardsOf(prefix, chainId, shards);
  const served = new Set(all.map((s) => `${s.base}${rows[s.shard]![0]}:b:`));
  const metas = await Promise.all(all.map((s) => redis.hgetall(`${s.base}${rows[s.shard]![0]}:meta`)));
  const keyStates = await Promise.all(all.map((s) => redis.hgetall(`${s.base}${rows[s.shard]![0]}:keys`)));
  const pattern = `${globEscape(prefix)}wi:{${globEscape(chainId)}:*/${shards}}:*:b:*`;
  const out = new Map<string, Watcher[]>();
  for (const node of keyHolders(redis)) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", 1_000);
      cursor = next;
      for (const key of keys) {
        const cut = key.lastIndexOf(":b:") + 3;
        if (!served.has(key.slice(0, cut))) continue;
        const shard = all.findIndex((s) => key.startsWith(s.base));
        const fields = await redis.hgetall(key);
        for (const [address, value] of Object.entries(fields)) {
          const list = out.get(address) ?? [];
          for (const h of value.split(",")) {
            const m = metas[shard]![h];
            if (!m) continue;
            const meta = decodeMeta(m);
            const active = meta.enabled && keyStates[shard]![meta.keyId] === "1";
            list.push({ subscriptionId: meta.subscriptionId, keyId: meta.keyId, active, events: meta.events, match: meta.match });
          }
          if (list.length > 0) out.set(address, list);
        }
      }
    } while (cursor !== "0");
  }
  return out;
}
