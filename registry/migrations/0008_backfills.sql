CREATE TABLE "backfills" (
	"id" text PRIMARY KEY NOT NULL,
	"subscription_id" text NOT NULL,
	"key_id" text NOT NULL,
	"chain_id" text NOT NULL,
	"status" text NOT NULL,
	"from_block" bigint NOT NULL,
	"to_block" bigint NOT NULL,
	"addresses" text[],
	"address_count" integer NOT NULL,
	"solidified_head" bigint NOT NULL,
	"next_block" bigint NOT NULL,
	"events_created" bigint DEFAULT 0 NOT NULL,
	"events_skipped" bigint DEFAULT 0 NOT NULL,
	"error" text,
	"lease_owner" text,
	"lease_until" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"started_at" timestamp (3) with time zone,
	"finished_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "backfills" ADD CONSTRAINT "backfills_subscription_id_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."subscriptions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "backfills_subscription_page_idx" ON "backfills" USING btree ("subscription_id","id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "backfills_open_idx" ON "backfills" USING btree ("chain_id","id") WHERE "backfills"."status" IN ('queued', 'running');