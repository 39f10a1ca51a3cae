// Rebuilds chains from one PostgreSQL snapshot under their locks, taking in the rows it covers (README.md "Rebuild").
import { sql as dsql } from "drizzle-orm";
import type { Logger } from "../../common/logger.ts";
import { beginBuild, dropGeneration, finishBuild, readState } from "../../common/watch-index/generations.ts";
import type { WatchIndexHandle } from "../../common/watch-index/layout.ts";
import { allocatePositions, raiseAppliedPositions } from "../../common/watch-index/positions.ts";
import { loadSubscriptions, setKeyState, type LoadedSubscription } from "../../common/watch-index/writer.ts";
import type { RegistryDb } from "../db/connection.ts";
import { keyActiveOn, subscriptionMeta, type IndexedSubscription, type KeyState, type OutboxApplier } from "./applier.ts";
import { holdChainLock, releaseChainLock } from "./chain-lock.ts";
import { pgTextArray } from "./outbox.ts";

/** Addresses per rebuild batch (one transaction, one script per shard) and batches copied at once. */
const COPY_BATCH = 40_000;
const COPY_PARALLEL = 3;

export interface RebuildResult {
  addresses: number;
  subscriptions: number;
}

export interface RebuildDeps {
  db: RegistryDb;
  index: (chainId: string) => WatchIndexHandle;
  shards: number;
  applier: OutboxApplier;
  log: Logger;
  /** Work nobody waits for (dropping an old generation). */
  background: (work: Promise<unknown>, what: string) => void;
}

/** Rebuilds `wanted` (all, or with `ifMissing` only those still missing once their locks are held). */
export async function rebuildChains(deps: RebuildDeps, wanted: readonly string[], ifMissing: boolean): Promise<RebuildResult> {
  const { db, log, applier } = deps;
  const started = Date.now();
  const reserved = await db.$client.reserve();
  const locked: string[] = [];
  try {
    // Sorted: two replicas rebuilding overlapping chains take the locks in the same order.
    for (const chainId of [...wanted].sort()) {
      await holdChainLock(reserved, chainId);
      locked.push(chainId);
    }
    const gens = new Map<string, string>();
    for (const chainId of wanted) {
      const index = deps.index(chainId);
      const state = await readState(index);
      // Another replica may have rebuilt it while this one waited for the lock.
      if (ifMissing && state.cur && !state.stale && !state.next) continue;
      const { generation, abandoned } = await beginBuild(index, state.stale);
      gens.set(chainId, generation);
      if (abandoned) await dropGeneration(index, abandoned);
    }
    if (gens.size === 0) return { addresses: 0, subscriptions: 0 };

    const result = await copy(deps, gens);

    for (const [chainId, generation] of gens) {
      const index = deps.index(chainId);
      const old = await finishBuild(index, generation, result.position);
      if (old) deps.background(dropGeneration(index, old), "dropping an old generation");
    }
    applier.settled(result.taken);
    log.info("watch index rebuilt", { chains: [...gens.keys()], addresses: result.addresses, subscriptions: result.subscriptions, ms: Date.now() - started });
    return { addresses: result.addresses, subscriptions: result.subscriptions };
  } finally {
    for (const chainId of locked) await releaseChainLock(reserved, chainId).catch(() => {});
    reserved.release();
    for (const chainId of locked) applier.kick(chainId);
  }
}

/**
 * Copies PostgreSQL into the building generations as of one snapshot, in parallel batches that import it, and takes
 * the outbox rows that snapshot covers (README.md "Rebuild"). Returns the counts and the ids of the rows taken.
 */
