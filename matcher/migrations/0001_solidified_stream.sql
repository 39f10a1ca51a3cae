CREATE TABLE "matcher_pending_drops" (
	"chain_id" text NOT NULL,
	"tx_id" text NOT NULL,
	"log_index" integer NOT NULL,
	"internal_index" integer NOT NULL,
	"block_number" bigint NOT NULL,
	"block_id" text NOT NULL,
	"block_timestamp_ms" bigint NOT NULL,
	"expiration_ms" bigint NOT NULL,
	"transfer" jsonb NOT NULL,
	CONSTRAINT "matcher_pending_drops_chain_id_tx_id_log_index_internal_index_pk" PRIMARY KEY("chain_id","tx_id","log_index","internal_index")
);
--> statement-breakpoint
CREATE TABLE "matcher_solidified_checkpoints" (
	"chain_id" text PRIMARY KEY NOT NULL,
	"block_number" bigint NOT NULL,
	"block_id" text NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "matcher_blocks" ADD COLUMN "timestamp_ms" bigint;--> statement-breakpoint
ALTER TABLE "matcher_blocks" ADD COLUMN "transfers" jsonb;--> statement-breakpoint
CREATE INDEX "matcher_pending_drops_expiration" ON "matcher_pending_drops" USING btree ("chain_id","expiration_ms");