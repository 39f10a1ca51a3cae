CREATE TABLE "matcher_solidified_blocks" (
	"chain_id" text NOT NULL,
	"block_number" bigint NOT NULL,
	"block_id" text NOT NULL,
	CONSTRAINT "matcher_solidified_blocks_chain_id_block_number_pk" PRIMARY KEY("chain_id","block_number")
);
