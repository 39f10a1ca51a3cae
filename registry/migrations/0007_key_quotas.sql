ALTER TABLE "api_keys" ADD COLUMN "quota_subscriptions" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "quota_addresses" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "quota_deliveries" integer;--> statement-breakpoint
ALTER TABLE "api_keys" ADD COLUMN "quota_streams" integer;