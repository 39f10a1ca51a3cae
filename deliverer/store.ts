// The deliverer's persistence: the delivery log (events) and the idempotency records of test and retry, on
// PostgreSQL (Drizzle, Bun SQL). Batch paths (enqueue, outcomes) are one statement per batch.
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { and, arrayContains, desc, eq, gte, inArray, lt, or, sql, type SQL } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import type { IdempotencyRequest } from "../gen/webhooks/common/v1/error_pb.ts";
import { IdempotencyLedger, type IdempotentOutcome } from "../common/idempotency.ts";
import { SETTINGS_MIGRATIONS } from "../common/settings/migrate.ts";
import { openMigratedDatabase, withDatabase, writeTransaction, type Database, type DbOptions } from "../common/db.ts";
import {
  attempts,
  deliveryIdempotency,
  delivererSchema,
  events,
  type AttemptRow,
  type DelivererSchema,
  type EventRow,
  type EventStatus,
  type NewEventRow,
} from "./schema.ts";

export type DelivererDb = Database<DelivererSchema>;
export type DelivererTx = Parameters<Parameters<DelivererDb["transaction"]>[0]>[0];
export type Executor = DelivererDb | DelivererTx;

export const DELIVERER_MIGRATIONS = new URL("./migrations", import.meta.url).pathname;
export const DELIVERER_MIGRATIONS_TABLE = "__deliverer_migrations";

export async function openDelivererDatabase(url: string, opts: DbOptions = {}): Promise<DelivererDb> {
  const own = { folder: DELIVERER_MIGRATIONS, table: DELIVERER_MIGRATIONS_TABLE };
  return openMigratedDatabase(url, delivererSchema, [own, SETTINGS_MIGRATIONS], opts);
}

/** What a worker needs of a claimed event. */
export type ClaimedEvent = Pick<
  EventRow,
  "id" | "subscriptionId" | "status" | "attempts" | "held" | "nextAttemptAt" | "payload"
>;

/** The result of one attempt, to be written with many others in one statement. */
export interface Outcome {
  id: string;
  /** attempts before this attempt: the write only applies if nobody else recorded one meanwhile. */
  prevAttempts: number;
  status: EventStatus;
  attempts: number;
  delivered: boolean;
  responseStatus: number | null;
  responseBody: string;
  nextAttemptAt: Date | null;
  /** The attempt's own record (delivery_attempts), written in the same statement. */
  attempt: {
    id: string;
    at: Date;
    durationMs: number;
    /** The short reason when there was no HTTP response; null otherwise. */
    error: string | null;
  };
}

/** A position in the pending events ordered by due time (the schedule reconciliation pages through them). */
export interface OverdueCursor {
  id: string;
  dueMs: number;
}

/** What StreamEvents reads of an event: its view (payload.ts toEventView) and its stream position. */
export type StreamRow = Pick<
  EventRow,
  "id" | "subscriptionId" | "kind" | "chainId" | "status" | "attempts" | "deliveryCount" | "responseStatus" | "responseBody" | "payload" | "createdAt" | "xid" | "seq"
>;

/** A position in a key's event stream: the inserting transaction's id (xid8, decimal) and the row's seq. */
export interface StreamPosition {
  xid: string;
  seq: number;
}

export interface StreamFilter {
  keyId: string;
  subscriptionIds: string[];
  kinds: string[];
  chainIds: string[];
}

export interface PageCursor {
  t: number;
  id: string;
}

/** GET /v1/events filters; an absent one does not filter. */
export interface EventSearch {
  keyId: string;
  subscriptionId?: string | undefined;
  txId?: string | undefined;
  address?: string | undefined;
  chainId?: string | undefined;
  kind?: string | undefined;
  status?: EventStatus | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
}

export interface SubscriptionHealth {
  hour: { attempts: number; succeeded: number };
  day: { attempts: number; succeeded: number };
  p50: number | null;
  p99: number | null;
  lastSuccess: Date | null;
  lastFailure: { at: Date; reason: string } | null;
  consecutiveFailures: number;
  pending: number;
  /** Success rate per hour over the last 24 hours, oldest first; -1 for an hour without attempts. */
  hourly: number[];
}

