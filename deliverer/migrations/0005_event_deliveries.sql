-- The delivery state moves out of events into event_deliveries (README "Events"): events becomes insert-only, and an
-- outcome rewrites a narrow row with five indexes instead of the whole event (payload included) and every page index
-- of events. Hand-edited like 0004 (drizzle-kit cannot express partitioning); the snapshot beside it is drizzle's.
-- An existing deployment keeps every event's state: the table gets a partition for every daily partition events has
-- (same bounds, through deliverer_ensure_partition), the state is copied, then the moved columns and their indexes go.
CREATE TABLE "event_deliveries" (
	"event_id" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"subscription_id" text NOT NULL,
	"key_id" text,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"delivery_count" integer DEFAULT 0 NOT NULL,
	"response_status" integer,
	"response_body" text,
	"next_attempt_at" timestamp (3) with time zone,
	"held" boolean DEFAULT false NOT NULL,
	"trigger" text DEFAULT 'automatic' NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "event_deliveries_pkey" PRIMARY KEY("event_id","created_at")
) PARTITION BY RANGE ("created_at");
--> statement-breakpoint
CREATE TABLE "event_deliveries_default" PARTITION OF "event_deliveries" DEFAULT;--> statement-breakpoint
SELECT deliverer_ensure_partition('event_deliveries', to_date(substring(c.relname FROM '^events_p([0-9]{8})$'), 'YYYYMMDD'))
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
WHERE p.relname = 'events' AND c.relname ~ '^events_p[0-9]{8}$';--> statement-breakpoint
-- Copied before the indexes are made: one index build per partition instead of an index insert per row.
INSERT INTO "event_deliveries" ("event_id", "created_at", "subscription_id", "key_id", "status", "attempts",
  "delivery_count", "response_status", "response_body", "next_attempt_at", "held", "trigger", "updated_at")
SELECT "id", "created_at", "subscription_id", "key_id", "status", "attempts", "delivery_count", "response_status",
  "response_body", "next_attempt_at", "held", "trigger", "updated_at"
FROM "events";--> statement-breakpoint
CREATE INDEX "event_deliveries_subscription_status_page_idx" ON "event_deliveries" USING btree ("subscription_id","status","created_at" DESC NULLS FIRST,"event_id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "event_deliveries_key_status_page_idx" ON "event_deliveries" USING btree ("key_id","status","created_at" DESC NULLS FIRST,"event_id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "event_deliveries_pending_idx" ON "event_deliveries" USING btree ("next_attempt_at") WHERE status = 'pending' AND NOT held;--> statement-breakpoint
CREATE INDEX "event_deliveries_held_idx" ON "event_deliveries" USING btree ("subscription_id") WHERE status = 'pending' AND held;--> statement-breakpoint
DROP INDEX "events_subscription_status_page_idx";--> statement-breakpoint
DROP INDEX "events_pending_idx";--> statement-breakpoint
DROP INDEX "events_held_idx";--> statement-breakpoint
DROP INDEX "events_key_status_page_idx";--> statement-breakpoint
ALTER TABLE "events" DROP COLUMN "status", DROP COLUMN "attempts", DROP COLUMN "delivery_count",
  DROP COLUMN "response_status", DROP COLUMN "response_body", DROP COLUMN "next_attempt_at", DROP COLUMN "held",
  DROP COLUMN "trigger", DROP COLUMN "updated_at";
