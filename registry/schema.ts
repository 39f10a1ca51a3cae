// The registry's tables (its own migrations folder and journal, __registry_migrations). Row types come from here.
import { idempotencyTable } from "../common/idempotency.ts";
import { sql } from "drizzle-orm";
import { bigint, boolean, index, integer, jsonb, pgSequence, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import { defaultMatch, type MatchConditions } from "../common/match-conditions.ts";

const ms = (name: string) => timestamp(name, { precision: 3, withTimezone: true, mode: "date" });

export const apiKeys = pgTable("api_keys", {
  id: text("id").primaryKey(),
  name: text("name").notNull().default(""),
  // SHA-256 (hex) of the whole "whk_..." key: the key itself is never stored.
  secretHash: text("secret_hash").notNull().unique(),
  // Enabled chains in the key's order (test events pick the first when mainnet is off).
  chains: text("chains").array().notNull(),
  createdAt: ms("created_at").notNull().defaultNow(),
  revokedAt: ms("revoked_at"),
  // The key's own quotas (`bun run keys quotas`); null: the operator's default (common/quotas.ts).
  quotaSubscriptions: integer("quota_subscriptions"),
  quotaAddresses: integer("quota_addresses"),
  quotaDeliveries: integer("quota_deliveries"),
  quotaStreams: integer("quota_streams"),
});

// Message brokers registered by the operator (`bun run brokers`): queue destinations name one, never a host, so the
// public API can never point the service at an arbitrary internal address, and credentials never pass through it.
export const brokers = pgTable("brokers", {
  name: text("name").primaryKey(),
  // "amqp" or "nats".
  type: text("type").notNull(),
  // The connection URL with its credentials, encrypted with the app's encryptionKey (common/crypto.ts).
  url: text("url").notNull(),
  createdAt: ms("created_at").notNull().defaultNow(),
});

// What each API key may name on a broker (`bun run brokers grant`): a queue destination's exchange (AMQP) or subject
// (NATS) must start with one of its key's prefixes there, so one customer cannot write into another's queues.
// key_id "*" grants every key; a prefix may hold "{keyId}", replaced by the key's id. The default exchange (which
// routes to any queue by name) only with default_exchange, and then the routing key must start with the prefix.
export const brokerGrants = pgTable(
  "broker_grants",
  {
    broker: text("broker")
      .notNull()
      .references(() => brokers.name, { onDelete: "cascade" }),
    keyId: text("key_id").notNull(),
    prefix: text("prefix").notNull(),
    defaultExchange: boolean("default_exchange").notNull().default(false),
    createdAt: ms("created_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ name: "broker_grants_pkey", columns: [t.broker, t.keyId, t.prefix] })],
);

export const subscriptions = pgTable(
  "subscriptions",
  {
    id: text("id").primaryKey(),
    keyId: text("key_id")
      .notNull()
      .references(() => apiKeys.id),
    // "https", "amqp" or "nats"; `url` is "" for a queue destination.
    destinationType: text("destination_type").notNull().default("https"),
    url: text("url").notNull(),
    // Queue destinations: the broker (a registered one; removing it is refused while a subscription uses it), the
    // AMQP exchange and routing key, or the NATS subject. Null for https.
    broker: text("broker").references(() => brokers.name, { onDelete: "restrict" }),
    exchange: text("exchange"),
    routingKey: text("routing_key"),
    subject: text("subject"),
    events: text("events").array().notNull(),
    status: text("status").notNull(),
    description: text("description").notNull().default(""),
    // Signing secrets, encrypted with the app's encryptionKey (common/crypto.ts).
    secret: text("secret").notNull(),
    previousSecret: text("previous_secret"),
    previousSecretExpiresAt: ms("previous_secret_expires_at"),
    addressCount: integer("address_count").notNull().default(0),
    // Match conditions, normalized with every default filled in (common/match-conditions.ts).
    match: jsonb("match").$type<MatchConditions>().notNull().default(defaultMatch()),
    createdAt: ms("created_at").notNull(),
    updatedAt: ms("updated_at").notNull(),
  },
  (t) => [
    index("subscriptions_key_page_idx").on(t.keyId, t.createdAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    // The foreign key's check when a broker is removed.
    index("subscriptions_broker_idx").on(t.broker),
  ],
);

export const subscriptionAddresses = pgTable(
  "subscription_addresses",
  {
    // No foreign key on purpose: checking it per row tripled the cost of a 10,000-address PATCH (bench index).
    // deleteSubscription removes a subscription's addresses in the same transaction instead.
    subscriptionId: text("subscription_id").notNull(),
    chainId: text("chain_id").notNull(),
    address: text("address").notNull(),
    // Order of addition: the address list and the inlined addresses page by it.
    seq: bigint("seq", { mode: "number" }).generatedAlwaysAsIdentity(),
  },
  (t) => [
    primaryKey({ columns: [t.subscriptionId, t.chainId, t.address] }),
    index("subscription_addresses_seq_idx").on(t.subscriptionId, t.seq),
  ],
);

// The watch index's transactional outbox (registry/watch-index/outbox.ts): every change the Redis watch index must learn
// is inserted here in the transaction that makes it, and one applier per chain writes the rows to Redis in id order
// and marks them applied with their position (kept WATCH_OUTBOX_RETENTION_MS so a Redis that lost them can be
// replayed to: registry/watch-index/applier.ts replay). `kind`: "addresses" (add/remove of one subscription's entries), "meta"
// (status, kinds or match changed: re-read when applied), "drop" (subscription deleted), "key" (key revoked or chains
// changed: re-read).
export const watchOutbox = pgTable(
  "watch_outbox",
  {
    id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
    chainId: text("chain_id").notNull(),
    kind: text("kind").notNull(),
    subscriptionId: text("subscription_id"),
    keyId: text("key_id"),
    add: text("add").array().notNull().default([]),
    remove: text("remove").array().notNull().default([]),
    createdAt: ms("created_at").notNull().defaultNow(),
    // Null until applied; then the row's place in the order its chain's changes reached Redis (watch_position_seq).
    appliedPosition: bigint("applied_position", { mode: "number" }),
    appliedAt: ms("applied_at"),
  },
  (t) => [
    index("watch_outbox_pending_idx").on(t.chainId, t.id).where(sql`${t.appliedPosition} IS NULL`),
    index("watch_outbox_applied_idx").on(t.chainId, t.appliedPosition).where(sql`${t.appliedPosition} IS NOT NULL`),
  ],
);

// Positions of applied changes: taken from one sequence (never handed out twice, even by a batch that rolled back),
// each chain's in the order its applier wrote them to Redis.
export const watchPositionSeq = pgSequence("watch_position_seq");

// Per chain and shard of the watch index, the position of the last change applied to that shard: the index must be
// at least there (common/watch-index/ keeps the same number in the shard's state key, written by the script that
// applies the change). `shard` -1 holds the chain's `pruned` mark instead: applied rows up to that position are gone,
// so a shard behind it cannot be replayed and is rebuilt.
export const watchIndexPositions = pgTable(
  "watch_index_positions",
  {
    chainId: text("chain_id").notNull(),
    shard: integer("shard").notNull(),
    position: bigint("position", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.shard] })],
);

// Idempotency records of subscription creation and secret rotation, written in the effect's transaction.
export const idempotencyRecords = idempotencyTable("idempotency_records", "idempotency_records_expires_idx");

// Backfill jobs (docs/CONTRACT.md "Backfills"). The registry creates, lists and cancels them (they belong to a
// subscription, are canceled in the transaction that disables it and deleted with it by the foreign key); the
// matcher runs them (matcher/backfill/): it takes a lease on a job, scans its blocks and moves `next_block` and the
// counts in the transaction that records the blocks' events as accepted.
export const BACKFILL_STATUSES = ["queued", "running", "completed", "failed", "canceled"] as const;
export type BackfillStatus = (typeof BACKFILL_STATUSES)[number];

export const backfills = pgTable(
  "backfills",
  {
    id: text("id").primaryKey(),
    subscriptionId: text("subscription_id")
      .notNull()
      .references(() => subscriptions.id, { onDelete: "cascade" }),
    keyId: text("key_id").notNull(),
    chainId: text("chain_id").notNull(),
    status: text("status").$type<BackfillStatus>().notNull(),
    fromBlock: bigint("from_block", { mode: "number" }).notNull(),
    toBlock: bigint("to_block", { mode: "number" }).notNull(),
    /** The chosen subset of the subscription's addresses on the chain; null: all of them. */
    addresses: text("addresses").array(),
    addressCount: integer("address_count").notNull(),
    /** The solidified head when the job was created: the events' solidifiedBlockNumber. */
    solidifiedHead: bigint("solidified_head", { mode: "number" }).notNull(),
    /** The checkpoint: the next block to scan (to_block + 1 once every block's events were accepted). */
    nextBlock: bigint("next_block", { mode: "number" }).notNull(),
    eventsCreated: bigint("events_created", { mode: "number" }).notNull().default(0),
    eventsSkipped: bigint("events_skipped", { mode: "number" }).notNull().default(0),
    error: text("error"),
    /** Which matcher replica runs it, until when (it renews the lease while it scans). */
    leaseOwner: text("lease_owner"),
    leaseUntil: ms("lease_until"),
    createdAt: ms("created_at").notNull(),
    startedAt: ms("started_at"),
    finishedAt: ms("finished_at"),
  },
  (t) => [
    index("backfills_subscription_page_idx").on(t.subscriptionId, t.id.desc()),
    index("backfills_open_idx").on(t.chainId, t.id).where(sql`${t.status} IN ('queued', 'running')`),
  ],
);

export type BackfillRow = typeof backfills.$inferSelect;

export const registrySchema = { apiKeys, brokers, brokerGrants, subscriptions, subscriptionAddresses, idempotencyRecords, watchOutbox, watchIndexPositions, backfills };
export type RegistrySchema = typeof registrySchema;

export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type SubscriptionRow = typeof subscriptions.$inferSelect;
export type BrokerRow = typeof brokers.$inferSelect;
export type BrokerGrantRow = typeof brokerGrants.$inferSelect;
export type SubscriptionAddressRow = typeof subscriptionAddresses.$inferSelect;
export type WatchOutboxRow = typeof watchOutbox.$inferSelect;
export type IdempotencyRow = typeof idempotencyRecords.$inferSelect;