/** The identity of a transfer event: one per (subscription, kind, chain, transaction, log index, internal index). */
export function transferKey(
  subscriptionId: string,
  kind: string,
  chainId: string,
  txId: string,
  logIndex: number,
  internalIndex: number,
): string {
  return `${subscriptionId}|${kind}|${chainId}|${txId}|${logIndex}|${internalIndex}`;
}


/** Keyset page of a newest-first list on (time, id): the rows strictly before the cursor. */
function beforeCursor(time: PgColumn, id: PgColumn, after: PageCursor): SQL {
  const t = new Date(after.t);
  return or(lt(time, t), and(eq(time, t), lt(id, after.id)))!;
}

export class DelivererStore {
  private readonly ledger: IdempotencyLedger;

  constructor(
    readonly db: DelivererDb,
    encryptionKey: Buffer,
  ) {
    this.ledger = new IdempotencyLedger(deliveryIdempotency, encryptionKey);
  }

  async ping(): Promise<boolean> {
    await this.db.execute(sql`select 1`);
    return true;
  }

  /**
   * Inserts transfer events in one statement; an event whose (subscription, kind, chain, txId, logIndex,
   * internalIndex) exists already is not inserted. Returns the ids actually inserted and, for every key, the id now stored for it.
   */
  async insertTransferEvents(rows: NewEventRow[]): Promise<{ inserted: Set<string>; idByKey: Map<string, string> }> {
    const inserted = new Set<string>();
    const idByKey = new Map<string, string>();
    if (rows.length === 0) return { inserted, idByKey };
    const json = JSON.stringify(
      rows.map((r) => ({
        id: r.id,
        sub: r.subscriptionId,
        key: r.keyId ?? null,
        kind: r.kind,
        chain: r.chainId,
        tx: r.txId,
        li: r.logIndex,
        addrs: r.addresses ?? [],
        ii: r.internalIndex ?? -1,
        payload: r.payload,
        next: r.nextAttemptAt?.toISOString() ?? null,
        at: (r.createdAt ?? new Date()).toISOString(),
      })),
    );
    await withDatabase(async () => {
      const done = (await this.db.$client`
        INSERT INTO events (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, internal_index, payload, status, next_attempt_at, created_at, updated_at)
        SELECT v.id, v.sub, v.key, ARRAY(SELECT jsonb_array_elements_text(v.addrs)), v.kind, v.chain, v.tx, v.li, v.ii, v.payload, 'pending', v.next, v.at, v.at
        FROM jsonb_to_recordset(${json}::text::jsonb)
          AS v(id text, sub text, key text, addrs jsonb, kind text, chain text, tx text, li int, ii int, payload jsonb, next timestamptz, at timestamptz)
        ON CONFLICT (subscription_id, kind, chain_id, tx_id, log_index, internal_index) DO NOTHING
        RETURNING id`) as { id: string }[];
      for (const r of done) inserted.add(r.id);
      if (inserted.size === rows.length) {
        for (const r of rows) {
          idByKey.set(transferKey(r.subscriptionId, r.kind, r.chainId!, r.txId!, r.logIndex!, r.internalIndex ?? -1), r.id!);
        }
        return;
      }
      // Some already existed (a block read again): the stored id of every key.
      const existing = (await this.db.$client`
        SELECT e.id, e.subscription_id, e.kind, e.chain_id, e.tx_id, e.log_index, e.internal_index FROM events e
        JOIN jsonb_to_recordset(${json}::text::jsonb) AS v(sub text, kind text, chain text, tx text, li int, ii int)
          ON e.subscription_id = v.sub AND e.kind = v.kind AND e.chain_id = v.chain AND e.tx_id = v.tx
            AND e.log_index = v.li AND e.internal_index = v.ii`) as {
        id: string;
        subscription_id: string;
        kind: string;
        chain_id: string;
        tx_id: string;
        log_index: number;
        internal_index: number;
      }[];
      for (const e of existing) {
        idByKey.set(transferKey(e.subscription_id, e.kind, e.chain_id, e.tx_id, e.log_index, e.internal_index), e.id);
      }
    });
    return { inserted, idByKey };
  }

