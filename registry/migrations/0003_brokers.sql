CREATE TABLE "brokers" (
	"name" text PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"url" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "destination_type" text DEFAULT 'https' NOT NULL;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "broker" text;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "exchange" text;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "routing_key" text;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "subject" text;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_broker_brokers_name_fk" FOREIGN KEY ("broker") REFERENCES "public"."brokers"("name") ON DELETE restrict ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "subscriptions_broker_idx" ON "subscriptions" USING btree ("broker");