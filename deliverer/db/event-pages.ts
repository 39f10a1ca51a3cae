// Event pages: the statements of the API's event reads (one event, a subscription's list, a search's page), each
// built once per shape (deliverer/prepared.ts) and run on the pool its plan wants.
import { and, between, desc, eq, gte, lt, sql, type SQL } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import { eventTimeWindow } from "../partitions.ts";
import type { EventViewRow } from "../payload.ts";
import { asLimit, PreparedShapes, type Bind, type Statement } from "../prepared.ts";
import { eventPurges, events, type EventStatus } from "../schema.ts";
import { deliveries, keysetBefore } from "./bounds.ts";
import type { DelivererDb } from "./connection.ts";
import type { PageCursor } from "./types.ts";

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

/** A page's statement: its text for EXPLAIN, or its events' views. */
export type PageQuery = Statement<EventViewRow>;

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
export function cursorValues(after: PageCursor | undefined): Record<string, unknown> {
  return after ? { afterT: new Date(after.t), afterId: after.id } : {};
}

/**
 * A page's time bounds (`since`, `until`) and its cursor (before `afterT`, `afterId` in (time, id) order) on the
 * given columns, their values bound by name.
 */
export function pageBounds(time: PgColumn, id: PgColumn, f: { since?: Date | undefined; until?: Date | undefined }, after: PageCursor | undefined, p: Bind): SQL[] {
  const conds: SQL[] = [];
  if (f.since) conds.push(gte(time, p("since")));
  if (f.until) conds.push(lt(time, p("until")));
  if (after) conds.push(keysetBefore(time, id, p("afterT"), p("afterId")));
  return conds;
}

export class EventPages {
  /** The event reads of the API, each built once per shape (deliverer/prepared.ts). */
  readonly shapes = new PreparedShapes();

  constructor(
    readonly db: DelivererDb,
    /** The pool of the reads planned for their values (openPlannedReads); the main pool without one. */
    private readonly planned: DelivererDb = db,
  ) {}

  /**
   * The state of each row of `events` in scope, as a LATERAL subquery (see pageQuery), bounded to the statement's
   * `from` and `to` when the rows' days are known so it reads those partitions only.
   */
  stateProbe(window?: Bind) {
    const conds = [eq(deliveries.eventId, events.id), eq(deliveries.createdAt, events.createdAt)];
    if (window) conds.push(between(deliveries.createdAt, window("from"), window("to")));
    return this.db.select(viewStateColumns).from(deliveries).where(and(...conds)).limit(1).as("d");
  }

  /** Events by id (bounded by the ids' times, or `window`) with their state, filtered further by `f`. */
  eventsById(ids: string[], f: PageFilters, window = eventTimeWindow(ids)): PageQuery {
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
  pageQuery(f: PageFilters, limit: number, after: PageCursor | undefined): PageQuery {
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
}
