// The deliverer's tables (its own migrations folder and journal, __deliverer_migrations). Row types come from here.
import { idempotencyTable } from "../common/idempotency.ts";
import { sql } from "drizzle-orm";
import type { HoldReason } from "../common/hold-reasons.ts";
import { bigint, boolean, check, customType, index, integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

const ms = (name: string) => timestamp(name, { precision: 3, withTimezone: true, mode: "date" });

// PostgreSQL's 64-bit transaction id (xid8), read as its decimal text.
const xid8 = customType<{ data: string; driverData: string }>({
  dataType: () => "xid8",
  fromDriver: (value) => String(value),
});

export const EVENT_STATUSES = ["pending", "delivered", "failed"] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];
export const ATTEMPT_TRIGGERS = ["automatic", "manual"] as const;
export type AttemptTrigger = (typeof ATTEMPT_TRIGGERS)[number];

// The delivery log: one row per event of a subscription, written once and never updated (its delivery state lives in
// event_deliveries). Partitioned by day on created_at (deliverer/partitions.ts; drizzle cannot say so: the migrations
// 0004 and 0005 are hand-edited), so retention drops whole days and every unique key includes created_at. An event's
// id is a ULID minted when it is created: its time lies within a minute of created_at, which lets a lookup by id visit
// one partition (eventTimeWindow).
export const events = pgTable(
  "events",
  {
    id: text("id").notNull(),
    subscriptionId: text("subscription_id").notNull(),
    // The API key that owns the subscription: StreamEvents and GET /v1/events read a key's events; null on rows made
    // before it existed.
    keyId: text("key_id"),
    kind: text("kind").notNull(),
    // Null for service.ping.
    chainId: text("chain_id"),
    txId: text("tx_id"),
    logIndex: integer("log_index"),
    // The addresses the event is found by (also in event_addresses, which GET /v1/events?address= reads): a
    // transfer's from and to, an activity's (deliverer/search-refs.ts); empty for service.ping.
    addresses: text("addresses").array().notNull().default(sql`'{}'::text[]`),
    // Position in the transaction info's internal_transactions; -1 for every other transfer (and activity, service.ping).
    internalIndex: integer("internal_index").notNull().default(-1),
    // The payload's JSON as it is delivered and shown (deliverer/payload.ts renderPayload), written once and never
    // parsed again: every read (a delivery, a page of the API, StreamEvents) hands these bytes on as they are. As
    // jsonb it was printed by PostgreSQL and parsed by the driver on every read, then put back in the contract's key
    // order and serialized again (migration 0008; docs/adr/0003-payload-stored-as-text.md). A check keeps it a JSON object.
    payload: text("payload").notNull(),
    createdAt: ms("created_at").notNull(),
    // The stream position (deliverer/stream.ts): the inserting transaction and the order within it. A reader takes
    // only rows whose transaction is older than every transaction still running, so a row that commits later can
    // never appear behind a position already read (a bare sequence would let a slow commit slip behind a cursor).
    xid: xid8("xid").notNull().default(sql`pg_current_xact_id()`),
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity(),
  },
  (t) => [
    primaryKey({ name: "events_pkey", columns: [t.id, t.createdAt] }),
    check("events_payload_object", sql`json_typeof(${t.payload}::json) = 'object'`),
    // Page indexes end in (created_at DESC NULLS FIRST, id DESC NULLS FIRST): exactly what ORDER BY … DESC means, so a
    // page is read in index order with no sort (DESC NULLS LAST, drizzle's default, does not match it).
    index("events_subscription_page_idx").on(t.subscriptionId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("events_stream_idx").on(t.keyId, t.xid, t.seq),
    // GET /v1/events: one index per filter, each ending in the page order so a page is an index range (the status
    // filter's are on event_deliveries, the txId filter's on event_tx_refs, the address filter's on event_addresses).
    index("events_key_page_idx").on(t.keyId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("events_key_kind_page_idx").on(t.keyId, t.kind, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index("events_key_chain_page_idx").on(t.keyId, t.chainId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
  ],
);

// The delivery state of an event: one row per event, inserted in the event's statement and changed by every outcome.
// Kept apart from events (migration 0005) so that an outcome rewrites this narrow row and its five indexes, not the
// event's payload and every page index of events (docs/architecture.md "Event storage"). Partitioned by the event's
// created_at with the events' bounds; read joined to its event on (event_id, created_at).
export const eventDeliveries = pgTable(
  "event_deliveries",
  {
    eventId: text("event_id").notNull(),
    // The event's created_at: the partition key, and the page order of the status lists.
    createdAt: ms("created_at").notNull(),
    subscriptionId: text("subscription_id").notNull(),
    keyId: text("key_id"),
    status: text("status").$type<EventStatus>().notNull(),
    // Attempts in the current dispatch cycle (a manual retry starts a new cycle at 0).
    attempts: integer("attempts").notNull().default(0),
    // The dispatch cycle's number, one more at each manual retry or recover. A claim carries it and an outcome applies
    // only in its own cycle: a late outcome of the cycle before a retry would otherwise find the same pending state
    // with the same attempt count (0) and take the retry's place.
    cycle: integer("cycle").notNull().default(0),
    deliveryCount: integer("delivery_count").notNull().default(0),
    responseStatus: integer("response_status"),
    responseBody: text("response_body"),
    // When the next attempt is due; null once the event is delivered or failed.
    nextAttemptAt: ms("next_attempt_at"),
    // A pending event whose subscription is disabled (or key revoked): kept out of the schedule until it resumes.
    held: boolean("held").notNull().default(false),
    // Why it is held (common/hold-reasons.ts), as the registry named it; read only while `held`.
    heldReason: text("held_reason").$type<HoldReason>(),
    // What started the current dispatch cycle: the automatic schedule, or a retry / recover call.
    trigger: text("trigger").$type<AttemptTrigger>().notNull().default("automatic"),
    updatedAt: ms("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ name: "event_deliveries_pkey", columns: [t.eventId, t.createdAt] }),
    index("event_deliveries_subscription_status_page_idx").on(t.subscriptionId, t.status, t.createdAt.desc().nullsFirst(), t.eventId.desc().nullsFirst()),
    index("event_deliveries_key_status_page_idx").on(t.keyId, t.status, t.createdAt.desc().nullsFirst(), t.eventId.desc().nullsFirst()),
    // The schedule rebuild reads only pending rows; the reconciliation reads their overdue range by due time.
    index("event_deliveries_pending_idx").on(t.nextAttemptAt).where(sql`status = 'pending' AND NOT held`),
    index("event_deliveries_held_idx").on(t.subscriptionId).where(sql`status = 'pending' AND held`),
  ],
);

// One event per (subscription, kind, transfer): a re-read block, the second stream over the same block or a fork that
// re-includes the transaction in another block makes no second event; a transfer is (chain, transaction, log index,
// internal index), and an activity (chain, transaction, log index) with internal index -1, its family in the kind.
// A unique key on the events table would have to include created_at (its partition key), which
// differs between two reads of a block, so the identity lives here. Not partitioned (migration 0009): a partition key
// would have to be part of the identity, and nothing of a transfer's time is: the block's day changes when a fork
// re-includes the transaction in a block past midnight (a second event under a new webhook-id). Retention deletes the
// rows whose event is gone, in short batches along event_created_at (partitions.ts).
export const eventTransferKeys = pgTable(
  "event_transfer_keys",
  {
    subscriptionId: text("subscription_id").notNull(),
    kind: text("kind").notNull(),
    chainId: text("chain_id").notNull(),
    txId: text("tx_id").notNull(),
    logIndex: integer("log_index").notNull(),
    internalIndex: integer("internal_index").notNull(),
    eventId: text("event_id").notNull(),
    eventCreatedAt: ms("event_created_at").notNull(),
  },
  (t) => [
    primaryKey({
      name: "event_transfer_keys_pkey",
      columns: [t.subscriptionId, t.kind, t.chainId, t.txId, t.logIndex, t.internalIndex],
    }),
    index("event_transfer_keys_created_idx").on(t.eventCreatedAt),
  ],
);

// GET /v1/events?address=: one row per (event, address), written in the event's statement, so a key's events
// touching an address are one index range in page order (a GIN index on an array cannot give that order: README
// "Events"). Not partitioned, like event_tx_refs below and for the same reason: an address names no day, and a search
// that opened and locked each daily partition's index spent more on that than on the probe. Retention deletes the
// rows older than the oldest partition left (partitions.ts), in short batches along the primary key.
export const eventAddresses = pgTable(
  "event_addresses",
  {
    keyId: text("key_id").notNull(),
    address: text("address").notNull(),
    createdAt: ms("created_at").notNull(),
    eventId: text("event_id").notNull(),
  },
  (t) => [
    primaryKey({ name: "event_addresses_pkey", columns: [t.createdAt, t.eventId, t.address] }),
    index("event_addresses_page_idx").on(t.keyId, t.address, t.createdAt.desc().nullsFirst(), t.eventId.desc().nullsFirst()),
  ],
);

// GET /v1/events?txId=: one row per event of a key with a transaction, written in the event's statement. Not
// partitioned, unlike the events: a txId says nothing of its time, so on the events a search probed one index in each
// of the 30-odd daily partitions, and opening and locking them cost more than the probes (docs/adr/0002-events-partitioned-by-day.md). Here it
// is one index range in page order; retention deletes the rows older than the oldest partition left (partitions.ts),
// in short batches along the primary key.
export const eventTxRefs = pgTable(
  "event_tx_refs",
  {
    keyId: text("key_id").notNull(),
    txId: text("tx_id").notNull(),
    createdAt: ms("created_at").notNull(),
    eventId: text("event_id").notNull(),
  },
  (t) => [
    primaryKey({ name: "event_tx_refs_pkey", columns: [t.createdAt, t.eventId] }),
    index("event_tx_refs_page_idx").on(t.keyId, t.txId, t.createdAt.desc().nullsFirst(), t.eventId.desc().nullsFirst()),
  ],
);

// Subscriptions whose events are being deleted in the background (DeleteSubscriptionEvents returns at once; the
// deliverer's purge loop deletes in batches and removes the row when nothing is left).
export const eventPurges = pgTable("event_purges", {
  subscriptionId: text("subscription_id").primaryKey(),
  requestedAt: ms("requested_at").notNull(),
});

// Every delivery attempt of an event, written in the same statement as the outcome. Partitioned by its event's
// created_at with the events' bounds, so an event's attempts live in the partition of the same day and go with it.
// No foreign key: one between partitioned tables makes every partition drop a referential check (a scan under an
// exclusive lock); the event's deletes (purge, cancel) delete its attempts in the same statement instead.
export const attempts = pgTable(
  "delivery_attempts",
  {
    id: text("id").notNull(),
    eventId: text("event_id").notNull(),
    eventCreatedAt: ms("event_created_at").notNull(),
    subscriptionId: text("subscription_id").notNull(),
    attemptedAt: ms("attempted_at").notNull(),
    durationMs: integer("duration_ms").notNull(),
    ok: boolean("ok").notNull(),
    responseStatus: integer("response_status"),
    responseBody: text("response_body"),
    // A short reason when the attempt got no HTTP response (timeout, connection refused, TLS, SSRF block).
    error: text("error"),
    trigger: text("trigger").$type<AttemptTrigger>().notNull(),
  },
  (t) => [
    primaryKey({ name: "delivery_attempts_pkey", columns: [t.id, t.eventCreatedAt] }),
    index("delivery_attempts_event_idx").on(t.eventId, t.attemptedAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // The health view reads a subscription's attempts of the last 24 hours.
    index("delivery_attempts_subscription_idx").on(t.subscriptionId, t.attemptedAt.desc().nullsFirst()),
  ],
);

// Idempotency records of the deliverer's effects (test and retry), written in the effect's transaction.
export const deliveryIdempotency = idempotencyTable("delivery_idempotency_records", "delivery_idempotency_expires_idx");

export const delivererSchema = { events, eventDeliveries, attempts, eventTransferKeys, eventAddresses, eventTxRefs, eventPurges, deliveryIdempotency };
export type DelivererSchema = typeof delivererSchema;

export type DeliveryRow = typeof eventDeliveries.$inferSelect;
/** The delivery state an event shows beside its own columns (event_deliveries minus the columns events has too). */
export type DeliveryState = Omit<DeliveryRow, "eventId" | "createdAt" | "subscriptionId" | "keyId">;
/** An event as reads show it: its row joined to its delivery state on (id, created_at). */
export type EventRow = typeof events.$inferSelect & DeliveryState;
/** A new event: its row and its first delivery state (the state's defaults as in event_deliveries). */
export type NewEventRow = typeof events.$inferInsert &
  Pick<typeof eventDeliveries.$inferInsert, "status" | "nextAttemptAt" | "held" | "heldReason" | "trigger" | "updatedAt">;
export type AttemptRow = typeof attempts.$inferSelect;
export type DeliveryIdempotencyRow = typeof deliveryIdempotency.$inferSelect;
