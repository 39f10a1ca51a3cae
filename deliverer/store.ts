// The deliverer's persistence: the delivery log (events, insert-only, and event_deliveries, each event's delivery
// state) and the idempotency records of test and retry, on PostgreSQL (Drizzle, Bun SQL). Batch paths (enqueue,
// outcomes) are one statement per batch.
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { and, between, desc, eq, getTableColumns, gte, inArray, lt, lte, or, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import type { IdempotencyRequest } from "../gen/webhooks/common/v1/error_pb.ts";
import { IdempotencyLedger, type IdempotentOutcome } from "../common/idempotency.ts";
import type { Keyring } from "../common/keyring.ts";
import { SETTINGS_MIGRATIONS } from "../common/settings/migrate.ts";
import { openDatabase, openMigratedDatabase, pgText, withDatabase, writeTransaction, type Database, type DbOptions } from "../common/db.ts";
import { SEARCH_REFS_PER_REQUEST } from "../common/event-search.ts";
import { eventTimeWindow } from "./partitions.ts";
import type { HoldReason } from "../common/hold-reasons.ts";
import type { EventViewRow } from "./payload.ts";
import { asLimit, PreparedShapes, type Bind, type Statement } from "./prepared.ts";
import {
  attempts,
  deliveryIdempotency,
  delivererSchema,
  eventAddresses,
  eventDeliveries,
  eventPurges,
  events,
  eventTxRefs,
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

/**
 * Every statement of the deliverer on the generic plan of its prepared statement. Bun's driver prepares each
 * statement once per connection; PostgreSQL's default (plan_cache_mode auto) then plans it anew on every execution
 * whenever the generic plan is estimated dearer than a custom one, and over the daily partitions it always is: the
 * generic plan's estimate sums every partition, the custom one only those left after pruning on the parameters. But
 * the generic plan prunes the same partitions when it starts (run-time pruning on created_at), so the re-planning
 * buys nothing and costs most of a point read: GET one event by id at 1,000,000 events, pgbench on one connection,
 * 0.27 ms a statement re-planned each time against 0.13 ms on the generic plan; the bench (`bun run bench events`)
 * measured PostgreSQL's CPU per request falling from 328 to 230 µs for GET one event. Where one plan does not fit
 * every value, the statement runs on the planned reads' pool instead (openPlannedReads).
 */
const GENERIC_PLANS = { plan_cache_mode: "force_generic_plan" };

export async function openDelivererDatabase(url: string, opts: DbOptions = {}): Promise<DelivererDb> {
  const own = { folder: DELIVERER_MIGRATIONS, table: DELIVERER_MIGRATIONS_TABLE };
  return openMigratedDatabase(url, delivererSchema, [own, SETTINGS_MIGRATIONS], { ...opts, settings: { ...GENERIC_PLANS, ...opts.settings } });
}

/**
 * A second, small pool for the reads whose plan must follow their values, or must come off an index in order: an
 * address page's events by id when a subscription filters them too, and the StreamEvents pages.
 * Its connections keep PostgreSQL's own choice between generic and custom plans, and have sorting off. On a generic
 * plan a page's 51 ids are "some ids": the planner, costing a probe of every id in every partition, read the key's
 * events between the ids' times instead (20 ms at 1,000,000 rows, against 51 primary-key probes on a custom plan;
 * without a key or subscription condition no such range exists, and the ids run on the generic plan, eventsById).
 * Before statistics exist it sorted every StreamEvents page across the daily partitions rather than merging their
 * index ranges in order and stopping at the page's end. With sorting off the ordered merge is the plan whatever the
 * estimates (none of these reads sorts its matching rows anywhere, so nothing loses a sort it needed).
 */
export const PLANNED_READS_POOL_SIZE = 4;

export function openPlannedReads(url: string, opts: DbOptions = {}): DelivererDb {
  return openDatabase(url, delivererSchema, { max: PLANNED_READS_POOL_SIZE, ...opts, settings: { enable_sort: "off", ...opts.settings } });
}

/**
 * The claimed rows with their states: $1 the ids as a JSON array, $2 and $3 the ids' window of times (so only their
 * days' partitions are read). The state comes through a LATERAL probe (see pageQuery): on a fresh partition, before
 * statistics, a plain join was planned as a scan of every state of the day against the id list (over a second per
 * claim batch). The ids are one array on the primary key (id, created_at): as `id IN (SELECT …)` the generic plan
 * read every event between the batch's first and last times and hash-joined them to the ids, in a catch-up
 * 2,700–4,700 rows for a claim of 140–450 (auto_explain in bench/matcher.ts: 70–160 ms a claim, and the deliveries
 * of the head-stream catch-up 785–1,602/s against 2,513–3,004/s after).
 */
export const CLAIMED_ROWS_SQL = `
  SELECT e.id, e.subscription_id, d.status, d.attempts, d.cycle, d.held, d.next_attempt_at, e.payload
  FROM events e CROSS JOIN LATERAL (
    SELECT status, attempts, cycle, held, next_attempt_at FROM event_deliveries
    WHERE event_id = e.id AND created_at = e.created_at AND created_at BETWEEN $2::timestamptz AND $3::timestamptz
    LIMIT 1) d
  WHERE e.id = ANY (ARRAY(SELECT json_array_elements_text($1::text::json)))
    AND e.created_at BETWEEN $2::timestamptz AND $3::timestamptz`;

/**
 * A batch of attempt outcomes: each updates its event's delivery state and adds its attempt record, in one statement
 * (so one transaction): an attempt is recorded exactly when its outcome applied, with the trigger of the cycle it
 * belongs to. It applies only to the state its claim read: still pending, in the same cycle, with no attempt recorded
 * since. Only the narrow event_deliveries row changes; the event itself (payload, page indexes) is never
 * rewritten. The ids are also an array on the primary key's leading column: on a fresh partition without statistics
 * the join alone was planned as a nested loop over a sequential scan of the day's states (seconds per batch; the
 * narrow table looks cheap to scan). The batch comes as one array per field, unnested: PostgreSQL reads an array of
 * 256 values in far less than json_to_recordset takes the same fields by name from 256 objects (2.3 µs of its CPU
 * per outcome against 4.9, of the statement's ~27 on one idle backend).
 */
const OUTCOMES_SQL = `
  WITH v AS (
    SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::int[], $5::int[], $6::int[], $7::text[],
                         $8::timestamptz[], $9::text[], $10::timestamptz[], $11::int[], $12::text[], $13::text[], $16::int[])
      AS v(id, prev, status, attempts, inc, rs, rb, next, aid, aat, dur, err, arb, cycle)
  ), upd AS (
    UPDATE event_deliveries AS d SET
      status = v.status,
      attempts = v.attempts,
      delivery_count = d.delivery_count + v.inc,
      response_status = v.rs,
      response_body = v.rb,
      next_attempt_at = v.next,
      held = false,
      updated_at = now()
    FROM v
    WHERE d.event_id = v.id AND d.event_id = ANY ($1::text[])
      AND d.status = 'pending' AND d.attempts = v.prev AND d.cycle = v.cycle AND d.created_at BETWEEN $14::timestamptz AND $15::timestamptz
    RETURNING d.event_id AS id, d.subscription_id, d.trigger, d.created_at
  ), ins AS (
    INSERT INTO delivery_attempts (id, event_id, event_created_at, subscription_id, attempted_at, duration_ms, ok, response_status, response_body, error, trigger)
    SELECT v.aid, upd.id, upd.created_at, upd.subscription_id, v.aat, v.dur, v.inc = 1, v.rs, v.arb, v.err, upd.trigger
    FROM upd JOIN v ON v.id = upd.id
  )
  SELECT id FROM upd`;

/** What a worker needs of a claimed event. */
export type ClaimedEvent = Pick<
  EventRow,
  "id" | "subscriptionId" | "status" | "attempts" | "cycle" | "held" | "nextAttemptAt" | "payload"
>;

/** The result of one attempt, to be written with many others in one statement. */
export interface Outcome {
  id: string;
  /** attempts before this attempt: the write only applies if nobody else recorded one meanwhile. */
  prevAttempts: number;
  /** The cycle the claim read: the write only applies if no retry or recover started another meanwhile. */
  cycle: number;
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
    /**
     * The attempt's responseBody: the endpoint's body, or for a queue destination the broker's short answer
     * ("acked", "returned: NO_ROUTE", "no stream", "timeout"; docs: issue 12), failed attempts included; null for an
     * HTTPS attempt that got no answer (its reason is `error`).
     */
    responseBody: string | null;
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
  "id" | "subscriptionId" | "kind" | "chainId" | "status" | "attempts" | "deliveryCount" | "responseStatus" | "responseBody" | "held" | "heldReason" | "payload" | "createdAt" | "xid" | "seq"
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


/**
 * Keyset page of a newest-first list on (time, id): the rows strictly before the cursor. `time <= t` stands on its
 * own so it is an index bound (and prunes the partitions newer than the cursor); the OR only breaks ties.
 */
function beforeCursor(time: PgColumn, id: PgColumn, after: PageCursor): SQL {
  return keysetBefore(time, id, new Date(after.t), after.id);
}

/** beforeCursor's condition on the cursor's time and id, given as values or as bound names (pageBounds). */
function keysetBefore(time: PgColumn, id: PgColumn, t: Date | SQLWrapper, lastId: string | SQLWrapper): SQL {
  return and(lte(time, t), or(lt(time, t), lt(id, lastId)))!;
}

const deliveries = eventDeliveries;

/**
 * An event's row to its delivery state: the same (id, created_at), so a bound on one table's created_at is written on
 * both (the planner carries an equality across a join, not a range) and each table prunes its own partitions.
 */
const deliveryOfEvent = and(eq(deliveries.eventId, events.id), eq(deliveries.createdAt, events.createdAt))!;

/** The columns of an EventRow: the event's own and its delivery state. */
const { eventId: _eventId, createdAt: _createdAt, subscriptionId: _subscriptionId, keyId: _keyId, ...stateColumns } =
  getTableColumns(eventDeliveries);
const eventRowColumns = { ...getTableColumns(events), ...stateColumns };

/**
 * The columns of an event's view (payload.ts toEventView): all that the API's event reads select. The rest of a row
 * (its addresses, stream position, schedule and times) would be printed, parsed and mapped for nothing: 11 columns
 * a row instead of 22, on every row of every page.
 */
const viewEventColumns = {
  id: events.id, subscriptionId: events.subscriptionId, kind: events.kind, chainId: events.chainId, payload: events.payload, createdAt: events.createdAt,
} satisfies Partial<Record<keyof EventViewRow, PgColumn>>;
const viewStateColumns = {
  status: deliveries.status, attempts: deliveries.attempts, deliveryCount: deliveries.deliveryCount, responseStatus: deliveries.responseStatus,
  responseBody: deliveries.responseBody, held: deliveries.held, heldReason: deliveries.heldReason,
} satisfies Partial<Record<keyof EventViewRow, PgColumn>>;
type ViewEventKey = keyof typeof viewEventColumns;
type ViewStateKey = keyof typeof viewStateColumns;
const VIEW_EVENT_KEYS = Object.keys(viewEventColumns) as ViewEventKey[];
const VIEW_STATE_KEYS = Object.keys(viewStateColumns) as ViewStateKey[];
// Every field of the view is selected.
const viewComplete: [Exclude<keyof EventViewRow, ViewEventKey | ViewStateKey>] extends [never] ? true : never = true;
void viewComplete;
/** An event's view as the API's reads select it, in select-list order (deliverer/prepared.ts maps rows by it). */
export const eventViewColumns = { ...viewEventColumns, ...viewStateColumns };

/** A view's selection with the state read through `d` (a subquery selecting viewStateColumns), in eventViewColumns' order. */
function withStateOf<D extends { [K in ViewStateKey]: D[K] }>(d: D) {
  return { ...viewEventColumns, ...(Object.fromEntries(VIEW_STATE_KEYS.map((k) => [k, d[k]])) as { [K in ViewStateKey]: D[K] }) };
}

/** A view's selection with the event read through `e` (a subquery selecting viewEventColumns), in eventViewColumns' order. */
function withEventOf<E extends { [K in ViewEventKey]: E[K] }>(e: E) {
  return { ...(Object.fromEntries(VIEW_EVENT_KEYS.map((k) => [k, e[k]])) as { [K in ViewEventKey]: E[K] }), ...viewStateColumns };
}

/** Leaves out the events of a subscription being purged (deliverer/jobs/event-purge.ts). */
function notPurged(subscriptionId: PgColumn): SQL {
  return sql`NOT EXISTS (SELECT 1 FROM ${eventPurges} p WHERE p.subscription_id = ${subscriptionId})`;
}

/** What a page of events may be filtered by (GET /v1/events, a subscription's list). */
interface PageFilters {
  keyId?: string | undefined;
  subscriptionId?: string | undefined;
  status?: EventStatus | undefined;
  txId?: string | undefined;
  chainId?: string | undefined;
  kind?: string | undefined;
  since?: Date | undefined;
  until?: Date | undefined;
  /** Leave out the events of subscriptions being purged. */
  skipPurged?: boolean;
}

/** A search's rows (limit + 1 read as for any page), or fewer with the ref to go on after when it stopped early. */
export interface SearchPage {
  rows: EventViewRow[];
  resumeAfter?: PageCursor;
}

/** A page's statement: its text for EXPLAIN, or its events' views. */
type PageQuery = Statement<EventViewRow>;

/**
 * Id lists up to this length are prepared once per length (eventsById); longer ones are built for each run. An
 * address page asks for 51 ids, then 204, 816… (searchEvents): the lengths in use are few.
 */
const MAX_KEPT_IDS = 256;

/** The values of a page's filters, by the names the statements bind them under. */
function filterValues(f: PageFilters): Record<string, unknown> {
  return { keyId: f.keyId, subscriptionId: f.subscriptionId, status: f.status, txId: f.txId, chainId: f.chainId, kind: f.kind, since: f.since, until: f.until };
}

/** Which filters are present: what, with the cursor, shapes a page's statement (deliverer/prepared.ts). */
function filterShape(f: PageFilters): string {
  return [...Object.values(filterValues(f)), f.skipPurged].map((v) => (v ? "1" : "0")).join("");
}

/** The conditions of a page's filters on the events table (not the status, which is the state's, nor the times). */
function eventConditions(f: PageFilters, p: Bind): SQL[] {
  const conds: SQL[] = [];
  if (f.keyId) conds.push(eq(events.keyId, p("keyId")));
  if (f.subscriptionId) conds.push(eq(events.subscriptionId, p("subscriptionId")));
  if (f.skipPurged) conds.push(notPurged(events.subscriptionId));
  if (f.txId) conds.push(eq(events.txId, p("txId")));
  if (f.chainId) conds.push(eq(events.chainId, p("chainId")));
  if (f.kind) conds.push(eq(events.kind, p("kind")));
  return conds;
}

/** A page cursor's values, bound as `afterT` and `afterId` (pageBounds). */
function cursorValues(after: PageCursor | undefined): Record<string, unknown> {
  return after ? { afterT: new Date(after.t), afterId: after.id } : {};
}

/**
 * A page's time bounds (`since`, `until`) and its cursor (before `afterT`, `afterId` in (time, id) order) on the
 * given columns, their values bound by name.
 */
function pageBounds(time: PgColumn, id: PgColumn, f: { since?: Date | undefined; until?: Date | undefined }, after: PageCursor | undefined, p: Bind): SQL[] {
  const conds: SQL[] = [];
  if (f.since) conds.push(gte(time, p("since")));
  if (f.until) conds.push(lt(time, p("until")));
  if (after) conds.push(keysetBefore(time, id, p("afterT"), p("afterId")));
  return conds;
}

/** created_at in [from, to] on both tables of the join. */
function bothBetween(from: Date, to: Date): SQL {
  return and(between(events.createdAt, from, to), between(deliveries.createdAt, from, to))!;
}

/**
 * Events by id joined to their state (deliveryOfEvent): the id list, and created_at bounded on both tables by the ids'
 * ULID times so only their partitions are read.
 */
function byIds(ids: string[]): SQL {
  const w = eventTimeWindow(ids);
  const inIds = ids.length === 1 ? eq(events.id, ids[0]!) : inArray(events.id, ids);
  return w ? and(inIds, bothBetween(w.from, w.to))! : inIds;
}

/** Delivery states by event id, bounded the same way (statements on event_deliveries alone). */
function deliveriesByIds(ids: string[]): SQL {
  const w = eventTimeWindow(ids);
  const inIds = ids.length === 1 ? eq(deliveries.eventId, ids[0]!) : inArray(deliveries.eventId, ids);
  return w ? and(inIds, between(deliveries.createdAt, w.from, w.to))! : inIds;
}

/** The same bounds as ISO texts for hand-written statements (unbounded when an id carries no ULID time). */
function windowBounds(ids: string[]): [string, string] {
  const w = eventTimeWindow(ids);
  return w ? [w.from.toISOString(), w.to.toISOString()] : ["-infinity", "infinity"];
}

/** What deleting an event needs to know of it (its partition, its address rows and its txId row). */
interface Doomed {
  id: string;
  created_at: Date | string;
  key_id: string | null;
  addresses: string[];
  tx_id: string | null;
}

export class DelivererStore {
  private readonly ledger: IdempotencyLedger;
  /** The event reads of the API, each built once per shape (deliverer/prepared.ts). */
  private readonly shapes = new PreparedShapes();

  constructor(
    readonly db: DelivererDb,
    keyring: Keyring,
    /** The pool of the reads planned for their values (openPlannedReads); the main pool without one. */
    private readonly planned: DelivererDb = db,
  ) {
    this.ledger = new IdempotencyLedger(deliveryIdempotency, keyring);
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
        held: r.held ?? false,
        hr: r.held ? (r.heldReason ?? null) : null,
        at: (r.createdAt ?? new Date()).toISOString(),
      })),
    );
    await withDatabase(async () => {
      // The identity first (event_transfer_keys, schema.ts): only the rows whose identity is new become events, with
      // their delivery state and address rows, all in one statement.
      const done = (await this.db.$client`
        WITH v AS (
          SELECT * FROM json_to_recordset(${json}::text::json)
            AS v(id text, sub text, key text, addrs json, kind text, chain text, tx text, li int, ii int, payload text,
                 next timestamptz, held boolean, hr text, at timestamptz)
        ), k AS (
          INSERT INTO event_transfer_keys (subscription_id, kind, chain_id, tx_id, log_index, internal_index, event_id, event_created_at)
          SELECT v.sub, v.kind, v.chain, v.tx, v.li, v.ii, v.id, v.at FROM v
          ON CONFLICT DO NOTHING
          RETURNING event_id
        ), e AS (
          INSERT INTO events (id, subscription_id, key_id, addresses, kind, chain_id, tx_id, log_index, internal_index, payload, created_at)
          SELECT v.id, v.sub, v.key, ARRAY(SELECT json_array_elements_text(v.addrs)), v.kind, v.chain, v.tx, v.li, v.ii, v.payload, v.at
          FROM v JOIN k ON k.event_id = v.id
          RETURNING id
        ), d AS (
          INSERT INTO event_deliveries (event_id, created_at, subscription_id, key_id, status, next_attempt_at, held, held_reason, updated_at)
          SELECT v.id, v.at, v.sub, v.key, 'pending', v.next, v.held, v.hr, v.at FROM v JOIN k ON k.event_id = v.id
        ), a AS (
          INSERT INTO event_addresses (key_id, address, created_at, event_id)
          SELECT v.key, x, v.at, v.id FROM v JOIN k ON k.event_id = v.id, json_array_elements_text(v.addrs) x
          WHERE v.key IS NOT NULL
        ), t AS (
          INSERT INTO event_tx_refs (key_id, tx_id, created_at, event_id)
          SELECT v.key, v.tx, v.at, v.id FROM v JOIN k ON k.event_id = v.id WHERE v.key IS NOT NULL
        )
        SELECT id FROM e`) as { id: string }[];
      for (const r of done) inserted.add(r.id);
      if (inserted.size === rows.length) {
        for (const r of rows) {
          idByKey.set(transferKey(r.subscriptionId, r.kind, r.chainId!, r.txId!, r.logIndex!, r.internalIndex ?? -1), r.id!);
        }
        return;
      }
      // Some already existed (a block read again): the stored id of every key.
      const existing = (await this.db.$client`
        SELECT e.event_id AS id, e.subscription_id, e.kind, e.chain_id, e.tx_id, e.log_index, e.internal_index FROM event_transfer_keys e
        JOIN json_to_recordset(${json}::text::json) AS v(sub text, kind text, chain text, tx text, li int, ii int)
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

  /** One event (a test event), its delivery state and its address rows, on the caller's transaction. */
  async insertEvent(ex: Executor, row: NewEventRow): Promise<EventRow> {
    const { status, nextAttemptAt, held, heldReason, trigger, updatedAt, ...event } = row;
    // The event and its state in one statement, as Enqueue writes them.
    const e = ex.$with("e").as(ex.insert(events).values(event).returning());
    const state = ex.$with("s").as(
      ex
        .insert(eventDeliveries)
        .select(
          ex
            .select({
              eventId: e.id,
              createdAt: e.createdAt,
              subscriptionId: e.subscriptionId,
              keyId: e.keyId,
              status: sql`${status}::text`.as("status"),
              attempts: sql`0`.as("attempts"),
              cycle: sql`0`.as("cycle"),
              deliveryCount: sql`0`.as("delivery_count"),
              responseStatus: sql`NULL::int`.as("response_status"),
              responseBody: sql`NULL::text`.as("response_body"),
              nextAttemptAt: sql`${nextAttemptAt?.toISOString() ?? null}::timestamptz`.as("next_attempt_at"),
              held: sql`${held ?? false}::boolean`.as("held"),
              heldReason: sql`${held ? (heldReason ?? null) : null}::text`.as("held_reason"),
              trigger: sql`${trigger ?? "automatic"}::text`.as("trigger"),
              updatedAt: sql`${updatedAt.toISOString()}::timestamptz`.as("updated_at"),
            })
            .from(e),
        )
        .returning({ eventId: eventDeliveries.eventId, ...stateColumns }),
    );
    const [joined] = await ex.with(e, state).select().from(e).innerJoin(state, eq(state.eventId, e.id));
    const { eventId: _id, ...rest } = joined!.s;
    const out = { ...joined!.e, ...rest };
    if (out.keyId && out.addresses.length > 0) {
      await ex.insert(eventAddresses).values(
        out.addresses.map((address) => ({ keyId: out.keyId!, address, createdAt: out.createdAt, eventId: out.id })),
      );
    }
    if (out.keyId && out.txId) {
      await ex.insert(eventTxRefs).values({ keyId: out.keyId, txId: out.txId, createdAt: out.createdAt, eventId: out.id });
    }
    return out;
  }

  /** The claimed rows, in one round trip (the hot path: raw SQL, no query building). */
  async loadClaimed(ids: string[]): Promise<ClaimedEvent[]> {
    if (ids.length === 0) return [];
    const [from, to] = windowBounds(ids);
    const rows = (await this.db.$client.unsafe(CLAIMED_ROWS_SQL, [JSON.stringify(ids), from, to])) as {
      id: string;
      subscription_id: string;
      status: EventStatus;
      attempts: number;
      cycle: number;
      held: boolean;
      next_attempt_at: Date | null;
      payload: string;
    }[];
    return rows.map((r) => ({
      id: r.id,
      subscriptionId: r.subscription_id,
      status: r.status,
      attempts: r.attempts,
      cycle: r.cycle,
      held: r.held,
      nextAttemptAt: r.next_attempt_at ? new Date(r.next_attempt_at) : null,
      payload: r.payload,
    }));
  }

  /** Writes a batch of attempt outcomes; returns the ids whose write applied (an event moved on elsewhere is skipped). */
  async recordOutcomes(outcomes: Outcome[]): Promise<Set<string>> {
    if (outcomes.length === 0) return new Set();
    const ids = outcomes.map((o) => o.id);
    const [from, to] = windowBounds(ids);
    const rows = (await this.db.$client.unsafe(OUTCOMES_SQL, [
      ids,
      outcomes.map((o) => o.prevAttempts),
      outcomes.map((o) => o.status),
      outcomes.map((o) => o.attempts),
      outcomes.map((o) => (o.delivered ? 1 : 0)),
      outcomes.map((o) => o.responseStatus),
      outcomes.map((o) => pgText(o.responseBody)),
      outcomes.map((o) => (o.nextAttemptAt ? o.nextAttemptAt.toISOString() : null)),
      outcomes.map((o) => o.attempt.id),
      outcomes.map((o) => o.attempt.at.toISOString()),
      outcomes.map((o) => o.attempt.durationMs),
      outcomes.map((o) => pgText(o.attempt.error)),
      outcomes.map((o) => pgText(o.attempt.responseBody)),
      from,
      to,
      outcomes.map((o) => o.cycle),
    ])) as { id: string }[];
    return new Set(rows.map((r) => r.id));
  }

  /** Holds pending events for `reason` (common/hold-reasons.ts): out of the schedule until resumeHeld releases them. */
  async markHeld(ids: string[], reason: HoldReason): Promise<void> {
    if (ids.length === 0) return;
    await this.db
      .update(eventDeliveries)
      .set({ held: true, heldReason: reason, updatedAt: new Date() })
      .where(and(deliveriesByIds(ids), eq(deliveries.status, "pending")));
  }

  /**
   * The reason of the subscriptions' held events, where it changed (a disabled subscription's secret found unreadable,
   * or rows held before reasons were kept); returns how many rows changed.
   */
  async setHeldReason(subscriptionIds: string[], reason: HoldReason): Promise<number> {
    if (subscriptionIds.length === 0) return 0;
    const rows = await this.db
      .update(eventDeliveries)
      .set({ heldReason: reason })
      // Literals for the state, as in heldEventIds, so the partial index event_deliveries_held_idx applies.
      .where(
        and(
          inArray(deliveries.subscriptionId, subscriptionIds),
          sql`${deliveries.status} = 'pending' AND ${deliveries.held}`,
          sql`${deliveries.heldReason} IS DISTINCT FROM ${reason}`,
        ),
      )
      .returning({ id: deliveries.eventId });
    return rows.length;
  }

  /** Deletes events with their delivery state, attempts, address rows and txId rows. */
  async deleteEvents(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const [from, to] = windowBounds(ids);
    const rows = (await this.db.$client`
      SELECT id, created_at, key_id, addresses, tx_id FROM events
      WHERE id = ANY (ARRAY(SELECT json_array_elements_text(${JSON.stringify(ids)}::text::json)))
        AND created_at BETWEEN ${from}::timestamptz AND ${to}::timestamptz`) as Doomed[];
    await this.deleteBatch(rows);
  }

  /**
   * Deletes the given events with their delivery state, attempts, address rows and txId rows in one statement. Every condition is an array
   * or a range on an index's leading columns (never a join the planner could turn into a scan of a key's rows).
   */
  private async deleteBatch(rows: Doomed[]): Promise<{ id: string; status: EventStatus }[]> {
    if (rows.length === 0) return [];
    const times = rows.map((r) => new Date(r.created_at).getTime());
    const from = new Date(Math.min(...times)).toISOString();
    const to = new Date(Math.max(...times)).toISOString();
    const ids = JSON.stringify(rows.map((r) => r.id));
    const keys = [...new Set(rows.map((r) => r.key_id).filter((k): k is string => k !== null))];
    const addrs = JSON.stringify([...new Set(rows.flatMap((r) => r.addresses))]);
    const txs = JSON.stringify([...new Set(rows.map((r) => r.tx_id).filter((t): t is string => t !== null))]);
    return (await this.db.$client`
      WITH d AS (
        DELETE FROM events WHERE id = ANY (ARRAY(SELECT json_array_elements_text(${ids}::text::json)))
          AND created_at BETWEEN ${from}::timestamptz AND ${to}::timestamptz
        RETURNING id
      ), dd AS (
        DELETE FROM event_deliveries WHERE event_id = ANY (ARRAY(SELECT json_array_elements_text(${ids}::text::json)))
          AND created_at BETWEEN ${from}::timestamptz AND ${to}::timestamptz
        RETURNING event_id, status
      ), da AS (
        DELETE FROM delivery_attempts WHERE event_id = ANY (ARRAY(SELECT json_array_elements_text(${ids}::text::json)))
          AND event_created_at BETWEEN ${from}::timestamptz AND ${to}::timestamptz
      ), dx AS (
        DELETE FROM event_addresses WHERE key_id = ANY (ARRAY(SELECT json_array_elements_text(${JSON.stringify(keys)}::text::json)))
          AND address = ANY (ARRAY(SELECT json_array_elements_text(${addrs}::text::json)))
          AND created_at BETWEEN ${from}::timestamptz AND ${to}::timestamptz
          AND event_id = ANY (ARRAY(SELECT json_array_elements_text(${ids}::text::json)))
      ), dt AS (
        DELETE FROM event_tx_refs WHERE key_id = ANY (ARRAY(SELECT json_array_elements_text(${JSON.stringify(keys)}::text::json)))
          AND tx_id = ANY (ARRAY(SELECT json_array_elements_text(${txs}::text::json)))
          AND created_at BETWEEN ${from}::timestamptz AND ${to}::timestamptz
          AND event_id = ANY (ARRAY(SELECT json_array_elements_text(${ids}::text::json)))
      )
      SELECT d.id, dd.status FROM d LEFT JOIN dd ON dd.event_id = d.id`) as { id: string; status: EventStatus }[];
  }

  /**
   * Marks a subscription's events for deletion: they leave GET /v1/events at once and the purge loop
   * (deliverer/jobs/event-purge.ts) deletes them in batches. Idempotent.
   */
  async requestPurge(subscriptionId: string): Promise<void> {
    await withDatabase(() =>
      this.db.insert(eventPurges).values({ subscriptionId, requestedAt: new Date() }).onConflictDoNothing(),
    );
  }

  /** Subscriptions whose events are waiting to be purged, oldest request first. */
  async purgeRequests(limit: number): Promise<string[]> {
    const rows = await this.db
      .select({ id: eventPurges.subscriptionId })
      .from(eventPurges)
      .orderBy(eventPurges.requestedAt)
      .limit(limit);
    return rows.map((r) => r.id);
  }

  /**
   * Deletes one batch of a subscription's events (one short statement); when none is left the purge request goes.
   * Returns how many were deleted and the ids that were pending (to drop from the schedule).
   */
  async purgeBatch(subscriptionId: string, limit: number): Promise<{ deleted: number; pendingIds: string[] }> {
    // Newest first along events_subscription_page_idx: a batch is one slice of time, so its delete bounds are tight.
    const doomed = (await this.db.$client`
      SELECT id, created_at, key_id, addresses, tx_id FROM events WHERE subscription_id = ${subscriptionId}
      ORDER BY created_at DESC, id DESC LIMIT ${limit}`) as Doomed[];
    const rows = await this.deleteBatch(doomed);
    if (doomed.length < limit) await this.db.delete(eventPurges).where(eq(eventPurges.subscriptionId, subscriptionId));
    return { deleted: rows.length, pendingIds: rows.filter((r) => r.status === "pending").map((r) => r.id) };
  }

  /**
   * Subscriptions that have held events, in id order after `after` (the held check pages through all of them: with
   * one page only, subscriptions that stay held, such as a revoked key's, hid every one after them). A skip scan of
   * event_deliveries_held_idx: one probe per subscription, never every held event of one.
   */
  async heldSubscriptions(after: string, limit: number): Promise<string[]> {
    const rows = (await this.db.execute(sql`
      WITH RECURSIVE s AS (
        (SELECT subscription_id FROM event_deliveries
          WHERE status = 'pending' AND held AND subscription_id > ${after} ORDER BY subscription_id LIMIT 1)
        UNION ALL
        SELECT (SELECT d.subscription_id FROM event_deliveries d
          WHERE d.status = 'pending' AND d.held AND d.subscription_id > s.subscription_id ORDER BY d.subscription_id LIMIT 1)
        FROM s WHERE s.subscription_id IS NOT NULL
      )
      SELECT subscription_id FROM s WHERE subscription_id IS NOT NULL LIMIT ${limit}`)) as unknown as { subscription_id: string }[];
    return rows.map((r) => r.subscription_id);
  }

  async heldEventIds(subscriptionIds: string[], limit: number): Promise<string[]> {
    if (subscriptionIds.length === 0) return [];
    const rows = await this.db
      .select({ id: deliveries.eventId })
      .from(deliveries)
      // The state as literals, not parameters: on its generic plan (GENERIC_PLANS) only they match the partial
      // index event_deliveries_held_idx.
      .where(and(inArray(deliveries.subscriptionId, subscriptionIds), sql`${deliveries.status} = 'pending' AND ${deliveries.held}`))
      .limit(limit);
    return rows.map((r) => r.id);
  }

  /** Releases held events to be attempted at `at`; returns the ids released. */
  async unhold(ids: string[], at: Date): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .update(eventDeliveries)
      .set({ held: false, heldReason: null, nextAttemptAt: at, updatedAt: new Date() })
      .where(and(deliveriesByIds(ids), eq(deliveries.status, "pending"), eq(deliveries.held, true)))
      .returning({ id: deliveries.eventId });
    return rows.map((r) => r.id);
  }

  /** Pending, not held events in id order after `afterId` (the schedule rebuild pages through them). */
  async pendingPage(afterId: string, limit: number): Promise<{ id: string; dueMs: number }[]> {
    const rows = (await this.db.execute(sql`
      SELECT event_id AS id, next_attempt_at FROM event_deliveries
      WHERE status = 'pending' AND NOT held AND event_id > ${afterId}
      ORDER BY event_id LIMIT ${limit}`)) as unknown as { id: string; next_attempt_at: Date | string | null }[];
    return rows.map((r) => ({ id: r.id, dueMs: r.next_attempt_at ? new Date(r.next_attempt_at).getTime() : Date.now() }));
  }

  /**
   * Pending, not held events due before `before`, oldest first, keyset on (next_attempt_at, id) after `after`: the
   * schedule reconciliation's pages. Served by event_deliveries_pending_idx (a range on next_attempt_at; ties on one
   * timestamp, a whole Enqueue batch, are ordered by an incremental sort of that range).
   */
  async overduePage(before: Date, after: OverdueCursor | null, limit: number): Promise<OverdueCursor[]> {
    // Spelled as a range plus a tie-break (not a row comparison) so both bounds are index conditions.
    const from = after ? new Date(after.dueMs).toISOString() : "-infinity";
    const rows = (await this.db.execute(sql`
      SELECT event_id AS id, next_attempt_at FROM event_deliveries
      WHERE status = 'pending' AND NOT held
        AND next_attempt_at >= ${from}::timestamptz AND next_attempt_at < ${before.toISOString()}::timestamptz
        AND (next_attempt_at > ${from}::timestamptz OR event_id > ${after?.id ?? ""})
      ORDER BY next_attempt_at, event_id LIMIT ${limit}`)) as unknown as { id: string; next_attempt_at: Date | string }[];
    return rows.map((r) => ({ id: r.id, dueMs: new Date(r.next_attempt_at).getTime() }));
  }

  getEvent(subscriptionId: string, eventId: string): Promise<EventViewRow | undefined> {
    return withDatabase(async () => {
      const [row] = await this.eventsById([eventId], { subscriptionId }).execute();
      return row;
    });
  }

  async lockEvent(tx: DelivererTx, subscriptionId: string, eventId: string): Promise<EventRow | undefined> {
    // The delivery state is what a retry changes: its row is the one locked, named in FOR UPDATE OF, hence a plain join
    // here (one event by id: a nested loop of two key probes) rather than the LATERAL probe of the other reads.
    const [row] = await tx
      .select(eventRowColumns)
      .from(events)
      .innerJoin(deliveries, deliveryOfEvent)
      .where(and(byIds([eventId]), eq(events.subscriptionId, subscriptionId)))
      .for("update", { of: deliveries });
    return row;
  }

  /** Starts a manual cycle of a locked event (lockEvent); returns the event with its new state. */
  async restartCycle(tx: DelivererTx, event: EventRow, at: Date): Promise<EventRow> {
    const [state] = await tx
      .update(eventDeliveries)
      .set({ status: "pending", attempts: 0, cycle: sql`${deliveries.cycle} + 1`, nextAttemptAt: at, held: false, trigger: "manual", updatedAt: new Date() })
      .where(and(eq(deliveries.eventId, event.id), eq(deliveries.createdAt, event.createdAt)))
      .returning(stateColumns);
    return { ...event, ...state! };
  }

  /** Newest first, keyset on (created_at, id); one extra row tells whether another page exists. */
  listEvents(subscriptionId: string, status: EventStatus | undefined, limit: number, after: PageCursor | undefined): Promise<EventViewRow[]> {
    return withDatabase(() => {
      // With a status the page is a range of event_deliveries_subscription_status_page_idx, else of
      // events_subscription_page_idx (pageQuery).
      return this.pageQuery({ subscriptionId, status }, limit, after).execute();
    });
  }

  // ---- operations: attempts, recover, search across a key, health ----

  /** An event's attempts, newest first, keyset on (attempted_at, id); read from the event's partition only. */
  listAttempts(event: Pick<EventRow, "id" | "createdAt">, limit: number, after: PageCursor | undefined): Promise<AttemptRow[]> {
    return withDatabase(() => {
      const conds = [eq(attempts.eventId, event.id), eq(attempts.eventCreatedAt, event.createdAt)];
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
      const page = after ? beforeCursor(deliveries.createdAt, deliveries.eventId, after) : undefined;
      const rows = await this.db
        .select({ id: deliveries.eventId, createdAt: deliveries.createdAt })
        .from(deliveries)
        .where(
          and(
            eq(deliveries.subscriptionId, subscriptionId),
            eq(deliveries.status, status),
            gte(deliveries.createdAt, since),
            lt(deliveries.createdAt, until),
            page,
          ),
        )
        .orderBy(desc(deliveries.createdAt), desc(deliveries.eventId))
        .limit(limit);
      return rows.map((r) => ({ id: r.id, t: r.createdAt.getTime() }));
    });
  }

  /** Starts a manual cycle for those of `ids` still in `status`; returns the ids it applied to (one short statement). */
  requeue(ids: string[], status: EventStatus, at: Date): Promise<string[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return withDatabase(async () => {
      const rows = await this.db
        .update(eventDeliveries)
        .set({ status: "pending", attempts: 0, cycle: sql`${deliveries.cycle} + 1`, nextAttemptAt: at, held: false, trigger: "manual", updatedAt: new Date() })
        .where(and(deliveriesByIds(ids), eq(deliveries.status, status)))
        .returning({ id: deliveries.eventId });
      return rows.map((r) => r.id);
    });
  }

  /**
   * GET /v1/events: a key's events, newest first, every filter an index condition (see the events_key_* indexes, and
   * event_deliveries_key_status_page_idx for the status); a subscription whose events are being purged is already
   * left out. With an address or a txId the page comes in two short statements instead of one join: the key's refs
   * in page order (the address's range of event_addresses, or the txId's of event_tx_refs), then those events by id
   * with created_at bounded to the refs' days. Neither an address nor a txId names a day to prune the events'
   * partitions by: a join would be planned against every partition and every index, which costs more than it runs
   * (README "Events").
   */
  searchEvents(q: EventSearch, limit: number, after: PageCursor | undefined): Promise<SearchPage> {
    return withDatabase(async () => {
      if (!q.address && !q.txId) return { rows: await this.searchQuery(q, limit, after).execute() };
      const out: EventViewRow[] = [];
      let cursor = after;
      let read = 0;
      // Other filters may drop some of the refs' events: read further, in growing steps, until the page is full or
      // the request has read its share of refs.
      for (let chunk = limit + 1; ; chunk = Math.min(chunk * 4, 5_000)) {
        const take = Math.min(chunk, SEARCH_REFS_PER_REQUEST - read);
        // The chunk that ends the request's share reads one ref more, unused: only a ref beyond the share earns a
        // token, so a search whose refs end exactly there answers its last page without one (not a token to an
        // empty page).
        const closing = take === SEARCH_REFS_PER_REQUEST - read;
        const fetched = await this.refsQuery(q, closing ? take + 1 : take, cursor).execute();
        const beyond = fetched.length > take;
        const refs = beyond ? fetched.slice(0, take) : fetched;
        read += refs.length;
        if (refs.length === 0) break;
        const found = new Map((await this.eventsOfRefs(q, refs)).map((e) => [e.id, e]));
        for (const r of refs) {
          const e = found.get(r.eventId);
          if (e) out.push(e);
        }
        if (out.length > limit || refs.length < take) break;
        const last = refs[refs.length - 1]!;
        cursor = { t: last.createdAt.getTime(), id: last.eventId };
        if (read >= SEARCH_REFS_PER_REQUEST) return beyond ? { rows: out, resumeAfter: cursor } : { rows: out };
      }
      return { rows: out.slice(0, limit + 1) };
    });
  }

  /** The statements searchEvents runs, as text and parameters (test/integration/operations.test.ts checks their plans). */
  searchSql(q: EventSearch, limit: number, after: PageCursor | undefined): { sql: string; params: unknown[] }[] {
    if (!q.address && !q.txId) return [this.searchQuery(q, limit, after).toSQL()];
    const t = after ? new Date(after.t) : new Date();
    return [
      this.refsQuery(q, limit + 1, after).toSQL(),
      this.eventsOfRefsQuery(q, [{ eventId: after?.id ?? "evt_", createdAt: t }]).toSQL(),
    ];
  }

  /**
   * A page of the key's refs for the search's address (event_addresses) or, without one, its txId (event_tx_refs):
   * (event id, created_at) in page order, one range of the table's page index (neither table is partitioned).
   */
  private refsQuery(q: EventSearch, limit: number, after: PageCursor | undefined): Statement<{ eventId: string; createdAt: Date }> {
    const byAddress = Boolean(q.address);
    const values = { keyId: q.keyId, value: byAddress ? q.address : q.txId, since: q.since, until: q.until, ...cursorValues(after), limit };
    const shape = `refs:${byAddress ? "address" : "txId"}:${q.since ? "s" : ""}${q.until ? "u" : ""}${after ? "a" : ""}`;
    const refs = byAddress ? eventAddresses : eventTxRefs;
    const value = byAddress ? eventAddresses.address : eventTxRefs.txId;
    const fields = { eventId: refs.eventId, createdAt: refs.createdAt };
    return this.shapes.statement(shape, values, { client: this.db.$client, fields }, (p) => {
      const conds = [eq(refs.keyId, p("keyId")), eq(value, p("value")), ...pageBounds(refs.createdAt, refs.eventId, q, after, p)];
      return this.db
        .select(fields)
        .from(refs)
        .where(and(...conds))
        .orderBy(desc(refs.createdAt), desc(refs.eventId))
        .limit(asLimit(p("limit")));
    });
  }

  private eventsOfRefsQuery(q: EventSearch, refs: { eventId: string; createdAt: Date }[]): PageQuery {
    const times = refs.map((r) => r.createdAt.getTime());
    const window = { from: new Date(Math.min(...times)), to: new Date(Math.max(...times)) };
    // No key condition: the refs are the key's already (both ref tables are keyed by it), and with one the planner
    // could read the key's events between the refs' times through its page index instead of probing the page's ids
    // (at 1,000,000 rows, where the key's newest day is dense, 10,000 rows read for a busy address's 51).
    const { subscriptionId, status, txId, chainId, kind } = q;
    return this.eventsById(refs.map((r) => r.eventId), { subscriptionId, status, txId, chainId, kind, skipPurged: true }, window);
  }

  private eventsOfRefs(q: EventSearch, refs: { eventId: string; createdAt: Date }[]): Promise<EventViewRow[]> {
    return this.eventsOfRefsQuery(q, refs).execute();
  }

  private searchQuery(q: EventSearch, limit: number, after: PageCursor | undefined): PageQuery {
    return this.pageQuery({ ...q, skipPurged: true }, limit, after);
  }

  /**
   * The state of each row of `events` in scope, as a LATERAL subquery (see pageQuery), bounded to the statement's
   * `from` and `to` when the rows' days are known so it reads those partitions only.
   */
  private stateProbe(window?: Bind) {
    const conds = [eq(deliveries.eventId, events.id), eq(deliveries.createdAt, events.createdAt)];
    if (window) conds.push(between(deliveries.createdAt, window("from"), window("to")));
    return this.db.select(viewStateColumns).from(deliveries).where(and(...conds)).limit(1).as("d");
  }

  /** Events by id (bounded by the ids' times, or `window`) with their state, filtered further by `f`. */
  private eventsById(ids: string[], f: PageFilters, window = eventTimeWindow(ids)): PageQuery {
    const values: Record<string, unknown> = { ...filterValues(f), from: window?.from, to: window?.to };
    ids.forEach((id, i) => (values[`id${i}`] = id));
    const shape = `eventsById:${ids.length}${window ? "w" : ""}:${filterShape(f)}`;
    // One id, or ids with no filter that an index of events leads with, are primary-key probes on any plan, so the
    // generic one serves (no planning per run: 0.23 ms of PostgreSQL per 51-event page). With a subscription or a
    // key a generic plan may read that range between the ids' times instead: planned for the values (openPlannedReads).
    const pool = ids.length === 1 || (!f.subscriptionId && !f.keyId) ? this.db : this.planned;
    return this.shapes.statement(shape, values, { client: pool.$client, fields: eventViewColumns }, (p) => {
      const d = this.stateProbe(window ? p : undefined);
      const list = ids.map((_, i) => p(`id${i}`));
      const conds = [ids.length === 1 ? eq(events.id, list[0]!) : sql`${events.id} IN (${sql.join(list, sql`, `)})`, ...eventConditions(f, p)];
      if (f.status) conds.push(eq(d.status, p("status")));
      if (window) conds.push(between(events.createdAt, p("from"), p("to")));
      return pool.select(withStateOf(d)).from(events).innerJoinLateral(d, sql`true`).where(and(...conds));
    }, ids.length <= MAX_KEPT_IDS);
  }

  /**
   * One page of events, newest first, after the cursor, with one extra row to tell if more follow. With a status the
   * page is a range of an event_deliveries (…, status, created_at, event_id) index, each row's event read by its
   * (id, created_at); otherwise a range of an events index, each row's state read the same way. The other side is a
   * LATERAL subquery (LIMIT 1: one row per event, and never flattened into a join): the planner estimates a join on
   * two unique columns (id and created_at) at about one row, so a plain join under LIMIT was planned as a hash join of
   * the key's every event with every state (hundreds of ms); a lateral probe is a nested loop by construction, each
   * probe visiting one partition (run-time pruning on created_at).
   */
  private pageQuery(f: PageFilters, limit: number, after: PageCursor | undefined): PageQuery {
    const values = { ...filterValues(f), ...cursorValues(after), limit: limit + 1 };
    const shape = `page:${filterShape(f)}${after ? "a" : ""}`;
    const target = { client: this.db.$client, fields: eventViewColumns };
    if (f.status) {
      return this.shapes.statement(shape, values, target, (p) => {
        const e = this.db
          .select({ ...viewEventColumns, txId: events.txId })
          .from(events)
          .where(and(eq(events.id, deliveries.eventId), eq(events.createdAt, deliveries.createdAt)))
          .limit(1)
          .as("e");
        const conds: SQL[] = [eq(deliveries.status, p("status"))];
        if (f.keyId) conds.push(eq(deliveries.keyId, p("keyId")));
        if (f.subscriptionId) conds.push(eq(deliveries.subscriptionId, p("subscriptionId")));
        if (f.skipPurged) conds.push(notPurged(deliveries.subscriptionId));
        if (f.txId) conds.push(eq(e.txId, p("txId")));
        if (f.chainId) conds.push(eq(e.chainId, p("chainId")));
        if (f.kind) conds.push(eq(e.kind, p("kind")));
        conds.push(...pageBounds(deliveries.createdAt, deliveries.eventId, f, after, p));
        return this.db
          .select(withEventOf(e))
          .from(deliveries)
          .innerJoinLateral(e, sql`true`)
          .where(and(...conds))
          .orderBy(desc(deliveries.createdAt), desc(deliveries.eventId))
          .limit(asLimit(p("limit")));
      });
    }
    return this.shapes.statement(shape, values, target, (p) => {
      const d = this.stateProbe();
      const conds = [...eventConditions(f, p), ...pageBounds(events.createdAt, events.id, f, after, p)];
      return this.db
        .select(withStateOf(d))
        .from(events)
        .innerJoinLateral(d, sql`true`)
        .where(and(...conds))
        .orderBy(desc(events.createdAt), desc(events.id))
        .limit(asLimit(p("limit")));
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
        SELECT count(*)::int AS n FROM event_deliveries WHERE subscription_id = ${subscriptionId} AND status = 'pending'`)) as unknown as { n: number }[];
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

  /** The filters of a stream as fragments of `client`'s statements (a fragment belongs to the pool that runs it). */
  private streamConditions(filter: StreamFilter, client: DelivererDb["$client"]) {
    return {
      subs: filter.subscriptionIds.length > 0 ? client`AND events.subscription_id IN ${client(filter.subscriptionIds)}` : client``,
      kinds: filter.kinds.length > 0 ? client`AND events.kind IN ${client(filter.kinds)}` : client``,
      chains: filter.chainIds.length > 0 ? client`AND events.chain_id IN ${client(filter.chainIds)}` : client``,
    };
  }

  /**
   * Whether the key has events after `after` that streamPage does not return yet: rows of transactions newer than
   * one still running somewhere in the cluster (one index probe).
   */
  async streamHeldBack(filter: StreamFilter, after: StreamPosition): Promise<boolean> {
    const client = this.db.$client;
    const { subs, kinds, chains } = this.streamConditions(filter, client);
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
   * arrays), one index range of events_stream_idx (key_id, xid, seq), each row's delivery state probed by its
   * (id, created_at) in a LATERAL subquery (a nested loop by construction: see pageQuery).
   */
  async streamPage(filter: StreamFilter, after: StreamPosition, limit: number): Promise<StreamRow[]> {
    const client = this.planned.$client;
    const { subs, kinds, chains } = this.streamConditions(filter, client);
    // The page must come off events_stream_idx in order. Before the table has statistics (fresh rows, autovacuum
    // not yet run) the planner guesses a handful of rows and picks a bitmap scan and a sort of every remaining row
    // of the key, on every page: a consumer far behind would read in O(n²). The planned reads' connections have
    // sorting off (openPlannedReads).
    const rows = (await withDatabase(() =>
      client`
          SELECT events.id, events.subscription_id, events.kind, events.chain_id, d.status, d.attempts, d.delivery_count,
            d.response_status, d.response_body, d.held, d.held_reason, events.payload, events.created_at, events.xid::text AS xid, events.seq
          FROM events CROSS JOIN LATERAL (
            SELECT status, attempts, delivery_count, response_status, response_body, held, held_reason FROM event_deliveries
            WHERE event_id = events.id AND created_at = events.created_at LIMIT 1) d
          WHERE events.key_id = ${filter.keyId} AND (events.xid, events.seq) > (${after.xid}::xid8, ${after.seq}::bigint)
            AND events.xid < pg_snapshot_xmin(pg_current_snapshot()) ${subs} ${kinds} ${chains}
          ORDER BY events.xid, events.seq LIMIT ${limit}`,
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
      held: boolean;
      held_reason: HoldReason | null;
      payload: string;
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
      held: r.held,
      heldReason: r.held_reason,
      payload: r.payload,
      createdAt: r.created_at,
      xid: r.xid,
      seq: Number(r.seq),
    }));
  }
}
