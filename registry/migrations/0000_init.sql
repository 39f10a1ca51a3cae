CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"name" text DEFAULT '' NOT NULL,
	"secret_hash" text NOT NULL,
	"chains" text[] NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"revoked_at" timestamp (3) with time zone,
	CONSTRAINT "api_keys_secret_hash_unique" UNIQUE("secret_hash")
);
--> statement-breakpoint
CREATE TABLE "idempotency_records" (
	"key_id" text NOT NULL,
	"scope" text NOT NULL,
	"idem_key" text NOT NULL,
	"request_hash" text NOT NULL,
	"request_id" text NOT NULL,
	"response" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "idempotency_records_key_id_scope_idem_key_pk" PRIMARY KEY("key_id","scope","idem_key")
);
--> statement-breakpoint
CREATE TABLE "subscription_addresses" (
	"subscription_id" text NOT NULL,
	"chain_id" text NOT NULL,
	"address" text NOT NULL,
	"seq" bigint GENERATED ALWAYS AS IDENTITY (sequence name "subscription_addresses_seq_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	CONSTRAINT "subscription_addresses_subscription_id_chain_id_address_pk" PRIMARY KEY("subscription_id","chain_id","address")
);
--> statement-breakpoint
CREATE TABLE "subscriptions" (
	"id" text PRIMARY KEY NOT NULL,
	"key_id" text NOT NULL,
	"url" text NOT NULL,
	"events" text[] NOT NULL,
	"status" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"secret" text NOT NULL,
	"previous_secret" text,
	"previous_secret_expires_at" timestamp (3) with time zone,
	"address_count" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "subscription_addresses" ADD CONSTRAINT "subscription_addresses_subscription_id_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."subscriptions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_key_id_api_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."api_keys"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "idempotency_records_expires_idx" ON "idempotency_records" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "subscription_addresses_seq_idx" ON "subscription_addresses" USING btree ("subscription_id","seq");--> statement-breakpoint
CREATE INDEX "subscription_addresses_chain_address_idx" ON "subscription_addresses" USING btree ("chain_id","address");--> statement-breakpoint
CREATE INDEX "subscriptions_key_page_idx" ON "subscriptions" USING btree ("key_id","created_at" DESC NULLS FIRST,"id" DESC NULLS FIRST);