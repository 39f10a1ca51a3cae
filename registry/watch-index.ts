// The registry's side of the Redis watch index (layout and scripts: common/watch-index.ts). Changes reach it through
// the transactional outbox: written in the change's own transaction (registry/watch-outbox.ts), applied to Redis in
// order by one applier per chain (registry/watch-applier.ts). This module runs the appliers, the rebuild from
// PostgreSQL when a chain's index is missing, and the upkeep that notices that.
//
// There is one protocol for every failure. A registry killed between COMMIT and the Redis write, a Redis outage, a
// Redis write that timed out: the outbox row stays in PostgreSQL and is applied when an applier next gets to it. The
// index is never ahead of PostgreSQL (nothing is written to Redis before COMMIT), only behind it, by the rows not
// applied yet. Only a lost index (state.cur missing: never built, Redis restarted empty, FLUSHDB) needs a rebuild,
// and only of the chains that lost it.
//
// Rebuild and applier. A rebuild of chain C takes C's applier lock (registry/watch-applier.ts) first, so no row of C
// is applied while it runs; it then copies the subscriptions in ONE repeatable-read snapshot and, in that same
// snapshot, deletes C's outbox rows it can see. Those rows committed before the snapshot, so the copy already holds
// their effect; rows committed after it stay, and the applier applies them on top of the new generation once the lock
// is released, in their order. No row is applied twice over newer state, and none is missed.
import { sql as dsql } from "drizzle-orm";
import { TRON_CHAINS, type ChainId } from "../common/config.ts";
import type { Logger } from "../common/logger.ts";
import type { Redis } from "../common/redis.ts";
import {
  applyAddresses,
  beginBuild,
  dropGeneration,
  finishBuild,
  readState,
  setKeyState,
  sweepDeadHandles,
} from "../common/watch-index.ts";
import type { RegistryDb } from "./store.ts";
import {
  keyActiveOn,
  OutboxApplier,
  subscriptionMeta,
  withTimeout,
  type IndexedSubscription,
  type KeyState,
} from "./watch-applier.ts";
import { pgTextArray, type OutboxTicket } from "./watch-outbox.ts";

/**
 * How long a request waits for its outbox rows to be applied before it answers anyway: docs/CONTRACT.md "HTTP conventions"
 * says a write PostgreSQL accepted succeeds even when Redis is down (the row stays and is applied when Redis is back).
 * Tens of ms in normal operation; the bound only matters while a rebuild holds the chain. It runs after COMMIT, so
 * it is inside the allowance every write RPC's deadline keeps for what follows a COMMIT (common/deadlines.ts
 * writeRpcDeadline).
 */
const SETTLE_MS = 3_000;

export interface RebuildResult {
  addresses: number;
  subscriptions: number;
}

export interface WatchIndexOptions {
  /** The appliers' poll interval (watch-applier.ts POLL_MS). */
  pollMs?: number;
}