  async insertEvent(ex: Executor, row: NewEventRow): Promise<EventRow> {
    const [out] = await ex.insert(events).values(row).returning();
    return out!;
  }

  /** The claimed rows, in one round trip (the hot path: raw SQL, no query building). */
  async loadClaimed(ids: string[]): Promise<ClaimedEvent[]> {
    if (ids.length === 0) return [];
    const rows = (await this.db.$client`
      SELECT id, subscription_id, status, attempts, held, next_attempt_at, payload::text AS payload FROM events
      WHERE id IN (SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::text::jsonb))`) as {
      id: string;
      subscription_id: string;
      status: EventStatus;
      attempts: number;
      held: boolean;
      next_attempt_at: Date | null;
      payload: string;
    }[];
    return rows.map((r) => ({
      id: r.id,
      subscriptionId: r.subscription_id,
      status: r.status,
      attempts: r.attempts,
      held: r.held,
      nextAttemptAt: r.next_attempt_at ? new Date(r.next_attempt_at) : null,
      payload: JSON.parse(r.payload) as Record<string, unknown>,
    }));
  }

  /** Writes a batch of attempt outcomes; returns the ids whose write applied (an event moved on elsewhere is skipped). */
  async recordOutcomes(outcomes: Outcome[]): Promise<Set<string>> {
    if (outcomes.length === 0) return new Set();
    const json = JSON.stringify(
      outcomes.map((o) => ({
        id: o.id,
        prev: o.prevAttempts,
        status: o.status,
        attempts: o.attempts,
        inc: o.delivered ? 1 : 0,
        rs: o.responseStatus,
        rb: o.responseBody,
        next: o.nextAttemptAt ? o.nextAttemptAt.toISOString() : null,
        aid: o.attempt.id,
        aat: o.attempt.at.toISOString(),
        dur: o.attempt.durationMs,
        err: o.attempt.error,
      })),
    );
    // The outcome and its attempt record in one statement (so one transaction): an attempt is recorded exactly when
    // its outcome applied, with the trigger of the cycle it belongs to.
    const rows = (await this.db.execute(sql`
      WITH v AS (
        SELECT * FROM jsonb_to_recordset(${json}::text::jsonb)
          AS v(id text, prev int, status text, attempts int, inc int, rs int, rb text, next timestamptz,
               aid text, aat timestamptz, dur int, err text)
      ), upd AS (
      UPDATE events AS e SET
        status = v.status,
        attempts = v.attempts,
        delivery_count = e.delivery_count + v.inc,
        response_status = v.rs,
        response_body = v.rb,
        next_attempt_at = v.next,
        held = false,
        updated_at = now()
      FROM v
      WHERE e.id = v.id AND e.status = 'pending' AND e.attempts = v.prev
      RETURNING e.id, e.subscription_id, e.trigger
      ), ins AS (
        INSERT INTO delivery_attempts (id, event_id, subscription_id, attempted_at, duration_ms, ok, response_status, response_body, error, trigger)
        SELECT v.aid, upd.id, upd.subscription_id, v.aat, v.dur, v.inc = 1, v.rs, CASE WHEN v.err IS NULL THEN v.rb END, v.err, upd.trigger
        FROM upd JOIN v ON v.id = upd.id
      )
      SELECT id FROM upd`)) as unknown as { id: string }[];
    return new Set(rows.map((r) => r.id));
  }

  async markHeld(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.update(events).set({ held: true, updatedAt: new Date() }).where(and(inArray(events.id, ids), eq(events.status, "pending")));
  }

  async deleteEvents(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.delete(events).where(inArray(events.id, ids));
  }

  /** Deletes every event of a subscription; returns the ids of those that were pending (to drop from the schedule). */
  deleteSubscriptionEvents(subscriptionId: string): Promise<{ deleted: number; pendingIds: string[] }> {
    return withDatabase(async () => {
      const rows = await this.db
        .delete(events)
        .where(eq(events.subscriptionId, subscriptionId))
        .returning({ id: events.id, status: events.status });
      return { deleted: rows.length, pendingIds: rows.filter((r) => r.status === "pending").map((r) => r.id) };
    });
  }

