-- The transfer identity leaves the daily partitions (schema.ts): partitioned by the block's UTC day, its key included
-- that day, so a transaction a fork re-included in a block past midnight got a second identity row in the next day's
-- partition, and a second event. Hand-edited (drizzle-kit cannot express the old partitioning); the snapshot beside it
-- is drizzle's. The rows move to a plain table keyed by the transfer alone; where the fault already left two rows for
-- one transfer, the first event's stays. The primary key and the retention index are built after the copy.
ALTER TABLE "event_transfer_keys" RENAME TO "event_transfer_keys_by_day";--> statement-breakpoint
ALTER INDEX "event_transfer_keys_pkey" RENAME TO "event_transfer_keys_by_day_pkey";--> statement-breakpoint
CREATE TABLE "event_transfer_keys" (
	"subscription_id" text NOT NULL,
	"kind" text NOT NULL,
	"chain_id" text NOT NULL,
	"tx_id" text NOT NULL,
	"log_index" integer NOT NULL,
	"internal_index" integer NOT NULL,
	"event_id" text NOT NULL,
	"event_created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
INSERT INTO "event_transfer_keys" ("subscription_id", "kind", "chain_id", "tx_id", "log_index", "internal_index", "event_id", "event_created_at")
SELECT DISTINCT ON ("subscription_id", "kind", "chain_id", "tx_id", "log_index", "internal_index")
  "subscription_id", "kind", "chain_id", "tx_id", "log_index", "internal_index", "event_id", "event_created_at"
FROM "event_transfer_keys_by_day"
ORDER BY "subscription_id", "kind", "chain_id", "tx_id", "log_index", "internal_index", "event_created_at", "event_id";--> statement-breakpoint
DROP TABLE "event_transfer_keys_by_day";--> statement-breakpoint
ALTER TABLE "event_transfer_keys" ADD CONSTRAINT "event_transfer_keys_pkey" PRIMARY KEY("subscription_id","kind","chain_id","tx_id","log_index","internal_index");--> statement-breakpoint
CREATE INDEX "event_transfer_keys_created_idx" ON "event_transfer_keys" USING btree ("event_created_at");
