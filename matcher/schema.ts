// The matcher's tables (own migrations folder and journal, __matcher_migrations). Row types come from here.
import { bigint, bigserial, index, integer, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";
import { sql } from "drizzle-orm";
import { jsonb } from "../common/jsonb.ts";
import type { DecodedTransfer } from "./decode.ts";

/** Per chain: the last block whose events the head stream (broadcasted) handed over; it resumes after it. */
export const matcherCheckpoints = pgTable("matcher_checkpoints", {
  chainId: text("chain_id").primaryKey(),
  blockNumber: bigint("block_number", { mode: "number" }).notNull(),
  blockId: text("block_id").notNull(),
  updatedAt: timestamp("updated_at", { precision: 3, withTimezone: true, mode: "date" }).notNull().defaultNow(),
});

/** Per chain: the last solidified block whose confirmed / failed events the deliverer accepted. */
export const matcherSolidifiedCheckpoints = pgTable("matcher_solidified_checkpoints", {
  chainId: text("chain_id").primaryKey(),
  blockNumber: bigint("block_number", { mode: "number" }).notNull(),
  /** Empty when the stream starts without a parent to check the first block against. */
  blockId: text("block_id").notNull(),
  updatedAt: timestamp("updated_at", { precision: 3, withTimezone: true, mode: "date" }).notNull().defaultNow(),
});

/**
 * The ids of the last few hundred processed blocks per chain: on a fork the stream walks back through them to the
 * newest block the node still has (the common ancestor) and resumes from there. A block processed above the
 * solidified head also keeps its timestamp and transfers: if a fork replaces it, they become pending drops.
 */
export const matcherBlocks = pgTable(
  "matcher_blocks",
  {
    chainId: text("chain_id").notNull(),
    blockNumber: bigint("block_number", { mode: "number" }).notNull(),
    blockId: text("block_id").notNull(),
    timestampMs: bigint("timestamp_ms", { mode: "number" }),
    transfers: jsonb<DecodedTransfer[]>()("transfers"),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.blockNumber] })],
);

/**
 * Transfers of blocks a fork replaced, waiting for the solidified chain: one that a solidified block includes is
 * removed (its confirmed or failed comes from that block); one still here when a solidified block's timestamp passes
 * its expiration can never be included any more and becomes a `failed` / `dropped` event.
 */
export const matcherPendingDrops = pgTable(
  "matcher_pending_drops",
  {
    chainId: text("chain_id").notNull(),
    txId: text("tx_id").notNull(),
    logIndex: integer("log_index").notNull(),
    internalIndex: integer("internal_index").notNull(),
    /** The replaced block. */
    blockNumber: bigint("block_number", { mode: "number" }).notNull(),
    blockId: text("block_id").notNull(),
    blockTimestampMs: bigint("block_timestamp_ms", { mode: "number" }).notNull(),
    expirationMs: bigint("expiration_ms", { mode: "number" }).notNull(),
    transfer: jsonb<DecodedTransfer>()("transfer").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.chainId, t.txId, t.logIndex, t.internalIndex] }),
    index("matcher_pending_drops_expiration").on(t.chainId, t.expirationMs),
  ],
);

/**
 * The ids of the last few hundred blocks the solidified stream confirmed, per chain: a checkpoint a fork made dead
 * (possible where finality is counted, MATCHER_CONFIRMATIONS or no solidity API) walks back through them to the
 * newest block the node still has, as the head stream does through matcher_blocks.
 */
export const matcherSolidifiedBlocks = pgTable(
  "matcher_solidified_blocks",
  {
    chainId: text("chain_id").notNull(),
    blockNumber: bigint("block_number", { mode: "number" }).notNull(),
    blockId: text("block_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.blockNumber] })],
);

/**
 * Transactions the solidified stream included (confirmed or failed) from blocks the head stream did not process as
 * the same block: a fork it sees only later turns the head stream's copy into a pending drop, which this record
 * settles, so a transfer that was confirmed is never also failed / dropped. Kept while a rollback can still reach
 * the block (down to the oldest remembered head-stream block).
 */
export const matcherSolidifiedTxs = pgTable(
  "matcher_solidified_txs",
  {
    chainId: text("chain_id").notNull(),
    txId: text("tx_id").notNull(),
    blockNumber: bigint("block_number", { mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.txId] }), index("matcher_solidified_txs_block").on(t.chainId, t.blockNumber)],
);

/**
 * Re-matches the registry asked for (registry/watch-index/upkeep.ts): the watch index was repaired after losing keys, so
 * blocks the streams processed since its last clean check (after `head_from` / `solid_from`, the checkpoints then)
 * may have missed watched addresses. The chain's lease holder re-matches them (matcher/rematch.ts) and sets done_at.
 */
export const watchRematchRequests = pgTable(
  "watch_rematch_requests",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    chainId: text("chain_id").notNull(),
    /** The head stream's checkpoint at the last clean check (its blocks up to it were matched whole). */
    headFrom: bigint("head_from", { mode: "number" }).notNull(),
    /** The solidified stream's checkpoint then. */
    solidFrom: bigint("solid_from", { mode: "number" }).notNull(),
    createdAt: timestamp("created_at", { precision: 3, withTimezone: true, mode: "date" }).notNull().defaultNow(),
    doneAt: timestamp("done_at", { precision: 3, withTimezone: true, mode: "date" }),
  },
  (t) => [index("watch_rematch_requests_pending").on(t.chainId, t.id).where(sql`done_at IS NULL`)],
);

export const matcherSchema = {
  matcherCheckpoints,
  matcherSolidifiedCheckpoints,
  matcherBlocks,
  matcherPendingDrops,
  matcherSolidifiedTxs,
  matcherSolidifiedBlocks,
  watchRematchRequests,
};
export type MatcherSchema = typeof matcherSchema;
export type CheckpointRow = typeof matcherCheckpoints.$inferSelect;