  /** Subscriptions that have held events. */
  async heldSubscriptions(limit: number): Promise<string[]> {
    const rows = (await this.db.execute(
      sql`SELECT DISTINCT subscription_id FROM events WHERE status = 'pending' AND held LIMIT ${limit}`,
    )) as unknown as { subscription_id: string }[];
    return rows.map((r) => r.subscription_id);
  }

  async heldEventIds(subscriptionIds: string[], limit: number): Promise<string[]> {
    if (subscriptionIds.length === 0) return [];
    const rows = await this.db
      .select({ id: events.id })
      .from(events)
      .where(and(inArray(events.subscriptionId, subscriptionIds), eq(events.status, "pending"), eq(events.held, true)))
      .limit(limit);
    return rows.map((r) => r.id);
  }

  /** Releases held events to be attempted at `at`; returns the ids released. */
  async unhold(ids: string[], at: Date): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .update(events)
      .set({ held: false, nextAttemptAt: at, updatedAt: new Date() })
      .where(and(inArray(events.id, ids), eq(events.status, "pending"), eq(events.held, true)))
      .returning({ id: events.id });
    return rows.map((r) => r.id);
  }

  /** Pending, not held events in id order after `afterId` (the schedule rebuild pages through them). */
  async pendingPage(afterId: string, limit: number): Promise<{ id: string; dueMs: number }[]> {
    const rows = (await this.db.execute(sql`
      SELECT id, next_attempt_at FROM events
      WHERE status = 'pending' AND NOT held AND id > ${afterId}
      ORDER BY id LIMIT ${limit}`)) as unknown as { id: string; next_attempt_at: Date | string | null }[];
    return rows.map((r) => ({ id: r.id, dueMs: r.next_attempt_at ? new Date(r.next_attempt_at).getTime() : Date.now() }));
  }

  /**
   * Pending, not held events due before `before`, oldest first, keyset on (next_attempt_at, id) after `after`: the
   * schedule reconciliation's pages. Served by events_pending_idx (a range on next_attempt_at; ties on one
   * timestamp, a whole Enqueue batch, are ordered by an incremental sort of that range).
   */
  async overduePage(before: Date, after: OverdueCursor | null, limit: number): Promise<OverdueCursor[]> {
    // Spelled as a range plus a tie-break (not a row comparison) so both bounds are index conditions.
    const from = after ? new Date(after.dueMs).toISOString() : "-infinity";
    const rows = (await this.db.execute(sql`
      SELECT id, next_attempt_at FROM events
      WHERE status = 'pending' AND NOT held
        AND next_attempt_at >= ${from}::timestamptz AND next_attempt_at < ${before.toISOString()}::timestamptz
        AND (next_attempt_at > ${from}::timestamptz OR id > ${after?.id ?? ""})
      ORDER BY next_attempt_at, id LIMIT ${limit}`)) as unknown as { id: string; next_attempt_at: Date | string }[];
    return rows.map((r) => ({ id: r.id, dueMs: new Date(r.next_attempt_at).getTime() }));
  }

  getEvent(subscriptionId: string, eventId: string): Promise<EventRow | undefined> {
    return withDatabase(async () => {
      const [row] = await this.db
        .select()
        .from(events)
        .where(and(eq(events.id, eventId), eq(events.subscriptionId, subscriptionId)));
      return row;
    });
  }

  async lockEvent(tx: DelivererTx, subscriptionId: string, eventId: string): Promise<EventRow | undefined> {
    const [row] = await tx
      .select()
      .from(events)
      .where(and(eq(events.id, eventId), eq(events.subscriptionId, subscriptionId)))
      .for("update");
    return row;
  }

  async restartCycle(tx: DelivererTx, eventId: string, at: Date): Promise<EventRow> {
    const [row] = await tx
      .update(events)
      .set({ status: "pending", attempts: 0, nextAttemptAt: at, held: false, trigger: "manual", updatedAt: new Date() })
      .where(eq(events.id, eventId))
      .returning();
    return row!;
  }

  /** Newest first, keyset on (created_at, id); one extra row tells whether another page exists. */
  listEvents(subscriptionId: string, status: EventStatus | undefined, limit: number, after: PageCursor | undefined): Promise<EventRow[]> {
    return withDatabase(() => {
      const conds = [eq(events.subscriptionId, subscriptionId)];
      if (status) conds.push(eq(events.status, status));
      if (after) conds.push(beforeCursor(events.createdAt, events.id, after));
      return this.db
        .select()
        .from(events)
        .where(and(...conds))
        .orderBy(desc(events.createdAt), desc(events.id))
        .limit(limit + 1);
    });
  }

  // ---- operations: attempts, recover, search across a key, health ----

  /** An event's attempts, newest first, keyset on (attempted_at, id). */
  listAttempts(eventId: string, limit: number, after: PageCursor | undefined): Promise<AttemptRow[]> {
    return withDatabase(() => {
      const conds = [eq(attempts.eventId, eventId)];
      if (after) conds.push(beforeCursor(attempts.attemptedAt, attempts.id, after));
      return this.db
        .select()
        .from(attempts)
        .where(and(...conds))
        .orderBy(desc(attempts.attemptedAt), desc(attempts.id))
        .limit(limit + 1);
    });
  }

  /** Up to `limit` ids of a subscription's events in `status` created in [since, until): one recover batch. */
  recoverCandidates(
    subscriptionId: string,
    status: EventStatus,
    since: Date,
    until: Date,
    after: PageCursor | undefined,
    limit: number,
  ): Promise<{ id: string; t: number }[]> {
    return withDatabase(async () => {
      // A keyset walk, not "whatever still matches": an event re-queued and delivered again meanwhile is not taken twice.
      const page = after ? beforeCursor(events.createdAt, events.id, after) : undefined;
      const rows = await this.db
        .select({ id: events.id, createdAt: events.createdAt })
        .from(events)
        .where(
          and(
            eq(events.subscriptionId, subscriptionId),
            eq(events.status, status),
            gte(events.createdAt, since),
            lt(events.createdAt, until),
            page,
          ),
        )
        .orderBy(desc(events.createdAt), desc(events.id))
        .limit(limit);
      return rows.map((r) => ({ id: r.id, t: r.createdAt.getTime() }));
    });
  }

  /** Starts a manual cycle for those of `ids` still in `status`; returns the ids it applied to (one short statement). */
  requeue(ids: string[], status: EventStatus, at: Date): Promise<string[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return withDatabase(async () => {
      const rows = await this.db
        .update(events)
        .set({ status: "pending", attempts: 0, nextAttemptAt: at, held: false, trigger: "manual", updatedAt: new Date() })
        .where(and(inArray(events.id, ids), eq(events.status, status)))
        .returning({ id: events.id });
      return rows.map((r) => r.id);
    });
  }

  /** GET /v1/events: a key's events, newest first, every filter an index condition (see the events_key_* indexes). */
  searchEvents(q: EventSearch, limit: number, after: PageCursor | undefined): Promise<EventRow[]> {
    return withDatabase(() => {
      const conds = [eq(events.keyId, q.keyId)];
      if (q.subscriptionId) conds.push(eq(events.subscriptionId, q.subscriptionId));
      if (q.txId) conds.push(eq(events.txId, q.txId));
      if (q.address) conds.push(arrayContains(events.addresses, [q.address]));
      if (q.chainId) conds.push(eq(events.chainId, q.chainId));
      if (q.kind) conds.push(eq(events.kind, q.kind));
      if (q.status) conds.push(eq(events.status, q.status));
      if (q.since) conds.push(gte(events.createdAt, q.since));
      if (q.until) conds.push(lt(events.createdAt, q.until));
      if (after) conds.push(beforeCursor(events.createdAt, events.id, after));
      return this.db
        .select()
        .from(events)
        .where(and(...conds))
        .orderBy(desc(events.createdAt), desc(events.id))
        .limit(limit + 1);
    });
  }

  /** A subscription's newest successful (or failed) attempt. */
  private async latestAttempt(subscriptionId: string, ok: boolean): Promise<{ at: Date; status: number | null; error: string | null } | undefined> {
    const [row] = await this.db
      .select({ at: attempts.attemptedAt, status: attempts.responseStatus, error: attempts.error })
      .from(attempts)
      .where(and(eq(attempts.subscriptionId, subscriptionId), eq(attempts.ok, ok)))
      .orderBy(desc(attempts.attemptedAt))
      .limit(1);
    return row;
  }

  /** A subscription's delivery health from its attempts of the last 24 hours and its pending events. */
  health(subscriptionId: string, now: Date): Promise<SubscriptionHealth> {
    return withDatabase(async () => {
      const dayAgo = new Date(now.getTime() - 24 * 3_600_000).toISOString();
      const hourAgo = new Date(now.getTime() - 3_600_000).toISOString();
      const [w] = (await this.db.execute(sql`
        SELECT
          count(*) FILTER (WHERE attempted_at >= ${hourAgo}::timestamptz)::int AS hour_attempts,
          count(*) FILTER (WHERE attempted_at >= ${hourAgo}::timestamptz AND ok)::int AS hour_ok,
          count(*)::int AS day_attempts,
          count(*) FILTER (WHERE ok)::int AS day_ok,
          percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
          percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99,
          coalesce(json_agg(json_build_array(floor(extract(epoch FROM (attempted_at - ${dayAgo}::timestamptz)) / 3600)::int, ok)), '[]') AS marks
        FROM delivery_attempts WHERE subscription_id = ${subscriptionId} AND attempted_at >= ${dayAgo}::timestamptz`)) as unknown as {
        hour_attempts: number; hour_ok: number; day_attempts: number; day_ok: number; p50: number | null; p99: number | null;
        marks: string | [number, boolean][];
      }[];
      const [lastOk, lastFail] = await Promise.all([this.latestAttempt(subscriptionId, true), this.latestAttempt(subscriptionId, false)]);
      // Failures since the last success (bounded: the count stops mattering past a large number).
      const [streak] = (await this.db.execute(sql`
        SELECT count(*)::int AS n FROM (
          SELECT 1 FROM delivery_attempts WHERE subscription_id = ${subscriptionId} AND NOT ok
            AND attempted_at > ${lastOk?.at.toISOString() ?? "-infinity"}::timestamptz LIMIT 100000) f`)) as unknown as { n: number }[];
      const [pending] = (await this.db.execute(sql`
        SELECT count(*)::int AS n FROM events WHERE subscription_id = ${subscriptionId} AND status = 'pending'`)) as unknown as { n: number }[];
      const marks = (typeof w?.marks === "string" ? JSON.parse(w.marks) : (w?.marks ?? [])) as [number, boolean][];
      const hourly = Array.from({ length: 24 }, () => ({ n: 0, ok: 0 }));
      for (const [h, ok] of marks) {
        const slot = hourly[Math.min(23, Math.max(0, h))]!;
        slot.n++;
        if (ok) slot.ok++;
      }
      return {
        hour: { attempts: w?.hour_attempts ?? 0, succeeded: w?.hour_ok ?? 0 },
        day: { attempts: w?.day_attempts ?? 0, succeeded: w?.day_ok ?? 0 },
        p50: w?.p50 ?? null,
        p99: w?.p99 ?? null,
        lastSuccess: lastOk?.at ?? null,
        lastFailure: lastFail ? { at: lastFail.at, reason: lastFail.error ?? `HTTP ${lastFail.status}` } : null,
        consecutiveFailures: streak?.n ?? 0,
        pending: pending?.n ?? 0,
        hourly: hourly.map((h) => (h.n === 0 ? -1 : h.ok / h.n)),
      };
    });
  }

  // ---- idempotency (docs/CONTRACT.md "Idempotency") ----

  /** The effect and its idempotency record in one write transaction under the commit fence (a 503 changed nothing). */
  idempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest | undefined,
    effect: (tx: DelivererTx) => Promise<MessageShape<Desc>>,
  ): Promise<IdempotentOutcome<MessageShape<Desc>>> {
    return writeTransaction(this.db, (tx) => this.ledger.once(tx, schema, keyId, scope, idem, effect));
  }

  /** A finished record's outcome (replay), read outside any effect: for effects too long for one transaction. */
  findIdempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest,
  ): Promise<IdempotentOutcome<MessageShape<Desc>> | undefined> {
    return withDatabase(() => this.ledger.find(this.db, schema, keyId, scope, idem));
  }

  /** Records the outcome of an effect that ran in batches; a record written meanwhile wins and is returned. */
  recordIdempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest,
    message: MessageShape<Desc>,
  ): Promise<IdempotentOutcome<MessageShape<Desc>>> {
    return writeTransaction(this.db, (tx) => this.ledger.once(tx, schema, keyId, scope, idem, async () => message));
  }

  purgeExpiredIdempotency(): Promise<number> {
    return this.ledger.purgeExpired(this.db);
  }

  private streamConditions(filter: StreamFilter) {
    const client = this.db.$client;
    return {
      subs: filter.subscriptionIds.length > 0 ? client`AND subscription_id IN ${client(filter.subscriptionIds)}` : client``,
      kinds: filter.kinds.length > 0 ? client`AND kind IN ${client(filter.kinds)}` : client``,
      chains: filter.chainIds.length > 0 ? client`AND chain_id IN ${client(filter.chainIds)}` : client``,
    };
  }

  /**
   * Whether the key has events after `after` that streamPage does not return yet: rows of transactions newer than
   * one still running somewhere in the cluster (one index probe).
   */
  async streamHeldBack(filter: StreamFilter, after: StreamPosition): Promise<boolean> {
    const client = this.db.$client;
    const { subs, kinds, chains } = this.streamConditions(filter);
    const rows = (await withDatabase(() => client`
      SELECT 1 FROM events
      WHERE key_id = ${filter.keyId} AND (events.xid, events.seq) > (${after.xid}::xid8, ${after.seq}::bigint) ${subs} ${kinds} ${chains}
      LIMIT 1`)) as unknown[];
    return rows.length > 0;
  }

  /**
   * The key's events after `after`, in stream order (xid, seq), at most `limit`. Only rows whose transaction is older
   * than every transaction still running are read: a row committed later always lands after every position already
   * handed out, so a reader that resumes from its last position misses nothing.
   *
   * The hot read of StreamEvents: raw SQL of only the columns an event view shows (no ORM row mapping, no address
   * arrays), one index range of events_stream_idx (key_id, xid, seq).
   */
  async streamPage(filter: StreamFilter, after: StreamPosition, limit: number): Promise<StreamRow[]> {
    const client = this.db.$client;
    const { subs, kinds, chains } = this.streamConditions(filter);
    // The page must come off events_stream_idx in order. Before the table has statistics (fresh rows, autovacuum
    // not yet run) the planner guesses a handful of rows and picks a bitmap scan and a sort of every remaining row
    // of the key, on every page: a consumer far behind would read in O(n²). Sorting is therefore off for this one
    // statement (SET LOCAL ends with its transaction).
    const rows = (await withDatabase(() =>
      client.begin(async (tx) => {
        await tx`SET LOCAL enable_sort = off`;
        return tx`
          SELECT id, subscription_id, kind, chain_id, status, attempts, delivery_count, response_status, response_body,
            payload, created_at, xid::text AS xid, seq
          FROM events
          WHERE key_id = ${filter.keyId} AND (events.xid, events.seq) > (${after.xid}::xid8, ${after.seq}::bigint)
            AND events.xid < pg_snapshot_xmin(pg_current_snapshot()) ${subs} ${kinds} ${chains}
          ORDER BY events.xid, events.seq LIMIT ${limit}`;
      }),
    )) as {
      id: string;
      subscription_id: string;
      kind: string;
      chain_id: string | null;
      status: EventStatus;
      attempts: number;
      delivery_count: number;
      response_status: number | null;
      response_body: string | null;
      payload: Record<string, unknown> | string;
      created_at: Date;
      xid: string;
      seq: string | number;
    }[];
    return rows.map((r) => ({
      id: r.id,
      subscriptionId: r.subscription_id,
      kind: r.kind,
      chainId: r.chain_id,
      status: r.status,
      attempts: r.attempts,
      deliveryCount: r.delivery_count,
      responseStatus: r.response_status,
      responseBody: r.response_body,
      payload: typeof r.payload === "string" ? (JSON.parse(r.payload) as Record<string, unknown>) : r.payload,
      createdAt: r.created_at,
      xid: r.xid,
      seq: Number(r.seq),
    }));
  }
}
