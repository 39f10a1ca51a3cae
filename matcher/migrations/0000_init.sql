CREATE TABLE "matcher_blocks" (
	"chain_id" text NOT NULL,
	"block_number" bigint NOT NULL,
	"block_id" text NOT NULL,
	CONSTRAINT "matcher_blocks_chain_id_block_number_pk" PRIMARY KEY("chain_id","block_number")
);
--> statement-breakpoint
CREATE TABLE "matcher_checkpoints" (
	"chain_id" text PRIMARY KEY NOT NULL,
	"block_number" bigint NOT NULL,
	"block_id" text NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
