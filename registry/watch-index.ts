// The registry's side of the Redis watch index (layout and scripts: common/watch-index.ts): write-through of every
// change, the rebuild from PostgreSQL, and the watchdog that notices a missing or stale index.
//
// Ordering: address writes reach Redis inside the PostgreSQL transaction, under the subscription's row lock, so two
// writers of one subscription can never land in Redis in the opposite order of their commits. Status, kind and key
// changes (committed by registry/service.ts before its hooks run) are re-read under a FOR SHARE lock and written from
// that latest state. The rebuild copies each subscription under FOR SHARE too, while writers write to both the
// served and the building generation, so a change made during a rebuild is never lost (see the header of
// common/watch-index.ts for generations and for why lookups wait while the index is not ready).
//
// Redis down while PostgreSQL accepts a write: the write still commits (PostgreSQL is the truth), the failure is
// recorded durably in PostgreSQL (app_settings row "watch_index_dirty"), and the watchdog, as soon as Redis answers,
// marks every chain stale (lookups wait) and rebuilds. A transaction that rolls back after its Redis write is
// recorded the same way by its caller (registry/addresses.ts).
//
// A process that dies between its Redis write and its COMMIT (or between a COMMIT and the hook that writes it
// through) records nothing, and the index would disagree with PostgreSQL unseen: a removal that never committed
// makes the matcher miss the address. So every such write is announced first (a write intent in Redis, removed once
// the outcome is known), and the watchdog, every tick and at start, takes an intent older than INTENT_MAX_AGE_MS as
// a writer that died: it marks every chain stale (lookups wait from then on) and rebuilds. If Redis cannot take the
// intent, the failure is recorded as above, so the change is covered either way.
import { randomUUID } from "node:crypto";
import { sql as dsql } from "drizzle-orm";
import { TRON_CHAINS, type ChainId } from "../common/config.ts";
import type { Logger } from "../common/logger.ts";
import type { Redis } from "../common/redis.ts";
import {
  applyAddresses,
  beginBuild,
  beginIntent,
  dropGeneration,
  dropSubscription,
  endIntents,
  finishBuild,
  markStale,
  oldIntents,
  readState,
  setKeyState,
  setSubscriptionMeta,
  sweepDeadHandles,
  type AddressChange,
  type SubscriptionMeta,
} from "../common/watch-index.ts";
import type { MatchConditions } from "../common/match-conditions.ts";
import type { SubscriptionRow } from "./schema.ts";
import type { RegistryDb } from "./store.ts";
import type { WatchHooks } from "./watch-hooks.ts";

const DIRTY = "watch_index_dirty";
/** A Redis call that takes longer is treated as failed (the index is then rebuilt). */
const REDIS_TIMEOUT_MS = 3_000;
/**
 * An intent older than this belongs to a writer that died. A live one ends well before: an address change's
 * transaction has a 9 s deadline (4 s for other calls) and a hook's Redis writes time out after 3 s each, so 30 s
 * leaves a wide margin. A transaction that hangs past it anyway only costs a spare rebuild (the rebuild waits for
 * its row lock); the price of the margin is that, after such a death, lookups may see a change that never committed
 * for that long.
 */
export const INTENT_MAX_AGE_MS = 30_000;

function withTimeout<T>(p: Promise<T>, ms = REDIS_TIMEOUT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("redis call timed out")), ms);
  });
  p.catch(() => {});
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

export interface KeyState {
  chains: string[];
  revoked: boolean;
}

export function keyActiveOn(key: KeyState, chainId: string): boolean {
  return !key.revoked && key.chains.includes(chainId);
}

/** The columns the index carries per subscription; `match` as drizzle reads it or as a raw query returns jsonb. */
export interface IndexedSubscription {
  id: string;
  keyId: string;
  status: string;
  events: string[];
  match: MatchConditions | string;
}

export function subscriptionMeta(row: IndexedSubscription): SubscriptionMeta {
  const match = typeof row.match === "string" ? (JSON.parse(row.match) as MatchConditions) : row.match;
  return { id: row.id, keyId: row.keyId, enabled: row.status === "enabled", events: row.events, match };
}

export interface WatchIndexOptions {
  /** INTENT_MAX_AGE_MS unless a test wants the watchdog to give up on intents sooner. */
  intentMaxAgeMs?: number;
}

export interface RebuildResult {
  addresses: number;
  subscriptions: number;
}

function pgTextArray(values: readonly string[]): string {
  // Only validated values (chain ids, base58 addresses, ids) ever go through here: no quoting needed.
  return `{${values.join(",")}}`;
}