export class WatchIndex {
  readonly applier: OutboxApplier;
  private rebuilding: Promise<RebuildResult> | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
  private ticking = false;
  private lastSweep = 0;
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    readonly db: RegistryDb,
    readonly redis: Redis,
    readonly prefix: string,
    private readonly log: Logger,
    readonly chains: readonly ChainId[] = TRON_CHAINS,
    opts: WatchIndexOptions = {},
  ) {
    this.applier = new OutboxApplier(db, redis, prefix, log, chains, {
      pollMs: opts.pollMs,
      onMissing: () => void this.tick(),
    });
    // Failed commands are reported where they fail; the connection's own errors are only worth a debug line.
    redis.on("error", (err) => this.log.debug("watch index: redis connection error", { err }));
    // Back from an outage: apply what accumulated at once rather than at the next poll.
    redis.on("ready", () => {
      for (const chainId of this.chains) this.applier.kick(chainId);
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
        const state = await readState(this.redis, this.prefix, chainId);
        // Another replica may have rebuilt it while this one waited for the lock.
        if (ifMissing && state.cur && !state.stale && !state.next) continue;
        const { generation, abandoned } = await beginBuild(this.redis, this.prefix, chainId, state.stale);
        gens.set(chainId, generation);
        if (abandoned) await dropGeneration(this.redis, this.prefix, chainId, abandoned);
      }
      if (gens.size === 0) return { addresses: 0, subscriptions: 0 };

      const result = await this.copy(gens);

      for (const [chainId, generation] of gens) {
        const old = await finishBuild(this.redis, this.prefix, chainId, generation);
        if (old) this.background(dropGeneration(this.redis, this.prefix, chainId, old), "dropping an old generation");
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
   * Copies PostgreSQL into the building generations in one snapshot, and takes the outbox rows that snapshot covers
   * (see the header). Returns the counts and the ids of the rows taken.
   */
  private async copy(gens: Map<string, string>): Promise<RebuildResult & { taken: number[] }> {
    const chains = [...gens.keys()];
    return this.db.transaction(
      async (tx) => {
        const keys = (await tx.execute(
          dsql`SELECT id, chains, revoked_at IS NOT NULL AS revoked FROM api_keys`,
        )) as unknown as (KeyState & { id: string })[];
        for (const [chainId, generation] of gens) {
          await Promise.all(
            keys.map((k) => setKeyState(this.redis, { prefix: this.prefix, chainId, generation }, k.id, keyActiveOn(k, chainId))),
          );
        }
        const subs = (await tx.execute(dsql`
          SELECT s.id, s.key_id AS "keyId", s.status, s.events, s.match, k.chains, k.revoked_at IS NOT NULL AS revoked
          FROM subscriptions s JOIN api_keys k ON k.id = s.key_id
          WHERE EXISTS (SELECT 1 FROM subscription_addresses a WHERE a.subscription_id = s.id)`)) as unknown as (IndexedSubscription & KeyState)[];
        let addresses = 0;
        let subscriptions = 0;
        for (const sub of subs) {
          const rows = (await tx.execute(dsql`
            SELECT chain_id AS "chainId", address FROM subscription_addresses
            WHERE subscription_id = ${sub.id} AND chain_id = ANY(${pgTextArray(chains)}::text[]) ORDER BY seq`)) as unknown as {
            chainId: string;
            address: string;
          }[];
          const byChain = new Map<string, string[]>();
          for (const r of rows) {
            let list = byChain.get(r.chainId);
            if (!list) byChain.set(r.chainId, (list = []));
            list.push(r.address);
          }
          for (const [chainId, add] of byChain) {
            await applyAddresses(
              this.redis,
              { prefix: this.prefix, chainId, generation: gens.get(chainId)! },
              subscriptionMeta(sub),
              keyActiveOn(sub, chainId),
              { add, remove: [] },
            );
          }
          if (rows.length > 0) subscriptions++;
          addresses += rows.length;
        }
        const taken = (await tx.execute(
          dsql`DELETE FROM watch_outbox WHERE chain_id = ANY(${pgTextArray(chains)}::text[]) RETURNING id`,
        )) as unknown as { id: number | string }[];
        return { addresses, subscriptions, taken: taken.map((r) => Number(r.id)) };
      },
      { isolationLevel: "repeatable read" },
    );
  }

  // ---- upkeep -------------------------------------------------------------------------------------------------

  /** The chains whose index must be rebuilt: missing (never built, emptied), stale, or a build whose builder died. */
  async chainsToRebuild(): Promise<string[]> {
    const out: string[] = [];
    for (const chainId of this.chains) {
      const state = await readState(this.redis, this.prefix, chainId);
      if (!state.cur || state.stale) out.push(chainId);
      // A build nobody is running (its process died while holding the chain lock, which died with it).
      else if (state.next && !this.rebuilding && (await this.chainFree(chainId))) out.push(chainId);
    }
    return out;
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
        return;
      }
      if (Date.now() - this.lastSweep > 5_000) {
        for (const chainId of this.chains) {
          const state = await readState(this.redis, this.prefix, chainId);
          if (state.dead > 0) await sweepDeadHandles(this.redis, this.prefix, chainId);
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

