CREATE TABLE "delivery_idempotency_records" (
	"key_id" text NOT NULL,
	"scope" text NOT NULL,
	"idem_key" text NOT NULL,
	"request_hash" text NOT NULL,
	"request_id" text NOT NULL,
	"response" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "delivery_idempotency_records_key_id_scope_idem_key_pk" PRIMARY KEY("key_id","scope","idem_key")
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" text PRIMARY KEY NOT NULL,
	"subscription_id" text NOT NULL,
	"kind" text NOT NULL,
	"chain_id" text,
	"tx_id" text,
	"log_index" integer,
	"payload" jsonb NOT NULL,
	"status" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"delivery_count" integer DEFAULT 0 NOT NULL,
	"response_status" integer,
	"response_body" text,
	"next_attempt_at" timestamp (3) with time zone,
	"held" boolean DEFAULT false NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE INDEX "delivery_idempotency_expires_idx" ON "delivery_idempotency_records" USING btree ("expires_at");--> statement-breakpoint
CREATE UNIQUE INDEX "events_transfer_uq" ON "events" USING btree ("subscription_id","chain_id","tx_id","log_index");--> statement-breakpoint
CREATE INDEX "events_subscription_page_idx" ON "events" USING btree ("subscription_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_subscription_status_page_idx" ON "events" USING btree ("subscription_id","status","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "events_pending_idx" ON "events" USING btree ("next_attempt_at") WHERE status = 'pending' AND NOT held;--> statement-breakpoint
CREATE INDEX "events_held_idx" ON "events" USING btree ("subscription_id") WHERE status = 'pending' AND held;