export class WatchIndex {
  private rebuilding: Promise<RebuildResult> | undefined;
  /** Bumped on each write-through failure; a rebuild that saw an older value goes again. */
  private failures = 0;
  /** The failure count the last finished rebuild started from (failures up to it are repaired). */
  private failuresCovered = 0;
  private needsRebuild = false;
  private timer: ReturnType<typeof setInterval> | undefined;
  private ticking = false;
  private lastSweep = 0;
  private readonly pending = new Set<Promise<unknown>>();
  private readonly intentMaxAgeMs: number;

  constructor(
    readonly db: RegistryDb,
    readonly redis: Redis,
    readonly prefix: string,
    private readonly log: Logger,
    readonly chains: readonly ChainId[] = TRON_CHAINS,
    opts: WatchIndexOptions = {},
  ) {
    this.intentMaxAgeMs = opts.intentMaxAgeMs ?? INTENT_MAX_AGE_MS;
    // Back from an outage during which a write failed: make lookups wait at once, before the watchdog's next tick
    // starts the rebuild, so a reader never trusts the index that missed the write.
    // Failed commands are reported where they fail; the connection's own errors are only worth a debug line.
    redis.on("error", (err) => this.log.debug("watch index: redis connection error", { err }));
    redis.on("ready", () => {
      if (!this.needsRebuild) return;
      for (const chainId of this.chains) void markStale(redis, prefix, chainId).catch(() => {});
    });
  }

  // ---- write-through ------------------------------------------------------------------------------------------

  /**
   * Records a write intent before the first Redis write whose transaction has not committed (or whose change commits
   * before its hook writes it). Resolves to its token, or to null when Redis would not take it: the failure is then
   * recorded instead, the rebuild will bring the change in, and the caller may skip its writes.
   */
  async announce(): Promise<string | null> {
    const token = randomUUID();
    try {
      await withTimeout(beginIntent(this.redis, this.prefix, token));
      return token;
    } catch (err) {
      await this.recordFailure("write intent", err);
      return null;
    }
  }

  /**
   * Removes an intent once its transaction committed or rolled back (a rollback after a write is recorded by the
   * caller first). Best effort: an intent left over only costs a spare rebuild.
   */
  async withdraw(token: string | null): Promise<void> {
    if (token === null) return;
    await withTimeout(endIntents(this.redis, this.prefix, [token]), 500).catch((err) =>
      this.log.debug("watch index: could not remove a write intent", { err }),
    );
  }

  /**
   * Writes one subscription's address change on one chain. Call it inside the transaction that holds the
   * subscription's row lock, before COMMIT. Never throws for Redis: a failure is recorded and the index rebuilt.
   */
  async writeAddresses(
    meta: SubscriptionMeta,
    key: KeyState,
    chainId: string,
    change: AddressChange,
  ): Promise<void> {
    try {
      const wrote = await withTimeout(
        applyAddresses(this.redis, { prefix: this.prefix, chainId }, meta, keyActiveOn(key, chainId), change),
        REDIS_TIMEOUT_MS + Math.ceil((change.add.length + change.remove.length) / 10),
      );
      if (!wrote) this.needsRebuild = true;
    } catch (err) {
      await this.recordFailure("address write", err);
    }
  }

  /**
   * Records a write-through failure durably. On its own connection, not the caller's transaction: a marker left by
   * a transaction that then rolls back only costs a spare rebuild, while a statement failing inside the caller's
   * transaction would abort the change itself.
   */
  async recordFailure(what: string, err: unknown): Promise<void> {
    this.failures++;
    this.needsRebuild = true;
    this.log.warn("watch index write failed; PostgreSQL keeps the change and the index will be rebuilt", { what, err });
    const ex = this.db;
    try {
      await ex.execute(
        dsql`INSERT INTO app_settings (name, value) VALUES (${DIRTY}, ${String(Date.now())}) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`,
      );
    } catch (e) {
      this.log.error("could not record the watch index failure in PostgreSQL", { err: e });
    }
    // Lookups must not trust the index until it is rebuilt; Redis may well be down, so this is best effort.
    for (const chainId of this.chains) {
      await withTimeout(markStale(this.redis, this.prefix, chainId), 500).catch(() => {});
    }
  }

