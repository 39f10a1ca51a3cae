// The deliverer's persistence, one module per use (this folder), composed for the callers that hold one store: the
// delivery log (events, insert-only, and event_deliveries, each event's delivery state) and the idempotency records
// of test and retry, on PostgreSQL (Drizzle, Bun SQL). Batch paths (enqueue, outcomes) are one statement per batch.
// Each method only hands over to its use's module, where the statement and its reasons live.
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { sql } from "drizzle-orm";
import type { HoldReason } from "../../common/hold-reasons.ts";
import type { IdempotentOutcome } from "../../common/idempotency.ts";
import type { Keyring } from "../../common/keyring.ts";
import type { IdempotencyRequest } from "../../gen/webhooks/common/v1/error_pb.ts";
import type { EventViewRow } from "../payload.ts";
import type { AttemptRow, EventRow, EventStatus, NewEventRow } from "../schema.ts";
import { loadClaimed } from "./claims.ts";
import type { DelivererDb, DelivererTx, Executor } from "./connection.ts";
import { insertEvent, insertTransferEvents } from "./enqueue.ts";
import { EventPages } from "./event-pages.ts";
import { getEvent, listAttempts, listEvents, lockEvent, restartCycle } from "./event-reads.ts";
import { health } from "./health.ts";
import { heldEventIds, heldSubscriptions, markHeld, setHeldReason, unhold } from "./held.ts";
import { DelivererIdempotency } from "./idempotency.ts";
import { recordOutcomes } from "./outcomes.ts";
import { overduePage, pendingPage } from "./pending.ts";
import { deleteEvents, purgeBatch, purgeRequests, requestPurge } from "./purge.ts";
import { recoverCandidates, requeue } from "./recover.ts";
import { searchEvents, searchSql } from "./search.ts";
import { StreamReads } from "./stream-reads.ts";
import type {
  ClaimedEvent,
  EventSearch,
  OverdueCursor,
  Outcome,
  PageCursor,
  SearchPage,
  StreamFilter,
  StreamPosition,
  StreamRow,
  SubscriptionHealth,
} from "./types.ts";

export class DelivererStore {
  readonly pages: EventPages;
  readonly stream: StreamReads;
  readonly idempotency: DelivererIdempotency;

  constructor(
    readonly db: DelivererDb,
    keyring: Keyring,
    /** The pool of the reads planned for their values (openPlannedReads); the main pool without one. */
    planned: DelivererDb = db,
  ) {
    this.pages = new EventPages(db, planned);
    this.stream = new StreamReads(db, planned);
    this.idempotency = new DelivererIdempotency(db, keyring);
  }

  async ping(): Promise<boolean> {
    await this.db.execute(sql`select 1`);
    return true;
  }

  // ---- enqueue (enqueue.ts) ----

  insertTransferEvents(rows: NewEventRow[]): Promise<{ inserted: Set<string>; idByKey: Map<string, string> }> {
    return insertTransferEvents(this.db, rows);
  }

  insertEvent(ex: Executor, row: NewEventRow): Promise<EventRow> {
    return insertEvent(ex, row);
  }

  // ---- claims and outcomes (claims.ts, outcomes.ts) ----

  loadClaimed(ids: string[]): Promise<ClaimedEvent[]> {
    return loadClaimed(this.db, ids);
  }

  recordOutcomes(outcomes: Outcome[]): Promise<Set<string>> {
    return recordOutcomes(this.db, outcomes);
  }

  // ---- held events (held.ts) ----

  markHeld(ids: string[], reason: HoldReason): Promise<void> {
    return markHeld(this.db, ids, reason);
  }

  setHeldReason(subscriptionIds: string[], reason: HoldReason): Promise<number> {
    return setHeldReason(this.db, subscriptionIds, reason);
  }

  heldSubscriptions(after: string, limit: number): Promise<string[]> {
    return heldSubscriptions(this.db, after, limit);
  }

  heldEventIds(subscriptionIds: string[], limit: number): Promise<string[]> {
    return heldEventIds(this.db, subscriptionIds, limit);
  }

  unhold(ids: string[], at: Date): Promise<string[]> {
    return unhold(this.db, ids, at);
  }

  // ---- the schedule's pages (pending.ts) ----

