// Keeps every chain whole: rebuild, replay, verify, re-match, prune, sweep (README.md "Upkeep").
import { sql as dsql } from "drizzle-orm";
import type { Logger } from "../../common/logger.ts";
import { markStale, readPositions, readState, sweepDeadHandles, verifyShards } from "../../common/watch-index/generations.ts";
import type { WatchIndexHandle } from "../../common/watch-index/layout.ts";
import { PRUNED_SHARD, raiseAppliedPositions, readAppliedPositions } from "../../common/watch-index/positions.ts";
import { indexBehind } from "../metrics.ts";
import type { RegistryDb } from "../db/connection.ts";
import { redisTimeout, type OutboxApplier } from "./applier.ts";
import { chainFree, tryChainLock } from "./chain-lock.ts";
import type { RebuildResult } from "./rebuild.ts";

/** How often applied outbox rows older than the retention are deleted. */
const PRUNE_INTERVAL_MS = 60_000;
/** How often dead handles are looked for. */
const SWEEP_INTERVAL_MS = 5_000;

/** The matcher's checkpoints of a chain (its head and solidified streams); -1: none yet. */
interface MatcherCheckpoints {
  head: number;
  solid: number;
}

export interface UpkeepDeps {
  db: RegistryDb;
  index: (chainId: string) => WatchIndexHandle;
  chains: readonly string[];
  applier: OutboxApplier;
  log: Logger;
  rebuild: (chains: readonly string[], opts?: { ifMissing?: boolean }) => Promise<RebuildResult>;
  /** A rebuild of this process is under way. */
  rebuilding: () => boolean;
  /** WATCH_OUTBOX_RETENTION_MS: how long applied outbox rows are kept for replays. */
  retentionMs: number;
  /** WATCH_INDEX_VERIFY_MS: how often every shard is checked. */
  verifyMs: number;
}

export class Upkeep {
  private ticking = false;
  private lastSweep = 0;
  private lastPrune = 0;
  private lastVerify = 0;
  get verifiedAt(): number {
    return this.lastVerify;
  }
  /** Per chain, the matcher's checkpoints read just before the last check that found the index whole (rematch). */
  private readonly lastGood = new Map<string, MatcherCheckpoints>();

  constructor(private readonly deps: UpkeepDeps) {}

  /** A tick under way (stop waits for it). */
  get busy(): boolean {
    return this.ticking;
  }

  /** The chains whose index must be rebuilt: missing (never built, emptied), stale, or a build whose builder died. */
  async chainsToRebuild(): Promise<string[]> {
    const out: string[] = [];
    for (const chainId of this.deps.chains) {
      const state = await readState(this.deps.index(chainId));
      if (!state.cur || state.stale) out.push(chainId);
      // A build nobody is running (its process died while holding the chain lock, which died with it).
      else if (state.next && !this.deps.rebuilding() && (await chainFree(this.deps.db.$client, chainId))) out.push(chainId);
    }
    return out;
  }

  /**
   * Replays to the shards Redis holds behind PostgreSQL's applied positions (applier.ts replay), or rebuilds the chain
   * when the rows to replay are pruned. Matcher lookups of those shards wait meanwhile.
   */
  async catchUp(chainId: string): Promise<void> {
    const { db, log } = this.deps;
    const index = this.deps.index(chainId);
    // First without the chain's lock (the appliers need it): PostgreSQL before Redis, so a change applied between the
    // two reads only makes Redis look ahead, never behind.
    const applied = await readAppliedPositions(db, chainId, index.shards);
    const inRedis = await redisTimeout(readPositions(index));
    if (!inRedis.some((r, shard) => r.served && r.position < applied.shards[shard]!)) return;
    const result = await this.deps.applier.replay(chainId);
    if (result.status === "replayed") {
      indexBehind.inc({ chain: chainId, repair: "replay" }, result.shards.length);
      log.warn("watch index: Redis lacked changes PostgreSQL had applied (a failover to a lagging replica?); replayed them", {
        chainId,
        shards: result.shards,
        rows: result.rows,
      });
    } else if (result.status === "pruned") {
      indexBehind.inc({ chain: chainId, repair: "rebuild" }, result.shards.length);
      log.warn("watch index: Redis lacks changes older than the outbox retention; rebuilding the chain", { chainId, shards: result.shards });
      await this.deps.rebuild([chainId]);
    }
  }

  /**
   * Checks every shard of the chain against the counts its writers keep (verifyShards: sizes only). A shard that lost
   * keys outside the writers cannot be replayed to: the chain is marked stale (lookups wait), rebuilt, and the
   * matcher asked to re-match what it processed since the last clean check. Returns the drifted shards.
   */
  async verify(chainId: string): Promise<number[]> {
    const index = this.deps.index(chainId);
    // Read before the check: a whole index then means every block up to these checkpoints was matched whole.
    const checkpoints = await this.matcherCheckpoints(chainId);
    const checks = await redisTimeout(verifyShards(index));
    const drifted = checks.flatMap((c) => (c.status === "drifted" ? [c] : []));
    if (drifted.length === 0) {
      if (checkpoints) this.lastGood.set(chainId, checkpoints);
      return [];
    }
    indexBehind.inc({ chain: chainId, repair: "verify" }, drifted.length);
    this.deps.log.warn("watch index: shards lost keys outside the index's writers; rebuilding the chain", {
      chainId,
      shards: drifted.map((d) => ({ shard: d.shard, differs: d.what })),
    });
    await redisTimeout(markStale(index));
    await this.deps.rebuild([chainId]);
    await this.requestRematch(chainId);
    return drifted.map((d) => d.shard);
  }

