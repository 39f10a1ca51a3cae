// The Redis watch index: "which of these addresses are watched on this chain, and by whom". The registry writes it
// (writer half below) from its transactional outbox, after each change committed (registry/watch-outbox.ts,
// registry/watch-applier.ts); the matcher reads it once per block (lookup). Both import this one module so the key
// layout has a single home.
//
// Layout, per chain C, every key carrying the hash tag {C} so each script touches one Cluster slot:
//   P wi:{C}:state          hash: cur (generation served), next (generation being built), stale, gens, dead
//   P wi:{C}:<g>:b:<n>      hash per bucket n (0..32767): field = base58 address, value = "h1,h2" subscriber handles
//   P wi:{C}:<g>:sub        hash: subscription id -> handle (small integer, never reused within a generation)
//   P wi:{C}:<g>:meta       hash: handle -> "subId|keyId|e or d|event,event|match" (status, kinds and match
//                           conditions, so matching needs no PostgreSQL; match is "" for the default, else its JSON:
//                           common/match-conditions.ts)
//   P wi:{C}:<g>:keys       hash: key id -> "1" (key live and chain enabled on it) or "0" (revoked or chain off)
//   P wi:{C}:<g>:seq        handle counter
// Addresses are spread over 32,768 small hashes so each stays in Redis' compact listpack encoding (about 30 entries
// per hash at 1,000,000 addresses, under the default 128-entry limit; ~46 bytes per address measured by bench/index.ts,
// against ~88 for a plain set of the same strings). A field holds the base58 string itself, so neither side decodes
// base58 on the hot path. Handles keep each value tiny (listpack stores "17" as an integer).
// Scripts get the state key as KEYS[1] and derive the other names from ARGV[1]; all share the {C} tag, so they live
// in KEYS[1]'s slot and the same code runs on a Redis Cluster.
//
// Matching rules the reader applies: a watcher is active when its subscription is enabled and its key is live with
// this chain enabled. Deleting a subscription drops its handle's meta at once (so it stops matching immediately);
// the address fields that still name the dead handle are cleaned lazily (rewritten on the next write of that
// address, and by sweepDeadHandles in batches).
//
// Generations and rebuilds: a rebuild builds generation g+1 (state.next) from PostgreSQL, then swaps cur := next;
// a writer script reads state itself, atomically, and writes cur and next (the registry's outbox applier pauses a
// chain during its rebuild: registry/watch-index.ts). The index is NOT READY when state.cur is missing (never built,
// or Redis restarted empty / FLUSHDB) or state.stale is set (markStale: the served generation is known to be wrong).
// Choice for lookups: WAIT. A lookup on a not-ready chain polls until the rebuild finishes (or throws
// WatchIndexNotReadyError after `waitMs`), so it never answers "not watched" for a watched address; the matcher
// treats the error as "retry this block later" and does not advance its checkpoint. An on-demand rebuild of a ready
// index keeps serving the current generation meanwhile.
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import { decodeMatch, encodeMatch, type MatchConditions } from "./match-conditions.ts";

export const BUCKETS = 32_768;
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
  constructor(readonly chainId: string) {
    super(`the watch index of ${chainId} is being rebuilt`);
    this.name = "WatchIndexNotReadyError";
  }
}

/** Key names; `prefix` is config.redisPrefix. */
export function chainBase(prefix: string, chainId: string): string {
  return `${prefix}wi:{${chainId}}:`;
}

export function stateKey(prefix: string, chainId: string): string {
  return `${chainBase(prefix, chainId)}state`;
}

