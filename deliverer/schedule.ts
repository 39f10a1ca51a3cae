// The delivery schedule in Redis: per shard a sorted set of due event ids (score = due time, ms) and a sorted set
// of leases (score = lease expiry). Claiming moves due ids into the lease set atomically (Lua), so a crashed
// worker's claims come back when their lease expires. Each shard's two keys share a hash tag, so every script
// touches one slot and the same code runs on a Redis Cluster. PostgreSQL is the truth: the worker rebuilds a lost
// schedule (rebuild()) and puts back single entries lost under a surviving built marker (jobs/schedule-reconcile.ts).
import { acrossSlots, type Redis } from "../common/redis.ts";

export interface ScheduleEntry {
  id: string;
  dueMs: number;
}

export interface ScheduleOptions {
  prefix: string;
  shards: number;
}

export interface ClaimResult {
  ids: string[];
  /** How many of them were expired leases taken back (a worker died or stalled). */
  reclaimed: number;
  /** Some shard handed out its whole share: more may be due right now. */
  more: boolean;
}

// KEYS: due, lease. ARGV: now, leaseUntil, limit. Expired leases first (they are the oldest work), then due ids.
const CLAIM = `
local now = ARGV[1]
local leaseUntil = ARGV[2]
local limit = tonumber(ARGV[3])
local out = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, limit)
local reclaimed = #out
if reclaimed < limit then
  local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit - reclaimed)
  if #due > 0 then
    redis.call('ZREM', KEYS[1], unpack(due))
    for i = 1, #due do out[#out + 1] = due[i] end
  end
end
if #out > 0 then
  local args = {}
  for i = 1, #out do
    args[#args + 1] = leaseUntil
    args[#args + 1] = out[i]
  end
  redis.call('ZADD', KEYS[2], unpack(args))
end
return {reclaimed, out}
`;

// KEYS: due, lease. ARGV: id1, due1, id2, due2, ... Moves leased (or reserved) ids back to the due set.
const RESCHEDULE = `
for i = 1, #ARGV, 2 do
  redis.call('ZREM', KEYS[2], ARGV[i])
  redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i])
end
return #ARGV / 2
`;

// KEYS: due, lease. ARGV: id1, due1, ... Adds ids that are neither due nor leased (the rebuild and the
// reconciliation must not double a lease a live worker holds: that event is being sent).
const ADD_MISSING = `
local added = 0
for i = 1, #ARGV, 2 do
  if not redis.call('ZSCORE', KEYS[2], ARGV[i]) and not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], ARGV[i + 1], ARGV[i])
    added = added + 1
  end
end
return added
`;

type RedisWithScripts = Redis & {
  claimDue(due: string, lease: string, now: number, leaseUntil: number, limit: number): Promise<[number, string[]]>;
  rescheduleIds(due: string, lease: string, ...args: (string | number)[]): Promise<number>;
  addMissing(due: string, lease: string, ...args: (string | number)[]): Promise<number>;
};