async function copy(deps: RebuildDeps, gens: Map<string, string>): Promise<RebuildResult & { taken: number[]; position: number }> {
  const chains = [...gens.keys()];
  return deps.db.transaction(
    async (tx) => {
      const [exported] = (await tx.execute(dsql`SELECT pg_export_snapshot() AS snapshot`)) as unknown as { snapshot: string }[];
      const snapshot = exported!.snapshot;
      const keys = (await tx.execute(
        dsql`SELECT id, chains, revoked_at IS NOT NULL AS revoked FROM api_keys`,
      )) as unknown as (KeyState & { id: string })[];
      for (const [chainId, generation] of gens) {
        const index = deps.index(chainId);
        await Promise.all(keys.map((k) => setKeyState(index, k.id, keyActiveOn(k, chainId), { generation })));
      }
      // Subscriptions go in batches of about COPY_BATCH addresses (at most 500 subscriptions), COPY_PARALLEL at a time.
      const counts = (await tx.execute(
        dsql`SELECT subscription_id AS id, count(*)::int AS n FROM subscription_addresses
             WHERE chain_id = ANY(${pgTextArray(chains)}::text[]) GROUP BY subscription_id ORDER BY subscription_id`,
      )) as unknown as { id: string; n: number }[];
      const batches: string[][] = [];
      let batch: string[] = [];
      let size = 0;
      for (const { id, n } of counts) {
        batch.push(id);
        size += n;
        if (size >= COPY_BATCH || batch.length >= 500) {
          batches.push(batch);
          batch = [];
          size = 0;
        }
      }
      if (batch.length > 0) batches.push(batch);
      let addresses = 0;
      let subscriptions = 0;
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(COPY_PARALLEL, batches.length) }, async () => {
          while (next < batches.length) {
            const copied = await copySubscriptions(deps, batches[next++]!, gens, snapshot);
            subscriptions += copied.subscriptions;
            addresses += copied.addresses;
          }
        }),
      );
      // The new generations hold every change up to now: one position for the pending rows the snapshot covers and
      // for every shard (finishBuild writes it into the shards' state keys).
      const [position] = await allocatePositions(tx, 1);
      const taken = (await tx.execute(
        dsql`UPDATE watch_outbox SET applied_position = ${position!}, applied_at = now()
             WHERE chain_id = ANY(${pgTextArray(chains)}::text[]) AND applied_position IS NULL RETURNING id`,
      )) as unknown as { id: number | string }[];
      const all = new Map(Array.from({ length: deps.shards }, (_, s) => [s, position!] as const));
      for (const chainId of chains) await raiseAppliedPositions(tx, chainId, all);
      return { addresses, subscriptions, taken: taken.map((r) => Number(r.id)), position: position! };
    },
    { isolationLevel: "repeatable read" },
  );
}

/** Copies one batch of subscriptions into the building generations, reading `snapshot`; returns what it copied. */
async function copySubscriptions(deps: RebuildDeps, ids: readonly string[], gens: Map<string, string>, snapshot: string): Promise<RebuildResult> {
  // The identifier PostgreSQL made (hex and dashes); SET TRANSACTION SNAPSHOT takes no bind parameter.
  if (!/^[0-9A-F-]+$/i.test(snapshot)) throw new Error(`unexpected snapshot identifier ${snapshot}`);
  return deps.db.transaction(
    async (tx) => {
      await tx.execute(dsql.raw(`SET TRANSACTION SNAPSHOT '${snapshot}'`));
      const subs = (await tx.execute(
        dsql`SELECT s.id, s.key_id AS "keyId", s.status, s.events, s.match, k.chains, k.revoked_at IS NOT NULL AS revoked
             FROM subscriptions s JOIN api_keys k ON k.id = s.key_id WHERE s.id IN (${dsql.join(ids.map((id) => dsql`${id}`), dsql`, `)})
             ORDER BY s.id`,
      )) as unknown as (IndexedSubscription & KeyState)[];
      if (subs.length === 0) return { addresses: 0, subscriptions: 0 };
      // One row per subscription and chain, its addresses joined in one string: far fewer values to decode than a
      // row per address. One subscription per LATERAL lookup, so each reads its rows through the (subscription_id,
      // seq) index whatever the planner's statistics say (a batch as one IN list was planned as a sequential scan
      // of 10,000,000 rows before ANALYZE had run).
      const rows = (await tx.execute(
        dsql`SELECT s.id, l.chain_id AS "chainId", l.list
             FROM (VALUES ${dsql.join(subs.map((sub) => dsql`(${sub.id})`), dsql`, `)}) AS s(id)
             CROSS JOIN LATERAL (
               SELECT chain_id, string_agg(address, ',' ORDER BY seq) AS list
               FROM subscription_addresses a WHERE a.subscription_id = s.id GROUP BY chain_id
             ) l`,
      )) as unknown as { id: string; chainId: string; list: string }[];
      const byId = new Map(subs.map((sub) => [sub.id, sub]));
      const byChain = new Map<string, LoadedSubscription[]>();
      let addresses = 0;
      const copied = new Set<string>();
      for (const r of rows) {
        const sub = byId.get(r.id);
        if (!sub || !gens.has(r.chainId)) continue;
        const list = r.list.split(",");
        let load = byChain.get(r.chainId);
        if (!load) byChain.set(r.chainId, (load = []));
        load.push({ meta: subscriptionMeta(sub), keyActive: keyActiveOn(sub, r.chainId), addresses: list });
        addresses += list.length;
        copied.add(r.id);
      }
      for (const [chainId, load] of byChain) await loadSubscriptions(deps.index(chainId), gens.get(chainId)!, load);
      return { addresses, subscriptions: copied.size };
    },
    { isolationLevel: "repeatable read", accessMode: "read only" },
  );
}