  pendingPage(afterId: string, limit: number): Promise<{ id: string; dueMs: number }[]> {
    return pendingPage(this.db, afterId, limit);
  }

  overduePage(before: Date, after: OverdueCursor | null, limit: number): Promise<OverdueCursor[]> {
    return overduePage(this.db, before, after, limit);
  }

  // ---- purge (purge.ts) ----

  deleteEvents(ids: string[]): Promise<void> {
    return deleteEvents(this.db, ids);
  }

  requestPurge(subscriptionId: string): Promise<void> {
    return requestPurge(this.db, subscriptionId);
  }

  purgeRequests(limit: number): Promise<string[]> {
    return purgeRequests(this.db, limit);
  }

  purgeBatch(subscriptionId: string, limit: number): Promise<{ deleted: number; pendingIds: string[] }> {
    return purgeBatch(this.db, subscriptionId, limit);
  }

  // ---- event reads (event-reads.ts) ----

  getEvent(subscriptionId: string, eventId: string): Promise<EventViewRow | undefined> {
    return getEvent(this.pages, subscriptionId, eventId);
  }

  lockEvent(tx: DelivererTx, subscriptionId: string, eventId: string): Promise<EventRow | undefined> {
    return lockEvent(tx, subscriptionId, eventId);
  }

  restartCycle(tx: DelivererTx, event: EventRow, at: Date): Promise<EventRow> {
    return restartCycle(tx, event, at);
  }

  listEvents(subscriptionId: string, status: EventStatus | undefined, limit: number, after: PageCursor | undefined): Promise<EventViewRow[]> {
    return listEvents(this.pages, subscriptionId, status, limit, after);
  }

  listAttempts(event: Pick<EventRow, "id" | "createdAt">, limit: number, after: PageCursor | undefined): Promise<AttemptRow[]> {
    return listAttempts(this.db, event, limit, after);
  }

  // ---- recover (recover.ts) ----

  recoverCandidates(
    subscriptionId: string,
    status: EventStatus,
    since: Date,
    until: Date,
    after: PageCursor | undefined,
    limit: number,
  ): Promise<{ id: string; t: number }[]> {
    return recoverCandidates(this.db, subscriptionId, status, since, until, after, limit);
  }

  requeue(ids: string[], status: EventStatus, at: Date): Promise<string[]> {
    return requeue(this.db, ids, status, at);
  }

  // ---- search and health (search.ts, health.ts) ----

  searchEvents(q: EventSearch, limit: number, after: PageCursor | undefined): Promise<SearchPage> {
    return searchEvents(this.pages, q, limit, after);
  }

  searchSql(q: EventSearch, limit: number, after: PageCursor | undefined): { sql: string; params: unknown[] }[] {
    return searchSql(this.pages, q, limit, after);
  }

  health(subscriptionId: string, now: Date): Promise<SubscriptionHealth> {
    return health(this.db, subscriptionId, now);
  }

  // ---- idempotency (idempotency.ts) ----

  idempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest | undefined,
    effect: (tx: DelivererTx) => Promise<MessageShape<Desc>>,
  ): Promise<IdempotentOutcome<MessageShape<Desc>>> {
    return this.idempotency.idempotent(schema, keyId, scope, idem, effect);
  }

  findIdempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest,
  ): Promise<IdempotentOutcome<MessageShape<Desc>> | undefined> {
    return this.idempotency.findIdempotent(schema, keyId, scope, idem);
  }

  recordIdempotent<Desc extends DescMessage>(
    schema: Desc,
    keyId: string,
    scope: string,
    idem: IdempotencyRequest,
    message: MessageShape<Desc>,
  ): Promise<IdempotentOutcome<MessageShape<Desc>>> {
    return this.idempotency.recordIdempotent(schema, keyId, scope, idem, message);
  }

  purgeExpiredIdempotency(): Promise<number> {
    return this.idempotency.purgeExpiredIdempotency();
  }

  // ---- stream reads (stream-reads.ts) ----

  streamHeldBack(filter: StreamFilter, after: StreamPosition): Promise<boolean> {
    return this.stream.streamHeldBack(filter, after);
  }

  streamPage(filter: StreamFilter, after: StreamPosition, limit: number): Promise<StreamRow[]> {
    return this.stream.streamPage(filter, after, limit);
  }
}
