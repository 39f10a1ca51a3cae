-- The events table partitioned by day on created_at (README "Events"). drizzle-kit cannot express partitioning, so
-- this migration is written by hand; the snapshot beside it is drizzle's, so `npm run db:generate` sees no diff.
-- An existing deployment keeps every row: the old tables are renamed, the partitioned ones created, a partition made
-- for every day that holds rows (and the next days), the rows copied (ids, stream positions xid/seq and attempts
-- unchanged), the transfer identities and the address rows built from them, and the old tables dropped.
--
-- deliverer_ensure_partition(parent, day) is the one place a daily partition is made: here and by the deliverer's
-- maintenance loop (deliverer/partitions.ts). Serialized by an advisory lock so replicas may call it at once.
CREATE FUNCTION deliverer_ensure_partition(parent text, day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  part text := parent || '_p' || to_char(day, 'YYYYMMDD');
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('deliverer_partitions'));
  IF to_regclass(part) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', part, parent,
    day::text || ' 00:00:00+00', (day + 1)::text || ' 00:00:00+00');
  RETURN true;
END $$;
--> statement-breakpoint
ALTER TABLE "delivery_attempts" DROP CONSTRAINT "delivery_attempts_event_id_events_id_fk";--> statement-breakpoint
ALTER TABLE "events" RENAME TO "events_unpartitioned";--> statement-breakpoint
ALTER TABLE "delivery_attempts" RENAME TO "delivery_attempts_unpartitioned";--> statement-breakpoint
ALTER INDEX "events_pkey" RENAME TO "events_unpartitioned_pkey";--> statement-breakpoint
ALTER INDEX "delivery_attempts_pkey" RENAME TO "delivery_attempts_unpartitioned_pkey";--> statement-breakpoint
DROP INDEX "events_transfer_kind_uq";--> statement-breakpoint
DROP INDEX "events_subscription_page_idx";--> statement-breakpoint
DROP INDEX "events_subscription_status_page_idx";--> statement-breakpoint
DROP INDEX "events_pending_idx";--> statement-breakpoint
DROP INDEX "events_held_idx";--> statement-breakpoint
DROP INDEX "events_stream_idx";--> statement-breakpoint
DROP INDEX "events_key_page_idx";--> statement-breakpoint
DROP INDEX "events_key_status_page_idx";--> statement-breakpoint
DROP INDEX "events_key_kind_page_idx";--> statement-breakpoint
DROP INDEX "events_key_chain_page_idx";--> statement-breakpoint
DROP INDEX "events_tx_idx";--> statement-breakpoint
DROP INDEX "events_addresses_idx";--> statement-breakpoint
DROP INDEX "delivery_attempts_event_idx";--> statement-breakpoint
DROP INDEX "delivery_attempts_subscription_idx";--> statement-breakpoint
-- The identity's sequence goes with the old column; the new table's own continues after the highest seq copied.
ALTER TABLE "events_unpartitioned" ALTER COLUMN "seq" DROP IDENTITY;--> statement-breakpoint
CREATE TABLE "events" (
	"id" text NOT NULL,
	"subscription_id" text NOT NULL,
	"key_id" text,
	"kind" text NOT NULL,
	"chain_id" text,
	"tx_id" text,
	"log_index" integer,
	"addresses" text[] DEFAULT '{}'::text[] NOT NULL,
	"internal_index" integer DEFAULT -1 NOT NULL,
	"payload" jsonb NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"delivery_count" integer DEFAULT 0 NOT NULL,
	"response_status" integer,
	"response_body" text,
	"next_attempt_at" timestamp (3) with time zone,
	"held" boolean DEFAULT false NOT NULL,
	"trigger" text DEFAULT 'automatic' NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL,
	"xid" "xid8" DEFAULT pg_current_xact_id() NOT NULL,
	"seq" bigint NOT NULL GENERATED ALWAYS AS IDENTITY (sequence name "events_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	CONSTRAINT "events_pkey" PRIMARY KEY("id","created_at")
) PARTITION BY RANGE ("created_at");
--> statement-breakpoint
CREATE TABLE "delivery_attempts" (
	"id" text NOT NULL,
	"event_id" text NOT NULL,
	"event_created_at" timestamp (3) with time zone NOT NULL,
	"subscription_id" text NOT NULL,
	"attempted_at" timestamp (3) with time zone NOT NULL,
	"duration_ms" integer NOT NULL,
	"ok" boolean NOT NULL,
	"response_status" integer,
	"response_body" text,
	"error" text,
	"trigger" text NOT NULL,
	CONSTRAINT "delivery_attempts_pkey" PRIMARY KEY("id","event_created_at")
) PARTITION BY RANGE ("event_created_at");
--> statement-breakpoint
CREATE TABLE "event_addresses" (
	"key_id" text NOT NULL,
	"address" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"event_id" text NOT NULL
) PARTITION BY RANGE ("created_at");
--> statement-breakpoint
CREATE TABLE "event_transfer_keys" (
	"subscription_id" text NOT NULL,
	"kind" text NOT NULL,
	"chain_id" text NOT NULL,
	"tx_id" text NOT NULL,
	"log_index" integer NOT NULL,
	"internal_index" integer NOT NULL,
	"block_day" date NOT NULL,
	"event_id" text NOT NULL,
	"event_created_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "event_transfer_keys_pkey" PRIMARY KEY("subscription_id","kind","chain_id","tx_id","log_index","internal_index","block_day")
) PARTITION BY RANGE ("block_day");
--> statement-breakpoint
CREATE TABLE "event_purges" (
	"subscription_id" text PRIMARY KEY NOT NULL,
	"requested_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
-- A row outside every daily partition (a clock far off, a day whose partition was not made in time) is never
-- refused: it lands here, and retention deletes such rows once they are older than the retention.
CREATE TABLE "events_default" PARTITION OF "events" DEFAULT;--> statement-breakpoint
CREATE TABLE "delivery_attempts_default" PARTITION OF "delivery_attempts" DEFAULT;--> statement-breakpoint
CREATE TABLE "event_addresses_default" PARTITION OF "event_addresses" DEFAULT;--> statement-breakpoint
CREATE TABLE "event_transfer_keys_default" PARTITION OF "event_transfer_keys" DEFAULT;--> statement-breakpoint
CREATE INDEX "events_subscription_page_idx" ON "events" USING btree ("subscription_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "events_subscription_status_page_idx" ON "events" USING btree ("subscription_id","status","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "events_pending_idx" ON "events" USING btree ("next_attempt_at") WHERE status = 'pending' AND NOT held;--> statement-breakpoint
CREATE INDEX "events_held_idx" ON "events" USING btree ("subscription_id") WHERE status = 'pending' AND held;--> statement-breakpoint
CREATE INDEX "events_stream_idx" ON "events" USING btree ("key_id","xid","seq");--> statement-breakpoint
CREATE INDEX "events_key_page_idx" ON "events" USING btree ("key_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "events_key_status_page_idx" ON "events" USING btree ("key_id","status","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "events_key_kind_page_idx" ON "events" USING btree ("key_id","kind","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "events_key_chain_page_idx" ON "events" USING btree ("key_id","chain_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "events_tx_idx" ON "events" USING btree ("tx_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "delivery_attempts_event_idx" ON "delivery_attempts" USING btree ("event_id","attempted_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "delivery_attempts_subscription_idx" ON "delivery_attempts" USING btree ("subscription_id","attempted_at" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "event_addresses_page_idx" ON "event_addresses" USING btree ("key_id","address","created_at" DESC NULLS FIRST,"event_id" DESC NULLS FIRST);--> statement-breakpoint
-- A partition for every day that holds events and for today and the next days; the transfer keys by block day.
SELECT deliverer_ensure_partition(p, d::date)
FROM unnest(ARRAY['events', 'delivery_attempts', 'event_addresses']) AS p,
  (SELECT DISTINCT (created_at AT TIME ZONE 'UTC')::date AS d FROM "events_unpartitioned"
   UNION SELECT ((now() AT TIME ZONE 'UTC')::date + n) FROM generate_series(0, 3) n) days;--> statement-breakpoint
INSERT INTO "events" ("id", "subscription_id", "key_id", "kind", "chain_id", "tx_id", "log_index", "addresses",
  "internal_index", "payload", "status", "attempts", "delivery_count", "response_status", "response_body",
  "next_attempt_at", "held", "trigger", "created_at", "updated_at", "xid", "seq")
OVERRIDING SYSTEM VALUE
SELECT "id", "subscription_id", "key_id", "kind", "chain_id", "tx_id", "log_index", "addresses", "internal_index",
  "payload", "status", "attempts", "delivery_count", "response_status", "response_body", "next_attempt_at", "held",
  "trigger", "created_at", "updated_at", "xid", "seq"
FROM "events_unpartitioned";--> statement-breakpoint
SELECT setval(pg_get_serial_sequence('events', 'seq'), coalesce((SELECT max("seq") FROM "events"), 0) + 1, false);--> statement-breakpoint
INSERT INTO "delivery_attempts" ("id", "event_id", "event_created_at", "subscription_id", "attempted_at",
  "duration_ms", "ok", "response_status", "response_body", "error", "trigger")
SELECT a."id", a."event_id", e."created_at", a."subscription_id", a."attempted_at", a."duration_ms", a."ok",
  a."response_status", a."response_body", a."error", a."trigger"
FROM "delivery_attempts_unpartitioned" a JOIN "events_unpartitioned" e ON e."id" = a."event_id";--> statement-breakpoint
INSERT INTO "event_addresses" ("key_id", "address", "created_at", "event_id")
SELECT DISTINCT e."key_id", a, e."created_at", e."id"
FROM "events_unpartitioned" e, unnest(e."addresses") a WHERE e."key_id" IS NOT NULL;--> statement-breakpoint
-- The block day of a stored transfer is in its payload (data.blockTimestamp, ms); its creation day otherwise.
SELECT deliverer_ensure_partition('event_transfer_keys', d)
FROM (SELECT DISTINCT coalesce((to_timestamp((e."payload"->'data'->>'blockTimestamp')::double precision / 1000) AT TIME ZONE 'UTC')::date,
        (e."created_at" AT TIME ZONE 'UTC')::date) AS d
      FROM "events_unpartitioned" e WHERE e."chain_id" IS NOT NULL AND e."tx_id" IS NOT NULL AND e."log_index" IS NOT NULL
      UNION SELECT ((now() AT TIME ZONE 'UTC')::date + n) FROM generate_series(0, 3) n) days;--> statement-breakpoint
INSERT INTO "event_transfer_keys" ("subscription_id", "kind", "chain_id", "tx_id", "log_index", "internal_index",
  "block_day", "event_id", "event_created_at")
SELECT e."subscription_id", e."kind", e."chain_id", e."tx_id", e."log_index", e."internal_index",
  coalesce((to_timestamp((e."payload"->'data'->>'blockTimestamp')::double precision / 1000) AT TIME ZONE 'UTC')::date,
    (e."created_at" AT TIME ZONE 'UTC')::date),
  e."id", e."created_at"
FROM "events_unpartitioned" e WHERE e."chain_id" IS NOT NULL AND e."tx_id" IS NOT NULL AND e."log_index" IS NOT NULL
ON CONFLICT DO NOTHING;--> statement-breakpoint
DROP TABLE "delivery_attempts_unpartitioned";--> statement-breakpoint
DROP TABLE "events_unpartitioned";