  /** Status, kinds, match conditions: re-read under FOR SHARE and written from that state. */
  async subscriptionChanged(id: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const rows = (await tx.execute(
        dsql`SELECT id, key_id AS "keyId", status, events, match FROM subscriptions WHERE id = ${id} FOR SHARE`,
      )) as unknown as IndexedSubscription[];
      const row = rows[0];
      if (!row) return;
      try {
        for (const chainId of this.chains) {
          await withTimeout(setSubscriptionMeta(this.redis, { prefix: this.prefix, chainId }, subscriptionMeta(row)));
        }
      } catch (err) {
        await this.recordFailure("subscription meta", err);
      }
    });
  }

  async subscriptionDeleted(id: string): Promise<void> {
    try {
      for (const chainId of this.chains) {
        await withTimeout(dropSubscription(this.redis, { prefix: this.prefix, chainId }, id));
      }
    } catch (err) {
      await this.recordFailure("subscription delete", err);
    }
  }

  async keyChanged(keyId: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      const rows = (await tx.execute(
        dsql`SELECT chains, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE id = ${keyId} FOR SHARE`,
      )) as unknown as KeyState[];
      const key = rows[0];
      if (!key) return;
      try {
        for (const chainId of this.chains) {
          await withTimeout(setKeyState(this.redis, { prefix: this.prefix, chainId }, keyId, keyActiveOn(key, chainId)));
        }
      } catch (err) {
        await this.recordFailure("key change", err);
      }
    });
  }

  hooks(): WatchHooks {
    return {
      announce: async () => {
        const token = await this.announce();
        return token === null ? null : () => this.withdraw(token);
      },
      subscriptionChanged: (row: SubscriptionRow) => this.subscriptionChanged(row.id),
      subscriptionDeleted: (row: SubscriptionRow) => this.subscriptionDeleted(row.id),
      keyChanged: (keyId: string) => this.keyChanged(keyId),
    };
  }

  /** Work nobody waits for (dropping an old generation); close() still waits for it. */
  private background(work: Promise<unknown>, what: string): void {
    const p = work.catch((err) => this.log.warn(`watch index: ${what} failed`, { err }));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  // ---- rebuild ------------------------------------------------------------------------------------------------

  /** Rebuilds from PostgreSQL (one at a time per process; across replicas an advisory lock serializes them). */
  rebuild(chains: readonly string[] = this.chains, opts: { ifNeeded?: boolean } = {}): Promise<RebuildResult> {
    const wanted = this.chains.filter((c) => chains.includes(c));
    const run = (this.rebuilding ?? Promise.resolve()).catch(() => {}).then(() => this.rebuildNow(wanted, opts.ifNeeded ?? false));
    this.rebuilding = run;
    return run.finally(() => {
      if (this.rebuilding === run) this.rebuilding = undefined;
    });
  }

  private async readDirty(): Promise<string | null> {
    try {
      const rows = (await this.db.execute(dsql`SELECT value FROM app_settings WHERE name = ${DIRTY}`)) as unknown as { value: string }[];
      return rows[0]?.value ?? null;
    } catch {
      return null; // no app_settings table yet: nothing recorded
    }
  }

  private async rebuildNow(chains: readonly string[], ifNeeded: boolean): Promise<RebuildResult> {
    const started = Date.now();
    const failuresAtStart = this.failures;
    const reserved = await this.db.$client.reserve();
    try {
      await reserved`SELECT pg_advisory_lock(hashtext('watch-index-rebuild'))`;
      // Another replica may have rebuilt while this one waited for the lock.
      if (ifNeeded && !(await this.needsRebuilding(true))) return { addresses: 0, subscriptions: 0 };
      this.needsRebuild = false;
      const dirty = await this.readDirty();
      const gens = new Map<string, string>();
      for (const chainId of chains) {
        const state = await readState(this.redis, this.prefix, chainId);
        // After a failed write the current generation missed something: lookups wait until this build is done.
        const stale = dirty !== null || state.stale || failuresAtStart > this.failuresCovered;
        const { generation, abandoned } = await beginBuild(this.redis, this.prefix, chainId, stale);
        gens.set(chainId, generation);
        if (abandoned) await dropGeneration(this.redis, this.prefix, chainId, abandoned);
      }

      await this.db.transaction(async (tx) => {
        const keys = (await tx.execute(
          dsql`SELECT id, chains, revoked_at IS NOT NULL AS revoked FROM api_keys FOR SHARE`,
        )) as unknown as (KeyState & { id: string })[];
        for (const [chainId, generation] of gens) {
          await Promise.all(
            keys.map((k) => setKeyState(this.redis, { prefix: this.prefix, chainId, generation }, k.id, keyActiveOn(k, chainId))),
          );
        }
      });

      const ids = (await this.db.execute(
        dsql`SELECT DISTINCT subscription_id AS id FROM subscription_addresses`,
      )) as unknown as { id: string }[];
      let addresses = 0;
      let subscriptions = 0;
      for (const { id } of ids) {
        const n = await this.copySubscription(id, gens);
        if (n > 0) subscriptions++;
        addresses += n;
      }

      for (const [chainId, generation] of gens) {
        const old = await finishBuild(this.redis, this.prefix, chainId, generation);
        if (old) this.background(dropGeneration(this.redis, this.prefix, chainId, old), "dropping an old generation");
      }
      if (dirty !== null) {
        await this.db.execute(dsql`DELETE FROM app_settings WHERE name = ${DIRTY} AND value = ${dirty}`);
      }
      this.failuresCovered = failuresAtStart;
      if (this.failures !== failuresAtStart) this.needsRebuild = true;
      this.log.info("watch index rebuilt", { chains, addresses, subscriptions, ms: Date.now() - started });
      return { addresses, subscriptions };
    } finally {
      await reserved`SELECT pg_advisory_unlock(hashtext('watch-index-rebuild'))`.catch(() => {});
      reserved.release();
    }
  }

  /** Copies one subscription into the building generations under FOR SHARE; returns its address count. */
  private async copySubscription(id: string, gens: Map<string, string>): Promise<number> {
    return this.db.transaction(async (tx) => {
      const subs = (await tx.execute(
        dsql`SELECT s.id, s.key_id AS "keyId", s.status, s.events, s.match, k.chains, k.revoked_at IS NOT NULL AS revoked
             FROM subscriptions s JOIN api_keys k ON k.id = s.key_id WHERE s.id = ${id} FOR SHARE OF s`,
      )) as unknown as (IndexedSubscription & KeyState)[];
      const sub = subs[0];
      if (!sub) return 0;
      const rows = (await tx.execute(
        dsql`SELECT chain_id AS "chainId", address FROM subscription_addresses WHERE subscription_id = ${id} ORDER BY seq`,
      )) as unknown as { chainId: string; address: string }[];
      const byChain = new Map<string, string[]>();
      for (const r of rows) {
        if (!gens.has(r.chainId)) continue;
        let list = byChain.get(r.chainId);
        if (!list) byChain.set(r.chainId, (list = []));
        list.push(r.address);
      }
      let n = 0;
      for (const [chainId, add] of byChain) {
        await applyAddresses(
          this.redis,
          { prefix: this.prefix, chainId, generation: gens.get(chainId)! },
          subscriptionMeta(sub),
          keyActiveOn(sub, chainId),
          { add, remove: [] },
        );
        n += add.length;
      }
      return n;
    });
  }

  // ---- watchdog -----------------------------------------------------------------------------------------------

  /** Is any chain's index missing, stale or recorded dirty? */
  async needsRebuilding(lockHeld = false): Promise<boolean> {
    if (this.needsRebuild) return true;
    if ((await this.readDirty()) !== null) return true;
    let building = false;
    for (const chainId of this.chains) {
      const state = await readState(this.redis, this.prefix, chainId);
      if (!state.cur || state.stale) return true;
      if (state.next) building = true;
    }
    // A build nobody is running (its process died) would have writers feed an orphan generation forever.
    if (!building) return false;
    return lockHeld || (!this.rebuilding && (await this.nobodyRebuilding()));
  }

  private async nobodyRebuilding(): Promise<boolean> {
    const reserved = await this.db.$client.reserve();
    try {
      const [row] = (await reserved`SELECT pg_try_advisory_lock(hashtext('watch-index-rebuild')) AS ok`) as { ok: boolean }[];
      if (row?.ok) await reserved`SELECT pg_advisory_unlock(hashtext('watch-index-rebuild'))`;
      return row?.ok === true;
    } finally {
      reserved.release();
    }
  }

  /**
   * Intents nobody removed in time: their writers died, maybe after writing Redis and before COMMIT. Lookups wait
   * from here on and the rebuild repairs the index. The stale marks are in Redis before the intents go, so a crash in
   * between still leaves one or the other for the next watchdog.
   */
  async repairAbandonedWrites(): Promise<number> {
    const tokens = await oldIntents(this.redis, this.prefix, this.intentMaxAgeMs);
    if (tokens.length === 0) return 0;
    this.log.warn("watch index: writes were left unfinished by a registry that died; rebuilding", { intents: tokens.length });
    for (const chainId of this.chains) await markStale(this.redis, this.prefix, chainId);
    await endIntents(this.redis, this.prefix, tokens);
    return tokens.length;
  }

  /**
   * Rebuilds when needed (at start, after FLUSHDB, a Redis outage or a writer's death) and sweeps dead handles now
   * and then.
   */
  async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      await withTimeout(this.repairAbandonedWrites());
      if (await withTimeout(this.needsRebuilding())) {
        await this.rebuild(this.chains, { ifNeeded: true });
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
      this.log.warn("watch index watchdog: will retry", { err });
    } finally {
      this.ticking = false;
    }
  }

  start(intervalMs = 1_000): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), intervalMs);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.rebuilding?.catch(() => {});
    while (this.ticking) await Bun.sleep(10);
    await Promise.all(this.pending);
  }
}

export { pgTextArray };