  /**
   * The matcher's head and solidified checkpoints of the chain (its tables, in this database), or null when it has
   * none (not started yet, or not sharing this database: then nothing can be re-matched).
   */
  private async matcherCheckpoints(chainId: string): Promise<MatcherCheckpoints | null> {
    try {
      const [row] = (await this.deps.db.execute(dsql`
        SELECT h.block_number AS head, (SELECT s.block_number FROM matcher_solidified_checkpoints s WHERE s.chain_id = h.chain_id) AS solid
        FROM matcher_checkpoints h WHERE h.chain_id = ${chainId}`)) as unknown as { head: number | string; solid: number | string | null }[];
      if (!row) return null;
      // No solidified checkpoint yet: from the oldest block that stream records, when it has one.
      return { head: Number(row.head), solid: row.solid === null ? -1 : Number(row.solid) };
    } catch (err) {
      this.deps.log.debug("watch index: the matcher's checkpoints are not readable here; repairs cannot be re-matched", { err });
      return null;
    }
  }

  /**
   * After a repair, asks the matcher (watch_rematch_requests, matcher/rematch.ts) to match again the blocks it
   * processed since the last clean check, when there was one: they may have missed addresses the index lacked.
   */
  private async requestRematch(chainId: string): Promise<void> {
    const { db, log } = this.deps;
    const good = this.lastGood.get(chainId);
    if (!good) {
      log.warn("watch index repaired with no clean check before it: blocks matched meanwhile are not re-matched", { chainId });
      return;
    }
    try {
      await db.execute(dsql`INSERT INTO watch_rematch_requests (chain_id, head_from, solid_from) VALUES (${chainId}, ${good.head}, ${good.solid})`);
      log.warn("watch index repaired: asked the matcher to re-match the blocks since its last clean check", {
        chainId,
        headFrom: good.head + 1,
        solidFrom: good.solid + 1,
      });
    } catch (err) {
      log.error("watch index repaired but the re-match could not be requested", { chainId, err });
    }
  }

  /**
   * Deletes the chain's applied outbox rows older than the retention, under the chain's lock (a replay reads them
   * under it), and raises the chain's pruned mark to the last position deleted.
   */
  async prune(chainId: string): Promise<number> {
    return this.deps.db.transaction(async (tx) => {
      if (!(await tryChainLock(tx, chainId))) return 0;
      const cutoff = new Date(Date.now() - this.deps.retentionMs);
      const [gone] = (await tx.execute(dsql`
        WITH gone AS (
          DELETE FROM watch_outbox WHERE chain_id = ${chainId} AND applied_position IS NOT NULL AND applied_at < ${cutoff}
          RETURNING applied_position
        ) SELECT count(*)::int AS n, max(applied_position) AS through FROM gone`)) as unknown as { n: number; through: number | string | null }[];
      if (gone && gone.through !== null) await raiseAppliedPositions(tx, chainId, new Map([[PRUNED_SHARD, Number(gone.through)]]));
      return gone?.n ?? 0;
    });
  }

  /** Rebuilds the chains that need it (at start, after FLUSHDB), replays, verifies, prunes and sweeps now and then. */
  async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    const { chains } = this.deps;
    try {
      const missing = await redisTimeout(this.chainsToRebuild());
      if (missing.length > 0) {
        await this.deps.rebuild(missing, { ifMissing: true });
        // A chain that had been checked whole lost its state since (keys deleted, a node restarted empty): blocks
        // matched in between may have missed addresses.
        for (const chainId of missing) if (this.lastGood.has(chainId)) await this.requestRematch(chainId);
        return;
      }
      for (const chainId of chains) await this.catchUp(chainId);
      if (Date.now() - this.lastVerify >= this.deps.verifyMs) {
        for (const chainId of chains) await this.verify(chainId);
        this.lastVerify = Date.now();
      }
      if (Date.now() - this.lastPrune > PRUNE_INTERVAL_MS) {
        for (const chainId of chains) await this.prune(chainId);
        this.lastPrune = Date.now();
      }
      if (Date.now() - this.lastSweep > SWEEP_INTERVAL_MS) {
        for (const chainId of chains) {
          const index = this.deps.index(chainId);
          if ((await readState(index)).dead > 0) await sweepDeadHandles(index);
        }
        this.lastSweep = Date.now();
      }
    } catch (err) {
      this.deps.log.warn("watch index upkeep: will retry", { err });
    } finally {
      this.ticking = false;
    }
  }
}
