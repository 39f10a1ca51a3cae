ALTER TABLE "subscription_addresses" DROP CONSTRAINT "subscription_addresses_subscription_id_subscriptions_id_fk";
--> statement-breakpoint
DROP INDEX "subscription_addresses_chain_address_idx";