CREATE TABLE "matcher_solidified_txs" (
	"chain_id" text NOT NULL,
	"tx_id" text NOT NULL,
	"block_number" bigint NOT NULL,
	CONSTRAINT "matcher_solidified_txs_chain_id_tx_id_pk" PRIMARY KEY("chain_id","tx_id")
);
--> statement-breakpoint
CREATE INDEX "matcher_solidified_txs_block" ON "matcher_solidified_txs" USING btree ("chain_id","block_number");