// The registry's watch index: applier, rebuild and upkeep behind the one object it starts and stops (README.md).
import { TRON_CHAINS, type ChainId } from "../../common/contract/index.ts";
import type { Logger } from "../../common/logger.ts";
import type { Redis } from "../../common/redis.ts";
import { DEFAULT_SHARDS, watchIndexHandle, type WatchIndexHandle } from "../../common/watch-index/layout.ts";
import type { RegistryDb } from "../db/connection.ts";
import { OutboxApplier } from "./applier.ts";
import type { OutboxTicket } from "./outbox.ts";
import { rebuildChains, type RebuildResult } from "./rebuild.ts";
import { Upkeep } from "./upkeep.ts";

export type { RebuildResult } from "./rebuild.ts";

/**
 * How long a request waits for its outbox rows to be applied before it answers anyway: docs/CONTRACT.md "HTTP conventions"
 * says a write PostgreSQL accepted succeeds even when Redis is down (the row stays and is applied when Redis is back).
 * Tens of ms in normal operation; the bound only matters while a rebuild holds the chain. It runs after COMMIT, so
 * it is inside the allowance every write RPC's deadline keeps for what follows a COMMIT (common/deadlines.ts
 * writeRpcDeadline).
 */
const SETTLE_MS = 3_000;

export interface WatchIndexOptions {
  /** The appliers' poll interval (applier.ts POLL_MS). */
  pollMs?: number;
  /** WATCH_INDEX_SHARDS (config.watchIndexShards); default DEFAULT_SHARDS. */
  shards?: number;
  /** WATCH_OUTBOX_RETENTION_MS (config.watchOutboxRetentionMs): how long applied outbox rows are kept for replays. */
  retentionMs?: number;
  /** WATCH_INDEX_VERIFY_MS (config.watchIndexVerifyMs): how often every shard is checked (verify). */
  verifyMs?: number;
}

export class WatchIndex {
  readonly applier: OutboxApplier;
  readonly shards: number;
  private readonly upkeep: Upkeep;
  /** When the upkeep last checked every shard (0: not yet; the first check follows the start's rebuild). */
  get verifiedAt(): number {
    return this.upkeep.verifiedAt;
  }
  private readonly handles = new Map<string, WatchIndexHandle>();
  private rebuilding: Promise<RebuildResult> | undefined;
  private timer: ReturnType<typeof setInterval> | undefined;
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
    const index = (chainId: string) => this.index(chainId);
    this.applier = new OutboxApplier(db, index, log, chains, {
      pollMs: opts.pollMs,
      onMissing: () => void this.tick(),
    });
    this.upkeep = new Upkeep({
      db,
      index,
      chains,
      applier: this.applier,
      log,
      rebuild: (c, o) => this.rebuild(c, o),
      rebuilding: () => this.rebuilding !== undefined,
      retentionMs: opts.retentionMs ?? 3_600_000,
      verifyMs: opts.verifyMs ?? 60_000,
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

  /** The chain's index in Redis (one handle per chain). */
  index(chainId: string): WatchIndexHandle {
    let h = this.handles.get(chainId);
    if (!h) this.handles.set(chainId, (h = watchIndexHandle(this.redis, { prefix: this.prefix, chainId, shards: this.shards })));
    return h;
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

  /** Rebuilds chains from PostgreSQL (one rebuild at a time per process; across replicas the chain locks serialize). */
  rebuild(chains: readonly string[] = this.chains, opts: { ifMissing?: boolean } = {}): Promise<RebuildResult> {
    const wanted = this.chains.filter((c) => chains.includes(c));
    const deps = {
      db: this.db,
      index: (chainId: string) => this.index(chainId),
      shards: this.shards,
      applier: this.applier,
      log: this.log,
      background: (work: Promise<unknown>, what: string) => this.background(work, what),
    };
    const run = (this.rebuilding ?? Promise.resolve()).catch(() => {}).then(() => rebuildChains(deps, wanted, opts.ifMissing ?? false));
    this.rebuilding = run;
    return run.finally(() => {
      if (this.rebuilding === run) this.rebuilding = undefined;
    });
  }

  /** Checks the chain's shards and repairs drift (upkeep.ts verify); returns the drifted shards. */
  verify(chainId: string): Promise<number[]> {
    return this.upkeep.verify(chainId);
  }

  /** Deletes the chain's applied outbox rows past the retention (upkeep.ts prune); returns how many. */
  prune(chainId: string): Promise<number> {
    return this.upkeep.prune(chainId);
  }

  /** One round of upkeep now (upkeep.ts tick). */
  tick(): Promise<void> {
    return this.upkeep.tick();
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
    while (this.upkeep.busy) await Bun.sleep(10);
    await Promise.all(this.pending);
  }
}
