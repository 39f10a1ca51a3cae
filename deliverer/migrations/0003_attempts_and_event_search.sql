CREATE TABLE "delivery_attempts" (
	"id" text PRIMARY KEY NOT NULL,
	"event_id" text NOT NULL,
	"subscription_id" text NOT NULL,
	"attempted_at" timestamp (3) with time zone NOT NULL,
	"duration_ms" integer NOT NULL,
	"ok" boolean NOT NULL,
	"response_status" integer,
	"response_body" text,
	"error" text,
	"trigger" text NOT NULL
);
--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "addresses" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "trigger" text DEFAULT 'automatic' NOT NULL;--> statement-breakpoint
ALTER TABLE "delivery_attempts" ADD CONSTRAINT "delivery_attempts_event_id_events_id_fk" FOREIGN KEY ("event_id") REFERENCES "public"."events"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "delivery_attempts_event_idx" ON "delivery_attempts" USING btree ("event_id","attempted_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "delivery_attempts_subscription_idx" ON "delivery_attempts" USING btree ("subscription_id","attempted_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_key_page_idx" ON "events" USING btree ("key_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_key_status_page_idx" ON "events" USING btree ("key_id","status","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_key_kind_page_idx" ON "events" USING btree ("key_id","kind","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_key_chain_page_idx" ON "events" USING btree ("key_id","chain_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_tx_idx" ON "events" USING btree ("tx_id");--> statement-breakpoint
CREATE INDEX "events_addresses_idx" ON "events" USING gin ("addresses");