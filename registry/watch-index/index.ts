// The registry's side of the Redis watch index (layout and scripts: common/watch-index.ts). Changes reach it through
// the transactional outbox: written in the change's own transaction (registry/watch-outbox.ts), applied to Redis in
// order by one applier per chain (registry/watch-applier.ts). This module runs the appliers, the rebuild from
// PostgreSQL when a chain's index is missing, and the upkeep that notices that.
//
// There is one protocol for every failure. A registry killed between COMMIT and the Redis write, a Redis outage, a
// Redis write that timed out: the outbox row stays in PostgreSQL and is applied when an applier next gets to it. The
// index is never ahead of PostgreSQL (nothing is written to Redis before COMMIT), only behind it, by the rows not
// applied yet. Only a lost index (state.cur missing in any of the chain's WATCH_INDEX_SHARDS shards: never built,
// Redis or one Cluster master restarted empty, FLUSHDB) needs a rebuild, and only of the chains that lost it; the
// whole chain is rebuilt (one generation number for all its shards). A Redis that kept the index but lost its last
// writes (a failover to a replica that lagged) shows shard positions below PostgreSQL's (common/watch-positions.ts):
// the upkeep (every second, and at once when the connection comes back) replays the applied rows it lacks, or
// rebuilds the chain when they are past WATCH_OUTBOX_RETENTION_MS. Keys lost outside the writers are found by the
// verifier (verify, every WATCH_INDEX_VERIFY_MS). After a repair that lookups did not wait for (verify, a lost state),
// blocks matched meanwhile may have missed addresses: the registry asks the matcher to re-match the blocks after its
// checkpoints at the last clean check (requestRematch; matcher/rematch.ts serves it).
//
// Rebuild and applier. A rebuild of chain C takes C's applier lock (registry/watch-applier.ts) first, so no row of C
// is applied while it runs; it then copies the subscriptions as of ONE repeatable-read snapshot and, in that same
// snapshot, marks C's pending outbox rows it can see applied (at one new position, which every shard then holds). Those rows committed before the snapshot, so the copy already holds
// their effect; rows committed after it stay, and the applier applies them on top of the new generation once the lock
// is released, in their order. No row is applied twice over newer state, and none is missed.
//
// The copy itself is batched (about COPY_BATCH addresses of many subscriptions per batch, one loadSubscriptions
// script per shard, COPY_PARALLEL batches at a time so the PostgreSQL reads of one overlap the Redis writes of
// another), and each batch is a transaction of its own on its own connection. They still read ONE snapshot: the
// rebuild's transaction exports its snapshot (pg_export_snapshot) and every batch imports it (SET TRANSACTION
// SNAPSHOT) before its first read, so key states, the batch list, every batch's rows and the outbox rows marked are
// all the same instant of PostgreSQL, and the rebuild's transaction (which marks the rows) stays open until the
// last batch is written. Had each batch taken its own snapshot, a change committed between two batches would be in
// some batches and not others while its outbox row, committed after the deleting snapshot, is applied later anyway;
// applied rows converge, but one snapshot keeps the argument as simple as stated above. No batch needs FOR SHARE
// (under an imported snapshot it would only fail on rows changed since): what changed after the snapshot is in the
// outbox.
import { sql as dsql } from "drizzle-orm";
import { TRON_CHAINS, type ChainId } from "../../common/config.ts";
import type { Logger } from "../../common/logger.ts";
import type { Redis } from "../../common/redis.ts";
import {
  beginBuild,
  DEFAULT_SHARDS,
  dropGeneration,
  finishBuild,
  loadSubscriptions,
  markStale,
  readPositions,
  readState,
  setKeyState,
  sweepDeadHandles,
  verifyShards,
  type LoadedSubscription,
} from "../../common/watch-index/writer.ts";
import type { RegistryDb } from "../store.ts";
import {
  keyActiveOn,
  OutboxApplier,
  subscriptionMeta,
  withTimeout,
  type IndexedSubscription,
  type KeyState,
} from "./applier.ts";
import { pgTextArray, type OutboxTicket } from "./outbox.ts";
import { allocatePositions, PRUNED_SHARD, raiseAppliedPositions, readAppliedPositions } from "../../common/watch-index/positions.ts";
import { indexBehind } from "../metrics.ts";

