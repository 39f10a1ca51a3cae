// Applies each chain's outbox rows to Redis in order, with positions; replays what a Redis lost (README.md "Applier").
import { sql } from "drizzle-orm";
import type { Logger } from "../../common/logger.ts";
import { withTimeout } from "../../common/timing.ts";
import { readPositions } from "../../common/watch-index/generations.ts";
import type { SubscriptionMeta, WatchIndexHandle } from "../../common/watch-index/layout.ts";
import { allocatePositions, raiseAppliedPositions, readAppliedPositions } from "../../common/watch-index/positions.ts";
import {
  applyAddresses,
  dropSubscription,
  raisePositions,
  setKeyState,
  setSubscriptionMeta,
  type WriteAt,
} from "../../common/watch-index/writer.ts";
import type { MatchConditions } from "../../common/match-conditions.ts";
import type { RegistryDb } from "../db/connection.ts";
import { tryChainLock } from "./chain-lock.ts";
import { pgTextArray, type AddressPayload, type OutboxTicket } from "./outbox.ts";
import { untilApplied } from "./settle.ts";

/** Rows applied per transaction. */
const BATCH = 200;
/** A Redis call that takes longer is treated as failed (the batch is rolled back and applied again later). */
const REDIS_TIMEOUT_MS = 3_000;
/** How often a chain's outbox is looked at without a kick (rows of other replicas and of `bun run keys`). */
export const POLL_MS = 250;
/** After a failure (Redis down), the pause before the next try. */
const RETRY_MS = 500;

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

/** A Redis call bounded by REDIS_TIMEOUT_MS (or `ms`): a hung Redis fails the pass instead of stalling it. */
export function redisTimeout<T>(p: Promise<T>, ms = REDIS_TIMEOUT_MS): Promise<T> {
  return withTimeout(p, ms, () => new Error("redis call timed out"));
}

/** A row of the batch statement: the outbox row and its subject's state (null when it is gone). */
interface BatchRow {
  id: number | string;
  kind: string;
  subscriptionId: string | null;
  keyId: string | null;
  add: string[] | null;
  remove: string[] | null;
  subId: string | null;
  subKeyId: string | null;
  status: string | null;
  events: string[] | null;
  match: IndexedSubscription["match"] | null;
  chains: string[] | null;
  revoked: boolean | null;
  foundKeyId: string | null;
  appliedPosition: number | string | null;
}

type BatchResult = { status: "busy" } | { status: "done"; ids: number[]; missing: boolean };

/** What a replay did: nothing to do, shards brought up to PostgreSQL, another replica holds the chain, or rows gone. */
export type ReplayResult =
  | { status: "current" | "busy" }
  | { status: "replayed"; shards: number[]; rows: number }
  | { status: "pruned"; shards: number[] };

/** Rows of the chain with their subjects' state, selected by `where` (on the outbox row `o`) in `order`. */
function selectRows(tx: Executor, cached: readonly string[], from: ReturnType<typeof sql>): Promise<BatchRow[]> {
  return tx.execute(sql`
        SELECT o.id, o.kind, o.subscription_id AS "subscriptionId", o.key_id AS "keyId",
               o.applied_position AS "appliedPosition",
               CASE WHEN o.id = ANY(${pgTextArray(cached)}::bigint[]) THEN NULL ELSE o."add" END AS "add",
               CASE WHEN o.id = ANY(${pgTextArray(cached)}::bigint[]) THEN NULL ELSE o."remove" END AS "remove",
               s.id AS "subId", s.key_id AS "subKeyId", s.status, s.events, s.match,
               k.chains, k.revoked_at IS NOT NULL AS revoked, k.id AS "foundKeyId"
        FROM (${from}) o
        LEFT JOIN subscriptions s ON s.id = o.subscription_id
        LEFT JOIN api_keys k ON k.id = COALESCE(s.key_id, o.key_id)
        ORDER BY o.applied_position NULLS LAST, o.id`) as unknown as Promise<BatchRow[]>;
}