function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export class Schedule {
  readonly shards: number;
  private readonly redis: RedisWithScripts;
  private readonly prefix: string;
  private nextShard = 0;

  constructor(redis: Redis, opts: ScheduleOptions) {
    this.shards = opts.shards;
    this.prefix = opts.prefix;
    redis.defineCommand("claimDue", { numberOfKeys: 2, lua: CLAIM });
    redis.defineCommand("rescheduleIds", { numberOfKeys: 2, lua: RESCHEDULE });
    redis.defineCommand("addMissing", { numberOfKeys: 2, lua: ADD_MISSING });
    this.redis = redis as RedisWithScripts;
  }

  shardOf(id: string): number {
    return fnv1a(id) % this.shards;
  }

  dueKey(shard: number): string {
    return `${this.prefix}schedule:{${shard}}:due`;
  }

  leaseKey(shard: number): string {
    return `${this.prefix}schedule:{${shard}}:lease`;
  }

  /**
   * Set once the shard reflects PostgreSQL; gone after Redis lost its data (restart, FLUSHDB). One per shard, in the
   * shard's slot: on a Redis Cluster a node that restarts empty loses exactly its shards' markers with their sets,
   * so the loss is seen (and the schedule rebuilt) rather than hidden by a marker living on another node.
   */
  builtKey(shard: number): string {
    return `${this.prefix}schedule:{${shard}}:built`;
  }

  private byShard<T extends { id: string }>(items: T[]): Map<number, T[]> {
    const out = new Map<number, T[]>();
    for (const item of items) {
      const s = this.shardOf(item.id);
      let list = out.get(s);
      if (!list) out.set(s, (list = []));
      list.push(item);
    }
    return out;
  }

  /**
   * Claims about `limit` due ids (and expired leases) across shards, leasing them until `leaseUntilMs`. Each shard is
   * asked for its share rounded up, so a claim may hold up to `shards` − 1 more (the worker queues what it cannot start).
   */
  async claim(nowMs: number, leaseUntilMs: number, limit: number): Promise<ClaimResult> {
    const ids: string[] = [];
    let reclaimed = 0;
    // Round-robin start so no shard is always served last; ask each shard for a fair share in one pipeline.
    const start = this.nextShard;
    this.nextShard = (this.nextShard + 1) % this.shards;
    const per = Math.max(1, Math.ceil(limit / this.shards));
    const pipe = acrossSlots(this.redis) as unknown as RedisWithScripts & { exec(): Promise<[Error | null, unknown][] | null> };
    for (let i = 0; i < this.shards; i++) {
      const s = (start + i) % this.shards;
      pipe.claimDue(this.dueKey(s), this.leaseKey(s), nowMs, leaseUntilMs, per);
    }
    const results = (await pipe.exec()) ?? [];
    let more = false;
    for (const [err, value] of results) {
      if (err) throw err;
      const [n, list] = value as [number, string[]];
      reclaimed += n;
      ids.push(...list);
      if (list.length >= per) more = true;
    }
    return { ids, reclaimed, more };
  }

  /** Puts ids into the due set (new events). */
  async add(entries: ScheduleEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const pipe = acrossSlots(this.redis);
    for (const [s, list] of this.byShard(entries)) {
      pipe.zadd(this.dueKey(s), ...list.flatMap((e) => [e.dueMs, e.id]));
    }
    await execOrThrow(pipe);
  }

  /**
   * Leases ids that are about to be written to PostgreSQL, so that if this process dies between the commit and
   * add/moveToDue, the lease expires and the events are claimed anyway (an id that never got its row is dropped).
   */
  async reserve(ids: string[], untilMs: number): Promise<void> {
    if (ids.length === 0) return;
    const pipe = acrossSlots(this.redis);
    for (const [s, list] of this.byShard(ids.map((id) => ({ id })))) {
      pipe.zadd(this.leaseKey(s), ...list.flatMap((e) => [untilMs, e.id]));
    }
    await execOrThrow(pipe);
  }

  /** Extends the leases of ids still leased to `untilMs` (an id no longer leased stays so). */
  async extend(ids: string[], untilMs: number): Promise<void> {
    if (ids.length === 0) return;
    const pipe = acrossSlots(this.redis);
    for (const [s, list] of this.byShard(ids.map((id) => ({ id })))) {
      pipe.zadd(this.leaseKey(s), "XX", ...list.flatMap((e) => [untilMs, e.id]));
    }
    await execOrThrow(pipe);
  }

  /** Moves leased (or reserved) ids to the due set at their due times. */
  async moveToDue(entries: ScheduleEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const pipe = acrossSlots(this.redis) as unknown as RedisWithScripts & { exec(): Promise<[Error | null, unknown][] | null> };
    for (const [s, list] of this.byShard(entries)) {
      for (let i = 0; i < list.length; i += 500) {
        pipe.rescheduleIds(this.dueKey(s), this.leaseKey(s), ...list.slice(i, i + 500).flatMap((e) => [e.id, e.dueMs]));
      }
    }
    await execOrThrow(pipe);
  }

  /** Drops ids from both sets (finished, held or cancelled events). */
  async remove(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const pipe = acrossSlots(this.redis);
    for (const [s, list] of this.byShard(ids.map((id) => ({ id })))) {
      const members = list.map((e) => e.id);
      pipe.zrem(this.leaseKey(s), ...members);
      pipe.zrem(this.dueKey(s), ...members);
    }
    await execOrThrow(pipe);
  }

  /** Ends leases of finished events (they are in no due set). */
  async complete(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const pipe = acrossSlots(this.redis);
    for (const [s, list] of this.byShard(ids.map((id) => ({ id })))) pipe.zrem(this.leaseKey(s), ...list.map((e) => e.id));
    await execOrThrow(pipe);
  }

  /** Adds ids that are neither due nor leased; returns how many were added. */
  async addMissing(entries: ScheduleEntry[]): Promise<number> {
    if (entries.length === 0) return 0;
    const pipe = acrossSlots(this.redis) as unknown as RedisWithScripts & { exec(): Promise<[Error | null, unknown][] | null> };
    for (const [s, list] of this.byShard(entries)) {
      for (let i = 0; i < list.length; i += 500) {
        pipe.addMissing(this.dueKey(s), this.leaseKey(s), ...list.slice(i, i + 500).flatMap((e) => [e.id, e.dueMs]));
      }
    }
    const results = (await pipe.exec()) ?? [];
    let added = 0;
    for (const [err, n] of results) {
      if (err) throw err;
      added += Number(n);
    }
    return added;
  }

  /** Every shard's marker is present. */
  async isBuilt(): Promise<boolean> {
    const pipe = acrossSlots(this.redis);
    for (let s = 0; s < this.shards; s++) pipe.exists(this.builtKey(s));
    return (await execOrThrow(pipe)).every((n) => Number(n) === 1);
  }

  async markBuilt(): Promise<void> {
    const pipe = acrossSlots(this.redis);
    const at = String(Date.now());
    for (let s = 0; s < this.shards; s++) pipe.set(this.builtKey(s), at);
    await execOrThrow(pipe);
  }

  /** Where the reconciliation's last pass stopped (a due time and an id); null: start from the oldest. */
  async reconcileCursor(): Promise<ScheduleEntry | null> {
    const raw = await this.redis.get(`${this.prefix}schedule:reconcile:cursor`);
    const at = raw?.indexOf(":") ?? -1;
    if (!raw || at <= 0) return null;
    const dueMs = Number(raw.slice(0, at));
    return Number.isFinite(dueMs) ? { id: raw.slice(at + 1), dueMs } : null;
  }

  async setReconcileCursor(cursor: ScheduleEntry | null): Promise<void> {
    const key = `${this.prefix}schedule:reconcile:cursor`;
    if (cursor) await this.redis.set(key, `${cursor.dueMs}:${cursor.id}`);
    else await this.redis.del(key);
  }

  /** A short exclusive lock so one replica rebuilds (or reconciles) at a time. */
  async tryLock(name: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(`${this.prefix}schedule:lock:${name}`, "1", "PX", ttlMs, "NX")) === "OK";
  }

  async unlock(name: string): Promise<void> {
    await this.redis.del(`${this.prefix}schedule:lock:${name}`);
  }

  /** Queue depth (due + leased) and the oldest due score. */
  async stats(): Promise<{ due: number; leased: number; oldestDueMs: number | null }> {
    const pipe = acrossSlots(this.redis);
    for (let s = 0; s < this.shards; s++) {
      pipe.zcard(this.dueKey(s));
      pipe.zcard(this.leaseKey(s));
      pipe.zrange(this.dueKey(s), "0", "0", "WITHSCORES");
    }
    const results = (await execOrThrow(pipe)) as unknown[];
    let due = 0;
    let leased = 0;
    let oldest: number | null = null;
    for (let i = 0; i < results.length; i += 3) {
      due += Number(results[i]);
      leased += Number(results[i + 1]);
      const first = results[i + 2] as string[];
      if (first.length === 2) {
        const score = Number(first[1]);
        if (oldest === null || score < oldest) oldest = score;
      }
    }
    return { due, leased, oldestDueMs: oldest };
  }
}

async function execOrThrow(pipe: { exec(): Promise<[Error | null, unknown][] | null> }): Promise<unknown[]> {
  const results = (await pipe.exec()) ?? [];
  return results.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}
