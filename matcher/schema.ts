// The matcher's tables (own migrations folder and journal, __matcher_migrations). Row types come from here.
import { bigint, pgTable, primaryKey, text, timestamp } from "drizzle-orm/pg-core";

/** Per chain: the last block whose events the deliverer has accepted. The stream resumes after it. */
export const matcherCheckpoints = pgTable("matcher_checkpoints", {
  chainId: text("chain_id").primaryKey(),
  blockNumber: bigint("block_number", { mode: "number" }).notNull(),
  blockId: text("block_id").notNull(),
  updatedAt: timestamp("updated_at", { precision: 3, withTimezone: true, mode: "date" }).notNull().defaultNow(),
});

/**
 * The ids of the last few hundred processed blocks per chain: on a fork the stream walks back through them to the
 * newest block the node still has (the common ancestor) and resumes from there.
 */
export const matcherBlocks = pgTable(
  "matcher_blocks",
  {
    chainId: text("chain_id").notNull(),
    blockNumber: bigint("block_number", { mode: "number" }).notNull(),
    blockId: text("block_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.chainId, t.blockNumber] })],
);

export const matcherSchema = { matcherCheckpoints, matcherBlocks };
export type MatcherSchema = typeof matcherSchema;
export type CheckpointRow = typeof matcherCheckpoints.$inferSelect;
