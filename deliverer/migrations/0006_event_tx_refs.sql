CREATE TABLE "event_tx_refs" (
	"key_id" text NOT NULL,
	"tx_id" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"event_id" text NOT NULL,
	CONSTRAINT "event_tx_refs_pkey" PRIMARY KEY("created_at","event_id")
);
--> statement-breakpoint
-- The events already stored, copied before the page index is made: one index build instead of an insert per row.
INSERT INTO "event_tx_refs" ("key_id", "tx_id", "created_at", "event_id")
SELECT "key_id", "tx_id", "created_at", "id" FROM "events" WHERE "key_id" IS NOT NULL AND "tx_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "event_tx_refs_page_idx" ON "event_tx_refs" USING btree ("key_id","tx_id","created_at" DESC NULLS FIRST,"event_id" DESC NULLS FIRST);--> statement-breakpoint
DROP INDEX "events_tx_idx";
