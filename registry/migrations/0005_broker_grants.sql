CREATE TABLE "broker_grants" (
	"broker" text NOT NULL,
	"key_id" text NOT NULL,
	"prefix" text NOT NULL,
	"default_exchange" boolean DEFAULT false NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "broker_grants_pkey" PRIMARY KEY("broker","key_id","prefix")
);
--> statement-breakpoint
ALTER TABLE "broker_grants" ADD CONSTRAINT "broker_grants_broker_brokers_name_fk" FOREIGN KEY ("broker") REFERENCES "public"."brokers"("name") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
-- Keys already using a broker keep what they could do before grants existed: every name, the default exchange too.
INSERT INTO "broker_grants" ("broker", "key_id", "prefix", "default_exchange")
SELECT DISTINCT "broker", "key_id", '', true FROM "subscriptions" WHERE "broker" IS NOT NULL
ON CONFLICT DO NOTHING;