export function bucketOf(address: string): number {
  return Bun.hash.crc32(address) & (BUCKETS - 1);
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
// Scripts. Each gets KEYS[1] = the chain's state key (so Cluster routes it) and builds the generation keys from
// ARGV[1] = chainBase: all share the {C} hash tag, hence the same slot.

// Shared Lua: the generations a writer must touch (cur and next), or a forced one.
const LUA_GENS = `
local function gens(forced)
  if forced ~= '' then return {forced} end
  local st = redis.call('HMGET', KEYS[1], 'cur', 'next')
  local out = {}
  if st[1] then out[#out+1] = st[1] end
  if st[2] and st[2] ~= st[1] then out[#out+1] = st[2] end
  return out
end
local function handle(gb, sub, create)
  local h = redis.call('HGET', gb..'sub', sub)
  if (not h) and create then
    h = tostring(redis.call('INCR', gb..'seq'))
    redis.call('HSET', gb..'sub', sub, h)
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
`;

// ARGV: base, forcedGen, subId, meta, keyId, keyState, nRemove, then (bucket, address) pairs: removals, additions.
const APPLY = `${LUA_GENS}
local base, sub, meta, keyId, keyState = ARGV[1], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local nrem = tonumber(ARGV[7])
local gs = gens(ARGV[2])
for _, g in ipairs(gs) do
  local gb = base..g..':'
  local h = handle(gb, sub, true)
  redis.call('HSET', gb..'meta', h, meta)
  if keyState ~= '' then redis.call('HSETNX', gb..'keys', keyId, keyState) end
  local i = 8
  for r = 1, nrem do
    local bk, f = gb..'b:'..ARGV[i], ARGV[i+1]
    i = i + 2
    local v = redis.call('HGET', bk, f)
    if v then
      local nv = strip(v, h, gb)
      if nv == '' then redis.call('HDEL', bk, f) elseif nv ~= v then redis.call('HSET', bk, f, nv) end
    end
  end
  while i < #ARGV do
    local bk, f = gb..'b:'..ARGV[i], ARGV[i+1]
    i = i + 2
    -- Most additions are new addresses: one call sets them; only a shared address is read and appended to.
    if redis.call('HSETNX', bk, f, h) == 0 then
      local v = redis.call('HGET', bk, f)
      if not string.find(','..v..',', ','..h..',', 1, true) then redis.call('HSET', bk, f, v..','..h) end
    end
  end
end
return #gs
`;

// ARGV: base, forcedGen, subId, meta. Refreshes status, kinds and match where the subscription has a handle.
const SET_META = `${LUA_GENS}
local gs = gens(ARGV[2])
for _, g in ipairs(gs) do
  local gb = ARGV[1]..g..':'
  local h = handle(gb, ARGV[3], false)
  if h then redis.call('HSET', gb..'meta', h, ARGV[4]) end
end
return #gs
`;

// ARGV: base, forcedGen, subId. The handle's meta goes at once; its address fields are swept later.
const DROP_SUB = `${LUA_GENS}
local gs = gens(ARGV[2])
local dropped = 0
for _, g in ipairs(gs) do
  local gb = ARGV[1]..g..':'
  local h = handle(gb, ARGV[3], false)
  if h then
    redis.call('HDEL', gb..'sub', ARGV[3])
    redis.call('HDEL', gb..'meta', h)
    dropped = dropped + 1
  end
end
if dropped > 0 then redis.call('HINCRBY', KEYS[1], 'dead', 1) end
return #gs
`;

// ARGV: base, forcedGen, keyId, state ("1"/"0").
const SET_KEY = `${LUA_GENS}
local gs = gens(ARGV[2])
for _, g in ipairs(gs) do redis.call('HSET', ARGV[1]..g..':keys', ARGV[3], ARGV[4]) end
return #gs
`;

// ARGV: base, then (bucket, address) pairs. Returns {-1} when not ready, else {values, handles, metas, keyStates}.
const LOOKUP = `
local st = redis.call('HMGET', KEYS[1], 'cur', 'stale')
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
return {1, vals, hs, metas, keys}
`;

// ARGV: base, gen, fromBucket, toBucket (exclusive). Drops handles without meta from every field in the range.
const SWEEP = `
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
end
return changed
`;

// ARGV: base. Starts generation next; returns it. An unfinished earlier build is abandoned (and returned second).
const BEGIN_BUILD = `
local g = redis.call('HINCRBY', KEYS[1], 'gens', 1)
local old = redis.call('HGET', KEYS[1], 'next')
redis.call('HSET', KEYS[1], 'next', g)
if ARGV[2] == '1' or redis.call('HEXISTS', KEYS[1], 'stale') == 1 then redis.call('HSET', KEYS[1], 'stale', 'build:'..g) end
return {tostring(g), old or ''}
`;

// ARGV: gen. Swaps only if this build is still the pending one; returns the previous cur ('' if none, -1 if lost).
const FINISH_BUILD = `
if redis.call('HGET', KEYS[1], 'next') ~= ARGV[1] then return '-1' end
local old = redis.call('HGET', KEYS[1], 'cur')
redis.call('HSET', KEYS[1], 'cur', ARGV[1])
redis.call('HDEL', KEYS[1], 'next')
-- A failure marked after this build began is not covered by it: stay stale so the registry builds again.
local st = redis.call('HGET', KEYS[1], 'stale')
if st == 'build:'..ARGV[1] then redis.call('HDEL', KEYS[1], 'stale') end
return old or ''
`;

const sha = (s: string) => createHash("sha1").update(s).digest("hex");
const SCRIPTS = { APPLY, SET_META, DROP_SUB, SET_KEY, LOOKUP, SWEEP, BEGIN_BUILD, FINISH_BUILD } as const;
const SHAS = Object.fromEntries(Object.entries(SCRIPTS).map(([k, v]) => [k, sha(v)])) as Record<keyof typeof SCRIPTS, string>;

type Arg = string | number;

async function run(redis: Redis, name: keyof typeof SCRIPTS, key: string, args: Arg[]): Promise<unknown> {
  try {
    return await redis.evalsha(SHAS[name], 1, key, ...args);
  } catch (err) {
    if (!String((err as Error)?.message ?? err).includes("NOSCRIPT")) throw err;
    return await redis.eval(SCRIPTS[name], 1, key, ...args);
  }
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
}

/**
 * Adds and removes one subscription's addresses on one chain, refreshing its meta and (if unknown) its key's state.
 * Returns false when the chain's index does not exist (never built or emptied): the rebuild will cover the change.
 */
export async function applyAddresses(
  redis: Redis,
  target: WriteTarget,
  meta: SubscriptionMeta,
  keyActive: boolean | undefined,
  change: AddressChange,
): Promise<boolean> {
  const base = chainBase(target.prefix, target.chainId);
  const key = stateKey(target.prefix, target.chainId);
  const head: Arg[] = [base, target.generation ?? "", meta.id, encodeMeta(meta), meta.keyId, keyActive === undefined ? "" : keyActive ? "1" : "0"];
  let wrote = true;
  const total = change.add.length + change.remove.length;
  if (total === 0) {
    wrote = Number(await run(redis, "APPLY", key, [...head, 0])) > 0;
    return wrote;
  }
  for (let i = 0; i < change.remove.length; i += SLICE) {
    const part = change.remove.slice(i, i + SLICE);
    const args: Arg[] = [...head, part.length];
    for (const a of part) args.push(bucketOf(a), a);
    wrote = Number(await run(redis, "APPLY", key, args)) > 0 && wrote;
  }
  for (let i = 0; i < change.add.length; i += SLICE) {
    const part = change.add.slice(i, i + SLICE);
    const args: Arg[] = [...head, 0];
    for (const a of part) args.push(bucketOf(a), a);
    wrote = Number(await run(redis, "APPLY", key, args)) > 0 && wrote;
  }
  return wrote;
}

/** Refreshes a subscription's status, kinds and match conditions on one chain (no-op where it watches nothing). */
export async function setSubscriptionMeta(redis: Redis, target: WriteTarget, meta: SubscriptionMeta): Promise<boolean> {
  const base = chainBase(target.prefix, target.chainId);
  return Number(await run(redis, "SET_META", stateKey(target.prefix, target.chainId), [base, target.generation ?? "", meta.id, encodeMeta(meta)])) > 0;
}

/** Takes a subscription out of matching at once; its address fields are cleaned by sweepDeadHandles. */
export async function dropSubscription(redis: Redis, target: WriteTarget, subscriptionId: string): Promise<boolean> {
  const base = chainBase(target.prefix, target.chainId);
  return Number(await run(redis, "DROP_SUB", stateKey(target.prefix, target.chainId), [base, target.generation ?? "", subscriptionId])) > 0;
}

/** A key's state on one chain: live and the chain enabled on it ("1"), or revoked / chain off ("0"). */
export async function setKeyState(redis: Redis, target: WriteTarget, keyId: string, active: boolean): Promise<boolean> {
  const base = chainBase(target.prefix, target.chainId);
  return Number(await run(redis, "SET_KEY", stateKey(target.prefix, target.chainId), [base, target.generation ?? "", keyId, active ? "1" : "0"])) > 0;
}

export interface ChainState {
  cur: string | null;
  next: string | null;
  stale: boolean;
  dead: number;
}

export async function readState(redis: Redis, prefix: string, chainId: string): Promise<ChainState> {
  const [cur, next, stale, dead] = await redis.hmget(stateKey(prefix, chainId), "cur", "next", "stale", "dead");
  return { cur: cur ?? null, next: next ?? null, stale: stale !== null && stale !== undefined, dead: Number(dead ?? 0) };
}

/** Marks a chain not ready (lookups wait) until the next rebuild finishes. */
export async function markStale(redis: Redis, prefix: string, chainId: string): Promise<void> {
  await redis.hset(stateKey(prefix, chainId), "stale", `failed:${Date.now()}`);
}

/** Starts a build of a new generation; `stale` also makes lookups wait until it is finished. */
export async function beginBuild(
  redis: Redis,
  prefix: string,
  chainId: string,
  stale: boolean,
): Promise<{ generation: string; abandoned: string | null }> {
  const [generation, abandoned] = (await run(redis, "BEGIN_BUILD", stateKey(prefix, chainId), [chainBase(prefix, chainId), stale ? "1" : "0"])) as [string, string];
  return { generation, abandoned: abandoned === "" ? null : abandoned };
}

/** Swaps a finished build in; returns the replaced generation (to drop), or throws if another build superseded it. */
export async function finishBuild(redis: Redis, prefix: string, chainId: string, generation: string): Promise<string | null> {
  const old = String(await run(redis, "FINISH_BUILD", stateKey(prefix, chainId), [generation]));
  if (old === "-1") throw new Error(`watch index build ${chainId}#${generation} was superseded`);
  return old === "" ? null : old;
}

/** Deletes a generation's keys (an old one after a swap, or an abandoned build). */
export async function dropGeneration(redis: Redis, prefix: string, chainId: string, generation: string): Promise<void> {
  const gb = `${chainBase(prefix, chainId)}${generation}:`;
  const names = ["sub", "meta", "keys", "seq"].map((n) => gb + n);
  for (let b = 0; b < BUCKETS; b += 1_024) {
    const batch: string[] = [];
    for (let i = b; i < Math.min(b + 1_024, BUCKETS); i++) batch.push(`${gb}b:${i}`);
    await redis.unlink(...batch);
  }
  await redis.unlink(...names);
}

/** Removes handles of deleted subscriptions from the address fields of the served generation, in batches. */
export async function sweepDeadHandles(redis: Redis, prefix: string, chainId: string): Promise<number> {
  const state = await readState(redis, prefix, chainId);
  let changed = 0;
  for (const g of [state.cur, state.next]) {
    if (!g) continue;
    for (let b = 0; b < BUCKETS; b += 512) {
      changed += Number(await run(redis, "SWEEP", stateKey(prefix, chainId), [chainBase(prefix, chainId), g, b, Math.min(b + 512, BUCKETS)]));
    }
  }
  if (state.dead > 0) await redis.hincrby(stateKey(prefix, chainId), "dead", -state.dead);
  return changed;
}

// ---------------------------------------------------------------------------------------------------------------
// Reader half (the matcher).

export interface LookupOptions {
  /** Also return watchers that must not match (disabled subscription, revoked key, chain off). */
  includeInactive?: boolean;
  /** How long to wait for a rebuild before throwing WatchIndexNotReadyError. */
  waitMs?: number;
}

type LookupReply = [-1] | [1, string[], string[], string[], string[]];

/**
 * The watched ones among `addresses` (base58) on `chainId`, each with its watchers: one Redis round trip.
 * By default only active watchers are returned, and an address with none is absent from the map.
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
  const args: Arg[] = [chainBase(prefix, chainId)];
  for (const a of unique) args.push(bucketOf(a), a);
  const deadline = Date.now() + (opts.waitMs ?? 30_000);
  let pause = 25;
  let reply: LookupReply;
  for (;;) {
    reply = (await run(redis, "LOOKUP", stateKey(prefix, chainId), args)) as LookupReply;
    if (reply[0] === 1) break;
    if (Date.now() >= deadline) throw new WatchIndexNotReadyError(chainId);
    await Bun.sleep(pause);
    pause = Math.min(pause * 2, 250);
  }
  const [, values, handles, metas, keyStates] = reply;
  const watchers = new Map<string, Watcher | null>();
  handles.forEach((h, i) => {
    const m = metas[i];
    if (!m) return watchers.set(h, null);
    const meta = decodeMeta(m);
    const active = meta.enabled && keyStates[i] === "1";
    watchers.set(h, { subscriptionId: meta.subscriptionId, keyId: meta.keyId, active, events: meta.events, match: meta.match });
  });
  unique.forEach((address, i) => {
    const v = values[i];
    if (!v) return;
    const list: Watcher[] = [];
    for (const h of v.split(",")) {
      const w = watchers.get(h);
      if (w && (w.active || opts.includeInactive)) list.push(w);
    }
    if (list.length > 0) out.set(address, list);
  });
  return out;
}

/** Every entry of the served generation of a chain (tests and diagnostics; scans all buckets). */
export async function dumpChain(redis: Redis, prefix: string, chainId: string): Promise<Map<string, Watcher[]> | null> {
  const state = await readState(redis, prefix, chainId);
  if (!state.cur || state.stale) return null;
  const gb = `${chainBase(prefix, chainId)}${state.cur}:`;
  const [metaAll, keysAll] = await Promise.all([redis.hgetall(gb + "meta"), redis.hgetall(gb + "keys")]);
  const out = new Map<string, Watcher[]>();
  for (let b = 0; b < BUCKETS; b += 1_024) {
    const pipe = redis.pipeline();
    for (let i = b; i < Math.min(b + 1_024, BUCKETS); i++) pipe.hgetall(`${gb}b:${i}`);
    const res = (await pipe.exec()) ?? [];
    for (const [err, fields] of res) {
      if (err) throw err;
      for (const [address, value] of Object.entries(fields as Record<string, string>)) {
        const list: Watcher[] = [];
        for (const h of value.split(",")) {
          const m = metaAll[h];
          if (!m) continue;
          const meta = decodeMeta(m);
          const active = meta.enabled && keysAll[meta.keyId] === "1";
          list.push({ subscriptionId: meta.subscriptionId, keyId: meta.keyId, active, events: meta.events, match: meta.match });
        }
        if (list.length > 0) out.set(address, list);
      }
    }
  }
  return out;
}