type Executor = Parameters<Parameters<RegistryDb["transaction"]>[0]>[0];

export interface ApplierOptions {
  pollMs?: number;
  /** A write found no generation of the chain (never built, or Redis emptied): it needs a rebuild. */
  onMissing?: (chainId: string) => void;
}

export class OutboxApplier {
  private stopped = true;
  private readonly wakers = new Map<string, () => void>();
  private readonly kicked = new Set<string>();
  private readonly loops: Promise<void>[] = [];
  /** Failed batches per chain: a waiter that sees one after its commit stops waiting. */
  private readonly failures = new Map<string, number>();
  private readonly failing = new Set<string>();
  private readonly waiters = new Map<number, () => void>();
  /** Address arrays of rows this process wrote and waits for (OutboxTicket.payloads). */
  private readonly payloads = new Map<number, AddressPayload>();
  private readonly pollMs: number;

  constructor(
    private readonly db: RegistryDb,
    /** The chain's index (one handle per chain, shared with the rebuild and the upkeep). */
    private readonly index: (chainId: string) => WatchIndexHandle,
    private readonly log: Logger,
    private readonly chains: readonly string[],
    private readonly opts: ApplierOptions = {},
  ) {
    this.pollMs = opts.pollMs ?? POLL_MS;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    for (const chainId of this.chains) this.loops.push(this.loop(chainId));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const wake of this.wakers.values()) wake();
    await Promise.all(this.loops.splice(0));
  }

  /** Look at the chain's outbox now (a row was just committed). */
  kick(chainId: string): void {
    this.kicked.add(chainId);
    this.wakers.get(chainId)?.();
  }

  /** Rows now in Redis (applied here, or taken in by a rebuild): their waiters are done. */
  settled(ids: readonly number[]): void {
    for (const id of ids) {
      this.waiters.get(id)?.();
      this.waiters.delete(id);
    }
  }

  /**
   * Waits until every row of `ticket` has been applied (true), or the budget ran out or an applier of one of its
   * chains failed after the call began (false: the rows stay and are applied later).
   */
  async settle(ticket: OutboxTicket, budgetMs: number): Promise<boolean> {
    if (ticket.ids.length === 0) return true;
    for (const [id, payload] of ticket.payloads ?? []) this.payloads.set(id, payload);
    const pending = new Set(ticket.ids);
    const failuresAtStart = ticket.chains.map((c) => this.failures.get(c) ?? 0);
    const done = ticket.ids.map(
      (id) =>
        new Promise<void>((resolve) =>
          this.waiters.set(id, () => {
            pending.delete(id);
            resolve();
          }),
        ),
    );
    for (const chainId of ticket.chains) this.kick(chainId);
    try {
      return await untilApplied(this.db, ticket.ids, {
        budgetMs,
        askEvery: 4,
        local: { pending, done: Promise.all(done) },
        givenUp: () => ticket.chains.some((c, i) => (this.failures.get(c) ?? 0) > failuresAtStart[i]!),
      });
    } finally {
      for (const id of ticket.ids) {
        this.waiters.delete(id);
        this.payloads.delete(id);
      }
    }
  }

  private async loop(chainId: string): Promise<void> {
    while (!this.stopped) {
      this.kicked.delete(chainId);
      let pause = this.pollMs;
      try {
        await this.drain(chainId);
        if (this.failing.delete(chainId)) this.log.info("watch index outbox: applying again", { chainId });
      } catch (err) {
        this.failures.set(chainId, (this.failures.get(chainId) ?? 0) + 1);
        // Said once per outage, not at every retry.
        const level = this.failing.has(chainId) ? "debug" : "warn";
        this.failing.add(chainId);
        this.log[level]("watch index outbox: applying failed; the rows stay and are applied later", { chainId, err });
        pause = RETRY_MS;
      }
      if (this.stopped) break;
      if (this.kicked.has(chainId) && pause === this.pollMs) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pause);
        this.wakers.set(chainId, () => {
          clearTimeout(timer);
          resolve();
        });
      });
      this.wakers.delete(chainId);
    }
  }

  /** Applies the chain's rows until none are left (or another replica holds the chain). */
  async drain(chainId: string): Promise<void> {
    for (;;) {
      const result = await this.applyBatch(chainId);
      if (result.status === "busy") return;
      if (result.missing) this.opts.onMissing?.(chainId);
      if (result.ids.length < BATCH) return;
    }
  }

  /**
   * One batch in one transaction: the chain's lock; its first pending rows with the state PostgreSQL holds now for them
   * (meta and key rows are applied from it, address rows carry it along) in one statement; their positions; then the
   * Redis writes; then the marks and the shards' positions. The waiters of the rows are let go as soon as Redis holds
   * them, before the marks commit: should that fail, the rows are applied again, which changes nothing (README.md "Applier").
   */
  private applyBatch(chainId: string): Promise<BatchResult> {
    return this.db.transaction(async (tx): Promise<BatchResult> => {
      // Taken now: a waiter that gives up drops its payloads, and this batch must still have the ones it did not read.
      const known = new Map(this.payloads);
      const cached = [...known.keys()].map(String);
      // The lock first, in its own statement: the rows are then read with a snapshot taken while it is held. Read in
      // the same statement, they would come from a snapshot taken before the lock was granted, and could include
      // rows another replica applied in between (and re-apply them over its newer writes).
      if (!(await tryChainLock(tx, chainId))) return { status: "busy" };
      const rows = await selectRows(
        tx,
        cached,
        sql`SELECT * FROM watch_outbox WHERE chain_id = ${chainId} AND applied_position IS NULL ORDER BY id LIMIT ${BATCH}`,
      );
      if (rows.length === 0) return { status: "done", ids: [], missing: false };

      const positions = await allocatePositions(tx, rows.length);
      let missing = false;
      const shardPositions = new Map<number, number>();
      for (const [i, row] of rows.entries()) {
        const position = positions[i]!;
        const applied = await this.applyRow(chainId, row, { position }, known);
        for (const shard of applied.touched) shardPositions.set(shard, position);
        // No generation to write to: the chain must be rebuilt, and that rebuild reads PostgreSQL after this
        // transaction (it waits for this chain's lock), so the row may be marked.
        if (!applied.wrote) missing = true;
      }
      const ids = rows.map((r) => Number(r.id));
      this.settled(ids);
      await tx.execute(sql`
        UPDATE watch_outbox o SET applied_position = v.p, applied_at = now()
        FROM unnest(${pgTextArray(ids.map(String))}::bigint[], ${pgTextArray(positions.map(String))}::bigint[]) AS v(id, p)
        WHERE o.id = v.id`);
      await raiseAppliedPositions(tx, chainId, shardPositions);
      return { status: "done", ids, missing };
    });
  }

  /**
   * Writes one row's change to Redis at `position` (on `onlyShards` if given). Returns whether every shard it wrote
   * had a generation, and the shards it touched (none for a row whose subject is gone).
   */
  private async applyRow(
    chainId: string,
    row: BatchRow,
    at: WriteAt & { position: number },
    known: ReadonlyMap<number, AddressPayload> = new Map(),
  ): Promise<{ wrote: boolean; touched: number[] }> {
    const index = this.index(chainId);
    const every = index.all.map((s) => s.shard);
    const within = (list: number[]) => (at.onlyShards ? list.filter((s) => at.onlyShards!.has(s)) : list);
    // The subscription (or key) as PostgreSQL holds it now; absent: deleted since, and its drop row follows.
    const sub: (IndexedSubscription & KeyState) | null =
      row.subId === null
        ? null
        : { id: row.subId, keyId: row.subKeyId!, status: row.status!, events: row.events!, match: row.match!, chains: row.chains!, revoked: row.revoked! };
    if (row.kind === "addresses") {
      if (!sub) return { wrote: true, touched: [] };
      const payload = known.get(Number(row.id)) ?? { add: row.add ?? [], remove: row.remove ?? [] };
      const size = payload.add.length + payload.remove.length;
      const wrote = await redisTimeout(
        applyAddresses(index, subscriptionMeta(sub), keyActiveOn(sub, chainId), payload, at),
        REDIS_TIMEOUT_MS + Math.ceil(size / 10),
      );
      return { wrote, touched: within(index.shardsOfChange(payload)) };
    }
    if (row.kind === "meta") {
      if (!sub) return { wrote: true, touched: [] };
      return { wrote: await redisTimeout(setSubscriptionMeta(index, subscriptionMeta(sub), at)), touched: within(every) };
    }
    if (row.kind === "drop") {
      return { wrote: await redisTimeout(dropSubscription(index, row.subscriptionId!, at)), touched: within(every) };
    }
    if (row.kind === "key") {
      if (row.foundKeyId === null) return { wrote: true, touched: [] };
      const active = keyActiveOn({ chains: row.chains!, revoked: row.revoked! }, chainId);
      return { wrote: await redisTimeout(setKeyState(index, row.keyId!, active, at)), touched: within(every) };
    }
    this.log.error("watch index outbox: unknown row kind; dropped", { chainId, id: row.id, kind: row.kind });
    return { wrote: true, touched: [] };
  }

  /**
   * Brings the chain's shards that Redis holds behind PostgreSQL's applied positions (a failover to a replica that
   * had not received the last writes) up to them: under the chain's lock, the applied rows after each such shard's
   * Redis position are applied again to that shard alone, in the order they were first applied, each recording its
   * position; then the shard's position is raised to PostgreSQL's (a rebuild's position has no row of its own). The
   * other shards are not touched, so they never see an old change again. Rows after a shard's position that are
   * already gone (WATCH_OUTBOX_RETENTION_MS) make it "pruned": the caller rebuilds the chain.
   */
  replay(chainId: string): Promise<ReplayResult> {
    const index = this.index(chainId);
    return this.db.transaction(async (tx): Promise<ReplayResult> => {
      if (!(await tryChainLock(tx, chainId))) return { status: "busy" };
      // Both read under the lock: nothing is applied to the chain meanwhile.
      const applied = await readAppliedPositions(tx, chainId, index.shards);
      const inRedis = await redisTimeout(readPositions(index));
      const behind = new Map<number, number>();
      inRedis.forEach((r, shard) => {
        if (r.served && r.position < applied.shards[shard]!) behind.set(shard, r.position);
      });
      if (behind.size === 0) return { status: "current" };
      const lost = [...behind.keys()];
      if ([...behind.values()].some((p) => p < applied.pruned)) return { status: "pruned", shards: lost };
      let after = { position: Math.min(...behind.values()), id: 0 };
      let replayed = 0;
      for (;;) {
        const rows = await selectRows(
          tx,
          [],
          sql`SELECT * FROM watch_outbox WHERE chain_id = ${chainId} AND applied_position IS NOT NULL
                AND (applied_position, id) > (${after.position}, ${after.id})
              ORDER BY applied_position, id LIMIT ${BATCH}`,
        );
        for (const row of rows) {
          const position = Number(row.appliedPosition);
          const onlyShards = new Set(lost.filter((s) => behind.get(s)! < position));
          if (onlyShards.size === 0) continue;
          await this.applyRow(chainId, row, { position, onlyShards });
          replayed++;
        }
        if (rows.length < BATCH) break;
        const last = rows[rows.length - 1]!;
        after = { position: Number(last.appliedPosition), id: Number(last.id) };
      }
      for (const shard of lost) {
        await redisTimeout(raisePositions(index, { position: applied.shards[shard]!, onlyShards: new Set([shard]) }));
      }
      return { status: "replayed", shards: lost, rows: replayed };
    });
  }
}
