-- event_addresses leaves the daily partitions (schema.ts): an address names no day, so a search probed the index of
-- every partition. The rows move to a plain table of the same columns, keyed for retention's deletes by time; the
-- page index is built after the copy, in one sorted pass.
ALTER TABLE "event_addresses" RENAME TO "event_addresses_partitioned";--> statement-breakpoint
CREATE TABLE "event_addresses" (
	"key_id" text NOT NULL,
	"address" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"event_id" text NOT NULL
);
--> statement-breakpoint
INSERT INTO "event_addresses" ("key_id", "address", "created_at", "event_id")
SELECT DISTINCT "key_id", "address", "created_at", "event_id" FROM "event_addresses_partitioned";--> statement-breakpoint
DROP TABLE "event_addresses_partitioned";--> statement-breakpoint
ALTER TABLE "event_addresses" ADD CONSTRAINT "event_addresses_pkey" PRIMARY KEY("created_at","event_id","address");--> statement-breakpoint
CREATE INDEX "event_addresses_page_idx" ON "event_addresses" USING btree ("key_id","address","created_at" DESC NULLS FIRST,"event_id" DESC NULLS FIRST);