/**
 * How long a request waits for its outbox rows to be applied before it answers anyway: docs/CONTRACT.md "HTTP conventions"
 * says a write PostgreSQL accepted succeeds even when Redis is down (the row stays and is applied when Redis is back).
 * Tens of ms in normal operation; the bound only matters while a rebuild holds the chain. It runs after COMMIT, so
 * it is inside the allowance every write RPC's deadline keeps for what follows a COMMIT (common/deadlines.ts
 * writeRpcDeadline).
 */
const SETTLE_MS = 3_000;

/** Addresses per rebuild batch (one transaction, one script per shard) and batches copied at once. */
const COPY_BATCH = 40_000;
const COPY_PARALLEL = 3;

export interface RebuildResult {
  addresses: number;
  subscriptions: number;
}

/** The matcher's checkpoints of a chain (its head and solidified streams); -1: none yet. */
interface MatcherCheckpoints {
  head: number;
  solid: number;
}

export interface WatchIndexOptions {
  /** The appliers' poll interval (watch-applier.ts POLL_MS). */
  pollMs?: number;
  /** WATCH_INDEX_SHARDS (config.watchIndexShards); default DEFAULT_SHARDS. */
  shards?: number;
  /** WATCH_OUTBOX_RETENTION_MS (config.watchOutboxRetentionMs): how long applied outbox rows are kept for replays. */
  retentionMs?: number;
  /** WATCH_INDEX_VERIFY_MS (config.watchIndexVerifyMs): how often every shard is checked (verify). */
  verifyMs?: number;
}

/** How often applied outbox rows older than the retention are deleted. */
const PRUNE_INTERVAL_MS = 60_000;

