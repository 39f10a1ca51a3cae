// The deliverer's tables (its own migrations folder and journal, __deliverer_migrations). Row types come from here.
import { idempotencyTable } from "../common/idempotency.ts";
import { sql } from "drizzle-orm";
import { jsonb } from "../common/jsonb.ts";
import { bigint, boolean, customType, index, integer, pgTable, primaryKey, text, timestamp, uniqueIndex } from "drizzle-orm/pg-core";

const ms = (name: string) => timestamp(name, { precision: 3, withTimezone: true, mode: "date" });

const jsonObject = jsonb<Record<string, unknown>>();

// PostgreSQL's 64-bit transaction id (xid8), read as its decimal text.
const xid8 = customType<{ data: string; driverData: string }>({
  dataType: () => "xid8",
  fromDriver: (value) => String(value),
});

export const EVENT_STATUSES = ["pending", "delivered", "failed"] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];
export const ATTEMPT_TRIGGERS = ["automatic", "manual"] as const;
export type AttemptTrigger = (typeof ATTEMPT_TRIGGERS)[number];

// The delivery log: one row per event of a subscription, with the outcome of its latest attempt.
export const events = pgTable(
  "events",
  {
    id: text("id").primaryKey(),
    subscriptionId: text("subscription_id").notNull(),
    // The API key that owns the subscription: StreamEvents and GET /v1/events read a key's events; null on rows made
    // before it existed.
    keyId: text("key_id"),
    kind: text("kind").notNull(),
    // Null for service.ping.
    chainId: text("chain_id"),
    txId: text("tx_id"),
    logIndex: integer("log_index"),
    // The transfer's from and to addresses (GET /v1/events?address= matches either role); empty for service.ping.
    addresses: text("addresses").array().notNull().default(sql`'{}'::text[]`),
    // Position in the transaction info's internal_transactions; -1 for every other transfer (and service.ping).
    internalIndex: integer("internal_index").notNull().default(-1),
    payload: jsonObject("payload").notNull(),
    status: text("status").$type<EventStatus>().notNull(),
    // Attempts in the current dispatch cycle (a manual retry starts a new cycle at 0).
    attempts: integer("attempts").notNull().default(0),
    deliveryCount: integer("delivery_count").notNull().default(0),
    responseStatus: integer("response_status"),
    responseBody: text("response_body"),
    // When the next attempt is due; null once the event is delivered or failed.
    nextAttemptAt: ms("next_attempt_at"),
    // A pending event whose subscription is disabled (or key revoked): kept out of the schedule until it resumes.
    held: boolean("held").notNull().default(false),
    // What started the current dispatch cycle: the automatic schedule, or a retry / recover call.
    trigger: text("trigger").$type<AttemptTrigger>().notNull().default("automatic"),
    createdAt: ms("created_at").notNull(),
    updatedAt: ms("updated_at").notNull(),
    // The stream position (deliverer/stream.ts): the inserting transaction and the order within it. A reader takes
    // only rows whose transaction is older than every transaction still running, so a row that commits later can
    // never appear behind a position already read (a bare sequence would let a slow commit slip behind a cursor).
    xid: xid8("xid").notNull().default(sql`pg_current_xact_id()`),
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity(),
  },
  (t) => [
    // One event per (subscription, kind, transfer): a re-read block or the second stream over the same block makes
    // no second event; a transfer is (chain, transaction, log index, internal index).
    uniqueIndex("events_transfer_kind_uq").on(t.subscriptionId, t.kind, t.chainId, t.txId, t.logIndex, t.internalIndex),
    index("events_subscription_page_idx").on(t.subscriptionId, t.createdAt.desc(), t.id.desc()),
    index("events_subscription_status_page_idx").on(t.subscriptionId, t.status, t.createdAt.desc(), t.id.desc()),
    // The schedule rebuild reads only pending rows; the reconciliation reads their overdue range by due time.
    index("events_pending_idx").on(t.nextAttemptAt).where(sql`status = 'pending' AND NOT held`),
    index("events_held_idx").on(t.subscriptionId).where(sql`status = 'pending' AND held`),
    index("events_stream_idx").on(t.keyId, t.xid, t.seq),
    // GET /v1/events: one index per filter, each ending in the page order so a page is an index range.
    index("events_key_page_idx").on(t.keyId, t.createdAt.desc(), t.id.desc()),
    index("events_key_status_page_idx").on(t.keyId, t.status, t.createdAt.desc(), t.id.desc()),
    index("events_key_kind_page_idx").on(t.keyId, t.kind, t.createdAt.desc(), t.id.desc()),
    index("events_key_chain_page_idx").on(t.keyId, t.chainId, t.createdAt.desc(), t.id.desc()),
    index("events_tx_idx").on(t.txId),
    index("events_addresses_idx").using("gin", t.addresses),
  ],
);

// Every delivery attempt of an event, written in the same statement as the outcome; deleted with its event.
export const attempts = pgTable(
  "delivery_attempts",
  {
    id: text("id").primaryKey(),
    eventId: text("event_id")
      .notNull()
      .references(() => events.id, { onDelete: "cascade" }),
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
    index("delivery_attempts_event_idx").on(t.eventId, t.attemptedAt.desc(), t.id.desc()),
    // The health view reads a subscription's attempts of the last 24 hours.
    index("delivery_attempts_subscription_idx").on(t.subscriptionId, t.attemptedAt.desc()),
  ],
);

// Idempotency records of the deliverer's effects (test and retry), written in the effect's transaction.
export const deliveryIdempotency = idempotencyTable("delivery_idempotency_records", "delivery_idempotency_expires_idx");

export const delivererSchema = { events, attempts, deliveryIdempotency };
export type DelivererSchema = typeof delivererSchema;

export type EventRow = typeof events.$inferSelect;
export type NewEventRow = typeof events.$inferInsert;
export type AttemptRow = typeof attempts.$inferSelect;
export type DeliveryIdempotencyRow = typeof deliveryIdempotency.$inferSelect;
