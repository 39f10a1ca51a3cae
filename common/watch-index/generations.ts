// A chain's state and the life of its generations: build, swap, drop, sweep, verify (README.md "Generations").
import { acrossSlots } from "../redis.ts";
import { bucketsPerShard, type WatchIndexHandle } from "./layout.ts";
import { run, runAll } from "./scripts.ts";

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

/** Per shard: cur, next, stale, dead, gens. */
export async function readShardStates(index: WatchIndexHandle): Promise<(string | null)[][]> {
  const pipe = acrossSlots(index.redis);
  for (const s of index.all) pipe.hmget(s.state, "cur", "next", "stale", "dead", "gens");
  const replies = (await pipe.exec()) ?? [];
  return replies.map(([err, v]) => {
    if (err) throw err;
    return v as (string | null)[];
  });
}

/** The chain's state over its shards: one round trip per node. */
export async function readState(index: WatchIndexHandle): Promise<ChainState> {
  const rows = await readShardStates(index);
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
export async function markStale(index: WatchIndexHandle): Promise<void> {
  const pipe = acrossSlots(index.redis);
  const mark = `failed:${Date.now()}`;
  for (const s of index.all) pipe.hset(s.state, "stale", mark);
  for (const [err] of (await pipe.exec()) ?? []) if (err) throw err;
}

/**
 * Starts a build of a new generation in every shard (one number for all: one above the highest any shard has
 * used); `stale` also makes lookups wait until it is finished. Builds of one chain are serialized by the caller
 * (the registry's rebuild holds the chain lock).
 */
export async function beginBuild(index: WatchIndexHandle, stale: boolean): Promise<{ generation: string; abandoned: string | null }> {
  const rows = await readShardStates(index);
  const generation = String(1 + Math.max(0, ...rows.map((r) => Number(r[4] ?? 0))));
  const calls = index.all.map((s) => ({ name: "BEGIN_BUILD" as const, key: s.state, args: [s.base, stale ? "1" : "0", generation] }));
  const res = (await runAll(index.redis, calls)) as string[];
  const abandoned = res.find((g) => g !== "") ?? null;
  return { generation, abandoned };
}

/**
 * Swaps a finished build in, shard by shard; returns the replaced generation (to drop), or throws if another build
 * superseded it. A lookup spanning the swap is at worst behind, never ahead (README.md "Rebuild").
 */
export async function finishBuild(index: WatchIndexHandle, generation: string, position?: number): Promise<string | null> {
  const pos = position === undefined ? "" : String(position);
  const calls = index.all.map((s) => ({ name: "FINISH_BUILD" as const, key: s.state, args: [generation, pos] }));
  const olds = (await runAll(index.redis, calls)).map(String);
  if (olds.includes("-1")) throw new Error(`watch index build ${index.chainId}#${generation} was superseded`);
  return olds.find((g) => g !== "") ?? null;
}

/** Deletes a generation's keys in every shard (an old one after a swap, or an abandoned build). */
export async function dropGeneration(index: WatchIndexHandle, generation: string): Promise<void> {
  const { redis } = index;
  const per = bucketsPerShard(index.shards);
  await Promise.all(
    index.all.map(async (s) => {
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
export async function sweepDeadHandles(index: WatchIndexHandle): Promise<number> {
  const rows = await readShardStates(index);
  const per = bucketsPerShard(index.shards);
  const changed = await Promise.all(
    index.all.map(async (s, i) => {
      const [cur, next, , dead] = rows[i]!;
      let n = 0;
      for (const g of [cur, next]) {
        if (!g) continue;
        for (let b = 0; b < per; b += 512) n += Number(await run(index.redis, "SWEEP", s.state, [s.base, g, b, Math.min(b + 512, per)]));
      }
      if (Number(dead ?? 0) > 0) await index.redis.hincrby(s.state, "dead", -Number(dead));
      return n;
    }),
  );
  return changed.reduce((a, b) => a + b, 0);
}

/** Each shard's position (the last change applied to it; 0 when none is recorded) and whether it has a generation. */
export async function readPositions(index: WatchIndexHandle): Promise<{ position: number; served: boolean }[]> {
  const pipe = acrossSlots(index.redis);
  for (const s of index.all) pipe.hmget(s.state, "pos", "cur");
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
 * Checks each shard's served generation against the counts its writers keep (verify.lua): one script per shard,
 * one round trip per node, reading sizes only. Finds keys lost outside the writers that positions cannot see.
 */
export async function verifyShards(index: WatchIndexHandle): Promise<ShardCheck[]> {
  const calls = index.all.map((s) => ({ name: "VERIFY" as const, key: s.state, args: [s.base] }));
  const replies = (await runAll(index.redis, calls)) as [number, string?][];
  return replies.map(([code, detail], shard): ShardCheck => {
    if (Number(code) === 2) return { shard, status: "whole", buckets: Number(detail ?? 0) };
    if (Number(code) === 1) return { shard, status: "drifted", what: String(detail ?? "") };
    return { shard, status: "skipped" };
  });
}