export class WatchIndex {
  readonly applier: OutboxApplier;
  readonly shards: number;
  private rebuilding: Promise<RebuildResult> | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private ticking = false;
  private lastSweep = 0;
  private lastPrune = 0;
  private lastVerify = 0;
  /** When the upkeep last checked every shard (0: not yet; the first check follows the start's rebuild). */
  get verifiedAt(): number {
    return this.lastVerify;
  }
  /** Per chain, the matcher's checkpoints read just before the last check that found the index whole (rematch). */
  private readonly lastGood = new Map<string, MatcherCheckpoints>();
  private readonly retentionMs: number;
  private readonly verifyMs: number;
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    readonly db: RegistryDb,
    readonly redis: Redis,
    readonly prefix: string,
    private readonly log: Logger,
    readonly chains: readonly ChainId[] = TRON_CHAINS,
    opts: WatchIndexOptions = {},
  ) {
    this.shards = opts.shards ?? DEFAULT_SHARDS;
    this.retentionMs = opts.retentionMs ?? 3_600_000;
    this.verifyMs = opts.verifyMs ?? 60_000;
    this.applier = new OutboxApplier(db, redis, prefix, log, chains, {
      pollMs: opts.pollMs,
      shards: this.shards,
      onMissing: () => void this.tick(),
    });
    // Failed commands are reported where they fail; the connection's own errors are only worth a debug line.
    redis.on("error", (err) => this.log.debug("watch index: redis connection error", { err }));
    // Back from an outage: apply what accumulated at once rather than at the next poll.
    redis.on("ready", () => {
      for (const chainId of this.chains) this.applier.kick(chainId);
      // A reconnection may have reached another server (a failover): see at once whether it lacks applied changes.
      if (this.timer) void this.tick();
    });
  }

  /**
   * Waits (bounded) until the index reflects a committed change. Never throws: PostgreSQL holds the change and its
   * rows are applied later if not now.
   */
  async settle(ticket: OutboxTicket, budgetMs = SETTLE_MS): Promise<void> {
    if (ticket.ids.length === 0) return;
    try {
      if (!(await this.applier.settle(ticket, budgetMs))) {
        this.log.warn("watch index: a committed change is not applied yet; it will be", { rows: ticket.ids.length, chains: ticket.chains });
      }
    } catch (err) {
      this.log.warn("watch index: could not wait for a change to be applied; it will be", { err });
    }
  }

  /** Work nobody waits for (dropping an old generation); stop() still waits for it. */
  private background(work: Promise<unknown>, what: string): void {
    const p = work.catch((err) => this.log.warn(`watch index: ${what} failed`, { err }));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  // ---- rebuild ------------------------------------------------------------------------------------------------

  /** Rebuilds chains from PostgreSQL (one rebuild at a time per process; across replicas the chain locks serialize). */
  rebuild(chains: readonly string[] = this.chains, opts: { ifMissing?: boolean } = {}): Promise<RebuildResult> {
    const wanted = this.chains.filter((c) => chains.includes(c));
    const run = (this.rebuilding ?? Promise.resolve()).catch(() => {}).then(() => this.rebuildNow(wanted, opts.ifMissing ?? false));
    this.rebuilding = run;
    return run.finally(() => {
      if (this.rebuilding === run) this.rebuilding = undefined;
    });
  }

  private async rebuildNow(wanted: readonly string[], ifMissing: boolean): Promise<RebuildResult> {
    const started = Date.now();
    const reserved = await this.db.$client.reserve();
    const locked: string[] = [];
    try {
      // Sorted: two replicas rebuilding overlapping chains take the locks in the same order.
      for (const chainId of [...wanted].sort()) {
        await reserved`SELECT pg_advisory_lock(hashtext('watch-outbox'), hashtext(${chainId}))`;
        locked.push(chainId);
      }
      const gens = new Map<string, string>();
      for (const chainId of wanted) {
        const state = await readState(this.redis, this.prefix, chainId, this.shards);
        // Another replica may have rebuilt it while this one waited for the lock.
        if (ifMissing && state.cur && !state.stale && !state.next) continue;
        const { generation, abandoned } = await beginBuild(this.redis, this.prefix, chainId, state.stale, this.shards);
        gens.set(chainId, generation);
        if (abandoned) await dropGeneration(this.redis, this.prefix, chainId, abandoned, this.shards);
      }
      if (gens.size === 0) return { addresses: 0, subscriptions: 0 };

      const result = await this.copy(gens);

      for (const [chainId, generation] of gens) {
        const old = await finishBuild(this.redis, this.prefix, chainId, generation, this.shards, result.position);
        if (old) this.background(dropGeneration(this.redis, this.prefix, chainId, old, this.shards), "dropping an old generation");
      }
      this.applier.settled(result.taken);
      this.log.info("watch index rebuilt", { chains: [...gens.keys()], addresses: result.addresses, subscriptions: result.subscriptions, ms: Date.now() - started });
      return { addresses: result.addresses, subscriptions: result.subscriptions };
    } finally {
      for (const chainId of locked) {
        await reserved`SELECT pg_advisory_unlock(hashtext('watch-outbox'), hashtext(${chainId}))`.catch(() => {});
      }
      reserved.release();
      for (const chainId of locked) this.applier.kick(chainId);
    }
  }

  /**
   * Copies PostgreSQL into the building generations as of one snapshot, in parallel batches that import it, and takes
   * the outbox rows that snapshot covers (see the header). Returns the counts and the ids of the rows taken.
   */
  private async copy(gens: Map<string, string>): Promise<RebuildResult & { taken: number[]; position: number }> {
    const chains = [...gens.keys()];
    return this.db.transaction(
      async (tx) => {
        const [exported] = (await tx.execute(dsql`SELECT pg_export_snapshot() AS snapshot`)) as unknown as { snapshot: string }[];
        const snapshot = exported!.snapshot;
        const keys = (await tx.execute(
          dsql`SELECT id, chains, revoked_at IS NOT NULL AS revoked FROM api_keys`,
        )) as unknown as (KeyState & { id: string })[];
        for (const [chainId, generation] of gens) {
          await Promise.all(
            keys.map((k) =>
              setKeyState(this.redis, { prefix: this.prefix, shards: this.shards, chainId, generation }, k.id, keyActiveOn(k, chainId)),
            ),
          );
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
              const copied = await this.copySubscriptions(batches[next++]!, gens, snapshot);
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
        const all = new Map(Array.from({ length: this.shards }, (_, s) => [s, position!] as const));
        for (const chainId of chains) await raiseAppliedPositions(tx, chainId, all);
        return { addresses, subscriptions, taken: taken.map((r) => Number(r.id)), position: position! };
      },
      { isolationLevel: "repeatable read" },
    );
  }

  /** Copies one batch of subscriptions into the building generations, reading `snapshot`; returns what it copied. */
  private async copySubscriptions(ids: readonly string[], gens: Map<string, string>, snapshot: string): Promise<RebuildResult> {
    // The identifier PostgreSQL made (hex and dashes); SET TRANSACTION SNAPSHOT takes no bind parameter.
    if (!/^[0-9A-F-]+$/i.test(snapshot)) throw new Error(`unexpected snapshot identifier ${snapshot}`);
    return this.db.transaction(
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
        for (const [chainId, load] of byChain) {
          await loadSubscriptions(this.redis, { prefix: this.prefix, shards: this.shards, chainId, generation: gens.get(chainId)! }, load);
        }
        return { addresses, subscriptions: copied.size };
      },
      { isolationLevel: "repeatable read", accessMode: "read only" },
    );
  }

  // ---- upkeep -------------------------------------------------------------------------------------------------

  /** The chains whose index must be rebuilt: missing (never built, emptied), stale, or a build whose builder died. */
  async chainsToRebuild(): Promise<string[]> {
    const out: string[] = [];
    for (const chainId of this.chains) {
      const state = await readState(this.redis, this.prefix, chainId, this.shards);
      if (!state.cur || state.stale) out.push(chainId);
      // A build nobody is running (its process died while holding the chain lock, which died with it).
      else if (state.next && !this.rebuilding && (await this.chainFree(chainId))) out.push(chainId);
    }
    return out;
  }

  /**
   * Replays to the shards Redis holds behind PostgreSQL's applied positions (registry/watch-applier.ts replay), or
   * rebuilds the chain when the rows to replay are pruned. Matcher lookups of those shards wait meanwhile.
   */
  async catchUp(chainId: string): Promise<void> {
    // First without the chain's lock (the appliers need it): PostgreSQL before Redis, so a change applied between the
    // two reads only makes Redis look ahead, never behind.
    const applied = await readAppliedPositions(this.db, chainId, this.shards);
    const inRedis = await withTimeout(readPositions(this.redis, this.prefix, chainId, this.shards));
    if (!inRedis.some((r, shard) => r.served && r.position < applied.shards[shard]!)) return;
    const result = await this.applier.replay(chainId);
    if (result.status === "replayed") {
      indexBehind.inc({ chain: chainId, repair: "replay" }, result.shards.length);
      this.log.warn("watch index: Redis lacked changes PostgreSQL had applied (a failover to a lagging replica?); replayed them", {
        chainId,
        shards: result.shards,
        rows: result.rows,
      });
    } else if (result.status === "pruned") {
      indexBehind.inc({ chain: chainId, repair: "rebuild" }, result.shards.length);
      this.log.warn("watch index: Redis lacks changes older than the outbox retention; rebuilding the chain", { chainId, shards: result.shards });
      await this.rebuild([chainId]);
    }
  }

  /**
   * Checks every shard of the chain against the counts its writers keep (common/watch-index.ts verifyShards: sizes
   * only, one script per shard). A shard that lost keys outside the writers (deleted by hand, a partial restore)
   * cannot be replayed to: the chain is marked stale, so lookups wait instead of missing its addresses, and rebuilt
   * from PostgreSQL, and the matcher asked to re-match what it processed since the last clean check (requestRematch).
   * Returns the drifted shards.
   */
  async verify(chainId: string): Promise<number[]> {
    // Read before the check: a whole index then means every block up to these checkpoints was matched whole.
    const checkpoints = await this.matcherCheckpoints(chainId);
    const checks = await withTimeout(verifyShards(this.redis, this.prefix, chainId, this.shards));
    const drifted = checks.flatMap((c) => (c.status === "drifted" ? [c] : []));
    if (drifted.length === 0) {
      if (checkpoints) this.lastGood.set(chainId, checkpoints);
      return [];
    }
    indexBehind.inc({ chain: chainId, repair: "verify" }, drifted.length);
    this.log.warn("watch index: shards lost keys outside the index's writers; rebuilding the chain", {
      chainId,
      shards: drifted.map((d) => ({ shard: d.shard, differs: d.what })),
    });
    await withTimeout(markStale(this.redis, this.prefix, chainId, this.shards));
    await this.rebuild([chainId]);
    await this.requestRematch(chainId);
    return drifted.map((d) => d.shard);
  }

  /**
   * The matcher's head and solidified checkpoints of the chain (its tables, in this database), or null when it has
   * none (not started yet, or not sharing this database: then nothing can be re-matched).
   */
  private async matcherCheckpoints(chainId: string): Promise<MatcherCheckpoints | null> {
    try {
      const [row] = (await this.db.execute(dsql`
        SELECT h.block_number AS head, (SELECT s.block_number FROM matcher_solidified_checkpoints s WHERE s.chain_id = h.chain_id) AS solid
        FROM matcher_checkpoints h WHERE h.chain_id = ${chainId}`)) as unknown as { head: number | string; solid: number | string | null }[];
      if (!row) return null;
      // No solidified checkpoint yet: from the oldest block that stream records, when it has one.
      return { head: Number(row.head), solid: row.solid === null ? -1 : Number(row.solid) };
    } catch (err) {
      this.log.debug("watch index: the matcher's checkpoints are not readable here; repairs cannot be re-matched", { err });
      return null;
    }
  }

  /**
   * After a repair, asks the matcher (watch_rematch_requests, matcher/rematch.ts) to match again the blocks it
   * processed since the last clean check, when there was one: they may have missed addresses the index lacked.
   */
  private async requestRematch(chainId: string): Promise<void> {
    const good = this.lastGood.get(chainId);
    if (!good) {
      this.log.warn("watch index repaired with no clean check before it: blocks matched meanwhile are not re-matched", { chainId });
      return;
    }
    try {
      await this.db.execute(
        dsql`INSERT INTO watch_rematch_requests (chain_id, head_from, solid_from) VALUES (${chainId}, ${good.head}, ${good.solid})`,
      );
      this.log.warn("watch index repaired: asked the matcher to re-match the blocks since its last clean check", {
        chainId,
        headFrom: good.head + 1,
        solidFrom: good.solid + 1,
      });
    } catch (err) {
      this.log.error("watch index repaired but the re-match could not be requested", { chainId, err });
    }
  }

  /**
   * Deletes the chain's applied outbox rows older than the retention, under the chain's lock (a replay reads them
   * under it), and raises the chain's pruned mark to the last position deleted.
   */
  async prune(chainId: string): Promise<number> {
    return this.db.transaction(async (tx) => {
      const [lock] = (await tx.execute(
        dsql`SELECT pg_try_advisory_xact_lock(hashtext('watch-outbox'), hashtext(${chainId})) AS ok`,
      )) as unknown as { ok: boolean }[];
      if (!lock?.ok) return 0;
      const cutoff = new Date(Date.now() - this.retentionMs);
      const [gone] = (await tx.execute(dsql`
        WITH gone AS (
          DELETE FROM watch_outbox WHERE chain_id = ${chainId} AND applied_position IS NOT NULL AND applied_at < ${cutoff}
          RETURNING applied_position
        ) SELECT count(*)::int AS n, max(applied_position) AS through FROM gone`)) as unknown as { n: number; through: number | string | null }[];
      if (gone && gone.through !== null) await raiseAppliedPositions(tx, chainId, new Map([[PRUNED_SHARD, Number(gone.through)]]));
      return gone?.n ?? 0;
    });
  }

  private async chainFree(chainId: string): Promise<boolean> {
    const reserved = await this.db.$client.reserve();
    try {
      const [row] = (await reserved`SELECT pg_try_advisory_lock(hashtext('watch-outbox'), hashtext(${chainId})) AS ok`) as { ok: boolean }[];
      if (row?.ok) await reserved`SELECT pg_advisory_unlock(hashtext('watch-outbox'), hashtext(${chainId}))`;
      return row?.ok === true;
    } finally {
      reserved.release();
    }
  }

  /** Rebuilds the chains that need it (at start, after FLUSHDB) and sweeps dead handles now and then. */
  async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const chains = await withTimeout(this.chainsToRebuild());
      if (chains.length > 0) {
        await this.rebuild(chains, { ifMissing: true });
        // A chain that had been checked whole lost its state since (keys deleted, a node restarted empty): blocks
        // matched in between may have missed addresses.
        for (const chainId of chains) if (this.lastGood.has(chainId)) await this.requestRematch(chainId);
        return;
      }
      for (const chainId of this.chains) await this.catchUp(chainId);
      if (Date.now() - this.lastVerify >= this.verifyMs) {
        for (const chainId of this.chains) await this.verify(chainId);
        this.lastVerify = Date.now();
      }
      if (Date.now() - this.lastPrune > PRUNE_INTERVAL_MS) {
        for (const chainId of this.chains) await this.prune(chainId);
        this.lastPrune = Date.now();
      }
      if (Date.now() - this.lastSweep > 5_000) {
        for (const chainId of this.chains) {
          const state = await readState(this.redis, this.prefix, chainId, this.shards);
          if (state.dead > 0) await sweepDeadHandles(this.redis, this.prefix, chainId, this.shards);
        }
        this.lastSweep = Date.now();
      }
    } catch (err) {
      this.log.warn("watch index upkeep: will retry", { err });
    } finally {
      this.ticking = false;
    }
  }

  start(intervalMs = 1_000): void {
    this.applier.start();
    if (this.timer) return;
    void this.tick();
    this.timer = setInterval(() => void this.tick(), intervalMs);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.applier.stop();
    await this.rebuilding?.catch(() => {});
    while (this.ticking) await Bun.sleep(10);
    await Promise.all(this.pending);
  }
}

